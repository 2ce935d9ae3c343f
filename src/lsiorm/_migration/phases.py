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
   holds), parents before children (`lsiorm._migration.stream_replay`).
3. **Copy** (`lsiorm._migration.table_copy.CopyKind` on the job engine: units, ledger, rate budget;
   the units run in threads here or on the options' executor, or ``detach`` only opens the
   run for `run_unit` calls elsewhere).
4. **Catch-up** (`lsiorm._migration.run.catch_up`): every record is derived and applied on
   the condition that the destination still holds the derived old image (the proof is in
   `stream_replay`). The sequence number of each shard is committed after each page. The lag
   (records the last pass found, and how old the oldest was) goes into the state and the
   report, and `lsiorm jobs` shows it.
5. **Verify** (`lsiorm._migration.verify.verify`): every source item is derived and
   compared with the destination; then the destination is scanned for items no source item
   derives. Both are job runs on the migration's ledger, resumable per unit. With writers
   running, an item may differ because a change is not caught up yet: those are read again
   after a catch-up pass, three times at most, before they are reported.
6. **Cut over.** ``finish=True`` (writers paused) drains the stream to zero lag, verifies, and
   marks the migration ``switched``. Before that, sessions may write both tables in one
   transaction per write (`lsiorm._migration.dual_writes`), with the catch-up running, and readers
   may move to the destination first.
7. **Abandon** (`abandon_migration`): deletes what the migration created, the destination
   table (or, when it existed before, the items in it) and its ledger records. The source
   table is never written by any phase.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.catalog import imported
from lsiorm._jobs.engine import JobRun, digest, scan_pages
from lsiorm._jobs.ledger import JobLedger, LedgerLocation, fingerprint
from lsiorm._jobs.options import JobOptions, ledger_location
from lsiorm._jobs.resumable import JobProgress, json_av, key_of
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.units import ShardUnit
from lsiorm._migration.catch_up import (
    catch_up,
    catch_up_declaration,
    drain,
    server_time,
)
from lsiorm._migration.plan import (
    MigrationPlan,
    MigrationReport,
    MigrationStore,
    VerifyReport,
    plan_migration,
)
from lsiorm._migration.run import (
    Migration,
    delete_prefixed,
    job_ledger,
    run_declaration,
    worker_info,
)
from lsiorm._migration.state_items import MigrationState
from lsiorm._migration.table_copy import CopyKind
from lsiorm._migration.verify import EXAMPLES, keep_verify, verify, verify_touched
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.protection import protect_like
from lsiorm._model.schema import KeyAttribute, Table
from lsiorm._ops import tables
from lsiorm._ops.pages import read_page, read_pages
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reserved import NAMESPACE, reserved_partition
from lsiorm._ops.steps import Operation, Sleep
from lsiorm._ops.stream_pages import describe_shards
from lsiorm._requests.pages import PagedRead, Position, ReadPage
from lsiorm.errors import MigrationWarning, ResourceNotFoundError, ValidationError

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
    """Whether the table holds an item outside the ledger's partition (read a page at a time,
    up to the first such item)."""
    read = PagedRead("Scan", {"TableName": table.name}, limit=25, tables=(table,))
    position: Position = None
    while True:
        page = yield from read_page(ctx, read, position)
        if any(item.get(table.partition_key.name) != {"S": NAMESPACE} for item in page.items):
            return True
        if page.last:
            return False
        position = page.next


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
        described,
        there,
        write_budget=options.write_budget,
        read_budget=options.read_budget,
        live_source=ctx.live_name(source_decl),
    )
    src = source_table(source, described)
    protect_like(src, table)  # the source's protected values are the declaration's
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
        state = store.entities.state(
            id=migration_id,
            declaration=declaration,
            created_destination=created,
            stream_arn=plan.stream_arn,
        )
        yield from store.save(state)
    migration = Migration(ctx, table, src, store, state, options, segments, page_size, progress)
    return migration, plan


def options_location(ctx: Context, table: Table, options: JobOptions) -> LedgerLocation:
    """Where the migration's ledger is: the destination's reserved partition, or ``ledger=``."""
    return ledger_location(ctx, table, options.ledger)


# -- copy ---------------------------------------------------------------------------------------


def copy(m: Migration, total: int | None = None) -> Operation[None]:
    """Run the copy to its end (resuming its run), here or on the options' executor, then move
    to the catch-up phase; with ``detach``, only open (or resume) its run. ``total`` is the
    source's item count, for the progress's ETA."""
    spec = ScanSpec(m.source, None, None, m.segments, page_size=m.page_size)
    if m.state.copy_started is None:
        # The stream's shards as they are now become the catch-up's units (their positions
        # are kept in the ledger from the start), and the copy's start is taken from
        # DynamoDB's clock: the catch-up does not apply records older than that.
        yield from _open_catch_up(m)
        answer = yield from call(m.ctx, "DescribeTable", {"TableName": m.source.name}, (m.source,))
        m.state.copy_started = server_time(answer)
        yield from m.store.save(m.state)

    def kind_for(unit_ctx: Context, budget: RateBudget) -> CopyKind:
        return CopyKind(unit_ctx, m.table, budget)

    run = JobRun(
        run_declaration(m, "migrate-copy"),
        m.options.units(spec),
        kind_for,
        scan_pages(spec, skip=reserved_partition(m.source)),
        m.options.rate(),
        total,
    )
    record, _ = yield from m.options.run(m.ctx, job_ledger(m), run, m.progress)
    m.state.copy_job = record.id
    if record.state == "done" or all(u.state == "done" for u in record.units):
        m.state.phase = "catch-up"
    yield from m.store.save(m.state)


