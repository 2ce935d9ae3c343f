"""The job engine: run a job's units, here in threads or on any executor, through the ledger.

A job is a declaration (what it is: kind, table, entity, options), a set of units
(`lsiorm._jobs.units`) and a `JobKind`: what it does with each item of a page. The engine does
everything else, the same for every kind (audit, backfill, relief, and later a table copy):

* `run_unit` claims a unit in the ledger, reads it page by page from its resume position until
  the source says there is no more (a filtered or empty page is not the end), hands each item
  to the kind, and commits the position with the page's counts; at the end it marks the unit
  done. A page whose items the kind will write is announced first (its *intent*, committed
  before any write), so that a worker that reads the page again after a crash or a takeover
  can tell its predecessor's writes from items that were current all along, and counts each
  item once.
* `run_units` is the coordinator: it opens the run (or resumes it), runs the units not done,
  in threads of this driver (a `Gather`) or by submitting them to an executor, waits for units
  that other workers hold, and returns the run as the ledger has it, with exact counts. A unit
  that waits for another (`waits_for`: a stream shard for its parent) starts only once that
  one is done.

Units that never end (the shards of a live stream) *pause*: their source says it has nothing
more for now (`PageRead.pause`); the unit commits its position and gives its lease up without
being done. ``run_units(..., once=True)`` runs each unit at most once (to its end or to a
pause) and returns: one pass of a stream's catch-up.

A stop (Ctrl-C, SIGTERM, a kill of this process's caller) pauses the run in the ledger, so
every worker stops at its next page; the units this process held are released; the next
`run_units` of the same declaration resumes it.

An error stops the run the same way, and promptly: a unit that fails stops its siblings in this
process before their next request (`halting`: the run's stop flag, checked before each request
and sleep of every unit, which then gives its lease up), the run is paused in the ledger (the
workers elsewhere stop at their next sync with it, a few seconds at most, and the coordinator
waits for their futures to end, a lease period at most), and only then does the error reach
the caller, with the job's report of what was done so far as its ``report`` (the counts of the
pages committed; `JobRun.report` makes it). So once the caller has the error, no worker of the
run writes any more.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Generic, Protocol, TypeVar

from lsiorm._jobs.budget import RateBudget, ThrottleWatch, retarget
from lsiorm._jobs.ledger import (
    RESUMABLE,
    JobRecord,
    LeaseLost,
    UnitClaim,
    UnitRecord,
    new_owner,
    open_ended,
)
from lsiorm._jobs.memory_ledger import Ledger
from lsiorm._jobs.resumable import DONE, JobProgress, Position, WireItem, counted_as, json_av
from lsiorm._jobs.scans import ScanSpec, split_off
from lsiorm._jobs.units import ScanUnit, Unit, waits_for
from lsiorm._jobs.watch import StallWatch, Submissions, stall_limit
from lsiorm._model.capacity import read_units
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_size
from lsiorm._ops.pages import read_page
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Gather, Operation, Sleep, advance
from lsiorm.errors import JobError, LsiormError

#: One INFO line per job step: a page of a unit done (counts only, never keys or items).
log = logging.getLogger("lsiorm.jobs")

__all__ = [
    "GAUGES",
    "LEDGER_ITEMS",
    "JobKind",
    "JobRun",
    "PageRead",
    "PageSource",
    "digest",
    "halting",
    "run_unit",
    "run_units",
    "scan_pages",
    "without_partition",
]

P = TypeVar("P")
#: The most notes (failed keys, examples) a unit keeps in the ledger, per kind of note; a kind
#: may set its own (``note_limit``: a migration's verification keeps the keys it re-checks).
MAX_NOTES = 20


#: The count, in a unit's counts, of the items of the jobs' ledger its pages left out.
LEDGER_ITEMS = "ledger_items"
#: The note of a unit that holds its kind's gauges (`JobKind` may have ``gauges(part)``): what
#: the unit stands at after its last page (a shard's lag), replaced by each page.
GAUGES = "gauges"


@dataclass(frozen=True)
class PageRead:
    """One page of a unit: its items, the position after it (DONE at the end), the items read
    (those a filter left out included, the ledger's not), the read units it cost, and the
    items of the jobs' ledger it left out (``skipped``)."""

    items: Sequence[WireItem]
    position: Position
    read: int
    units: float = 0.0
    skipped: int = 0
    #: The source has nothing more for now (a live stream shard caught up): the unit commits
    #: this page and gives its lease up, not done, to be run again later.
    pause: bool = False


class PageSource(Protocol):
    """Reads a unit's page from a position, sending its requests through ``ctx``."""

    def __call__(self, ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]: ...


class JobKind(Protocol[P]):
    """What one kind of job does with the items of a page; the engine does the rest.

    ``part`` collects one page's counts and notes. ``intent(items)`` is what the page will
    write, committed before the writes (an empty mapping when it writes nothing); after a
    resume, ``recovered`` holds the intent of the page that was cut short, for ``visit`` to
    recognize items its predecessor rewrote, and ``settle`` resolves the entries no item of
    the page matched (an item moved away, say). ``carry`` is what the kind keeps from page to
    page of a unit (committed with the position; ``restore`` gets it back on a resume).
    """

    def new_part(self) -> P: ...

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]: ...

    def visit(self, part: P, item: WireItem, recovered: dict[str, Any]) -> Operation[object]: ...

    def end_page(self, part: P) -> Operation[None]: ...

    def settle(self, part: P, recovered: dict[str, Any]) -> Operation[None]: ...

    def counts(self, part: P) -> dict[str, int]: ...

    def notes(self, part: P) -> dict[str, list[Any]]: ...

    def changed(self, counts: Mapping[str, int]) -> int: ...

    def carry(self) -> dict[str, Any]: ...

    def restore(self, carry: Mapping[str, Any]) -> None: ...


