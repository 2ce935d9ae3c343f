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
  that other workers hold, and returns the run as the ledger has it, with exact counts.

A stop (Ctrl-C, SIGTERM, a kill of this process's caller) pauses the run in the ledger, so
every worker stops at its next page; the units this process held are released; the next
`run_units` of the same declaration resumes it.
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
from lsiorm._jobs.ledger import RESUMABLE, JobRecord, LeaseLost, UnitClaim, new_owner
from lsiorm._jobs.memory_ledger import Ledger
from lsiorm._jobs.resumable import DONE, JobProgress, Position, WireItem, counted_as, json_av
from lsiorm._jobs.scans import ScanSpec, split_off
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._jobs.watch import StallWatch, Submissions, stall_limit
from lsiorm._model.capacity import read_units
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_size
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Gather, Operation, Sleep
from lsiorm.errors import LsiormError

#: One INFO line per job step: a page of a unit done (counts only, never keys or items).
log = logging.getLogger("lsiorm.jobs")

__all__ = [
    "LEDGER_ITEMS",
    "JobKind",
    "JobRun",
    "PageRead",
    "PageSource",
    "digest",
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
    """The pages of scan units of ``spec`` (a Query for a partition unit).

    ``skip`` is the partition key value of the jobs' ledger partition (`reserved_partition`):
    its items are neither handed to the job nor counted as read, only as ``skipped``.
    """
    table = spec.table
    operation = "Query" if spec.partition is not None else "Scan"
    base, skip = spec.reading(skip)

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ScanUnit)
        params = dict(base)
        if unit.total_segments > 1:
            params["Segment"], params["TotalSegments"] = unit.segment, unit.total_segments
        if isinstance(position, Mapping):
            params["ExclusiveStartKey"] = dict(position)
        response = yield from call(ctx, operation, params, (table,))
        found = response.get("Items") or ()
        scanned = int(response.get("ScannedCount", len(found)))
        items, skipped = split_off(table, found, skip)
        last = response.get("LastEvaluatedKey")
        size = sum(item_size(i) for i in items)
        return PageRead(
            items,
            dict(last) if last else DONE,
            scanned - skipped,
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
    """Run one unit to its end; return ``"done"``, ``"held"`` (another worker has it) or
    ``"lost"`` (its lease was taken over, or the run stopped).

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
            for name, value in counts.items():
                claim.counts[name] = claim.counts.get(name, 0) + value
            _merge_notes(claim.notes, kind.notes(part), getattr(kind, "note_limit", MAX_NOTES))
            claim.position = position = page.position
            carry = kind.carry()
            claim.intent = {"entries": recovered, "carry": carry} if recovered or carry else None
            changed = kind.changed(counts)
            if position == DONE:
                yield from ledger.commit(job_id, claim, items=page.read, changed=changed)
                yield from ledger.finish(job_id, claim)
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


@dataclass
class JobRun(Generic[P]):
    """What `run_units` needs to run a job here, or to have it run elsewhere."""

    declaration: Mapping[str, Any]
    units: Sequence[Unit]
    kind_for: Callable[[Context, RateBudget], JobKind[P]]
    pages: PageSource
    rate: Mapping[str, float]
    total: int | None = None


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
) -> Operation[tuple[JobRecord, bool]]:
    """Open (or resume) the run of ``run.declaration`` and run it until every unit is done.

    Units run in threads of this driver, at most ``concurrency`` at once, or, with ``submit``,
    wherever ``submit(job_id, unit)`` sends them (an executor's future per unit; every outcome
    of a future is handled, see `lsiorm._jobs.watch`). Units another worker holds are
    waited for, and taken over when their lease expires. A run that shows no progress in the
    ledger for ``stall_after`` seconds (`stall_limit` of the lease when None) stops with a
    `JobError`. Returns the run, read from the ledger with its units, and whether it was
    resumed. ``detach`` opens (or resumes) the run and returns it at once, its units left for
    workers elsewhere to run (`run_unit`).
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
    try:
        while True:
            record = yield from ledger.job(job.id)
            if record.state not in RESUMABLE:
                return record, resumed
            waiting = [u for u in record.units if u.state != "done"]
            if not waiting:
                # Every unit is done, so the run is, even before (or without) the word of the
                # worker that finished the last one: it may be on its way, or it died.
                yield from ledger.set_state(job.id, "done", only_from=RESUMABLE)
                return (yield from ledger.job(job.id)), resumed
            now = ledger.clock()
            watch.check(record, now)
            if sent is not None:
                sent.step(waiting, now, watch.since)
                yield Sleep(poll)
                yield from _report_remote(ledger, job.id, tally)
                continue
            free = [u.unit for u in waiting if u.owner is None or (u.lease or 0) < now]
            if free:
                ops = tuple(
                    run_unit(ctx, run.kind_for, run.pages, ledger, job.id, unit, tally=tally)
                    for unit in free
                )
                yield Gather(ops, limit=concurrency, threads=True)
            else:
                yield Sleep(poll)
    except BaseException:
        # Ctrl-C, SIGTERM, a kill or an error: stop every worker of the run at its next page,
        # and give up the leases this process holds (their last commits stay).
        if sent is not None:
            sent.cancel()
        yield from ledger.set_state(job.id, "paused", only_from=("running",))
        for held_claim, held_ledger in list(tally.held.values()):
            yield from _release(held_ledger, job.id, held_claim)
        raise


def _report_remote(ledger: Ledger, job_id: str, tally: Tally) -> Operation[None]:
    """Progress of units run elsewhere, from the ledger's counters."""
    if tally.progress is None:
        return
    record = yield from ledger.job(job_id, units=False)
    with tally.lock:
        tally.items, tally.changed, tally.done = record.items, record.changed, record.units_done
        tally.progress(tally.state())