def _open_catch_up(m: Migration) -> Operation[None]:
    """Open the catch-up's run with a unit for each shard the stream lists now."""
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    units = [ShardUnit(s.id, s.parent) for s in shards]
    ledger = job_ledger(m)
    job, _ = yield from ledger.open(catch_up_declaration(m), units, m.options.rate())
    yield from ledger.set_state(job.id, "paused", only_from=("running",))  # until its pass
    m.state.catch_up_job = job.id


def _check_executor(ctx: Context, table: Table, options: JobOptions) -> None:
    """Refuse, before any request, an executor this session cannot send units to, or whose
    workers cannot import the declaration's entity classes."""
    if options.executor is None:
        return
    location = options_location(ctx, table, options)
    options.submitter(JobLedger(ctx, location, lease_seconds=options.lease_seconds))
    for cls in table.entities.values():
        imported(f"{cls.__module__}:{cls.__qualname__}")


def _keep_worker_info(m: Migration) -> Operation[None]:
    """Record what a worker elsewhere needs (it may change from call to call: a new page size,
    the models moved to another module)."""
    info = worker_info(m)
    if m.state.worker != info:
        m.state.worker = info
        yield from m.store.save(m.state)


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
    docstring); with ``finish``, drain, verify and switch. With ``options.detach``, open the
    copy's run (or, once the copy is done, catch up and open the verification's) and return:
    its units are run elsewhere (`run_unit`), and the next call goes on."""
    started = time.monotonic()
    _check_executor(ctx, table, options)
    m, plan = yield from open_migration(
        ctx, table, source, options, segments=segments, page_size=page_size, progress=progress
    )
    if m.state.phase == "abandoned":
        raise ValidationError("migrate.abandoned", "This migration was abandoned.")
    if finish:
        m.passes = FINISH_PASSES
    yield from _keep_worker_info(m)
    copied_now = m.state.phase == "copy"
    if copied_now:
        yield from copy(m, plan.item_count if plan is not None else None)
    verified: VerifyReport | None = None
    if m.state.phase in ("catch-up", "switched") and not (options.detach and copied_now):
        verified = yield from _catch_up_and_verify(m, finish=finish, follow=follow)
    report = yield from _report(m, verified)
    report.estimated_seconds = plan.estimated_seconds if plan is not None else None
    report.elapsed = time.monotonic() - started
    return report


def _catch_up_and_verify(
    m: Migration, *, finish: bool, follow: float
) -> Operation[VerifyReport | None]:
    """Catch up, verify, catch up again (for ``follow`` seconds more); with ``finish``, switch
    when the verification is clean and the lag zero. None when ``detach`` only opened the
    verification's run."""
    yield from drain(m)
    since = m.state.verified_from
    verified: VerifyReport | None
    if finish and since is not None and m.state.verifying is None:
        # Writers are paused: only the items changed since the last clean verification
        # can differ, and they are in the stream after its starting positions. (A
        # verification in progress, one detached say, is finished instead.)
        verified = yield from verify_touched(m, since)
        if not verified.clean:
            m.state.verified_from = None  # the next one reads everything again
        yield from keep_verify(m, verified)
    else:
        verified = yield from verify(m)
        if verified is None:
            return None
    yield from drain(m)
    until = time.monotonic() + follow
    while time.monotonic() < until:
        one = yield from catch_up(m)
        if one.records == 0:
            yield from _pause(1.0)
    if finish and verified.clean and m.state.lag[0] == 0:
        m.state.phase = "switched"
        yield from m.store.save(m.state)
    return verified


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
        before_copy=state.before_copy,
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
    table = m.table

    def delete_page(page: ReadPage) -> Operation[None]:
        for item in page.items:
            if item.get(table.partition_key.name) == {"S": NAMESPACE}:
                continue
            key = key_of(table, item)
            yield from call(m.ctx, "DeleteItem", {"TableName": table.name, "Key": key}, (table,))

    read = PagedRead("Scan", {"TableName": table.name}, tables=(table,))
    yield from read_pages(m.ctx, read, delete_page)


def _delete_ledger(m: Migration) -> Operation[None]:
    """Delete the migration's state and the ledger records of its copy and verifications."""
    jobs = [*m.state.verify_jobs, *((m.state.verifying or {}).get("runs") or ())]
    jobs += [j for j in (m.state.copy_job, m.state.catch_up_job) if j is not None]
    prefixes = [f"migration#{m.state.id}"]
    prefixes += [p for job in jobs for p in (f"job#{job}", f"unit#{job}#")]
    declarations = [run_declaration(m, "migrate-copy"), catch_up_declaration(m)]
    for epoch in range(max(1, m.state.verify_epoch - 1), m.state.verify_epoch + 1):
        declarations += [run_declaration(m, k, epoch) for k in ("migrate-verify", "migrate-extra")]
    prefixes += [f"run#{fingerprint(d)}" for d in declarations]
    yield from delete_prefixed(m, prefixes)
