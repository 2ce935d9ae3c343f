"""The catch-up's pure parts: how a shard's pages are read, which records are applied, the lag.

The page source and the kind are operations; here each request they send is answered by the
test, so what they send and when they pause is checked without an engine.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table
from lsiorm._jobs.engine import GAUGES
from lsiorm._jobs.ledger import JobRecord, UnitRecord
from lsiorm._jobs.resumable import DONE
from lsiorm._jobs.units import ShardUnit
from lsiorm._migration.catch_up import (
    RETENTION,
    ShardKind,
    lag_of,
    new_shard_units,
    server_time,
    shard_pages,
)
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Operation, Sleep, advance
from lsiorm._requests.stream_pages import Shard
from lsiorm.errors import DynamoError, ResourceNotFoundError, ValidationError
from support.fakes import Clock

ARN = "arn:aws:dynamodb:us-east-1:1:table/t/stream/2026"
T0 = 1_800_000_000.0


def record(seq: int, created: float | None, key: str = "k") -> dict[str, Any]:
    """A GetRecords record of an insert of item ``key`` at time ``created``."""
    body: dict[str, Any] = {
        "Keys": {"PK": {"S": key}, "SK": {"S": "A"}},
        "NewImage": {"PK": {"S": key}, "SK": {"S": "A"}},
        "SequenceNumber": f"{seq:021d}",
    }
    if created is not None:
        body["ApproximateCreationDateTime"] = datetime.datetime.fromtimestamp(
            created, datetime.timezone.utc
        )
    return {"eventName": "INSERT", "dynamodb": body}


def run(op: Operation[Any], answers: Iterator[Any]) -> tuple[Any, list[Any]]:
    """Run ``op`` answering each request from ``answers`` (an exception is raised into it)."""
    sent: list[Any] = []
    step = advance(op)
    while not isinstance(step, Done):
        sent.append(step)
        if isinstance(step, Sleep):
            step = advance(op)
            continue
        answer = next(answers)
        if isinstance(answer, BaseException):
            step = advance(op, error=answer)
        else:
            step = advance(op, answer)
    return step.value, sent


def calls(sent: list[Any]) -> list[str]:
    return [s.operation if isinstance(s, Call) else "sleep" for s in sent]


def test_a_page_keeps_the_next_iterator_and_pauses_at_the_records_of_the_pass() -> None:
    clock = Clock(T0)
    pages = shard_pages(ARN, clock=clock)
    unit = ShardUnit("s1")
    answers = iter(
        [
            {"ShardIterator": "it-1"},
            {"Records": [record(1, T0 - 100), record(2, T0 - 50)], "NextShardIterator": "it-2"},
            {"Records": [record(3, T0 - 10)], "NextShardIterator": "it-3"},
            {"Records": [record(4, T0)], "NextShardIterator": "it-4"},
        ]
    )
    first, sent = run(pages(Context(), unit, None), answers)
    assert calls(sent) == ["GetShardIterator", "GetRecords"]
    assert sent[0].params["ShardIteratorType"] == "TRIM_HORIZON"
    assert (first.position, first.read, first.pause) == (f"{2:021d}", 2, False)
    # The next page reads on with the iterator the last one gave: no new iterator.
    second, sent = run(pages(Context(), unit, first.position), answers)
    assert calls(sent) == ["GetRecords"]
    assert sent[0].params == {"ShardIterator": "it-2", "Limit": 1000}
    assert (second.position, second.pause) == (f"{3:021d}", False)
    # A record written after the pass began: the unit pauses there.
    third, _ = run(pages(Context(), unit, second.position), answers)
    assert (third.position, third.pause) == (f"{4:021d}", True)


def test_an_empty_page_pauses_and_a_closed_shard_read_to_its_end_is_done() -> None:
    pages = shard_pages(ARN, clock=Clock(T0))
    unit = ShardUnit("s1", start=f"{7:021d}")
    answers = iter([{"ShardIterator": "it"}, {"Records": [], "NextShardIterator": "it-b"}])
    empty, sent = run(pages(Context(), unit, None), answers)
    assert sent[0].params["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER"
    assert sent[0].params["SequenceNumber"] == f"{7:021d}"  # the unit's start
    assert (empty.position, empty.read, empty.pause) == (f"{7:021d}", 0, True)
    answers = iter([{"Records": [record(8, T0 - 9)]}])  # no NextShardIterator: closed, read
    last, _ = run(pages(Context(), unit, empty.position), answers)
    assert (last.position, last.read) == (DONE, 1)


def test_a_shard_the_stream_no_longer_holds_is_read_to_its_end() -> None:
    pages = shard_pages(ARN, clock=Clock(T0))
    answers = iter([ResourceNotFoundError("gone", code="ResourceNotFoundException")])
    page, _ = run(pages(Context(), ShardUnit("s9"), None), answers)
    assert (page.position, page.read) == (DONE, 0)


@given(age=st.floats(min_value=0.0, max_value=3 * RETENTION))
def test_a_shard_gone_before_it_was_read_is_refused_once_it_may_have_held_changes(
    age: float,
) -> None:
    """A shard the stream dropped held only records over a day old: nothing is lost while
    they are all older than the cutoff; once the cutoff is over a day ago, they may not be."""
    cutoff = T0 - age
    pages = shard_pages(ARN, cutoff=cutoff, clock=Clock(T0))
    answers = iter([ResourceNotFoundError("gone", code="ResourceNotFoundException")])
    if age <= RETENTION:
        page, _ = run(pages(Context(), ShardUnit("s9"), None), answers)
        assert (page.position, page.read) == (DONE, 0)
    else:
        with pytest.raises(ValidationError) as refused:
            run(pages(Context(), ShardUnit("s9"), None), answers)
        assert refused.value.rule == "migrate.stream-trimmed"
        assert "shard s9" in str(refused.value)


def test_a_throttled_read_waits_and_an_expired_iterator_is_replaced() -> None:
    pages = shard_pages(ARN, clock=Clock(T0))
    throttled = DynamoError("slow down", code="LimitExceededException")
    expired = DynamoError("old", code="ExpiredIteratorException")
    answers = iter(
        [
            {"ShardIterator": "it-1"},
            throttled,
            expired,
            {"ShardIterator": "it-2"},
            {"Records": [record(1, T0 - 5)], "NextShardIterator": "it-3"},
        ]
    )
    page, sent = run(pages(Context(), ShardUnit("s1"), None), answers)
    assert calls(sent) == [
        "GetShardIterator",
        "GetRecords",
        "sleep",
        "GetRecords",
        "GetShardIterator",
        "GetRecords",
    ]
    assert page.read == 1


def test_a_read_past_the_pass_time_pauses_even_while_old_records_keep_coming() -> None:
    clock = Clock(T0)
    pages = shard_pages(ARN, clock=clock, pass_seconds=30.0)
    answers = iter(
        [{"ShardIterator": "it"}, {"Records": [record(1, T0 - 999)], "NextShardIterator": "n"}]
    )
    clock.now += 31.0
    page, _ = run(pages(Context(), ShardUnit("s1"), None), answers)
    assert page.pause


DEST = Table("dest", "PK", "SK")


class Item(Entity, table=DEST, keys={"PK": "{pk}", "SK": "A"}):
    pk: str


def _visit(kind: ShardKind, records: list[dict[str, Any]], recovered: dict[str, Any]) -> Any:
    part = kind.new_part()
    for raw in records:
        run(kind.visit(part, raw, recovered), iter(()))
    return part


@given(
    # Whole milliseconds: a record's time travels as a datetime (microseconds).
    ages=st.lists(
        st.integers(-600_000, 600_000).map(lambda ms: ms / 1000), min_size=1, max_size=12
    ),
    margin=st.integers(0, 400_000).map(lambda ms: ms / 1000),
)
def test_records_older_than_the_cutoff_are_skipped_only_until_one_is_applied(
    ages: list[float], margin: float
) -> None:
    cutoff = T0 - margin
    kind = ShardKind(Context(), DEST, cutoff=cutoff)
    records = [record(n, T0 + age) for n, age in enumerate(ages)]
    part = _visit(kind, records, {})
    first = next((n for n, age in enumerate(ages) if T0 + age >= cutoff), len(ages))
    # A prefix of the shard's records is read and not applied; from the first one at or after
    # the cutoff on, every record is applied, old or not.
    assert part.counts.get("before_copy", 0) == first
    assert [r.sequence for r, _ in part.records] == [f"{n:021d}" for n in range(first, len(ages))]
    assert part.counts["records"] == len(ages)
    assert kind.carry() == ({"applying": True} if first < len(ages) else {})


def test_skipping_does_not_start_again_after_a_resume() -> None:
    kind = ShardKind(Context(), DEST, cutoff=T0)
    kind.restore({"applying": True})
    part = _visit(kind, [record(5, T0 - 1000)], {f"{5:021d}": 1})
    assert part.counts.get("before_copy", 0) == 0
    assert part.records[0][1]  # named by the cut-short page's intent: maybe applied already
    unknown = ShardKind(Context(), DEST, cutoff=None)
    part = _visit(unknown, [record(6, T0 - 10**6)], {})
    assert part.counts.get("before_copy", 0) == 0  # no copy start known: nothing is skipped


def _unit(state: str, **gauges: Any) -> UnitRecord:
    return UnitRecord(ShardUnit("s"), state, {}, notes={GAUGES: gauges} if gauges else {})


def test_the_lag_is_the_age_of_the_last_record_read_of_a_shard_not_caught_up() -> None:
    now = T0
    units = [
        _unit("pending", caught_up=True, last_created=None),
        _unit("pending", caught_up=False, last_created=now - 7),
        _unit("pending", caught_up=False, last_created=now - 3),
        _unit("done", caught_up=False, last_created=now - 99),  # read to its end
        _unit("pending"),  # not read in this pass
    ]
    assert lag_of(units, now) == 7
    assert lag_of(units[:1], now) == 0


def test_new_shards_get_units_and_an_older_release_s_positions_are_kept() -> None:
    known = JobRecord(
        "j",
        "migrate-catch-up",
        "paused",
        {},
        "f",
        0,
        0,
        1,
        0,
        units=(UnitRecord(ShardUnit("a"), "pending", {}),),
    )
    shards = [Shard("a"), Shard("b", "a"), Shard("c", "a", closed=True), Shard("d")]
    legacy = {"c": {"seq": "0042", "done": True}, "d": {"seq": "0099", "done": False}}
    units = new_shard_units(known, shards, legacy)
    assert units == [ShardUnit("b", "a"), ShardUnit("d", None, "0099")]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"date": "Sun, 29 Nov 2026 07:23:56 GMT"}, 1795937036.0),
        ({}, T0),
        ({"date": "not a date"}, T0),
    ],
)
def test_the_copy_start_is_dynamodb_s_own_time(headers: dict[str, str], expected: float) -> None:
    answer = {"ResponseMetadata": {"HTTPHeaders": headers}}
    assert server_time(answer, Clock(T0)) == expected
