"""A paged read as a value: the parameters of each page, and what a page says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._requests.pages import PagedRead, read_page_of
from lsiorm.errors import ValidationError

PARAMS = {"TableName": "Things", "ConsistentRead": True}
KEY = {"PK": {"S": "P#1"}, "SK": {"S": "S#9"}}


def test_the_first_page_is_the_parameters_with_the_limit() -> None:
    read = PagedRead("Scan", PARAMS, limit=25)
    assert read.request() == {"TableName": "Things", "ConsistentRead": True, "Limit": 25}
    assert PagedRead("Scan", PARAMS).request() == PARAMS


def test_a_later_page_starts_after_its_position() -> None:
    read = PagedRead("Query", PARAMS)
    assert read.request(KEY) == {**PARAMS, "ExclusiveStartKey": KEY}
    assert read.request({}) == PARAMS  # an empty position is the start, as DynamoDB says


def test_the_values_given_are_not_changed() -> None:
    params = dict(PARAMS)
    read = PagedRead("Scan", params, limit=3)
    read.request(KEY)["TableName"] = "Other"
    assert params == PARAMS
    assert read.request() == {**PARAMS, "Limit": 3}


def test_a_segment_of_a_scan_names_its_number_and_the_total() -> None:
    read = PagedRead("Scan", PARAMS)
    assert read.segment(2, 4).request() == {**PARAMS, "Segment": 2, "TotalSegments": 4}
    assert read.segment(0, 1) == read
    with pytest.raises(ValidationError) as caught:
        PagedRead("Query", PARAMS).segment(0, 2)
    assert caught.value.rule == "read.segment"


@pytest.mark.parametrize(
    ("limit", "pages", "rule"), [(0, None, "read.limit"), (None, 0, "read.pages")]
)
def test_a_read_of_nothing_is_refused(limit: int | None, pages: int | None, rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PagedRead("Scan", PARAMS, limit=limit, pages=pages)
    assert caught.value.rule == rule


def test_a_page_says_what_it_holds_and_where_the_next_starts() -> None:
    items = [{"PK": {"S": "a"}}, {"PK": {"S": "b"}}]
    response = {"Items": items, "Count": 2, "ScannedCount": 5, "LastEvaluatedKey": KEY}
    page = read_page_of(response, {"TableName": "Things"})
    assert (page.items, page.scanned, page.count, page.next) == (items, 5, 2, KEY)
    assert page.request == {"TableName": "Things"}
    assert not page.last
    end = read_page_of({"Items": [], "Count": 0, "ScannedCount": 3})
    assert (end.items, end.scanned, end.count, end.next, end.last) == ([], 3, 0, None, True)


@given(st.lists(st.integers(0, 9), max_size=5), st.booleans())
def test_a_page_without_counts_counts_its_items(values: list[int], more: bool) -> None:
    items = [{"n": {"N": str(v)}} for v in values]
    response = {"Items": items, **({"LastEvaluatedKey": KEY} if more else {})}
    page = read_page_of(response)
    assert (page.scanned, page.count, page.last) == (len(items), len(items), not more)
