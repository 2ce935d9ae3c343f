"""One unit under the job engine: a claim is known to the coordinator before it is sent, a
stopped unit gives its lease up, and a unit cut short anywhere is finished by the next worker.

The claim goes to the ledger in DynamoDB, where the test answers each request itself and cuts
the unit short (as a stop of its thread does) between the claim's two requests; the other
tests keep the run in the memory ledger.
"""

from __future__ import annotations

import time
from typing import Any

from lsiorm._jobs.engine import (
    LEDGER_ITEMS,
    JobRun,
    PageRead,
    Tally,
    run_unit,
    run_units,
    without_partition,
)
from lsiorm._jobs.ledger import JobLedger, JobRecord, LedgerLocation
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.resumable import DONE, JobProgress, Position
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.steps import Call, Operation, Sleep, advance
from lsiorm.errors import ConditionFailedError
from support.job_fakes import ITEMS_PER_UNIT, START, Clock, count_kind, drive, one_page

UNITS = [ScanUnit(n, 3) for n in range(3)]
LEASE = 10.0
UNIT = ScanUnit(1, 4)
LOCATION = LedgerLocation("tab", "PK", "SK")


def _unit_started(tally: Tally) -> tuple[Operation[str], str]:
    ledger = JobLedger(Context(), LOCATION)
    op = run_unit(
        Context(),
        lambda ctx, budget: None,  # type: ignore[arg-type, return-value]
        lambda ctx, unit, position: None,  # type: ignore[arg-type]
        ledger,
        "job-1",
        UNIT,
        tally=tally,
    )
    step = advance(op)
    assert isinstance(step, Call)
    assert step.operation == "UpdateItem"
    ((_, token),) = [(c.unit, c.owner) for c, _ in tally.held.values()]
    assert {"S": token} in step.params["ExpressionAttributeValues"].values()  # the new owner
    return op, token


def _stored_unit(owner: str) -> dict[str, Any]:
    """The unit's item as the ledger stores it, held by ``owner``."""
    unit = JobLedger(Context(), LOCATION).entities.unit(
        job="job-1", unit_id=UNIT.id, unit={}, state="running", counts={}, owner=owner
    )
    return unit.to_wire()


def _tally() -> Tally:
    job = JobRecord("job-1", "backfill", "running", {}, "f", 0.0, 0.0, 4, 0)
    return Tally(job, None, time.monotonic, None)


def test_a_claim_cut_short_after_it_applied_is_still_released_by_the_coordinator() -> None:
    tally = _tally()
    op, token = _unit_started(tally)
    # Noted before the claim is sent: the coordinator releases by this token.
    assert [(c.unit, c.owner) for c, _ in tally.held.values()] == [(UNIT, token)]
    applied = {"Attributes": _stored_unit(token)}
    step = advance(op, applied)  # the claim applied; next, its count on the run item
    assert isinstance(step, Call)
    assert step.params["Key"]["SK"] == {"S": "job#job-1"}
    op.close()  # a sibling was killed: this thread stops here
    assert [(c.unit, c.owner) for c, _ in tally.held.values()] == [(UNIT, token)]


def test_a_refused_claim_leaves_nothing_to_release() -> None:
    tally = _tally()
    op, _ = _unit_started(tally)
    refused = ConditionFailedError("refused", code="ConditionalCheckFailedException")
    step = advance(op, error=refused)
    assert isinstance(step, Call)
    assert step.operation == "GetItem"  # is the unit held by this very claim?
    held = {"Item": _stored_unit("another-worker")}
    done = advance(op, held)
    assert getattr(done, "value", None) == "held"
    assert tally.held == {}


def test_a_paused_run_stops_its_units_and_gives_their_leases_up() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=LEASE)
    job, _ = drive(ledger.open({"kind": "count"}, UNITS, {}), clock)
    assert drive(ledger.set_state(job.id, "paused"), clock)
    result = drive(run_unit(Context(), count_kind, one_page, ledger, job.id, UNITS[0]), clock)
    assert result == "lost"
    unit = drive(ledger.job(job.id), clock).units[0]
    assert (unit.state, unit.owner, unit.runs) == ("pending", None, 1)  # free for the resume


def test_a_unit_cut_short_between_its_last_commit_and_its_finish_is_finished_by_the_next() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=LEASE)
    job, _ = drive(ledger.open({"kind": "count"}, UNITS[:1], {}), clock)
    claim = drive(ledger.claim(job.id, UNITS[0]), clock)
    claim.position, claim.counts = DONE, {"scanned": ITEMS_PER_UNIT}
    drive(ledger.commit(job.id, claim, items=ITEMS_PER_UNIT), clock)
    drive(ledger.release(job.id, claim), clock)  # stopped before its finish
    result = drive(run_unit(Context(), count_kind, one_page, ledger, job.id, UNITS[0]), clock)
    assert result == "done"
    record = drive(ledger.job(job.id), clock)
    assert (record.state, record.units[0].state) == ("done", "done")
    assert record.counts() == {"scanned": ITEMS_PER_UNIT}  # nothing read or counted again


