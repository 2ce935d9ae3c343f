"""The compiler alone, without I/O: a chosen request becomes exact Query and Scan parameters."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import Entity, GlobalIndex, KeyAttribute, LocalIndex, Projection, Table
from lsiorm._conditions import Compare, FieldCondition, Placeholders, begins_with, gt
from lsiorm._model.entity_meta import meta_of
from lsiorm._query.compile import (
    RequestChoice,
    compile_request,
    first_page_limit,
    page_limit,
    scan_segments,
    sort_text,
)
from lsiorm._query.keyrange import SortCondition
from lsiorm._query.plan import ReadOptions
from lsiorm._query.values import query, scan

shelf = Table(
    "Shelf",
    partition_key="PK",
    sort_key="SK",
    local_indexes=[LocalIndex("ByTitle", KeyAttribute("TitleSK"), Projection.keys_only())],
    global_indexes=[
        GlobalIndex("ByAuthor", KeyAttribute("AuthorPK"), KeyAttribute("SK"), Projection.all())
    ],
)


class Book(
    Entity,
    table=shelf,
    keys={"PK": "S#{shelf}", "SK": "BOOK#{isbn}", "TitleSK": "T#{title}", "AuthorPK": "{author}"},
):
    shelf: str
    isbn: str
    title: str = ""
    author: str = ""
    pages: int = Field(default=0, alias="Pages")


class Map(Entity, table=shelf, keys={"PK": "S#{shelf}", "SK": "MAP#{name}"}):
    shelf: str
    name: str
    pages: int = Field(default=0, alias="Pages")


BOOK = meta_of(Book)
LOCAL = shelf.index("ByTitle")
GLOBAL = shelf.index("ByAuthor")
PAGES_OVER_5 = FieldCondition("pages", Compare(">", 5))


def s(text: str) -> dict[str, str]:
    return {"S": text}


# -- Query -------------------------------------------------------------------------------------


def test_a_partition_alone_is_one_key_condition() -> None:
    compiled = compile_request(
        "Query", shelf, None, RequestChoice(BOOK, partition="S#a"), ReadOptions()
    )
    assert compiled.params == {
        "TableName": "Shelf",
        "KeyConditionExpression": "#n0 = :v0",
        "ExpressionAttributeNames": {"#n0": "PK"},
        "ExpressionAttributeValues": {":v0": s("S#a")},
    }
    assert compiled.key_condition == "#n0 = :v0"
    assert compiled.filter is None
    assert compiled.projection is None


def test_key_then_filter_then_type_filter_take_placeholders_in_that_order() -> None:
    choice = RequestChoice(
        BOOK,
        filter=PAGES_OVER_5,
        types=(Book,),
        partition="S#a",
        sort=SortCondition("begins_with", (s("BOOK#"),)),
    )
    compiled = compile_request("Query", shelf, None, choice, ReadOptions())
    assert compiled.params == {
        "TableName": "Shelf",
        "KeyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
        "FilterExpression": "(#n2 > :v2) AND #n3 = :v3",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "SK", "#n2": "Pages", "#n3": "_type"},
        "ExpressionAttributeValues": {
            ":v0": s("S#a"),
            ":v1": s("BOOK#"),
            ":v2": {"N": "5"},
            ":v3": s("Book"),
        },
    }
    assert compiled.filter == "(#n2 > :v2) AND #n3 = :v3"
    assert compiled.names == compiled.params["ExpressionAttributeNames"]
    assert compiled.values == compiled.params["ExpressionAttributeValues"]


def test_a_type_filter_for_several_types_is_an_in_list() -> None:
    choice = RequestChoice(BOOK, types=(Book, Map), partition="S#a")
    params = compile_request("Query", shelf, None, choice, ReadOptions()).params
    assert params["FilterExpression"] == "#n1 IN (:v1, :v2)"
    assert params["ExpressionAttributeValues"][":v1"] == s("Book")
    assert params["ExpressionAttributeValues"][":v2"] == s("Map")


def test_projection_order_and_consistency_follow_the_read_options() -> None:
    choice = RequestChoice(BOOK, projection=("PK", "SK", "isbn"), partition="S#a")
    options = ReadOptions(forward=False, consistent=True)
    compiled = compile_request("Query", shelf, LOCAL, choice, options)
    assert compiled.params == {
        "TableName": "Shelf",
        "IndexName": "ByTitle",
        "KeyConditionExpression": "#n0 = :v0",
        "ProjectionExpression": "#n0, #n1, #n2",
        "ScanIndexForward": False,
        "ConsistentRead": True,
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "SK", "#n2": "isbn"},
        "ExpressionAttributeValues": {":v0": s("S#a")},
    }
    assert compiled.projection == ("PK", "SK", "isbn")


@pytest.mark.parametrize(
    ("projection", "fetch", "count", "expected"),
    [
        (None, False, False, {}),
        (None, True, False, {"Select": "ALL_ATTRIBUTES"}),
        (("PK",), True, False, {"ProjectionExpression": "#n0"}),
        (("PK",), True, True, {"Select": "COUNT"}),
        (None, False, True, {"Select": "COUNT"}),
    ],
)
def test_count_then_projection_then_fetch_decide_what_is_returned(
    projection: tuple[str, ...] | None, fetch: bool, count: bool, expected: dict[str, Any]
) -> None:
    choice = RequestChoice(BOOK, projection=projection, fetch=fetch, partition="S#a")
    params = compile_request("Query", shelf, LOCAL, choice, ReadOptions(count=count)).params
    shown = {k: params[k] for k in ("Select", "ProjectionExpression") if k in params}
    assert shown == expected


@pytest.mark.parametrize(
    ("op", "operands", "text"),
    [
        ("=", ("a",), "#s = :v0"),
        ("<", ("a",), "#s < :v0"),
        ("<=", ("a",), "#s <= :v0"),
        (">", ("a",), "#s > :v0"),
        (">=", ("a",), "#s >= :v0"),
        ("BETWEEN", ("a", "b"), "#s BETWEEN :v0 AND :v1"),
        ("begins_with", ("a",), "begins_with(#s, :v0)"),
    ],
)
def test_sort_conditions_compile_to_key_condition_text(
    op: str, operands: tuple[str, ...], text: str
) -> None:
    ph = Placeholders()
    wire = tuple(s(o) for o in operands)
    assert sort_text(SortCondition(op, wire), "#s", ph) == text
    assert list(ph.values.values()) == list(wire)


def test_the_planner_sends_what_the_compiler_writes() -> None:
    q = query(Book).where(shelf="a").filter(title=begins_with("T")).descending()
    # No Map key starts with BOOK#, so the key condition alone keeps the request to books.
    choice = RequestChoice(
        BOOK,
        filter=q.filter_condition,
        partition="S#a",
        sort=SortCondition("begins_with", (s("BOOK#"),)),
    )
    expected = compile_request("Query", shelf, None, choice, ReadOptions(forward=False)).params
    assert q.compile() == expected


# -- Scan --------------------------------------------------------------------------------------


def test_a_scan_filters_on_the_type_first_then_on_the_condition() -> None:
    choice = RequestChoice(BOOK, filter=PAGES_OVER_5, types=(Book,))
    compiled = compile_request("Scan", shelf, GLOBAL, choice, ReadOptions(consistent=False))
    assert compiled.params == {
        "TableName": "Shelf",
        "IndexName": "ByAuthor",
        "FilterExpression": "#n0 = :v0 AND (#n1 > :v1)",
        "ExpressionAttributeNames": {"#n0": "_type", "#n1": "Pages"},
        "ExpressionAttributeValues": {":v0": s("Book"), ":v1": {"N": "5"}},
    }
    assert compiled.key_condition is None
    assert scan(Book).using("ByAuthor").filter(pages=gt(5)).compile_all() == [compiled.params]


def test_scan_segments_number_every_request() -> None:
    params = {"TableName": "Shelf"}
    assert scan_segments(params, 1) == [{"TableName": "Shelf"}]
    assert scan_segments(params, 3) == [
        {"TableName": "Shelf", "Segment": n, "TotalSegments": 3} for n in range(3)
    ]
    assert params == {"TableName": "Shelf"}


# -- the Limit rule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page_size", "remaining", "filtered", "limit"),
    [
        (None, None, False, None),
        (20, None, False, 20),
        (None, 5, False, 5),
        (20, 5, False, 5),
        (3, 5, False, 3),
        (None, 5, True, None),
        (20, 5, True, 20),
    ],
)
def test_a_page_asks_for_what_is_still_wanted_unless_a_filter_drops_items(
    page_size: int | None, remaining: int | None, filtered: bool, limit: int | None
) -> None:
    assert page_limit(page_size, remaining, filtered) == limit


@given(st.none() | st.integers(1, 1000), st.none() | st.integers(1, 1000), st.booleans())
def test_a_page_limit_never_exceeds_the_page_size_or_what_is_wanted(
    page_size: int | None, remaining: int | None, filtered: bool
) -> None:
    limit = page_limit(page_size, remaining, filtered)
    if page_size is not None:
        assert limit is not None
        assert limit <= page_size
    if filtered or remaining is None:
        assert limit == page_size
    else:
        assert limit is not None
        assert limit <= remaining


def test_the_first_page_of_a_plan_uses_the_same_rule_and_a_count_shows_none() -> None:
    assert first_page_limit(ReadOptions(max_items=5, request_limit=20), False) == 5
    assert first_page_limit(ReadOptions(max_items=5, request_limit=20), True) == 20
    assert first_page_limit(ReadOptions(max_items=5, request_limit=20, count=True), False) is None
    q = query(Book).where(shelf="a").limit(5).page_size(20)
    assert q.compile()["Limit"] == 5
    assert q.filter(pages=gt(1)).compile()["Limit"] == 20
    assert "Limit" not in q.compile(count=True)
    # A scan of one type of a shared table filters on the type: the page size only.
    assert "Limit" not in scan(Book).limit(5).compile_all()[0]
    assert scan(Book).limit(5).page_size(20).compile_all()[0]["Limit"] == 20