def digest(item: Mapping[str, Any]) -> str:
    """A short digest of a wire item or key: how intents name items.

    Two items that `same_item` finds equal have the same digest: numbers are compared as
    numbers and sets in any order.
    """
    text = json.dumps(_canonical(item), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        if len(value) == 1:
            ((tag, inner),) = value.items()
            if tag == "N" and isinstance(inner, str):
                return {"N": _number(inner)}
            if tag == "NS" and isinstance(inner, list):
                return {"NS": sorted(_number(v) for v in inner)}
            if tag in ("SS", "BS") and isinstance(inner, list):
                return {tag: sorted(json_av(list(inner)), key=str)}
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return json_av(value)


def _number(text: str) -> str:
    try:
        return str(Decimal(text).normalize())
    except InvalidOperation:
        return text


# -- reading a unit ---------------------------------------------------------------------------


def scan_pages(spec: ScanSpec, *, skip: Mapping[str, Any] | None = None) -> PageSource:
    """The pages of scan units of ``spec`` (a Query for a partition unit), each read by the one
    page reader (`lsiorm._ops.pages.read_page`) at the unit's position.

    ``skip`` is the partition key value of the jobs' ledger partition (`reserved_partition`):
    its items are neither handed to the job nor counted as read, only as ``skipped``.
    """
    table = spec.table
    read, skip = spec.read(skip)

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ScanUnit)
        segment = read.segment(unit.segment, unit.total_segments)
        start = position if isinstance(position, Mapping) else None
        got = yield from read_page(ctx, segment, start)
        items, skipped = split_off(table, got.items, skip)
        size = sum(item_size(i) for i in items)
        return PageRead(
            items,
            got.next if got.next is not None else DONE,
            got.scanned - skipped,
            read_units(size, consistent=False),
            skipped,
        )

    return page


def without_partition(
    pages: PageSource, table: Table, skip: Mapping[str, Any] | None
) -> PageSource:
    """``pages`` (an export's, say) without the items of partition ``skip`` (see `scan_pages`)."""
    if skip is None:
        return pages

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        read = yield from pages(ctx, unit, position)
        items, skipped = split_off(table, read.items, skip)
        if not skipped:
            return read
        return replace(read, items=items, read=read.read - skipped, skipped=read.skipped + skipped)

    return page


# -- one unit ---------------------------------------------------------------------------------


