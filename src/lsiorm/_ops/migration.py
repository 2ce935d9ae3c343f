"""Online table migration: copy a live table into a new one declared by the current models.

The phases, each resumable from the ledger (`MigrationState`, one item in the ledger's
partition, next to the copy's run):

1. **Plan and refuse** (`plan_migration`, pure; before any write). The source must have a
   stream with both images (``migrate.no-stream``, ``migrate.stream-view``). The copy time is
   estimated from the source's size and the rate budget; past `RETENTION_WARNING` seconds
   (the stream keeps 24 hours) a `MigrationWarning` is issued before the copy. The destination
   is created from the declaration when it does not exist (the state records it); one that
   exists and holds items this migration did not write is refused
   (``migrate.destination-not-empty``).
2. **Stream position.** The stream's ARN and shards go into the state before the copy starts;
   the catch-up reads each shard from TRIM_HORIZON (or from the sequence number the state
   holds), parents before children (`lsiorm._ops.stream_replay`).
3. **Copy** (`lsiorm._ops.table_copy.CopyKind` on the job engine: units, ledger, rate budget).
4. **Catch-up** (`catch_up`): every record is derived and applied on the condition that the
   destination still holds the derived old image (the proof is in `stream_replay`). The
   sequence number of each shard is committed after each page. The lag (records the last pass
   found, and how old the oldest was) goes into the state and the report.
5. **Verify** (`verify`): every source item is derived and compared with the destination;
   then the destination is scanned for items no source item derives. With writers running,
   an item may differ because a change is not caught up yet: those are read again after a
   catch-up pass, up to `RECHECKS` times, before they are reported.
6. **Cut over.** ``finish=True`` (writers paused) drains the stream to zero lag, verifies, and
   marks the migration ``switched``. Before that, sessions may write both tables in one
   transaction per write (`lsiorm._ops.dual_writes`), with the catch-up running, and readers
   may move to the destination first.
7. **Abandon** (`abandon_migration`): deletes what the migration created, the destination
   table (or, when it existed before, the items in it) and its ledger records. The source
   table is never written by any phase.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import KeyAttribute, Table
from lsiorm._model.wire import WireItem, from_wire, same_item
from lsiorm._ops import tables
from lsiorm._ops.budget import RateBudget
from lsiorm._ops.job_engine import JobRun, digest, run_units, scan_pages
from lsiorm._ops.job_options import JobOptions, ledger_location
from lsiorm._ops.ledger import NAMESPACE, JobLedger, LedgerLocation, fingerprint
from lsiorm._ops.memory_ledger import MemoryLedger
from lsiorm._ops.migration_plan import (
    MigrationPlan,
    MigrationReport,
    MigrationState,
    MigrationStore,
    VerifyReport,
    plan_migration,
)
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.resumable import JobProgress, json_av, key_of
from lsiorm._ops.scans import ScanSpec
from lsiorm._ops.steps import Gather, Operation, Sleep
from lsiorm._ops.stream_replay import (
    ShardPage,
    StreamRecord,
    describe_shards,
    read_shard,
    replay_of,
    replay_request,
    shard_order,
)
from lsiorm._ops.table_copy import CopyKind, ExtraKind, Findings, VerifyKind, derive_item
from lsiorm._ops.unchanged import watched_attributes
from lsiorm.errors import (
    ConditionFailedError,
    MigrationWarning,
    ResourceNotFoundError,
    TransactionCanceledError,
    ValidationError,
)

__all__ = [
    "MigrationReport",
    "MigrationState",
    "VerifyReport",
    "abandon_migration",
    "migrate_table",
    "migration_status",
    "plan_migration",
]

#: The most catch-up passes of a drain to finish (writers paused: it ends at the first empty
#: pass, so this bounds only a finish whose writers were not paused).
FINISH_PASSES = 50
#: How often items that differ are read again (after a catch-up pass) before they are reported.
RECHECKS = 3
#: Items and examples shown per kind of difference.
EXAMPLES = 20


# -- the migration ----------------------------------------------------------------------------


@dataclass
class Migration:
    """One migration in progress: its context, tables, state and where the state is kept."""

    ctx: Context
    table: Table
    source: Table
    store: MigrationStore
    state: MigrationState
    options: JobOptions
    segments: int
    page_size: int | None
    progress: Callable[[JobProgress], object] | None
    clock: Callable[[], float] = time.time
    #: The most catch-up passes of one drain: a few while writers run, more to finish.
    passes: int = 3

    @property
    def key_names(self) -> tuple[str, ...]:
        table = self.table
        return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))


def _describe(ctx: Context, table: Table) -> Operation[dict[str, Any] | None]:
    try:
        response = yield from call(ctx, "DescribeTable", {"TableName": table.name}, (table,))
    except ResourceNotFoundError:
        return None
    description: dict[str, Any] = response.get("Table") or {}
    return description


def source_table(name: str, description: Mapping[str, Any]) -> Table:
    """A declaration of the source table with its live key schema (nothing is ever written
    to it: it names the table in requests)."""
    types = {a["AttributeName"]: a["AttributeType"] for a in description["AttributeDefinitions"]}
    keys = {k["KeyType"]: k["AttributeName"] for k in description["KeySchema"]}
    sort = keys.get("RANGE")
    return Table(
        name,
        KeyAttribute(keys["HASH"], types[keys["HASH"]]),
        KeyAttribute(sort, types[sort]) if sort else None,
    )


def declaration_of(table: Table, source: str, destination: str) -> dict[str, Any]:
    """What a migration is: source, destination and a digest of the declaration (the table's
    key schema and indexes, and every entity's key templates)."""
    entities = {
        name: sorted((a, t.source) for a, t in meta_of(cls).templates.items())
        for name, cls in sorted(table.entities.items())
    }
    request = table.create_table_request()
    shape = {k: request.get(k) for k in ("KeySchema", "LocalSecondaryIndexes")}
    shape["GlobalSecondaryIndexes"] = [
        {"IndexName": g["IndexName"], "KeySchema": g["KeySchema"]}
        for g in request.get("GlobalSecondaryIndexes") or ()
    ]
    return {
        "kind": "migration",
        "source": source,
        "destination": destination,
        "declaration": digest(json_av({"table": shape, "entities": entities})),
    }


def _not_empty(ctx: Context, table: Table) -> Operation[bool]:
    """Whether the table holds an item outside the ledger's partition."""
    params: dict[str, Any] = {"TableName": table.name, "Limit": 25}
    while True:
        response = yield from call(ctx, "Scan", dict(params), (table,))
        for item in response.get("Items") or ():
            if item.get(table.partition_key.name) != {"S": NAMESPACE}:
                return True
        last = response.get("LastEvaluatedKey")
        if not last:
            return False
        params["ExclusiveStartKey"] = last


def open_migration(
    ctx: Context,
    table: Table,
    source: str,
    options: JobOptions,
    *,
    segments: int,
    page_size: int | None,
    progress: Callable[[JobProgress], object] | None,
    create: bool = True,
) -> Operation[tuple[Migration, MigrationPlan | None]]:
    """Plan the migration, refuse what would lose data, create the destination if needed, and
    load (or start) its state, with the stream's position recorded."""
    source_decl = Table(source, table.partition_key, table.sort_key)
    described = yield from _describe(ctx, source_decl)
    if described is None:
        raise ValidationError(
            "migrate.no-source", f"Table {ctx.live_name(source_decl)!r} does not exist."
        )
    there = yield from _describe(ctx, table)
    plan = plan_migration(
        described, there, write_budget=options.write_budget, read_budget=options.read_budget
    )
    src = source_table(source, described)
    if ctx.live_name(src) == ctx.live_name(table):
        raise ValidationError(
            "migrate.same-table", "The source and the destination are the same table."
        )
    declaration = declaration_of(table, ctx.live_name(src), ctx.live_name(table))
    migration_id = fingerprint(declaration)
    location = options_location(ctx, table, options)
    store = MigrationStore(ctx, location)
    state = (
        None if there is None and options.ledger is None else (yield from store.load(migration_id))
    )
    if state is None:
        if not create:
            raise ValidationError(
                "migrate.unknown",
                f"No migration of {plan.source!r} to {ctx.live_name(table)!r} is recorded.",
            )
        if plan.too_slow and plan.estimated_seconds is not None:
            warnings.warn(
                f"Copying {plan.source!r} is estimated at {plan.estimated_seconds / 3600:.1f} h "
                "at this rate budget; its stream keeps changes for 24 h, so the catch-up may "
                "find some gone. Raise write_budget=, or enable point-in-time recovery and "
                "copy less at once.",
                MigrationWarning,
                stacklevel=2,
            )
        created = False
        if there is None:
            created = yield from tables.create_table(ctx, table, exists_ok=True)
        elif (yield from _not_empty(ctx, table)):
            raise ValidationError(
                "migrate.destination-not-empty",
                f"Table {ctx.live_name(table)!r} already holds items this migration did not "
                "write; migrate into a new (or empty) table.",
                table=ctx.live_name(table),
            )
        state = MigrationState(migration_id, declaration, created_destination=created)
        _, shards = yield from describe_shards(ctx, plan.stream_arn)
        state.stream_arn = plan.stream_arn
        state.shards = {s.id: {"parent": s.parent, "seq": None, "done": False} for s in shards}
        yield from store.save(state)
    migration = Migration(ctx, table, src, store, state, options, segments, page_size, progress)
    return migration, plan


def options_location(ctx: Context, table: Table, options: JobOptions) -> LedgerLocation:
    """Where the migration's ledger is: the destination's reserved partition, or ``ledger=``."""
    return ledger_location(ctx, table, options.ledger)


def job_ledger(m: Migration) -> JobLedger:
    """The ledger of the migration's copy, at the state's location."""
    store = m.store
    return JobLedger(
        store.ctx,
        store.location,
        lease_seconds=m.options.lease_seconds,
        clock=m.options.ledger_clock,
    )


# -- copy ---------------------------------------------------------------------------------------


def copy(m: Migration, total: int | None = None) -> Operation[None]:
    """Run the copy to its end (resuming its run), then move to the catch-up phase. ``total``
    is the source's item count, for the progress's ETA."""
    spec = ScanSpec(m.source, None, None, m.segments, page_size=m.page_size)

    def kind_for(unit_ctx: Context, budget: RateBudget) -> CopyKind:
        return CopyKind(unit_ctx, m.table, budget)

    run = JobRun(
        {**m.state.declaration, "kind": "migrate-copy"},
        m.options.units(spec),
        kind_for,
        scan_pages(spec, skip=_ledger_skip(m.source)),
        m.options.rate(),
        total,
    )
    ledger = job_ledger(m)
    record, _ = yield from run_units(
        m.ctx,
        ledger,
        run,
        concurrency=m.options.concurrency,
        progress=m.progress,
        clock=m.options.clock,
    )
    m.state.copy_job = record.id
    if record.state == "done" or all(u.state == "done" for u in record.units):
        m.state.phase = "catch-up"
    yield from m.store.save(m.state)


def _ledger_skip(table: Table) -> dict[str, Any] | None:
    """The source's own ledger partition (of its key jobs), which is not copied."""
    return {"S": NAMESPACE} if table.partition_key.type == "S" else None


# -- catch-up -----------------------------------------------------------------------------------


@dataclass
class Pass:
    """One catch-up pass: records applied and skipped, the oldest record's time, and the
    source keys the pass touched (by the digest of their derived destination keys)."""

    applied: int = 0
    skipped: int = 0
    oldest: float | None = None
    touched: dict[str, WireItem] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def records(self) -> int:
        return self.applied + self.skipped


def catch_up(m: Migration) -> Operation[Pass]:
    """One pass over the stream: each shard, parents first, from its last applied record to
    its newest (a closed shard to its end); the lag is what this pass found."""
    done = Pass()
    started = m.clock()
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    for shard in shards:
        m.state.shards.setdefault(shard.id, {"parent": shard.parent, "seq": None, "done": False})
    watched = watched_attributes(m.table, m.table.entities.values())
    listed = {shard.id for shard in shards}
    for shard in shard_order(shards):
        entry = m.state.shards[shard.id]
        # A parent the stream no longer lists is gone (trimmed): nothing more to read there.
        parent = m.state.shards.get(shard.parent or "") if shard.parent in listed else None
        if entry["done"] or (parent is not None and not parent["done"]):
            continue

        def on_page(page: ShardPage, entry: dict[str, Any] = entry) -> Operation[bool]:
            # Each item's records in order; different items' at once.
            groups: dict[str, list[StreamRecord]] = {}
            for record in page.records:
                groups.setdefault(digest(record.keys), []).append(record)
            ops = tuple(_apply_in_order(m, group, watched, done) for group in groups.values())
            if ops:
                yield Gather(ops, limit=m.options.concurrency, threads=True)
            if page.records:
                entry["seq"] = page.records[-1].sequence
                first = page.records[0].created
                if done.oldest is None and first is not None:
                    done.oldest = first
            if page.records:  # the page's sequence number, committed after its changes
                yield from m.store.save(m.state)
                _report_lag(m, done)
            # A pass ends at the records written since it began: with writers faster than
            # the catch-up, it would never end otherwise. The next pass reads on.
            last = page.records[-1].created if page.records else None
            return last is None or last < started

        finished = yield from read_shard(
            m.ctx, m.state.stream_arn, shard.id, entry["seq"], on_page, closed=shard.closed
        )
        if finished:
            entry["done"] = True
    m.state.lag = [done.records, 0.0 if done.oldest is None else max(0.0, m.clock() - done.oldest)]
    yield from m.store.save(m.state)
    _report_lag(m, done)
    return done


def _report_lag(m: Migration, done: Pass) -> None:
    if m.progress is None:
        return
    lag = 0.0 if done.oldest is None else max(0.0, m.clock() - done.oldest)
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
            seconds_behind=lag,
        )
    )


