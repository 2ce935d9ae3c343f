"""The catch-up's replay rule, shard order and requests, without an engine.

The property test is a model of one source item: a random history of states (absent, or an
item whose destination key may change with its fields), a copy that read the item at a random
instant, and a replay of the stream from a position before the copy, with a crash and a resume
that replays some records again. Whatever the order of events, the destination must end at the
derived final state, or hold nothing when the item was deleted.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm._migration.stream_replay import (
    Replay,
    ShardPage,
    read_shard,
    record_of,
    replay_of,
    replay_request,
    shard_order,
)
from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Call, Done, Operation, advance
from lsiorm._requests.stream_pages import Shard
from lsiorm.errors import DynamoError, ResourceNotFoundError, ValidationError

NAMES = ("PK", "SK")
DEST = Table("Dest", "PK", "SK")

# A state: None (absent), or (sort key variant, value, an attribute no model declares or None).
State = tuple[int, int, int | None] | None
states = st.none() | st.tuples(st.integers(0, 2), st.integers(0, 3), st.none() | st.integers(0, 2))


def derived(state: State) -> dict[str, Any] | None:
    """The destination image of a state (its sort key derives from the variant)."""
    if state is None:
        return None
    variant, value, extra = state
    item: dict[str, Any] = {"PK": {"S": "P"}, "SK": {"S": f"K{variant}"}, "v": {"N": str(value)}}
    if extra is not None:
        item["x"] = {"N": str(extra)}
    return item


def key(item: dict[str, Any]) -> tuple[str, str]:
    return item["PK"]["S"], item["SK"]["S"]


def apply(destination: dict[tuple[str, str], dict[str, Any]], replay: Replay | None) -> bool:
    """Apply a replay to a model destination with DynamoDB's conditions; False if refused."""
    if replay is None:
        return False
    if replay.delete is not None:
        assert replay.old is not None
        if destination.get(key(replay.old)) != replay.old:
            return False
        del destination[key(replay.old)]
    elif replay.put is not None:
        there = destination.get(key(replay.put))
        if (replay.old is None and there is not None) or (
            replay.old is not None and there != replay.old
        ):
            return False
    if replay.put is not None:
        destination[key(replay.put)] = replay.put
    return True


@settings(max_examples=1000)
@given(
    before=states,
    history=st.lists(states, min_size=1, max_size=12),
    data=st.data(),
)
def test_replay_ends_at_the_last_state_whatever_the_copy_read(
    before: State, history: list[State], data: st.DataObject
) -> None:
    states_ = [before, *history]  # the item at the stream's position, then its changes
    records = [
        (derived(old), derived(new))
        for old, new in itertools.pairwise(states_)
        if not (old is None and new is None)
    ]
    # The copy read the item in one of its states after the stream's position.
    read = data.draw(st.integers(0, len(states_) - 1), label="copy read state")
    destination: dict[tuple[str, str], dict[str, Any]] = {}
    copied = derived(states_[read])
    if copied is not None:
        destination[key(copied)] = copied
    # The catch-up replays from the start, is cut short, and resumes from an earlier record.
    crash = data.draw(st.integers(0, len(records)), label="crash after")
    resume = data.draw(st.integers(0, crash), label="resume from")
    for old, new in [*records[:crash], *records[resume:]]:
        apply(destination, replay_of(old, new, NAMES))
    final = derived(states_[-1])
    assert destination == ({} if final is None else {key(final): final})


def test_replay_shapes() -> None:
    a = {"PK": {"S": "P"}, "SK": {"S": "A"}, "v": {"N": "1"}}
    a2 = {**a, "v": {"N": "2"}}
    b = {"PK": {"S": "P"}, "SK": {"S": "B"}, "v": {"N": "2"}}
    assert replay_of(None, None, NAMES) is None
    assert replay_of(None, a, NAMES) == Replay(NAMES, None, a, None)
    assert replay_of(a, None, NAMES) == Replay(NAMES, a, None, {"PK": a["PK"], "SK": a["SK"]})
    assert replay_of(a, a2, NAMES) == Replay(NAMES, a, a2, None)
    assert replay_of(a, b, NAMES) == Replay(NAMES, a, b, {"PK": a["PK"], "SK": a["SK"]})


