"""The coordinator never waits for ever: every outcome of a unit's future is handled, and a
run without progress stops with a typed error.

The run is kept in the memory ledger (with leases that expire on a clock the test moves) and
its units go to a fake executor whose futures end as a test scripts them: a worker that dies,
a cancelled future, a worker that claimed its unit and was never heard of again.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from lsiorm._jobs.engine import JobRun, run_unit, run_units
from lsiorm._jobs.ledger import JobRecord, UnitClaim, UnitRecord
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._jobs.watch import (
    STALL_LEASES,
    STALL_MINIMUM,
    WORKER_FAILURES,
    Submissions,
    resend_after,
    stall_limit,
)
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm.errors import JobError, ValidationError
from support.job_fakes import ITEMS_PER_UNIT, START, Clock, count_kind, drive, one_page

UNITS = [ScanUnit(n, 3) for n in range(3)]
LEASE = 10.0
POLL = 0.5


JOB = JobRun({"kind": "count"}, UNITS, count_kind, one_page, {})


class Executor:
    """Hands each submission of a unit the next outcome scripted for it (then ``run``).

    ``die``: the worker died before claiming (the future fails with a non-lsiorm error);
    ``refuse``: the unit raised an lsiorm error;
    ``cancel``: the future was cancelled; ``vanish``: the worker claimed the unit and was never
    heard of again (its future never ends); ``queue``: the future never starts; ``run``: the
    unit runs here, with the submission's claim token.
    """

    def __init__(self, ledger: MemoryLedger, clock: Clock, script: dict[int, list[str]]) -> None:
        self.ledger = ledger
        self.clock = clock
        self.script = {n: list(outcomes) for n, outcomes in script.items()}
        self.sent: dict[int, int] = {}

    def submit(self, job_id: str, unit: Unit) -> Future[Any]:
        assert isinstance(unit, ScanUnit)
        self.sent[unit.segment] = self.sent.get(unit.segment, 0) + 1
        outcomes = self.script.get(unit.segment) or ["run"]
        outcome = outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]
        future: Future[Any] = Future()
        if outcome == "die":
            future.set_exception(RuntimeError("worker process died"))
        elif outcome == "refuse":
            future.set_exception(ValidationError("jobs.test", "the unit refused to run"))
        elif outcome == "cancel":
            future.cancel()
        elif outcome == "vanish":
            drive(self.ledger.claim(job_id, unit), self.clock)
        elif outcome == "run":
            run = run_unit(Context(), count_kind, one_page, self.ledger, job_id, unit)
            future.set_result(drive(run, self.clock))
        return future


def coordinate(
    script: dict[int, list[str]],
) -> tuple[Callable[[], tuple[JobRecord, bool]], MemoryLedger, Executor, Clock]:
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=LEASE)
    executor = Executor(ledger, clock, script)

    def go() -> tuple[JobRecord, bool]:
        op = run_units(Context(), ledger, JOB, submit=executor.submit, clock=clock, poll=POLL)
        result: tuple[JobRecord, bool] = drive(op, clock)
        return result

    return go, ledger, executor, clock


def the_run(ledger: MemoryLedger) -> JobRecord:
    (job,) = drive(ledger.jobs(), Clock())
    record: JobRecord = drive(ledger.job(job.id), Clock())
    return record


def test_a_unit_whose_worker_died_or_whose_future_was_cancelled_is_sent_again() -> None:
    go, _, executor, _ = coordinate({0: ["die", "cancel", "run"], 2: ["cancel", "run"]})
    record, _ = go()
    assert record.state == "done"
    assert executor.sent == {0: 3, 1: 1, 2: 2}
    assert [u.runs for u in record.units] == [1, 1, 1]  # the failed ones never claimed
    assert record.counts() == {"scanned": ITEMS_PER_UNIT * len(UNITS)}


def test_a_worker_failing_again_and_again_stops_the_job_with_a_typed_error() -> None:
    go, ledger, executor, _ = coordinate({1: ["die"]})
    with pytest.raises(JobError) as caught:
        go()
    assert caught.value.rule == "jobs.worker-failed"
    assert caught.value.units == (UNITS[1].id,)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert executor.sent[1] == WORKER_FAILURES + 1  # sent again WORKER_FAILURES times
    record = the_run(ledger)
    assert record.state == "paused"  # a later run resumes it
    assert [u.state for u in record.units] == ["done", "pending", "done"]


def test_an_lsiorm_error_a_unit_raised_stops_the_job_as_it_is() -> None:
    go, ledger, executor, _ = coordinate({1: ["refuse"]})
    with pytest.raises(ValidationError) as caught:
        go()
    assert caught.value.rule == "jobs.test"
    assert executor.sent[1] == 1  # not sent again
    assert the_run(ledger).state == "paused"


def test_a_unit_whose_worker_vanished_is_sent_again_once_its_lease_lapses() -> None:
    go, _, executor, clock = coordinate({0: ["vanish", "run"]})
    record, _ = go()
    assert record.state == "done"
    assert executor.sent == {0: 2, 1: 1, 2: 1}
    assert [u.runs for u in record.units] == [2, 1, 1]  # taken over from the vanished worker
    assert LEASE <= clock.now - START < 2 * LEASE  # sent again as soon as the lease lapsed
    assert record.counts() == {"scanned": ITEMS_PER_UNIT * len(UNITS)}


def test_a_unit_left_in_a_queue_while_the_run_stands_still_is_sent_again() -> None:
    # Unit 1's first future never starts (an executor that lost it); the others finish at once.
    go, _, executor, clock = coordinate({1: ["queue", "run"]})
    record, _ = go()
    assert record.state == "done"
    assert executor.sent == {0: 1, 1: 2, 2: 1}
    assert [u.runs for u in record.units] == [1, 1, 1]
    # Sent again after a while without progress (a minute here), long before the stall limit.
    assert resend_after(LEASE) <= clock.now - START < resend_after(LEASE) + 4 * POLL
    assert resend_after(LEASE) == 60.0 < stall_limit(LEASE)
    assert record.counts() == {"scanned": ITEMS_PER_UNIT * len(UNITS)}


WAIT = resend_after(LEASE)


@pytest.mark.parametrize(("quiet_for", "resent"), [(0.0, False), (WAIT - 1, False), (WAIT, True)])
def test_a_queued_unit_is_sent_again_only_once_the_whole_run_stood_still_a_while(
    quiet_for: float, resent: bool
) -> None:
    clock = Clock()
    futures: list[Future[Any]] = []

    def submit(job_id: str, unit: Unit) -> Future[Any]:
        futures.append(Future())
        return futures[-1]

    sent = Submissions(submit, "job", lease=LEASE, clock=clock)
    free = UnitRecord(UNITS[0], "pending", {})
    sent.step([free], clock.now, quiet_since=clock.now)
    clock.now += 2 * WAIT  # queued for long, while other units may have made progress
    sent.step([free], clock.now, quiet_since=clock.now - quiet_for)
    assert len(futures) == (2 if resent else 1)
    assert futures[0].cancelled() is resent  # the lost submission does not run later
    held = UnitRecord(UNITS[0], "running", {}, owner="worker", lease=clock.now + LEASE)
    sent.step([held], clock.now, quiet_since=clock.now - 2 * WAIT)
    assert len(futures) == (2 if resent else 1)  # a held unit is never sent again meanwhile


def test_a_run_without_progress_stops_with_a_typed_error_naming_its_units() -> None:
    go, ledger, _, clock = coordinate({1: ["queue"], 2: ["vanish", "queue"]})
    with pytest.raises(JobError) as caught:
        go()
    assert caught.value.rule == "jobs.stalled"
    assert caught.value.units == (UNITS[1].id, UNITS[2].id)
    assert f"{UNITS[1].id} (free)" in str(caught.value)
    assert f"{UNITS[2].id} (held, lapsed" in str(caught.value)
    # The stall limit after the last change: the vanished worker's unit, sent again once its
    # lease lapsed, went to the queue that never starts anything either.
    assert stall_limit(LEASE) < clock.now - START <= stall_limit(LEASE) + 2 * POLL
    record = the_run(ledger)
    assert record.state == "paused"
    assert [u.state for u in record.units] == ["done", "pending", "running"]


@pytest.mark.parametrize("outcomes", [["run"], ["die", "run"], ["vanish", "run"]])
def test_a_run_that_progresses_never_looks_stalled(outcomes: list[str]) -> None:
    go, _, _, _ = coordinate({n: outcomes for n in range(len(UNITS))})
    record, _ = go()
    assert record.state == "done"


def test_a_coordinator_waits_three_lease_periods_and_five_minutes_at_least() -> None:
    assert (STALL_LEASES, STALL_MINIMUM) == (3, 300.0)
    assert stall_limit(60.0) == 300.0  # workers that start slowly are not stuck
    assert stall_limit(200.0) == 600.0


class Mute(MemoryLedger):
    """A ledger whose workers mark their units done and die before they mark the run done."""

    def finish(self, job_id: str, claim: UnitClaim) -> Operation[bool]:
        yield from super().finish(job_id, claim)
        drive(self.set_state(job_id, "running", only_from=("done",)), Clock())
        return False


@pytest.mark.parametrize("executor", [False, True], ids=["threads", "executor"])
def test_a_run_whose_units_are_all_done_is_done_even_if_its_last_worker_never_said_so(
    executor: bool,
) -> None:
    clock = Clock()
    ledger = Mute(clock, lease_seconds=LEASE)
    submit = Executor(ledger, clock, {}).submit if executor else None
    op = run_units(Context(), ledger, JOB, submit=submit, clock=clock, poll=POLL)
    record, _ = drive(op, clock)
    assert [u.state for u in record.units] == ["done"] * len(UNITS)
    assert record.state == "done"  # not running: the same job run again starts afresh
    assert the_run(ledger).state == "done"
