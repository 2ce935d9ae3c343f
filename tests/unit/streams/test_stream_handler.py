"""The stream handler under Lambda's retry semantics, on records recorded from DynamoDB Local.

Lambda, given a partial batch response for a stream, checkpoints before the lowest sequence
number reported and delivers every record from there again (`support.stream_records.redeliver`
does what it does). The property tests drive a handler through such redeliveries until a batch
succeeds, with a function that fails now and then, and check that each item's changes apply in
the stream's order, each once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import ChangeEvent, RetryPolicy, Session, Table, stream_handler
from lsiorm.errors import ValidationError
from support.fakes import MarksClient
from support.stream_records import Customer, Order, load_event, order_record, redeliver, shop

marks = Table("StreamMarks", "PK", ttl_attribute="expires")


def _sequences(event: dict[str, Any]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]


def test_each_change_is_handed_over_in_order_and_the_batch_succeeds() -> None:
    seen: list[tuple[str, str]] = []

    @stream_handler(shop)
    def handler(change: ChangeEvent[Customer | Order]) -> None:
        assert change.entity_type is not None
        seen.append((change.name, change.entity_type.__name__))

    assert handler(load_event("new_and_old"), None) == {"batchItemFailures": []}
    # The item of no declared entity is skipped.
    assert seen == [
        ("INSERT", "Customer"),
        ("INSERT", "Order"),
        ("MODIFY", "Order"),
        ("MODIFY", "Customer"),
        ("REMOVE", "Order"),
    ]


def test_only_and_unknown_choose_what_the_function_gets() -> None:
    names: list[str] = []

    @stream_handler(shop, only=[Order])
    def orders(change: ChangeEvent[Order]) -> None:
        names.append(change.name)

    batch = orders.handle(load_event("new_and_old"))
    assert names == ["INSERT", "MODIFY", "REMOVE"]
    assert len(batch.applied) == 3
    assert len(batch.skipped) == 3

    passed: list[object] = []
    everything = stream_handler(shop, unknown="pass")(lambda c: passed.append(c.entity_type))
    everything(load_event("new_and_old"))
    assert passed == [Customer, Order, Order, None, Customer, Order]

    strict = stream_handler(shop, unknown="fail", after_failure="hold-item")(lambda c: None)
    result = strict.handle(load_event("keys_only"))
    (failure,) = result.failed
    assert isinstance(failure.error, ValidationError)
    assert failure.error.rule == "stream.unknown-entity"
    assert result.response == {"batchItemFailures": [{"itemIdentifier": failure.sequence_number}]}


def test_without_idempotency_the_batch_stops_at_the_first_failure() -> None:
    event = load_event("new_and_old")
    calls: list[str] = []

    @stream_handler(shop, unknown="pass")
    def handler(change: ChangeEvent[Any]) -> None:
        calls.append(change.sequence_number)
        if change.name == "MODIFY":
            raise RuntimeError("downstream is down")

    response = handler(event, None)
    sequences = _sequences(event)
    assert calls == sequences[:3]
    assert response == {"batchItemFailures": [{"itemIdentifier": s} for s in sequences[2:]]}


def test_holding_the_item_back_goes_on_with_the_others() -> None:
    event = load_event("new_and_old")
    sequences = _sequences(event)
    calls: list[str] = []

    @stream_handler(shop, unknown="pass", after_failure="hold-item")
    def handler(change: ChangeEvent[Any]) -> None:
        calls.append(change.sequence_number)
        if change.sequence_number == sequences[1]:  # the order's INSERT
            raise RuntimeError("no")

    batch = handler.handle(event)
    # The order's MODIFY and REMOVE wait; the customer's changes and the other item go on.
    assert calls == [sequences[0], sequences[1], sequences[3], sequences[4]]
    assert [f.sequence_number for f in batch.failed] == [sequences[1]]
    assert batch.held == [sequences[2], sequences[5]]
    assert batch.response == {
        "batchItemFailures": [
            {"itemIdentifier": s} for s in (sequences[1], sequences[2], sequences[5])
        ]
    }


def test_an_event_that_is_not_a_stream_batch_is_refused() -> None:
    handler = stream_handler(shop)(lambda change: None)
    with pytest.raises(ValidationError) as caught:
        handler({"Records": "no"}, None)
    assert caught.value.rule == "stream.event"
    broken = copy.deepcopy(load_event("new_and_old"))
    del broken["Records"][0]["dynamodb"]["Keys"]
    assert handler.handle(broken).failed[0].error.rule == "stream.record"  # type: ignore[attr-defined]


# -- under Lambda's redeliveries ----------------------------------------------------------------

Story = list[tuple[int, int]]  # (item, total) per record, in shard order
stories = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 99)), min_size=1, max_size=12)
#: Which records fail, and on how many deliveries each.
failures = st.dictionaries(st.integers(0, 11), st.integers(1, 3), max_size=4)


def _records(story: Story) -> list[dict[str, Any]]:
    return [order_record(n + 1, "c1", f"o{item}", total) for n, (item, total) in enumerate(story)]


def _flaky(failing: dict[int, int], applied: list[tuple[str, int]]) -> Callable[..., None]:
    tries: dict[int, int] = {}

    def apply(change: ChangeEvent[Order]) -> None:
        assert change.new is not None
        n = change.new.v - 1
        tries[n] = tries.get(n, 0) + 1
        if tries[n] <= failing.get(n, 0):
            raise RuntimeError(f"record {n} fails on delivery {tries[n]}")
        applied.append((change.new.oid, n))

    return apply


def _until_done(handler: Callable[..., dict[str, Any]], records: list[dict[str, Any]]) -> int:
    deliveries = 0
    batch = records
    while batch:
        deliveries += 1
        assert deliveries < 50, "Lambda would give up; the handler never got through"
        batch = redeliver(batch, handler({"Records": batch}, None))
    return deliveries


def _in_stream_order(story: Story) -> dict[str, list[int]]:
    order: dict[str, list[int]] = {}
    for n, (item, _) in enumerate(story):
        order.setdefault(f"o{item}", []).append(n)
    return order


@given(story=stories, failing=failures)
def test_without_idempotency_redeliveries_apply_each_change_once_in_order(
    story: Story, failing: dict[int, int]
) -> None:
    applied: list[tuple[str, int]] = []
    handler = stream_handler(shop, only=[Order])(_flaky(failing, applied))
    _until_done(handler, _records(story))
    assert sorted(n for _, n in applied) == list(range(len(story))), "each record once"
    by_item: dict[str, list[int]] = {}
    for oid, n in applied:
        by_item.setdefault(oid, []).append(n)
    assert by_item == _in_stream_order(story)


@given(story=stories, failing=failures)
def test_with_idempotency_redeliveries_apply_each_change_once_in_order(
    story: Story, failing: dict[int, int]
) -> None:
    applied: list[tuple[str, int]] = []
    client = MarksClient()
    with Session(client) as session:
        handler = stream_handler(shop, only=[Order], idempotency=marks, session=session)(
            _flaky(failing, applied)
        )
        _until_done(handler, _records(story))
    assert sorted(n for _, n in applied) == list(range(len(story))), "each record once"
    by_item: dict[str, list[int]] = {}
    for oid, n in applied:
        by_item.setdefault(oid, []).append(n)
    assert by_item == _in_stream_order(story)
    assert len(client.items) == len(story), "one mark per applied record"


def test_holding_the_item_back_without_marks_would_apply_changes_twice() -> None:
    # Why "stop" is the default without idempotency: Lambda redelivers the records after a
    # failure that succeeded, and without marks they are applied again.
    story: Story = [(0, 1), (1, 2), (0, 3)]
    applied: list[tuple[str, int]] = []
    handler = stream_handler(shop, only=[Order], after_failure="hold-item")(_flaky({0: 1}, applied))
    _until_done(handler, _records(story))
    assert sorted(n for _, n in applied) == [0, 1, 1, 2]


def test_a_redelivered_batch_applies_nothing_twice() -> None:
    applied: list[tuple[str, int]] = []
    with Session(MarksClient()) as session:
        handler = stream_handler(shop, only=[Order], idempotency=marks, session=session)(
            _flaky({}, applied)
        )
        records = _records([(0, 1), (1, 2), (0, 3)])
        first = handler.handle({"Records": records})
        again = handler.handle({"Records": records})
    assert len(first.applied) == 3
    assert again.applied == []
    assert again.duplicates == first.applied
    assert sorted(n for _, n in applied) == [0, 1, 2]


def test_a_lost_mark_is_reported_and_a_redelivery_applies_the_change_again() -> None:
    applied: list[tuple[str, int]] = []
    client = MarksClient(lose_puts=1)
    with Session(client, retry=RetryPolicy(max_attempts=1)) as session:
        handler = stream_handler(shop, only=[Order], idempotency=marks, session=session)(
            _flaky({}, applied)
        )
        records = _records([(0, 1)])
        first = handler.handle({"Records": records})
        again = handler.handle({"Records": records})
    assert first.unmarked == first.applied
    assert first.response == {"batchItemFailures": []}
    assert again.applied == first.applied, "without its mark, a redelivered change runs again"
    assert applied == [("o0", 0), ("o0", 0)]


def test_an_async_function_is_refused_when_decorated() -> None:
    async def apply(change: ChangeEvent[Order]) -> None:
        return None

    with pytest.raises(ValidationError) as caught:
        stream_handler(shop)(apply)
    assert caught.value.rule == "stream.async-function"