def test_replay_requests() -> None:
    a = {"PK": {"S": "P"}, "SK": {"S": "A"}, "v": {"N": "1"}}
    b = {"PK": {"S": "P"}, "SK": {"S": "B"}}
    insert = replay_request(replay_of(None, a, NAMES), DEST, frozenset())  # type: ignore[arg-type]
    assert insert == (
        "PutItem",
        {
            "TableName": "Dest",
            "Item": a,
            "ConditionExpression": "attribute_not_exists(#n0)",
            "ExpressionAttributeNames": {"#n0": "PK"},
        },
    )
    changed = {**a, "v": {"N": "2"}}
    update = replay_request(replay_of(a, changed, NAMES), DEST, frozenset({"w"}))  # type: ignore[arg-type]
    assert update == (
        "PutItem",
        {
            "TableName": "Dest",
            "Item": changed,
            "ConditionExpression": "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2 AND "
            "attribute_not_exists(#u3)",
            "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "v", "#u3": "w"},
            "ExpressionAttributeValues": {":u0": {"S": "P"}, ":u1": {"S": "A"}, ":u2": {"N": "1"}},
        },
    )
    remove = replay_request(replay_of(b, None, NAMES), DEST, frozenset({"w"}))  # type: ignore[arg-type]
    assert remove == (
        "DeleteItem",
        {
            "TableName": "Dest",
            "Key": b,
            "ConditionExpression": "#u0 = :u0 AND #u1 = :u1 AND attribute_not_exists(#u2)",
            "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "w"},
            "ExpressionAttributeValues": {":u0": {"S": "P"}, ":u1": {"S": "B"}},
        },
    )
    moved = replay_request(replay_of(b, a, NAMES), DEST, frozenset())  # type: ignore[arg-type]
    assert moved[0] == "TransactWriteItems"
    delete, put = moved[1]["TransactItems"]
    assert delete["Delete"]["Key"] == b
    assert put["Put"] == {"TableName": "Dest", "Item": a}


@given(st.lists(st.integers(0, 30), min_size=1, max_size=30, unique=True), st.data())
def test_shard_order_puts_parents_first(ids: list[int], data: st.DataObject) -> None:
    shards = []
    for position, shard in enumerate(ids):
        parents = [*ids[:position], 99]  # 99: a parent the stream no longer lists
        parent = data.draw(st.none() | st.sampled_from(parents))
        shards.append(Shard(f"s{shard}", None if parent is None else f"s{parent}"))
    shuffled = data.draw(st.permutations(shards))
    order = shard_order(shuffled)
    assert sorted(s.id for s in order) == sorted(s.id for s in shards)
    place = {s.id: n for n, s in enumerate(order)}
    for shard in order:
        if shard.parent in place:
            assert place[shard.parent] < place[shard.id]


def test_a_record_of_get_records() -> None:
    when = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    raw = {
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"PK": {"S": "P"}},
            "OldImage": {"PK": {"S": "P"}, "v": {"N": "1"}},
            "NewImage": {"PK": {"S": "P"}, "v": {"N": "2"}},
            "SequenceNumber": "42",
            "ApproximateCreationDateTime": when,
        },
    }
    record = record_of(raw)
    assert (record.event, record.sequence, record.created) == ("MODIFY", "42", when.timestamp())
    assert record.old == {"PK": {"S": "P"}, "v": {"N": "1"}}
    assert record_of({"eventName": "REMOVE", "dynamodb": {"SequenceNumber": "1"}}).new is None


# -- reading a shard ----------------------------------------------------------------------------

QUICK = Context(RetryPolicy(max_attempts=1, initial=0.0, maximum=0.0))


def drive(op: Any, answers: list[Any]) -> tuple[Any, list[Call]]:
    """Run ``op``, answering its calls in turn (an exception is thrown in)."""
    calls: list[Call] = []
    step = advance(op)
    while not isinstance(step, Done):
        assert isinstance(step, Call)
        calls.append(step)
        answer = answers.pop(0)
        step = advance(op, error=answer) if isinstance(answer, Exception) else advance(op, answer)
    return step.value, calls