class Tally:
    """What this process's units did so far, for the progress callback; and the claims held."""

    def __init__(
        self,
        job: JobRecord,
        progress: Callable[[JobProgress], object] | None,
        clock: Callable[[], float],
        total: int | None,
    ) -> None:
        self.job = job
        # A resumed run goes on from what its ledger counted, as `lsiorm jobs` shows it.
        self.items = self.resumed = job.items
        self.changed = job.changed
        self.done = job.units_done
        self.progress = progress
        self.clock = clock
        self.started = clock()
        self.total = total
        self.held: dict[str, tuple[UnitClaim, Ledger]] = {}
        self.lock = threading.Lock()

    def begin(self) -> None:
        """Report the run before its first page: a progress bar is drawn, and its clock runs,
        from the start (a paced page may take a while)."""
        with self.lock:
            if self.progress is not None:
                self.progress(self.state())

    def page(self, items: int, changed: int, done: bool) -> None:
        with self.lock:
            self.items += items
            self.changed += changed
            self.done += done
            if self.progress is not None:
                self.progress(self.state())

    def state(self) -> JobProgress:
        return JobProgress(
            self.items,
            self.changed,
            self.clock() - self.started,
            self.total,
            self.done,
            self.job.units_total,
            self.job.id,
            counted=counted_as(self.job.kind),
            resumed=self.resumed,
        )


def _merge_notes(
    kept: dict[str, Any], new: Mapping[str, list[Any]], limit: int = MAX_NOTES
) -> None:
    for name, values in new.items():
        mine = kept.setdefault(name, [])
        mine.extend(values[: max(0, limit - len(mine))])
        if name == "failed":
            kept["failed_count"] = kept.get("failed_count", 0) + len(values)


def run_unit(
    ctx: Context,
    kind_for: Callable[[Context, RateBudget], JobKind[P]],
    pages: PageSource,
    ledger: Ledger,
    job_id: str,
    unit: Unit,
    *,
    tally: Tally | None = None,
    owner: str | None = None,
) -> Operation[str]:
    """Run one unit to its end; return ``"done"``, ``"paused"`` (its source has nothing more
    for now: its lease is given up), ``"held"`` (another worker has it) or ``"lost"`` (its
    lease was taken over, or the run stopped).

    ``kind_for(ctx, budget)`` makes the kind for this unit: its requests go through ``ctx``,
    whose hooks tell the unit's share of the rate budget about throttling. ``owner`` is the
    claim's token (a fresh one when None; a coordinator passes the one it gave the unit's
    submission). With a ``tally`` the token is registered there before the claim is sent,
    so that the coordinator gives the lease up even if this unit is cut short mid-claim.
    """
    token = owner or new_owner()
    _hold(tally, UnitClaim(unit, token), ledger)
    claim = yield from ledger.claim(job_id, unit, owner=token)
    if claim is None:
        _let_go(tally, unit)
        return "held"
    _hold(tally, claim, ledger)
    budget = RateBudget(ledger, job_id)
    ctx = ctx.with_hooks((*ctx.hooks, ThrottleWatch(budget)))
    kind = kind_for(ctx, budget)
    try:
        yield from budget.sync(force=True)
        recovered: dict[str, Any] = dict((claim.intent or {}).get("entries", {}))
        kind.restore((claim.intent or {}).get("carry", {}))
        first = bool(recovered)
        position = claim.position
        if position == DONE:
            # Its last page was committed and the unit was cut short before it was marked
            # done: mark it now (its counts are complete), or it would be claimed for ever.
            yield from ledger.finish(job_id, claim)
        while position != DONE:
            page = yield from pages(ctx, unit, position)
            part = kind.new_part()
            planned = kind.intent(page.items)
            if planned:
                claim.intent = {"entries": {**recovered, **planned}, "carry": kind.carry()}
                yield from ledger.commit(job_id, claim)
            for item in page.items:
                yield from kind.visit(part, item, recovered)
            yield from kind.end_page(part)
            if first:
                yield from kind.settle(part, recovered)
                first = False
            counts = kind.counts(part)
            if page.skipped:
                counts[LEDGER_ITEMS] = page.skipped
            for name, value in budget.counts(claim.counts).items():
                counts[name] = counts.get(name, 0) + value
            for name, value in counts.items():
                claim.counts[name] = claim.counts.get(name, 0) + value
            _merge_notes(claim.notes, kind.notes(part), getattr(kind, "note_limit", MAX_NOTES))
            gauges = getattr(kind, "gauges", None)
            if gauges is not None:  # what the unit stands at now, replaced by each page
                claim.notes[GAUGES] = gauges(part)
            claim.position = position = page.position
            carry = kind.carry()
            claim.intent = {"entries": recovered, "carry": carry} if recovered or carry else None
            changed = kind.changed(counts)
            pausing = page.pause and position != DONE
            if position == DONE:
                yield from ledger.commit(job_id, claim, items=page.read, changed=changed)
                yield from ledger.finish(job_id, claim)
            elif pausing:  # the page stored and the lease given up in one write
                yield from ledger.pause(job_id, claim, items=page.read, changed=changed)
            else:
                yield from ledger.commit(job_id, claim, items=page.read, changed=changed)
            log.info(
                "job %s, unit %s: a page of %d items%s; %d changed",
                job_id,
                unit.id,
                page.read,
                " (its last)" if position == DONE else "",
                changed,
            )
            if tally is not None:
                tally.page(page.read, changed, position == DONE)
            if pausing:
                _let_go(tally, unit)
                return "paused"
            if page.units and position != DONE:  # spent by the next read; none after the last
                yield from budget.take_read(page.units)
    except LeaseLost:
        # Taken over (then this release finds another owner and changes nothing), or the run
        # was paused or cancelled: give the lease up so a resume need not wait for it.
        yield from _release(ledger, job_id, claim)
        _let_go(tally, unit)
        return "lost"
    # On any other exit (an error, a stop) the claim stays registered: the coordinator
    # releases it.
    _let_go(tally, unit)
    return "done"


