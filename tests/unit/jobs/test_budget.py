"""The shared rate: halved on throttling, raised by a tenth of the target after a calm period."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm._jobs.budget import RateBudget, ThrottleWatch, initial_rate, resumed_rate, retarget
from lsiorm._jobs.ledger import LeaseLost
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.units import ScanUnit
from lsiorm._ops.steps import Done, Sleep, advance
from lsiorm.errors import ThrottledError, ValidationError
from support.fakes import Clock


def run(op: Any) -> Any:
    step = advance(op)
    while not isinstance(step, Done):
        assert isinstance(step, Sleep), step
        step = advance(op)
    return step.value


def budget_on(write: float) -> tuple[RateBudget, MemoryLedger, str, Clock]:
    clock = Clock()
    ledger = MemoryLedger(clock)
    record, _ = run(ledger.open({"kind": "test"}, [ScanUnit()], initial_rate(write, None)))
    budget = RateBudget(ledger, record.id, sync_every=0.0, cooldown=1.0, calm=10.0, clock=clock)
    return budget, ledger, record.id, clock


def test_throttling_halves_the_rate_and_calm_raises_it_to_the_target() -> None:
    budget, _, _, clock = budget_on(100.0)
    run(budget.sync())
    assert budget.rate["write"] == 100.0
    watch = ThrottleWatch(budget)
    watch.error(None, ThrottledError("slow down"))
    watch.error(None, ThrottledError("slow down"))
    clock.now += 1.0
    run(budget.sync())
    assert budget.rate["write"] == 50.0  # two throttles seen at once: one decrease
    assert budget.write.rate == 50.0
    watch.error(None, ThrottledError("slow down"))
    run(budget.sync())
    assert budget.rate["write"] == 50.0  # at most one decrease per cooldown
    run(budget.sync())
    assert budget.rate["write"] == 50.0  # and no increase before a calm period
    for expected in (60.0, 70.0, 80.0, 90.0, 100.0, 100.0):
        clock.now += 10.0
        run(budget.sync())
        assert budget.rate["write"] == expected
    for _ in range(10):  # never below a twentieth of the target
        watch.error(None, ThrottledError("slow down"))
        clock.now += 1.0
        run(budget.sync())
    assert budget.rate["write"] == 5.0


def test_a_stopped_job_stops_its_workers_at_their_next_sync() -> None:
    budget, ledger, job, _ = budget_on(10.0)
    run(budget.sync())
    run(ledger.set_state(job, "paused"))
    with pytest.raises(LeaseLost):
        run(budget.sync())


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_a_budget_must_be_positive(value: float) -> None:
    with pytest.raises(ValidationError, match=r"jobs\.budget"):
        initial_rate(value, None)


def test_a_resume_with_a_budget_replaces_the_runs_and_one_without_keeps_it() -> None:
    stored = {"write": 50.0, "write_target": 100.0, "read": 7.0, "read_target": 8.0}
    assert resumed_rate(stored, initial_rate(4000, None)) == {
        "write": 4000.0,
        "write_target": 4000.0,
        "read": 7.0,
        "read_target": 8.0,
    }
    assert resumed_rate(stored, initial_rate(None, 20)) == {
        **stored,
        "read": 20.0,
        "read_target": 20.0,
    }
    assert resumed_rate(stored, initial_rate(None, None)) == stored
    assert resumed_rate({}, initial_rate(10, None)) == {"write": 10.0, "write_target": 10.0}


def test_the_workers_of_a_resumed_run_pace_to_the_new_budget() -> None:
    budget, ledger, job, clock = budget_on(100.0)
    run(budget.sync())
    assert budget.write.rate == 100.0
    assert run(retarget(ledger, job, initial_rate(None, None))) is None
    before, after = run(retarget(ledger, job, initial_rate(4000, None)))
    assert (before["write"], after["write"], after["write_target"]) == (100.0, 4000.0, 4000.0)
    assert run(ledger.job(job)).rate == after  # what the ledger holds, for every worker
    run(budget.sync())
    assert budget.write.rate == 4000.0
    clock.now += 10.0  # calm: the rate stays at the new target, not the old one
    run(budget.sync())
    assert budget.rate["write"] == 4000.0
