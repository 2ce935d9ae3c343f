"""Pacing per resource: a throttle's reasons say what to slow (a hot key, or the table), and a
worker slows exactly that, AIMD per resource, decaying back once the throttles stop."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Table, ThrottledError, ThrottlingReason, TransactionCanceledError
from lsiorm._jobs.budget import RateBudget, ThrottleWatch, initial_rate
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.pacing import (
    MAX_HOT_KEYS,
    Pacer,
    Resource,
    Signal,
    hot_partitions,
    signals,
    throttle_counts,
    throttled_resources,
    written,
)
from lsiorm._jobs.units import ScanUnit
from lsiorm._ops.hooks import HookRequest
from lsiorm._ops.steps import Done, Sleep, advance
from lsiorm.errors import CancellationReason
from support.fakes import Clock

ORDERS = Table("Orders", "PK", "SK")
ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"
HOT = Resource("Orders", "PK=hot")
COLD = Resource("Orders", "PK=cold")
TABLE = Resource("Orders")


def put(pk: str, sk: str = "1") -> HookRequest:
    item = {"PK": {"S": pk}, "SK": {"S": sk}, "n": {"N": "1"}}
    return HookRequest("PutItem", {"TableName": "Orders", "Item": item}, (ORDERS,))


def throttle(*reasons: str, resource: str = ARN) -> ThrottledError:
    return ThrottledError(
        "slow down",
        code="ProvisionedThroughputExceededException",
        reasons=[ThrottlingReason(r, resource) for r in reasons],
    )


def seen(request: HookRequest, error: BaseException) -> list[Signal]:
    return signals(request.operation, request.params, request.tables, error)


# -- what a throttle names --------------------------------------------------------------------


def test_a_table_key_range_throttle_names_the_partition_key() -> None:
    found = seen(put("hot"), throttle("TableWriteKeyRangeThroughputExceeded"))
    assert found == [Signal(HOT, "write", "TableWriteKeyRangeThroughputExceeded", "Orders")]


@pytest.mark.parametrize(
    "reason",
    [
        "TableWriteProvisionedThroughputExceeded",
        "TableWriteMaxOnDemandThroughputExceeded",
        "TableWriteAccountLimitExceeded",
        "IndexWriteKeyRangeThroughputExceeded",
    ],
)
def test_other_limits_name_the_table(reason: str) -> None:
    resource = f"{ARN}/index/GSI1" if reason.startswith("Index") else ARN
    (found,) = seen(put("hot"), throttle(reason, resource=resource))
    assert found.resource == TABLE
    assert found.operation == "write"
    assert found.where == ("Orders/index/GSI1" if reason.startswith("Index") else "Orders")


def test_a_throttle_without_reasons_names_the_table_and_a_read_is_a_read() -> None:
    (write,) = seen(put("hot"), ThrottledError("x", code="ThrottlingException"))
    assert (write.resource, write.operation, write.reason) == (
        TABLE,
        "write",
        "ThrottlingException",
    )
    scan = HookRequest("Scan", {"TableName": "Orders"}, (ORDERS,))
    (read,) = seen(scan, throttle("TableReadKeyRangeThroughputExceeded"))
    assert (read.resource, read.operation) == (TABLE, "read")  # a scan names no key


def test_a_cancelled_transaction_names_each_throttled_action() -> None:
    request = HookRequest(
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "Orders", "Item": {"PK": {"S": "hot"}, "SK": {"S": "1"}}}},
                {"ConditionCheck": {"TableName": "Orders", "Key": {"PK": {"S": "b"}, "SK": {}}}},
                {"Delete": {"TableName": "Orders", "Key": {"PK": {"S": "c"}, "SK": {"S": "1"}}}},
            ]
        },
        (ORDERS,),
    )
    reasons = [
        CancellationReason(0, "ThrottlingError", ""),
        CancellationReason(1, "None", ""),
        CancellationReason(2, "ProvisionedThroughputExceeded", ""),
    ]
    error = TransactionCanceledError("cancelled", reasons=reasons)
    assert seen(request, error) == [
        Signal(HOT, "write", "ThrottlingError", "Orders"),
        Signal(TABLE, "write", "ProvisionedThroughputExceeded", "Orders"),
    ]
    conflict = [CancellationReason(0, "TransactionConflict", "")]
    assert seen(request, TransactionCanceledError("c", reasons=conflict)) == []


def test_other_errors_name_nothing() -> None:
    assert seen(put("hot"), TransactionCanceledError("c", reasons=[])) == []
    assert seen(put("hot"), ValueError("no")) == []


def test_a_write_names_the_table_and_each_partition() -> None:
    old = {"PK": {"S": "a"}, "SK": {"S": "1"}}
    assert written(ORDERS, old, {**old, "SK": {"S": "2"}}) == (
        Resource("Orders"),
        Resource("Orders", "PK=a"),
    )
    assert written(ORDERS, old, {"PK": {"S": "b"}}, None) == (
        Resource("Orders"),
        Resource("Orders", "PK=a"),
        Resource("Orders", "PK=b"),
    )


# -- the pacer --------------------------------------------------------------------------------


def writing(pacer: Pacer, clock: Clock, resource: Resource, writes: int, gap: float) -> None:
    """``writes`` writes of one unit each, ``gap`` seconds apart, unpaced."""
    for _ in range(writes):
        assert pacer.reserve([resource], 1.0) == 0.0
        clock.now += gap


def test_a_resource_nobody_throttled_is_never_paced() -> None:
    clock = Clock()
    pacer = Pacer(clock)
    writing(pacer, clock, HOT, 500, 0.0)
    assert pacer.paced == {}


def test_a_hot_key_is_paced_at_half_its_rate_and_other_keys_are_not() -> None:
    clock = Clock()
    pacer = Pacer(clock, floor=1.0)
    writing(pacer, clock, HOT, 40, 0.05)  # 20 units a second
    pacer.throttled(HOT)
    assert pacer.paced == {HOT: pytest.approx(10.0)}
    waits = []
    for _ in range(10):
        waits.append(pacer.reserve([TABLE, HOT], 1.0))
        assert pacer.reserve([TABLE, COLD], 1.0) == 0.0  # the other keys write as before
    # Ten writes to the hot key: a tenth of a second apart.
    assert waits == pytest.approx([0.1 * i for i in range(10)])


def test_each_write_that_meets_the_limit_halves_the_rate_down_to_the_floor() -> None:
    clock = Clock()
    pacer = Pacer(clock, cooldown=0.1, floor=2.0)
    writing(pacer, clock, HOT, 40, 0.05)
    pacer.throttled(HOT)
    clock.now += 1.0
    pacer.throttled(HOT)  # the retries of the same request: no write since, no halving
    assert pacer.paced[HOT] == pytest.approx(10.0)
    for expected in (5.0, 2.5, 2.0, 2.0):
        clock.now += 1.0
        pacer.reserve([HOT], 1.0)  # a write sent at this rate
        pacer.throttled(HOT)  # met the limit
        assert pacer.paced[HOT] == pytest.approx(expected)
    pacer.reserve([HOT], 1.0)
    pacer.throttled(HOT)  # within the cooldown of the last halving: none
    assert pacer.paced[HOT] == pytest.approx(2.0)


def test_a_key_no_longer_written_is_forgotten() -> None:
    clock = Clock()
    pacer = Pacer(clock, forget=10.0)
    writing(pacer, clock, HOT, 40, 0.05)
    pacer.throttled(HOT)
    clock.now += 10.0
    pacer.throttled(COLD)  # another key, long after: the hot one is done with
    assert set(pacer.paced) == {COLD}


def test_calm_raises_the_rate_back_and_then_forgets_the_key() -> None:
    clock = Clock()
    pacer = Pacer(clock, calm=2.0, forget=10.0, floor=1.0)
    writing(pacer, clock, HOT, 40, 0.05)  # 20 units a second
    pacer.throttled(HOT)
    rates = []
    for _ in range(15):
        clock.now += 2.0
        pacer.reserve([HOT], 0.0)
        rates.append(pacer.paced.get(HOT))
    # A tenth of the rate that met the limit more every calm period; back at that rate, and
    # calm for ``forget`` seconds, the key is not paced any more.
    assert rates[:4] == pytest.approx([12.0, 14.0, 16.0, 18.0])
    assert rates[4:] == [None] * 11
    assert pacer.reserve([HOT], 1.0) == 0.0


@given(
    writes=st.lists(
        st.tuples(st.floats(0.0, 0.5), st.floats(0.5, 4.0), st.booleans()), min_size=1, max_size=60
    )
)
def test_a_paced_key_never_gets_more_than_its_rate(writes: list[tuple[float, float, bool]]) -> None:
    """Whatever the timing, each write to a paced key is sent (after its wait) at least its
    units over the rate after the one before: the key never gets more than its rate."""
    clock = Clock()
    pacer = Pacer(clock, floor=1.0, cooldown=0.0)
    writing(pacer, clock, HOT, 20, 0.1)  # 10 units a second
    pacer.throttled(HOT)
    sent: list[tuple[float, float, float]] = []  # (sent at, units, rate then)
    for gap, units, throttled in writes:
        clock.now += gap
        if throttled:
            pacer.throttled(HOT)
        wait = pacer.reserve([HOT], units)
        rate = pacer.paced.get(HOT)  # the rate its turn was taken at (a calm spell raised it)
        if rate is not None:
            sent.append((clock.now + wait, units, rate))
        else:
            sent.clear()  # forgotten: no longer paced, a new start if throttled again
        assert pacer.reserve([COLD], units) == 0.0
    for (before, units, rate), (after, _, _) in itertools.pairwise(sent):
        assert after - before >= units / rate - 1e-9


# -- the worker's budget ----------------------------------------------------------------------


def run(op: Any, clock: Clock | None = None) -> Any:
    """Run an operation that sends nothing; its sleeps move ``clock``; return the time slept."""
    step = advance(op)
    waited = 0.0
    while not isinstance(step, Done):
        assert isinstance(step, Sleep), step
        waited += step.seconds
        if clock is not None:
            # At least a microsecond: a wait of 1e-15 s left by float rounding would not move a
            # clock at 1000 s, and a token bucket would wait for it for ever.
            clock.now += max(step.seconds, 1e-6)
        step = advance(op)
    return waited


def budget_on(write: float | None, read: float | None = None) -> tuple[RateBudget, Clock]:
    clock = Clock()
    ledger = MemoryLedger(clock)
    record, _ = _opened(ledger, initial_rate(write, read))
    budget = RateBudget(ledger, record.id, sync_every=0.0, cooldown=1.0, calm=10.0, clock=clock)
    run(budget.sync(), clock)
    return budget, clock


def _opened(ledger: MemoryLedger, rate: dict[str, float]) -> Any:
    op = ledger.open({"kind": "test"}, [ScanUnit()], rate)
    step = advance(op)
    while not isinstance(step, Done):
        step = advance(op)
    return step.value


def test_a_hot_key_slows_its_writes_not_the_jobs_rate() -> None:
    budget, clock = budget_on(100.0, 50.0)
    watch = ThrottleWatch(budget)
    for _ in range(20):
        run(budget.take_write(1.0, written(ORDERS, {"PK": {"S": "hot"}})), clock)
        clock.now += 0.05
    watch.error(put("hot"), throttle("TableWriteKeyRangeThroughputExceeded"))
    clock.now += 1.0
    run(budget.sync(), clock)
    assert budget.rate["write"] == 100.0  # the job's rate stays
    assert budget.rate["read"] == 50.0
    assert HOT in budget.pacer.paced
    hot = sum(run(budget.take_write(1.0, written(ORDERS, {"PK": {"S": "hot"}}))) for _ in range(5))
    cold = sum(
        run(budget.take_write(1.0, written(ORDERS, {"PK": {"S": "cold"}}))) for _ in range(5)
    )
    assert hot > 0.0
    assert cold == 0.0


def test_a_table_limit_halves_the_jobs_write_rate_only() -> None:
    budget, clock = budget_on(100.0, 50.0)
    ThrottleWatch(budget).error(put("hot"), throttle("TableWriteProvisionedThroughputExceeded"))
    clock.now += 1.0
    run(budget.sync(), clock)
    assert (budget.rate["write"], budget.rate["read"]) == (50.0, 50.0)
    assert budget.pacer.paced == {}  # the shared rate is the answer


def test_without_a_budget_a_table_limit_paces_the_table_in_the_worker() -> None:
    budget, clock = budget_on(None)
    for _ in range(20):
        run(budget.take_write(1.0, written(ORDERS, {"PK": {"S": f"k{_}"}})), clock)
        clock.now += 0.05
    ThrottleWatch(budget).error(put("k1"), throttle("TableWriteMaxOnDemandThroughputExceeded"))
    assert set(budget.pacer.paced) == {TABLE}
    waits = [run(budget.take_write(1.0, written(ORDERS, {"PK": {"S": "other"}}))) for _ in range(3)]
    assert sum(waits) > 0.0


def test_the_throttles_are_counted_for_the_report() -> None:
    budget, _ = budget_on(None)
    watch = ThrottleWatch(budget)
    watch.error(put("hot"), throttle("TableWriteKeyRangeThroughputExceeded"))
    watch.error(put("hot"), throttle("TableWriteKeyRangeThroughputExceeded"))
    watch.error(put("b"), throttle("TableWriteMaxOnDemandThroughputExceeded"))
    counts = budget.counts({})
    assert counts == {
        "throttled:Orders TableWriteKeyRangeThroughputExceeded": 2,
        "hot:Orders PK=hot": 2,
        "throttled:Orders TableWriteMaxOnDemandThroughputExceeded": 1,
    }
    assert budget.counts(counts) == {}  # counted once
    assert throttled_resources(counts) == {
        "Orders TableWriteKeyRangeThroughputExceeded": 2,
        "Orders TableWriteMaxOnDemandThroughputExceeded": 1,
    }
    assert hot_partitions(counts) == {"Orders PK=hot": 2}


def test_a_unit_names_a_bounded_number_of_hot_keys() -> None:
    found = [
        Signal(Resource("T", f"PK={n}"), "write", "TableWriteKeyRangeThroughputExceeded", "T")
        for n in range(MAX_HOT_KEYS + 5)
    ]
    counts = throttle_counts(found, {})
    named = [name for name in counts if name.startswith("hot:")]
    assert len(named) == MAX_HOT_KEYS + 1
    assert counts["hot:T (other keys)"] == 5
    # Keys already named keep counting; new ones go with the others.
    more = throttle_counts([found[0], found[-1]], counts)
    assert more == {
        "throttled:T TableWriteKeyRangeThroughputExceeded": 2,
        "hot:T PK=0": 1,
        "hot:T (other keys)": 1,
    }