def test_the_first_progress_report_comes_before_the_first_page() -> None:
    """A paced page may take long: the report at the start draws the bar, and its clock runs
    from there."""
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=LEASE)
    seen: list[tuple[float, JobProgress]] = []

    def slow_page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        yield Sleep(5.0)  # the page's writes, waiting for the budget
        return (yield from one_page(ctx, unit, position))

    run = JobRun({"kind": "count"}, UNITS[:1], count_kind, slow_page, {}, total=ITEMS_PER_UNIT)

    def progress(state: JobProgress) -> None:
        seen.append((clock.now, state))

    drive(run_units(Context(), ledger, run, progress=progress, clock=clock), clock)
    (started, first), (ended, last) = seen
    assert (started, first.items, first.segments_done, first.elapsed) == (START, 0, 0, 0.0)
    assert (ended - started, last.items, last.segments_done) == (5.0, ITEMS_PER_UNIT, 1)
    assert last.elapsed == 5.0


def test_the_items_of_the_ledger_partition_are_counted_apart_not_read() -> None:
    table = Table("jobs", "PK", "SK")
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=LEASE)
    reserved = reserved_partition(table)
    assert reserved is not None

    def mixed(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        items: list[dict[str, Any]] = [{"PK": {"S": f"P#{n}"}} for n in range(3)]
        items += [{"PK": reserved, "SK": {"S": "job#1"}}, {"PK": reserved, "SK": {"S": "run#1"}}]
        return PageRead(items, DONE, len(items))
        yield  # sends nothing

    pages = without_partition(mixed, table, reserved)
    run = JobRun({"kind": "count"}, UNITS[:1], count_kind, pages, {})
    record, _ = drive(run_units(Context(), ledger, run, clock=clock), clock)
    assert record.counts() == {"scanned": 3, LEDGER_ITEMS: 2}
    assert record.items == 3
    assert without_partition(mixed, table, None) is mixed


def test_a_resumed_run_reports_from_its_ledger_counts_and_names_what_it_counts() -> None:
    record = JobRecord(
        "b-1", "backfill", "paused", {}, "f", 0.0, 60.0, 4, 2, items=1700, changed=40
    )
    seen: list[JobProgress] = []
    now = [100.0]
    tally = Tally(record, seen.append, lambda: now[0], 4000)
    tally.begin()
    now[0] = 102.0
    tally.page(100, 1, False)
    first, after = seen
    assert (first.items, first.changed, first.segments_done) == (1700, 40, 2)  # as the ledger
    assert (after.items, after.changed) == (1800, 41)
    assert after.counted == "rewritten"
    assert after.rate == 50.0  # what this process read, per second
    assert "1800/~4000 items, 41 rewritten" in str(after)


def _ledger_writes(sent: list[Call]) -> list[tuple[str, str]]:
    """Each request as (operation, the ledger item it names: ``job`` or ``unit``)."""
    return [(c.operation, c.params["Key"]["SK"]["S"].split("#")[0]) for c in sent]


def test_a_unit_that_pauses_stores_its_page_and_gives_its_lease_up_in_one_write() -> None:
    """A caught-up shard pauses after each page: its last page's position and its release are
    one conditional write, not a commit and then a release."""
    ledger = JobLedger(Context(), LOCATION)
    job = ledger.entities.job(
        id="job-1",
        kind="count",
        state="running",
        declaration={},
        fingerprint="f",
        created=START,
        updated=START,
        units=1,
        rate={},
        rate_at=0.0,
    ).to_wire()

    def pausing(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        items = [{"n": {"N": str(n)}} for n in range(ITEMS_PER_UNIT)]
        return PageRead(items, "seq-4", len(items), pause=True)
        yield  # sends nothing

    op = run_unit(Context(), count_kind, pausing, ledger, "job-1", UNIT, owner="me")
    sent: list[Call] = []
    step = advance(op)
    while isinstance(step, Call):
        sent.append(step)
        on_job = step.params["Key"]["SK"]["S"].startswith("job#")
        answer = {"Item": job} if step.operation == "GetItem" else {}
        if step.operation == "UpdateItem":
            answer = {"Attributes": job if on_job else _stored_unit("me")}
        step = advance(op, answer)
    assert getattr(step, "value", None) == "paused"
    assert _ledger_writes(sent) == [
        ("UpdateItem", "unit"),  # the claim
        ("UpdateItem", "job"),  # one more unit running
        ("GetItem", "job"),  # the run's state and rate
        ("UpdateItem", "unit"),  # the page's position and counts, the lease given up
        ("UpdateItem", "job"),  # one unit fewer running, the page's items
    ]
    paused, counted = sent[3].params, sent[4].params
    stored = list(paused["ExpressionAttributeValues"].values())
    assert {"S": "seq-4"} in stored
    assert {"S": "pending"} in stored
    assert {"M": {"scanned": {"N": str(ITEMS_PER_UNIT)}}} in stored
    assert "REMOVE" in paused["UpdateExpression"]  # owner and lease
    assert "ConditionExpression" in paused  # only while this claim holds it
    added = list(counted["ExpressionAttributeValues"].values())
    assert {"N": "-1"} in added
    assert {"N": str(ITEMS_PER_UNIT)} in added