def _release(ledger: Ledger, job_id: str, claim: UnitClaim) -> Operation[None]:
    """Give a lease up if this claim still holds it; a failure leaves it to expire."""
    try:
        yield from ledger.release(job_id, claim)
    except LsiormError as exc:
        log.warning("job %s, unit %s: the lease was not given up (%s)", job_id, claim.unit.id, exc)


def _hold(tally: Tally | None, claim: UnitClaim, ledger: Ledger) -> None:
    if tally is not None:
        with tally.lock:
            tally.held[claim.unit.id] = (claim, ledger)


def _let_go(tally: Tally | None, unit: Unit) -> None:
    if tally is not None:
        with tally.lock:
            tally.held.pop(unit.id, None)


# -- the coordinator --------------------------------------------------------------------------


def halting(op: Operation[str], stop: threading.Event) -> Operation[str]:
    """Run one unit (`run_unit`) until the run stops: once ``stop`` is set, the unit's next
    request or sleep is refused (`LeaseLost` is thrown in, so it gives its lease up, and it
    returns ``"stopped"``); an error of its own sets ``stop``, so that its siblings stop."""
    thrown = False
    try:
        step = advance(op)
        while not isinstance(step, Done):
            if not thrown and isinstance(step, (Call, Sleep)) and stop.is_set():
                thrown = True
                step = advance(op, error=LeaseLost("the run stopped"))
                continue
            try:
                result = yield step
            except GeneratorExit:
                raise
            except BaseException as exc:  # a failed request, an interrupt: the unit's to handle
                step = advance(op, error=exc)
                continue
            step = advance(op, result)
        value: str = step.value
        return "stopped" if thrown and value == "lost" else value
    except LeaseLost:
        if thrown:
            return "stopped"  # stopped before its claim was made: the coordinator releases it
        stop.set()
        raise
    except GeneratorExit:
        raise
    except BaseException:
        stop.set()
        raise
    finally:
        op.close()


@dataclass
class JobRun(Generic[P]):
    """What `run_units` needs to run a job here, or to have it run elsewhere.

    ``report(record, resumed)`` makes the job's report from the run as the ledger has it; when
    the run stops with an error, the error's ``report`` is what it gives.
    """

    declaration: Mapping[str, Any]
    units: Sequence[Unit]
    kind_for: Callable[[Context, RateBudget], JobKind[P]]
    pages: PageSource
    rate: Mapping[str, float]
    total: int | None = None
    report: Callable[[JobRecord, bool], object] | None = None