def _apply_in_order(
    m: Migration, records: list[StreamRecord], watched: frozenset[str], done: Pass
) -> Operation[None]:
    """Apply one item's records of a page, in order."""
    for record in records:
        applied = yield from _apply(m, record.old, record.new, record.keys, watched, done)
        with done.lock:
            done.applied += applied
            done.skipped += not applied
            if applied:
                m.state.applied += 1
            else:
                m.state.skipped += 1


def _apply(
    m: Migration,
    old: WireItem | None,
    new: WireItem | None,
    keys: WireItem,
    watched: frozenset[str],
    done: Pass,
) -> Operation[bool]:
    """Apply one record's change to the destination; return whether its condition held."""
    derived_old = derive_item(m.table, old).item if old is not None else None
    derived_new = derive_item(m.table, new).item if new is not None else None
    with done.lock:
        for derived in (derived_old, derived_new):
            if derived is not None:
                done.touched[digest(key_of(m.table, derived))] = dict(keys)
    replay = replay_of(derived_old, derived_new, m.key_names)
    if replay is None:
        return False
    try:
        operation, params = replay_request(replay, m.table.name, watched | set(derived_new or ()))
    except ValidationError:  # an item too large for the condition: verify reports it
        with done.lock:
            m.state.unapplied += 1
        return False
    try:
        yield from call(m.ctx, operation, params, (m.table,))
    except (ConditionFailedError, TransactionCanceledError):
        return False
    return True


