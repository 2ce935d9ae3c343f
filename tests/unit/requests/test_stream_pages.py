"""A stream read as values: the parameters of each request, and what each answer says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._requests.stream_pages import (
    PAGE_LIMIT,
    RecordPage,
    Shard,
    ShardListing,
    ShardRead,
    record_page_of,
    sequence_of,
    shard_listing_of,
    shard_listing_request,
)
from lsiorm.errors import ValidationError

ARN = "arn:aws:dynamodb:us-east-1:1:table/t/stream/2026"


def record(sequence: str) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"SequenceNumber": sequence, "Keys": {}}}


def test_the_shards_are_listed_from_the_start_then_after_the_last_listed() -> None:
    assert shard_listing_request(ARN) == {"StreamArn": ARN}
    assert shard_listing_request(ARN, "shard-9") == {
        "StreamArn": ARN,
        "ExclusiveStartShardId": "shard-9",
    }


def test_a_listing_says_its_shards_which_are_closed_and_where_the_next_starts() -> None:
    response = {
        "StreamDescription": {
            "StreamViewType": "NEW_AND_OLD_IMAGES",
            "Shards": [
                {
                    "ShardId": "s1",
                    "SequenceNumberRange": {"StartingSequenceNumber": "1"},
                },
                {
                    "ShardId": "s2",
                    "ParentShardId": "s0",
                    "SequenceNumberRange": {
                        "StartingSequenceNumber": "2",
                        "EndingSequenceNumber": "9",
                    },
                },
            ],
            "LastEvaluatedShardId": "s2",
        }
    }
    assert shard_listing_of(response) == ShardListing(
        "NEW_AND_OLD_IMAGES", (Shard("s1"), Shard("s2", "s0", closed=True)), "s2"
    )
    assert shard_listing_of({}) == ShardListing("", (), None)


def test_an_iterator_is_asked_for_at_the_oldest_record_or_after_a_position() -> None:
    read = ShardRead(ARN, "s1")
    assert read.iterator_request(None) == {
        "StreamArn": ARN,
        "ShardId": "s1",
        "ShardIteratorType": "TRIM_HORIZON",
    }
    assert read.iterator_request("0007") == {
        "StreamArn": ARN,
        "ShardId": "s1",
        "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
        "SequenceNumber": "0007",
    }


def test_a_page_is_read_with_its_iterator_and_the_read_s_limit() -> None:
    assert ShardRead(ARN, "s1").request("it-1") == {"ShardIterator": "it-1", "Limit": PAGE_LIMIT}
    assert ShardRead(ARN, "s1", limit=5).request("it-2") == {"ShardIterator": "it-2", "Limit": 5}


@pytest.mark.parametrize("limit", [0, PAGE_LIMIT + 1])
def test_a_limit_getrecords_refuses_is_refused_before_anything_is_sent(limit: int) -> None:
    with pytest.raises(ValidationError) as caught:
        ShardRead(ARN, "s1", limit=limit)
    assert caught.value.rule == "stream.limit"


@given(
    sequences=st.lists(st.integers(0, 10**20).map(lambda n: f"{n:021d}"), max_size=5),
    after=st.none() | st.just("000000000000000000007"),
    closed=st.booleans(),
)
def test_a_page_stands_at_its_last_record_or_where_it_started(
    sequences: list[str], after: str | None, closed: bool
) -> None:
    response: dict[str, Any] = {"Records": [record(s) for s in sequences]}
    if not closed:
        response["NextShardIterator"] = "it-next"
    page = record_page_of(response, after)
    assert [sequence_of(r) for r in page.records] == sequences
    assert page.position == (sequences[-1] if sequences else after)
    assert page.next == (None if closed else "it-next")
    assert page.last is closed
    assert page == RecordPage(page.records, page.position, page.next)