def run_units(
    ctx: Context,
    ledger: Ledger,
    run: JobRun[P],
    *,
    submit: Callable[[str, Unit], Future[Any]] | None = None,
    concurrency: int = 8,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
    poll: float = 0.5,
    detach: bool = False,
    stall_after: float | None = None,
    once: bool = False,
) -> Operation[tuple[JobRecord, bool]]:
    """Open (or resume) the run of ``run.declaration`` and run it until every unit is done.

    Units run in threads of this driver, at most ``concurrency`` at once, or, with ``submit``,
    wherever ``submit(job_id, unit)`` sends them (an executor's future per unit; every outcome
    of a future is handled, see `lsiorm._jobs.watch`). Units another worker holds are
    waited for, and taken over when their lease expires. A unit that waits for another
    (`waits_for`) starts once that one is done (or when the run has no such unit). A run that
    shows no progress in the ledger for ``stall_after`` seconds (`stall_limit` of the lease
    when None) stops with a `JobError`. Returns the run, read from the ledger with its units,
    and whether it was resumed. ``detach`` opens (or resumes) the run and returns it at once,
    its units left for workers elsewhere to run (`run_unit`). ``once`` runs each unit at most
    once, to its end or to a pause, and returns when no unit is left to run.
    """
    job, resumed = yield from ledger.open(run.declaration, run.units, run.rate)
    if resumed:
        changed = yield from retarget(ledger, job.id, run.rate)
        if changed is not None:
            log.info("job %s: resumed with the budget %s (it had %s)", job.id, *changed)
    if detach:
        return (yield from ledger.job(job.id)), resumed
    tally = Tally(job, progress, clock, run.total)
    tally.begin()
    limit = stall_limit(ledger.lease_seconds) if stall_after is None else stall_after
    watch = StallWatch(limit, clock)
    sent = None
    if submit is not None:
        sent = Submissions(submit, job.id, lease=ledger.lease_seconds, clock=clock)
    #: The units run to their end or to a pause by this call (``once``).
    ran: set[str] = set()
    stop = threading.Event()
    try:
        while True:
            record = yield from ledger.job(job.id)
            if record.state not in RESUMABLE:
                return record, resumed
            if record.state == "paused":
                raise _paused_elsewhere(record)
            waiting = [u for u in record.units if u.state != "done"]
            if not waiting:
                if open_ended(record.declaration):
                    return record, resumed
                # Every unit is done, so the run is, even before (or without) the word of the
                # worker that finished the last one: it may be on its way, or it died.
                yield from ledger.set_state(job.id, "done", only_from=RESUMABLE)
                return (yield from ledger.job(job.id)), resumed
            if sent is not None:
                ran |= sent.ended
            ready = startable(record, ran if once else set())
            if once and not ready:
                return record, resumed
            now = ledger.clock()
            watch.check(record, now)
            if sent is not None:
                sent.step(ready, now, watch.since)
                yield Sleep(poll)
                yield from _report_remote(ledger, job.id, tally)
                continue
            free = [u.unit for u in ready if u.owner is None or (u.lease or 0) < now]
            if free:
                children = _children(record)
                ops = tuple(
                    _run_chain(ctx, run, ledger, job.id, unit, children, tally, ran, stop)
                    for unit in free
                )
                yield Gather(ops, limit=concurrency, threads=True)
            else:
                yield Sleep(poll)
    except BaseException as exc:
        stop.set()
        yield from _stop_run(exc, ledger, job.id, run, tally, sent, clock, poll, resumed)
        raise


def _paused_elsewhere(record: JobRecord) -> JobError:
    """The error of a run paused since this call opened it: another coordinator's error or
    stop."""
    return JobError(
        "jobs.paused",
        f"Run {record.id} was paused by another process (an error of its, a Ctrl-C, a stop); "
        "its workers here stopped. Run the job again to resume it.",
        job=record.id,
        units=[u.unit.id for u in record.units if u.state != "done"],
    )