def drain(m: Migration) -> Operation[Pass]:
    """Catch up until a pass finds nothing new (zero lag), or for ``m.passes`` passes (with
    writers running, a pass always finds something); return what every pass touched."""
    total = Pass()
    for _ in range(m.passes):
        one = yield from catch_up(m)
        total.applied += one.applied
        total.skipped += one.skipped
        total.touched.update(one.touched)
        if one.records == 0:
            break
    return total


# -- verify -------------------------------------------------------------------------------------


def verify(m: Migration) -> Operation[VerifyReport]:
    """Compare the destination with the derived source, then re-check what differs after
    catching up (see the module docstring)."""
    findings = Findings()
    spec = ScanSpec(m.source, None, None, m.segments, page_size=m.page_size)
    memory = MemoryLedger()
    # Every change not applied yet when the verification starts is after these positions.
    start = {shard: entry["seq"] for shard, entry in m.state.shards.items()}

    def verify_for(unit_ctx: Context, budget: RateBudget) -> VerifyKind:
        return VerifyKind(unit_ctx, m.source, m.table, findings)

    run = JobRun(
        {**m.state.declaration, "kind": "migrate-verify"},
        m.options.units(spec),
        verify_for,
        scan_pages(spec, skip=_ledger_skip(m.source)),
        m.options.rate(),
    )
    record, _ = yield from run_units(m.ctx, memory, run, concurrency=m.options.concurrency)
    counts = record.counts()
    report = VerifyReport(
        source=counts.get("source", 0),
        matched=counts.get("matched", 0),
        unmatched=counts.get("unmatched", 0),
        source_checksum=counts.get("source_checksum", 0),
        destination_checksum=counts.get("destination_checksum", 0),
    )
    dest_spec = ScanSpec(m.table, None, None, m.segments, page_size=m.page_size)

    def extra_for(unit_ctx: Context, budget: RateBudget) -> ExtraKind:
        return ExtraKind(m.table, findings)

    extras = JobRun(
        {**m.state.declaration, "kind": "migrate-extra"},
        m.options.units(dest_spec),
        extra_for,
        scan_pages(dest_spec, skip={"S": NAMESPACE}),
        m.options.rate(),
    )
    yield from run_units(m.ctx, MemoryLedger(), extras, concurrency=m.options.concurrency)
    differing = {digest(k): k for k in findings.differing}
    extra = {digest(k): k for k in findings.extra}
    for _ in range(RECHECKS):
        if not differing and not extra:
            break
        touched = yield from drain(m)
        differing, extra = yield from _recheck(m, differing, extra, touched)
    for key in differing.values():
        outcome = yield from _compare(m, key)
        if outcome == "missing":
            report.missing += 1
        elif outcome == "different":
            report.different += 1
        else:
            continue
        report.examples.setdefault(outcome, [])
        if len(report.examples[outcome]) < EXAMPLES:
            report.examples[outcome].append(_plain(key))
    report.extra = len(extra)
    if extra:
        report.examples["extra"] = [_plain(k) for k in list(extra.values())[:EXAMPLES]]
    report.matched = report.source - report.unmatched - report.missing - report.different
    m.state.verified_from = start if report.clean else None
    yield from _keep_verify(m, report)
    return report


