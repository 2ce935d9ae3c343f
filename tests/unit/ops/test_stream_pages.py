"""The stream reader: a stream's shards and a shard's records read page by page, each request
answered by the test."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Call, Done, Sleep, advance
from lsiorm._ops.stream_pages import THROTTLE_MAX, describe_shards, read_records
from lsiorm._requests.stream_pages import Shard, ShardRead
from lsiorm.errors import DynamoError, ResourceNotFoundError
from support.fakes import answering

QUICK = Context(RetryPolicy(max_attempts=1, initial=0.0, maximum=0.0))
ARN = "arn:aws:dynamodb:us-east-1:1:table/t/stream/2026"
READ = ShardRead(ARN, "s1", limit=10)


def record(sequence: str) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"SequenceNumber": sequence, "Keys": {}}}


def steps(op: Any, answers: list[Any]) -> tuple[Any, list[Any]]:
    """Run ``op`` answering each call in turn; return its result and every step (sleeps too)."""
    seen: list[Any] = []
    step = advance(op)
    while not isinstance(step, Done):
        seen.append(step)
        if isinstance(step, Call):
            answer = answers.pop(0)
            step = (
                advance(op, error=answer) if isinstance(answer, Exception) else advance(op, answer)
            )
        else:
            step = advance(op)
    return step.value, seen


def test_every_page_of_the_shards_is_listed() -> None:
    pages = [
        {
            "StreamDescription": {
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "Shards": [{"ShardId": "a", "SequenceNumberRange": {"EndingSequenceNumber": "5"}}],
                "LastEvaluatedShardId": "a",
            }
        },
        {"StreamDescription": {"Shards": [{"ShardId": "b", "ParentShardId": "a"}]}},
    ]
    (view, shards), calls = answering(describe_shards(QUICK, ARN), pages)
    assert view == "NEW_AND_OLD_IMAGES"  # a page that leaves the view out keeps it
    assert shards == [Shard("a", closed=True), Shard("b", "a")]
    assert [c.params for c in calls] == [
        {"StreamArn": ARN},
        {"StreamArn": ARN, "ExclusiveStartShardId": "a"},
    ]


def test_a_page_with_an_iterator_handed_on_asks_for_none() -> None:
    answer = {"Records": [record("8"), record("9")], "NextShardIterator": "it-2"}
    page, calls = answering(read_records(QUICK, READ, "7", "it-1"), [answer])
    assert [c.operation for c in calls] == ["GetRecords"]
    assert calls[0].params == {"ShardIterator": "it-1", "Limit": 10}
    assert (page.position, page.next, len(page.records)) == ("9", "it-2", 2)


def test_a_first_page_asks_for_an_iterator_at_its_position() -> None:
    answers = [{"ShardIterator": "it-1"}, {"Records": [], "NextShardIterator": "it-2"}]
    page, calls = answering(read_records(QUICK, READ, "7"), answers)
    assert calls[0].params["SequenceNumber"] == "7"
    assert (page.position, page.next, page.records) == ("7", "it-2", ())


def test_an_expired_iterator_is_replaced_at_the_position_and_a_throttled_read_waits() -> None:
    expired = DynamoError("old", code="ExpiredIteratorException")
    answers: list[Any] = [expired, {"ShardIterator": "it-2"}]
    answers += [DynamoError("slow down", code="LimitExceededException") for _ in range(7)]
    answers.append({"Records": [record("8")]})
    page, seen = steps(read_records(QUICK, READ, "7", "it-1"), answers)
    calls = [s for s in seen if isinstance(s, Call)]
    assert [c.operation for c in calls] == ["GetRecords", "GetShardIterator", *["GetRecords"] * 8]
    assert calls[1].params["SequenceNumber"] == "7"
    assert {c.params["ShardIterator"] for c in calls[2:]} == {"it-2"}
    waits = [s.seconds for s in seen if isinstance(s, Sleep)]
    assert waits == [0.2, 0.4, 0.8, 1.6, 3.2, THROTTLE_MAX, THROTTLE_MAX]
    assert (page.position, page.last) == ("8", True)


def test_a_shard_the_stream_no_longer_holds_has_no_page() -> None:
    gone = ResourceNotFoundError("gone", code="ResourceNotFoundException")
    page, calls = answering(read_records(QUICK, READ, None), [gone])
    assert page is None
    assert calls[0].params["ShardIteratorType"] == "TRIM_HORIZON"


@pytest.mark.parametrize("iterator", [None, "it-1"])
def test_a_trimmed_position_and_any_other_refusal_reach_the_caller(iterator: str | None) -> None:
    trimmed = DynamoError("trimmed", code="TrimmedDataAccessException")
    with pytest.raises(DynamoError) as caught:
        answering(read_records(QUICK, READ, "7", iterator), [trimmed])
    assert caught.value is trimmed
