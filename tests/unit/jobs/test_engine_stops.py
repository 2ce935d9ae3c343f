"""A run that stops stops all of it: `halting` refuses a unit's next request once a sibling
failed, a failing unit stops its siblings, and a coordinator whose run another process paused
stops too, with the job's report on the error."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm._jobs.engine import JobRun, PageRead, halting, run_units
from lsiorm._jobs.ledger import LeaseLost
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.resumable import DONE, Position
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Gather, Operation, Sleep, Step, advance
from lsiorm.errors import JobError, ThrottledError
from support.job_fakes import Clock, count_kind, drive

UNITS = [ScanUnit(n, 3) for n in range(3)]


def unit(calls: int, released: list[str], *, fail_at: int | None = None) -> Iterator[Step]:
    """A unit's operation: ``calls`` requests (failing at ``fail_at``); a `LeaseLost` makes it
    give its lease up (one more request) and return ``"lost"``, as `run_unit` does."""
    try:
        for n in range(calls):
            if n == fail_at:
                raise ThrottledError("throttled for good")
            yield Call("UpdateItem", {"n": n})
            yield Sleep(0.0)
    except LeaseLost:
        yield Call("UpdateItem", {"release": True})
        released.append("released")
        return "lost"
    return "done"


def run_alone(op: Operation[Any], sent: list[Step]) -> Any:
    step = advance(op)
    while not isinstance(step, Done):
        sent.append(step)
        step = advance(op, {})
    return step.value


def test_a_unit_runs_as_it_is_while_the_run_goes_on() -> None:
    stop = threading.Event()
    sent: list[Step] = []
    released: list[str] = []
    assert run_alone(halting(unit(3, released), stop), sent) == "done"
    assert [s.params for s in sent if isinstance(s, Call)] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert not stop.is_set()


@pytest.mark.parametrize("after", [0, 1, 2])
def test_a_stopped_run_refuses_the_next_request_and_lets_the_lease_go(after: int) -> None:
    stop = threading.Event()
    sent: list[Step] = []
    released: list[str] = []
    op = halting(unit(5, released), stop)
    step = advance(op)
    for _ in range(2 * after):
        sent.append(step)
        step = advance(op, {})
    stop.set()  # a sibling failed
    result = None
    while not isinstance(step, Done):
        sent.append(step)
        step = advance(op, {})
    result = step.value
    calls = [s.params for s in sent if isinstance(s, Call)]
    assert result == "stopped"
    assert released == ["released"]
    # The requests sent before the stop (the last one was on its way), then only the release.
    assert calls == [{"n": n} for n in range(after + 1)] + [{"release": True}]


def test_a_failing_unit_stops_the_others() -> None:
    stop = threading.Event()
    with pytest.raises(ThrottledError):
        run_alone(halting(unit(5, [], fail_at=2), stop), [])
    assert stop.is_set()


def test_a_unit_stopped_before_it_began_returns_quietly() -> None:
    def claimed_late() -> Iterator[Step]:
        yield Call("UpdateItem", {"claim": True})  # its claim: no handler of its own yet
        return "done"

    stop = threading.Event()
    stop.set()
    sent: list[Step] = []
    assert run_alone(halting(claimed_late(), stop), sent) == "stopped"
    assert sent == []


def drive_all(op: Operation[Any], clock: Clock, *, steps: int = 1000) -> Any:
    """`drive`, with a Gather's sub-operations each run to its end and the first failure thrown
    into the operation, as the drivers do; a coordinator that would go on for ever fails."""
    step = advance(op)
    for _ in range(steps):
        if isinstance(step, Done):
            return step.value
        if isinstance(step, Sleep):
            clock.now += step.seconds
            step = advance(op)
            continue
        assert isinstance(step, Gather), step
        results: list[Any] = []
        errors: list[BaseException] = []
        for sub in step.operations:
            try:
                results.append(drive_all(sub, clock))
            except Exception as exc:
                errors.append(exc)
        step = advance(op, error=errors[0]) if errors else advance(op, results)
    raise AssertionError(f"still running after {steps} steps")


def test_a_coordinator_whose_run_was_paused_elsewhere_stops_with_the_report() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock)

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        # Another process's error paused the run; this unit sees it at its next sync.
        (job,) = yield from ledger.jobs()
        yield from ledger.set_state(job.id, "paused")
        raise LeaseLost(f"job {job.id} is paused")

    run = JobRun({"kind": "count"}, UNITS, count_kind, page, {}, report=lambda r, _: r.counts())
    with pytest.raises(JobError) as caught:
        drive_all(run_units(Context(), ledger, run), clock)
    assert caught.value.rule == "jobs.paused"
    (record,) = drive(ledger.jobs(), clock)
    assert caught.value.job == record.id
    assert record.state == "paused"
    assert caught.value.report == drive(ledger.job(record.id), clock).counts()


def test_a_unit_error_reaches_the_caller_with_the_report_of_the_pages_committed() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock)

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ScanUnit)
        if unit.segment == 1:
            raise ThrottledError("throttled for good")
        return PageRead([{"n": {"N": "1"}}], DONE, 1)
        yield  # sends nothing

    run = JobRun({"kind": "count"}, UNITS, count_kind, page, {}, report=lambda r, _: r.counts())
    with pytest.raises(ThrottledError) as caught:
        drive_all(run_units(Context(), ledger, run), clock)
    # Units 0 and 2 each committed their page; unit 1 failed before its first.
    assert caught.value.report == {"scanned": 2}