def _keep_verify(m: Migration, report: VerifyReport) -> Operation[None]:
    """Keep a verification's summary and examples in the state."""
    m.state.verify = {
        "clean": report.clean,
        "source": report.source,
        "matched": report.matched,
        "missing": report.missing,
        "different": report.different,
        "extra": report.extra,
        "examples": json_av(report.examples),
    }
    yield from m.store.save(m.state)


def verify_touched(m: Migration, since: Mapping[str, str | None]) -> Operation[VerifyReport]:
    """Compare the items the stream changed after positions ``since`` (those of a clean
    verification's start): each source item now against the destination, and every
    destination key its changes derived must hold it or nothing."""
    keys: dict[str, WireItem] = {}  # source key digest -> source key
    derived_keys: dict[str, dict[str, WireItem]] = {}  # source key digest -> destination keys
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    for shard in shard_order(shards):

        def on_page(page: ShardPage) -> Operation[bool]:
            for record in page.records:
                name = digest(record.keys)
                keys[name] = record.keys
                for image in (record.old, record.new):
                    item = derive_item(m.table, image).item if image is not None else None
                    if item is not None:
                        key = key_of(m.table, item)
                        derived_keys.setdefault(name, {})[digest(key)] = key
            return True
            yield  # a generator: nothing to send

        yield from read_shard(
            m.ctx, m.state.stream_arn, shard.id, since.get(shard.id), on_page, closed=shard.closed
        )
    report = VerifyReport()
    for name, source_key in keys.items():
        report.source += 1
        outcome = yield from _compare(m, source_key)
        item = yield from _get(m, m.source, source_key)
        now = derive_item(m.table, item).item if item is not None else None
        current = digest(key_of(m.table, now)) if now is not None else None
        for other, key in derived_keys.get(name, {}).items():
            if other != current and (yield from _get(m, m.table, key)) is not None:
                report.extra += 1
                report.examples.setdefault("extra", []).append(_plain(key))
        if outcome == "matched":
            report.matched += 1
            continue
        setattr(report, outcome, getattr(report, outcome) + 1)
        report.examples.setdefault(outcome, []).append(_plain(source_key))
    report.examples = {k: v[:EXAMPLES] for k, v in report.examples.items()}
    return report


