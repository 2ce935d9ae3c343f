"""A table migration's catch-up: the source's stream applied to the destination, every shard a
work unit of the job engine, shards in parallel on the migration's executor.

**Shards are units.** The catch-up is one run in the migration's ledger (``migrate-catch-up``)
that never ends by itself (`lsiorm._jobs.ledger.open_ended`): its units are the stream's shards
(`ShardUnit`), added as the stream lists them, each with its position (the last sequence number
applied) and its lease in the ledger, exactly like a scan segment of a key job. A unit reads
its shard page by page (GetRecords, up to 1,000 records or 1 MB), applies each page, and
commits the page's sequence number with its counts; a killed worker's unit is taken over after
its lease lapses and resumes at the last committed page. A shard that split (it is closed) is
read to its end and its unit is done; a shard still open *pauses* when it is caught up (an
empty page, or records written after this run of it began) and gives its lease up, to be read
on by the next pass. A child shard starts only after its parent's unit is done
(`lsiorm._jobs.units.waits_for`): DynamoDB keeps an item's records in one shard at a time and
a parent's records before its children's, so each item's changes are applied in order however
many workers run. Different items need no order between them, so the units run at once
(threads here, or processes or Dask workers: `JobOptions.executor`), and within a page the
records of different items are applied at once too (`JobOptions.concurrency`), each item's in
order. Nothing is kept between pages but the position: memory does not grow with the number of
changed items.

**The replay rule** is `lsiorm._migration.stream_replay`'s: each record is applied on the
condition that the destination still holds its derived old image, and the proof there says why
the destination ends at the source's state.

**Records older than the copy are read, not applied.** The copy began at a time the migration
keeps (``MigrationState.copy_started``), taken from DynamoDB's own clock (the ``Date`` header of
an answer) when the copy began. A record whose ``ApproximateCreationDateTime`` is more than
`REPLAY_MARGIN` seconds before it describes a change the copy read already: the copy read each
item after it began, so the copied state already holds that change. Applying such a record could
only be skipped by its condition or be undone by the records after it (the proof holds for any
prefix of an item's records that is left out, as long as every record from the copy's read on
is applied). The margin covers how the times are made: AWS rounds a record's time down to the
second (DynamoDB Local to the minute), the ``Date`` header is rounded to the second, and both
are "approximate"; five minutes is far beyond all of them and costs a few minutes of replay.
Skipping ends at a shard's first record that is applied: an item's records are a prefix of what
is skipped. Without a copy start (a migration begun by an older release), nothing is skipped.

**Exact counts.** ``records`` counts every record read; each is then ``applied`` (its write
applied), ``skipped`` (its condition found the destination in another state), ``before_copy``
(read, not applied: see above) or ``unapplied`` (too large for its condition: verification
reports the item). A write whose answer was lost and whose retry then finds its own effect
(or a page cut short and replayed after a resume, whose records the page's intent names) counts
as ``applied``, not ``skipped``.

**Lag.** A pass reports the records it found and how far behind the newest record read was:
for each shard, zero when it was caught up (an empty page), else the age of its last record
read; the largest of them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import GAUGES, JobKind, JobRun, PageRead, PageSource, digest
from lsiorm._jobs.ledger import JobRecord
from lsiorm._jobs.resumable import DONE, JobProgress, Position
from lsiorm._jobs.units import ShardUnit, Unit, shard_unit_id
from lsiorm._migration.run import Migration, job_ledger, run_declaration
from lsiorm._migration.stream_replay import (
    StreamRecord,
    record_of,
    replay_of,
    replay_request,
    shard_page,
)
from lsiorm._migration.table_copy import derive_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, same_item
from lsiorm._ops.items import is_ambiguous
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Gather, Operation
from lsiorm._ops.stream_pages import describe_shards
from lsiorm._ops.unchanged import watched_attributes
from lsiorm._requests.stream_pages import PAGE_LIMIT, Shard, ShardRead
from lsiorm.errors import (
    ConditionFailedError,
    TransactionCanceledError,
    ValidationError,
)

__all__ = [
    "CATCH_UP",
    "PASS_SECONDS",
    "REPLAY_MARGIN",
    "RETENTION",
    "Pass",
    "ShardKind",
    "catch_up",
    "catch_up_declaration",
    "drain",
    "lag_of",
    "new_shard_units",
    "server_time",
    "shard_pages",
    "shard_positions",
]

#: The kind of the catch-up's run in the ledger.
CATCH_UP = "migrate-catch-up"
#: Records older than the copy's start by more than this (seconds) are read, not applied.
REPLAY_MARGIN = 300.0
#: How long the stream keeps a record (seconds): DynamoDB trims records older than a day.
RETENTION = 24 * 3600.0
#: The longest a unit reads a shard in one run before it pauses (the pass ends and reports,
#: even where the records keep coming as fast as they are read).
PASS_SECONDS = 60.0
#: The counts a shard's unit keeps, in the order reports give them.
COUNTS = ("records", "applied", "skipped", "before_copy", "unapplied")


# -- reading a shard --------------------------------------------------------------------------


def shard_pages(
    stream_arn: str,
    *,
    cutoff: float | None = None,
    clock: Callable[[], float] = time.time,
    pass_seconds: float = PASS_SECONDS,
    limit: int = PAGE_LIMIT,
    tables: tuple[Table, ...] = (),
) -> PageSource:
    """The pages of shard units of the stream ``stream_arn``: one GetRecords answer each.

    A page's position is its last record's sequence number (a unit with none yet starts after
    its ``start``, or at the shard's oldest record). The shard iterator of the next page is
    kept here, so a unit reads on without asking for a new one; a unit that resumes elsewhere
    asks for one after its position. A closed shard read to its end is DONE; an open one
    pauses when a page is empty, when its last record was written after this source began
    (the pass began), or after ``pass_seconds`` of reading. ``tables`` names the source, whose
    protected values the session opens in the records. Each page is read by the stream reader
    (`lsiorm._ops.stream_pages.read_records`: expired iterators replaced, throttled reads
    waited out).

    A shard the stream no longer holds before any of it was read held only records older
    than the stream's retention (`RETENTION`): it counts as read to its end while those are
    all older than ``cutoff`` (the time from which records are applied), and is refused
    with ``migrate.stream-trimmed`` once they may not be (the migration's copy began more
    than a day ago: the shard may have held changes after it).
    """
    started = clock()
    iterators: dict[tuple[str, Position], str] = {}

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ShardUnit)
        after = position if isinstance(position, str) else unit.start
        read = ShardRead(stream_arn, unit.shard, limit, tables)
        got = yield from shard_page(ctx, read, after, iterators.pop((unit.id, after), None))
        if got is None:  # the stream no longer holds the shard: nothing to read
            if cutoff is not None and clock() - RETENTION > cutoff:
                raise _gone_unread(unit.shard)
            return PageRead((), DONE, 0)
        raw = got.records
        if got.next is None:
            return PageRead(raw, DONE, len(raw))
        iterators[(unit.id, got.position)] = got.next
        last = record_of(raw[-1]) if raw else None
        pause = (
            last is None
            or (last.created is not None and last.created >= started)
            or clock() - started >= pass_seconds
        )
        return PageRead(raw, got.position, len(raw), pause=pause)

    return page


# -- applying a page ----------------------------------------------------------------------------


@dataclass
class ShardPart:
    """One page of a shard: its records to apply (each with whether a predecessor may have
    applied it: the page was cut short and is read again), its counts, and the time of its last
    record (``empty``: the page had none)."""

    records: list[tuple[StreamRecord, bool]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    last_created: float | None = None
    empty: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, value: int = 1) -> None:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + value


class ShardKind:
    """What the catch-up does with each page of a shard: apply its records, each item's in
    order, different items at once (see the module docstring)."""

    def __init__(
        self,
        ctx: Context,
        destination: Table,
        *,
        cutoff: float | None,
        concurrency: int = 8,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ctx = ctx
        self.destination = destination
        self.cutoff = cutoff
        self.concurrency = concurrency
        self.clock = clock
        self.watched = watched_attributes(destination, destination.entities.values())
        self.key_names = (
            destination.partition_key.name,
            *([destination.sort_key.name] if destination.sort_key else []),
        )
        #: Whether this shard applied a record already: from then on nothing is skipped.
        self.applying = False

    def new_part(self) -> ShardPart:
        return ShardPart()

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        # The page's records by sequence number: after a resume, a record of the cut-short
        # page whose effect is found in the destination was applied by the predecessor.
        return {record_of(r).sequence: 1 for r in items}

    def visit(self, part: ShardPart, item: WireItem, recovered: dict[str, Any]) -> Operation[None]:
        record = record_of(item)
        part.empty = False
        part.add("records")
        part.last_created = record.created
        if not self.applying and _before(record, self.cutoff):
            part.add("before_copy")
        else:
            self.applying = True
            part.records.append((record, record.sequence in recovered))
        return
        yield  # a generator: the page is applied in end_page

    def end_page(self, part: ShardPart) -> Operation[None]:
        groups: dict[str, list[tuple[StreamRecord, bool]]] = {}
        for entry in part.records:
            groups.setdefault(digest(entry[0].keys), []).append(entry)
        ops = tuple(self._apply_in_order(part, group) for group in groups.values())
        if ops:
            yield Gather(ops, limit=self.concurrency, threads=True)
        part.records.clear()

    def settle(self, part: ShardPart, recovered: dict[str, Any]) -> Operation[None]:
        recovered.clear()
        return
        yield  # a generator: nothing to send

    def counts(self, part: ShardPart) -> dict[str, int]:
        return dict(part.counts)

    def notes(self, part: ShardPart) -> dict[str, list[Any]]:
        return {}

    def gauges(self, part: ShardPart) -> dict[str, Any]:
        """Where the shard stands after the page: caught up (an empty page), or the time of
        the last record read."""
        return {"caught_up": part.empty, "last_created": part.last_created, "at": self.clock()}

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("applied", 0))

    def carry(self) -> dict[str, Any]:
        return {"applying": True} if self.applying else {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        self.applying = bool(carry.get("applying"))

    def _apply_in_order(
        self, part: ShardPart, records: list[tuple[StreamRecord, bool]]
    ) -> Operation[None]:
        for record, replayed in records:
            outcome = yield from self._apply(record, replayed)
            part.add(outcome)

    def _apply(self, record: StreamRecord, replayed: bool) -> Operation[str]:
        """Apply one record; return its count's name."""
        table = self.destination
        old = derive_item(table, record.old).item if record.old is not None else None
        new = derive_item(table, record.new).item if record.new is not None else None
        replay = replay_of(old, new, self.key_names)
        if replay is None:
            return "skipped"
        try:
            operation, params = replay_request(replay, table, self.watched | set(new or ()))
        except ValidationError:  # an item too large for its condition: verification says
            return "unapplied"
        if operation == "TransactWriteItems":
            # The same token on every attempt, and on a replay of this record after a resume:
            # DynamoDB applies a transaction once per token (for ten minutes).
            params["ClientRequestToken"] = _token(record)
        else:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        ambiguous: list[bool] = []
        try:
            yield from call(
                self.ctx,
                operation,
                params,
                (table,),
                on_error=lambda exc: ambiguous.append(is_ambiguous(exc)),
            )
        except ConditionFailedError as exc:
            mine = any(ambiguous) or replayed
            return "applied" if mine and _holds(exc.response.get("Item"), new) else "skipped"
        except TransactionCanceledError as exc:
            if any(r.code != "ConditionalCheckFailed" for r in exc.failed):
                raise  # not this record's condition (a conflict, a throttle): it must be applied
            return "skipped"
        return "applied"


def _gone_unread(shard: str) -> ValidationError:
    """The refusal of a shard the stream dropped before the catch-up read any of it, when it
    may have held changes made after the copy began."""
    return ValidationError(
        "migrate.stream-trimmed",
        f"The stream dropped shard {shard} (after 24 hours) before the catch-up read it, and "
        "the copy began more than 24 hours ago: changes made after the copy began may be "
        "lost. Abandon the migration and start it again, and catch up at least once a day.",
    )


def _holds(stored: Any, new: Mapping[str, Any] | None) -> bool:
    """Whether the destination holds what the record's write puts there (nothing, for a
    removal)."""
    if new is None:
        return not stored
    return isinstance(stored, Mapping) and same_item(stored, new)


def _before(record: StreamRecord, cutoff: float | None) -> bool:
    return cutoff is not None and record.created is not None and record.created < cutoff


def _token(record: StreamRecord) -> str:
    text = f"lsiorm-replay|{record.sequence}|{digest(record.keys)}"
    return hashlib.sha256(text.encode()).hexdigest()[:36]


# -- a pass over the stream ---------------------------------------------------------------------


@dataclass
class Pass:
    """What one catch-up pass (or several, added up) did: records read, applied, skipped,
    read but older than the copy, too large to apply; and the lag it ended at (seconds)."""

    records: int = 0
    applied: int = 0
    skipped: int = 0
    before_copy: int = 0
    unapplied: int = 0
    lag_seconds: float = 0.0

    def add(self, other: Pass) -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lag_seconds = other.lag_seconds


def catch_up_declaration(m: Migration) -> dict[str, Any]:
    """The declaration of the migration's catch-up run: open-ended, its units the shards."""
    return {**run_declaration(m, CATCH_UP), "open": True, "stream": m.state.stream_arn}


def _totals(record: JobRecord) -> dict[str, int]:
    counts = record.counts()
    return {name: counts.get(name, 0) for name in COUNTS}


def lag_of(units: Iterable[Any], now: float) -> float:
    """The lag of a pass from its units' gauges (module docstring): zero for a shard caught up
    or done, else the age of its last record read; the largest."""
    lag = 0.0
    for unit in units:
        gauges = (unit.notes or {}).get(GAUGES) or {}
        if unit.state == "done" or gauges.get("caught_up", True):
            continue
        created = gauges.get("last_created")
        if created is not None:
            lag = max(lag, now - float(created))
    return lag


def new_shard_units(
    record: JobRecord, shards: Sequence[Shard], legacy: Mapping[str, Mapping[str, Any]]
) -> list[ShardUnit]:
    """The shards the run has no unit of yet. A migration begun by an older release kept its
    shards' positions in its state: a unit starts there, and a shard it read to its end gets
    no unit."""
    known = {u.unit.id for u in record.units}
    out = []
    for shard in shards:
        if shard_unit_id(shard.id) in known:
            continue
        old = legacy.get(shard.id) or {}
        if old.get("done"):
            continue
        out.append(ShardUnit(shard.id, shard.parent, old.get("seq")))
    return out


def catch_up(m: Migration) -> Operation[Pass]:
    """One pass over the stream: every shard's unit runs once, to its end or until it is
    caught up, parents before children, on the migration's executor (or in threads here);
    the lag is what this pass found."""
    ledger = job_ledger(m)
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    declaration = catch_up_declaration(m)
    job, _ = yield from ledger.open(declaration, (), m.options.rate())
    before = yield from ledger.job(job.id)
    new = new_shard_units(before, shards, m.state.shards)
    if new:
        yield from ledger.add_units(job.id, new, len(before.units) + len(new))
    if m.state.catch_up_job != job.id:
        m.state.catch_up_job = job.id
        yield from m.store.save(m.state)
    cutoff = None if m.state.copy_started is None else m.state.copy_started - REPLAY_MARGIN

    def kind_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        return ShardKind(unit_ctx, m.table, cutoff=cutoff, concurrency=m.options.concurrency)

    run = JobRun(
        declaration,
        (),
        kind_for,
        shard_pages(m.state.stream_arn, cutoff=cutoff, tables=(m.source,)),
        m.options.rate(),
    )
    after, _ = yield from m.options.run(m.ctx, ledger, run, None, once=True)
    # Between passes no worker reads the stream: the run shows as paused, and the next pass
    # resumes it.
    yield from ledger.set_state(job.id, "paused", only_from=("running",))
    was, now = _totals(before), _totals(after)
    done = Pass(**{name: now[name] - was[name] for name in COUNTS})
    done.lag_seconds = lag_of(after.units, m.clock()) if done.records else 0.0
    for name in ("applied", "skipped", "before_copy", "unapplied"):
        setattr(m.state, name, now[name])
    m.state.lag = [done.records, done.lag_seconds]
    m.state.caught_up_at = m.clock()
    yield from m.store.save(m.state)
    _report_lag(m, done)
    return done


def _report_lag(m: Migration, done: Pass) -> None:
    if m.progress is None:
        return
    m.progress(
        JobProgress(
            done.records,
            done.applied,
            0.0,
            None,
            0,
            0,
            m.state.id,
            events_behind=done.records,
            seconds_behind=done.lag_seconds,
        )
    )


def drain(m: Migration) -> Operation[Pass]:
    """Catch up until a pass finds nothing new (zero lag), or for ``m.passes`` passes (with
    writers running, a pass always finds something); return what the passes did."""
    total = Pass()
    for _ in range(m.passes):
        one = yield from catch_up(m)
        total.add(one)
        if one.records == 0:
            break
    return total


def shard_positions(m: Migration) -> Operation[dict[str, str | None]]:
    """Each shard's position now: the last sequence number applied (None: none yet); a shard
    read to its end is left out (nothing after it will ever come)."""
    if m.state.catch_up_job is None:
        return {s: e.get("seq") for s, e in m.state.shards.items() if not e.get("done")}
    record = yield from job_ledger(m).job(m.state.catch_up_job)
    out: dict[str, str | None] = {}
    for unit in record.units:
        assert isinstance(unit.unit, ShardUnit)
        if unit.state != "done":
            position = unit.position if isinstance(unit.position, str) else unit.unit.start
            out[unit.unit.shard] = position
    return out


def server_time(response: Mapping[str, Any], clock: Callable[[], float] = time.time) -> float:
    """The time an answer was made, by DynamoDB's own clock (its ``Date`` header); this
    machine's clock when the answer carries none."""
    headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    date = headers.get("date")
    if date:
        try:
            return parsedate_to_datetime(str(date)).timestamp()
        except (TypeError, ValueError):
            pass
    return clock()