def _stop_run(
    exc: BaseException,
    ledger: Ledger,
    job_id: str,
    run: JobRun[P],
    tally: Tally,
    sent: Submissions | None,
    clock: Callable[[], float],
    poll: float,
    resumed: bool,
) -> Operation[None]:
    """After Ctrl-C, SIGTERM, a kill or an error (the units here have stopped, `halting`): stop
    every worker of the run at its next sync, give up the leases this process holds (their
    last commits stay), wait for the workers elsewhere to end, and give an lsiorm error the
    run's report."""
    if sent is not None:
        sent.cancel()
    yield from ledger.set_state(job_id, "paused", only_from=("running",))
    for held_claim, held_ledger in list(tally.held.values()):
        yield from _release(held_ledger, job_id, held_claim)
    if sent is not None:
        yield from _ended(sent, job_id, clock, ledger.lease_seconds, poll)
    if isinstance(exc, LsiormError) and run.report is not None:
        yield from _attach_report(exc, ledger, job_id, run.report, resumed)


def startable(record: JobRecord, ran: set[str]) -> list[UnitRecord]:
    """The units of ``record`` that may start now: not done, not in ``ran``, and whose unit
    to wait for (`waits_for`) is done or not in the run (a shard the stream no longer lists)."""
    states = {u.unit.id: u.state for u in record.units}
    out = []
    for unit in record.units:
        if unit.state == "done" or unit.unit.id in ran:
            continue
        first = waits_for(unit.unit)
        if first is None or states.get(first, "done") == "done":
            out.append(unit)
    return out


def _children(record: JobRecord) -> dict[str, list[Unit]]:
    """The units that wait for each unit of ``record``, by the id of the one they wait for."""
    children: dict[str, list[Unit]] = {}
    for unit in record.units:
        first = waits_for(unit.unit)
        if first is not None and unit.state != "done":
            children.setdefault(first, []).append(unit.unit)
    return children


def _run_chain(
    ctx: Context,
    run: JobRun[P],
    ledger: Ledger,
    job_id: str,
    unit: Unit,
    children: Mapping[str, Sequence[Unit]],
    tally: Tally,
    ran: set[str],
    stop: threading.Event,
) -> Operation[None]:
    """Run ``unit`` until the run stops (`halting`), then, once it is done, the units that wait
    for it (a split shard's children), in this same thread: they need not wait for the rest of
    the batch."""
    result = yield from halting(
        run_unit(ctx, run.kind_for, run.pages, ledger, job_id, unit, tally=tally), stop
    )
    if result in ("held", "stopped"):
        return
    with tally.lock:
        ran.add(unit.id)
    if result == "done":
        for child in children.get(unit.id, ()):
            yield from _run_chain(ctx, run, ledger, job_id, child, children, tally, ran, stop)


def _ended(
    sent: Submissions, job_id: str, clock: Callable[[], float], limit: float, poll: float
) -> Operation[None]:
    """Wait until every unit sent to the executor has ended (its worker saw the run paused),
    for ``limit`` seconds at most."""
    started = clock()
    while sent.running():
        if clock() - started >= limit:
            log.warning(
                "job %s: units %s still running %.0f s after the run was paused",
                job_id,
                ", ".join(sent.running()),
                limit,
            )
            return
        yield Sleep(poll)


def _attach_report(
    exc: LsiormError,
    ledger: Ledger,
    job_id: str,
    report: Callable[[JobRecord, bool], object],
    resumed: bool,
) -> Operation[None]:
    """Give the error that stopped a run the job's report of what the run did (when the ledger
    can still be read)."""
    try:
        record = yield from ledger.job(job_id)
    except LsiormError as failure:
        log.warning("job %s: its report could not be read (%s)", job_id, failure)
        return
    exc.report = report(record, resumed)


def _report_remote(ledger: Ledger, job_id: str, tally: Tally) -> Operation[None]:
    """Progress of units run elsewhere, from the ledger's counters."""
    if tally.progress is None:
        return
    record = yield from ledger.job(job_id, units=False)
    with tally.lock:
        tally.items, tally.changed, tally.done = record.items, record.changed, record.units_done
        tally.progress(tally.state())