def _plain(key: Mapping[str, Any]) -> dict[str, Any]:
    return {k: from_wire(v) for k, v in key.items()}


def _get(m: Migration, table: Table, key: Mapping[str, Any]) -> Operation[WireItem | None]:
    params = {"TableName": table.name, "Key": dict(key), "ConsistentRead": True}
    response = yield from call(m.ctx, "GetItem", params, (table,))
    found: WireItem | None = response.get("Item")
    return found


def _compare(m: Migration, source_key: Mapping[str, Any]) -> Operation[str]:
    """``"matched"``, ``"missing"`` or ``"different"``: one source item (read now, consistently)
    against the destination; a source item gone counts as matched when its destination is."""
    item = yield from _get(m, m.source, source_key)
    if item is None:
        return "matched"
    derived = derive_item(m.table, item).item
    if derived is None:
        return "matched"
    there = yield from _get(m, m.table, key_of(m.table, derived))
    if there is None:
        return "missing"
    return "matched" if same_item(there, derived) else "different"


def _recheck(
    m: Migration,
    differing: dict[str, WireItem],
    extra: dict[str, WireItem],
    touched: Pass,
) -> Operation[tuple[dict[str, WireItem], dict[str, WireItem]]]:
    """The source keys that still differ, and the destination keys still extra."""
    still: dict[str, WireItem] = {}
    for name, key in differing.items():
        outcome = yield from _compare(m, key)
        if outcome != "matched":
            still[name] = key
    left: dict[str, WireItem] = {}
    for name, key in extra.items():
        there = yield from _get(m, m.table, key)
        if there is None:
            continue
        source_key = touched.touched.get(name)
        if source_key is not None:
            item = yield from _get(m, m.source, source_key)
            derived = derive_item(m.table, item).item if item is not None else None
            if derived is not None and digest(key_of(m.table, derived)) == name:
                continue
        left[name] = key
    return still, left