def raw(sequence: str) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"SequenceNumber": sequence, "Keys": {}}}


def test_reading_a_shard_renews_an_expired_iterator_after_the_last_record() -> None:
    pages: list[ShardPage] = []

    def on_page(page: ShardPage) -> Operation[bool]:
        pages.append(page)
        return True
        yield

    expired = DynamoError("expired", code="ExpiredIteratorException")
    op = read_shard(QUICK, "arn", "s1", "7", on_page)
    done, calls = drive(
        op,
        [
            {"ShardIterator": "i1"},
            {"Records": [raw("8"), raw("9")], "NextShardIterator": "i2"},
            expired,
            {"ShardIterator": "i3"},
            {"Records": [], "NextShardIterator": "i4"},
        ],
    )
    assert done is False  # an open shard, caught up
    assert [c.params.get("SequenceNumber") for c in calls if c.operation == "GetShardIterator"] == [
        "7",
        "9",
    ]
    assert [r.sequence for p in pages for r in p.records] == ["8", "9"]


def test_a_shard_the_stream_trimmed_past_the_position_is_refused() -> None:
    def on_page(page: ShardPage) -> Operation[bool]:
        return True
        yield

    trimmed = DynamoError("trimmed", code="TrimmedDataAccessException")
    with pytest.raises(ValidationError) as refused:
        drive(read_shard(QUICK, "arn", "s1", "7", on_page), [trimmed])
    assert refused.value.rule == "migrate.stream-trimmed"
    gone = ResourceNotFoundError("gone", code="ResourceNotFoundException")
    assert drive(read_shard(QUICK, "arn", "s1", None, on_page), [gone])[0] is True
    # Gone once read up to a record: the stream dropped it with the records after that one.
    with pytest.raises(ValidationError) as refused:
        drive(read_shard(QUICK, "arn", "s1", "7", on_page), [gone])
    assert refused.value.rule == "migrate.stream-trimmed"
    assert "after record 7 of shard s1" in str(refused.value)
    # Trimmed between two pages: the iterator in hand points at records that are gone.
    with pytest.raises(ValidationError) as refused:
        drive(
            read_shard(QUICK, "arn", "s1", "7", on_page),
            [{"ShardIterator": "i1"}, {"Records": [raw("8")], "NextShardIterator": "i2"}, trimmed],
        )
    assert refused.value.rule == "migrate.stream-trimmed"
    assert "after record 8 of shard s1" in str(refused.value)


def test_a_closed_shard_is_read_to_its_end() -> None:
    def on_page(page: ShardPage) -> Operation[bool]:
        return True
        yield

    done, calls = drive(
        read_shard(QUICK, "arn", "s1", None, on_page, closed=True),
        [
            {"ShardIterator": "i1"},
            {"Records": [], "NextShardIterator": "i2"},
            {"Records": [raw("1")]},
        ],
    )
    assert done is True
    assert calls[0].params["ShardIteratorType"] == "TRIM_HORIZON"


def test_an_empty_map_written_without_its_type_is_read_as_the_empty_map() -> None:
    """DynamoDB Local writes an empty map in a stream record as ``{}``; DynamoDB as
    ``{"M": {}}``. Both are read as the empty map, at any depth."""
    raw = {
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"PK": {"S": "a"}},
            "OldImage": {"PK": {"S": "a"}, "tags": {}},
            "NewImage": {
                "PK": {"S": "a"},
                "tags": {"M": {}},
                "deep": {"M": {"inner": {}, "list": {"L": [{}, {"S": "x"}]}}},
            },
            "SequenceNumber": "1",
        },
    }
    record = record_of(raw)
    assert record.old == {"PK": {"S": "a"}, "tags": {"M": {}}}
    assert record.new == {
        "PK": {"S": "a"},
        "tags": {"M": {}},
        "deep": {"M": {"inner": {"M": {}}, "list": {"L": [{"M": {}}, {"S": "x"}]}}},
    }