# -- the whole ----------------------------------------------------------------------------------


def migrate_table(
    ctx: Context,
    table: Table,
    source: str,
    options: JobOptions,
    *,
    finish: bool = False,
    segments: int = 4,
    page_size: int | None = None,
    follow: float = 0.0,
    progress: Callable[[JobProgress], object] | None = None,
) -> Operation[MigrationReport]:
    """Copy ``source`` into the table ``table`` declares, catch up and verify (see the module
    docstring); with ``finish``, drain, verify and switch."""
    started = time.monotonic()
    m, plan = yield from open_migration(
        ctx, table, source, options, segments=segments, page_size=page_size, progress=progress
    )
    if m.state.phase == "abandoned":
        raise ValidationError("migrate.abandoned", "This migration was abandoned.")
    if finish:
        m.passes = FINISH_PASSES
    if m.state.phase == "copy":
        yield from copy(m, plan.item_count if plan is not None else None)
    verified: VerifyReport | None = None
    if m.state.phase in ("catch-up", "switched"):
        yield from drain(m)
        since = m.state.verified_from
        if finish and since is not None:
            # Writers are paused: only the items changed since the last clean verification
            # can differ, and they are in the stream after its starting positions.
            verified = yield from verify_touched(m, since)
            if not verified.clean:
                m.state.verified_from = None  # the next one reads everything again
            yield from _keep_verify(m, verified)
        else:
            verified = yield from verify(m)
        yield from drain(m)
        until = time.monotonic() + follow
        while time.monotonic() < until:
            one = yield from catch_up(m)
            if one.records == 0:
                yield from _pause(1.0)
        if finish and verified.clean and m.state.lag[0] == 0:
            m.state.phase = "switched"
            yield from m.store.save(m.state)
    report = yield from _report(m, verified)
    report.estimated_seconds = plan.estimated_seconds if plan is not None else None
    report.elapsed = time.monotonic() - started
    return report


def _pause(seconds: float) -> Operation[None]:
    yield Sleep(seconds)


def _report(m: Migration, verified: VerifyReport | None) -> Operation[MigrationReport]:
    state = m.state
    report = MigrationReport(
        m.ctx.live_name(m.source),
        m.ctx.live_name(m.table),
        state.phase,
        state.id,
        state.created_destination,
        applied=state.applied,
        skipped=state.skipped,
        unapplied=state.unapplied,
        lag_records=int(state.lag[0]),
        lag_seconds=float(state.lag[1]),
        copy_job=state.copy_job,
    )
    report.dual_writes = yield from m.store.load_dual(state.id)
    if verified is None and state.verify:
        verified = VerifyReport(
            source=state.verify.get("source", 0),
            matched=state.verify.get("matched", 0),
            missing=state.verify.get("missing", 0),
            different=state.verify.get("different", 0),
            extra=state.verify.get("extra", 0),
        )
    report.verify = verified
    if state.copy_job is not None:
        record = yield from job_ledger(m).job(state.copy_job)
        counts = record.counts()
        for name in ("copied", "present", "unmatched", "as_stored", "failed"):
            setattr(report, name, counts.get(name, 0))
        for unit in record.units:
            for kind in ("unmatched", "failed"):
                mine = report.examples.setdefault(kind, [])
                mine.extend(unit.notes.get(kind, ())[: max(0, EXAMPLES - len(mine))])
        report.examples = {k: v for k, v in report.examples.items() if v}
    return report


def migration_status(
    ctx: Context, table: Table, source: str, options: JobOptions
) -> Operation[MigrationReport]:
    """The migration's state as the ledger holds it (nothing is written)."""
    m, _ = yield from open_migration(
        ctx, table, source, options, segments=1, page_size=None, progress=None, create=False
    )
    return (yield from _report(m, None))


def abandon_migration(
    ctx: Context, table: Table, source: str, options: JobOptions
) -> Operation[MigrationReport]:
    """Delete what the migration created: the destination table if it created it, else every
    item it wrote there; then its ledger records. The source is left as it is."""
    m, _ = yield from open_migration(
        ctx, table, source, options, segments=1, page_size=None, progress=None, create=False
    )
    report = yield from _report(m, None)
    if m.state.created_destination and options.ledger is None:
        yield from tables.delete_table(ctx, table)
        report.phase = "abandoned"
        return report
    if m.state.created_destination:
        yield from tables.delete_table(ctx, table)
    else:
        yield from _delete_items(m)
    yield from _delete_ledger(m)
    report.phase = "abandoned"
    return report


def _delete_items(m: Migration) -> Operation[None]:
    """Delete every item of the destination outside the ledger's partition (it held none
    before the migration: the migration refuses a destination that does)."""
    params: dict[str, Any] = {"TableName": m.table.name}
    while True:
        response = yield from call(m.ctx, "Scan", dict(params), (m.table,))
        for item in response.get("Items") or ():
            if item.get(m.table.partition_key.name) == {"S": NAMESPACE}:
                continue
            key = key_of(m.table, item)
            yield from call(
                m.ctx, "DeleteItem", {"TableName": m.table.name, "Key": key}, (m.table,)
            )
        last = response.get("LastEvaluatedKey")
        if not last:
            return
        params["ExclusiveStartKey"] = last


def _delete_ledger(m: Migration) -> Operation[None]:
    """Delete the migration's state and the ledger records of its copy."""
    location = m.store.location
    prefixes = [f"migration#{m.state.id}"]
    if m.state.copy_job is not None:
        prefixes += [f"job#{m.state.copy_job}", f"unit#{m.state.copy_job}#"]
    prefixes.append(f"run#{fingerprint({**m.state.declaration, 'kind': 'migrate-copy'})}")
    for prefix in prefixes:
        params: dict[str, Any] = {
            "TableName": location.table,
            "KeyConditionExpression": "#p = :p AND begins_with(#s, :s)",
            "ExpressionAttributeNames": {"#p": location.partition_key, "#s": location.sort_key},
            "ExpressionAttributeValues": {":p": {"S": location.namespace}, ":s": {"S": prefix}},
        }
        response = yield from call(m.store.ctx, "Query", params)
        for item in response.get("Items") or ():
            key = {n: item[n] for n in (location.partition_key, location.sort_key)}
            yield from call(m.store.ctx, "DeleteItem", {"TableName": location.table, "Key": key})
