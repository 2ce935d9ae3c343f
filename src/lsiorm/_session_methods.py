"""Every session method, declared once: its public signature, its docstring, and how its
arguments become an operation.

Each function here takes the session first and returns an operation generator; it does no I/O.
`Session` and `AsyncSession` (`_session.py`) turn each one into a method that runs the
operation, to its end or awaited, so the two facades cannot drift apart and a keyword such as
`update(..., upsert=True)` is written in one place only.

The functions are named after their methods (`all`, `update`, ...): import the module.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from lsiorm._conditions import Condition
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._ops import deadline, items, pipeline
from lsiorm._ops.items import DeleteResult, Idempotency
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm._requests.items import keyed_target
from lsiorm._session_core import SessionConfig, SessionCore
from lsiorm._session_jobs import JobKeywords
from lsiorm._session_jobs import reporting as _reporting
from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    # What a first get or put does not need is imported by the methods that run it.
    from lsiorm._jobs.adoption import AdoptionReport
    from lsiorm._jobs.backfill import BackfillReport
    from lsiorm._jobs.key_audit import KeyAuditReport
    from lsiorm._jobs.ledger import JobLedger, JobRecord, LedgerLocation
    from lsiorm._jobs.orphans import OrphanReport
    from lsiorm._jobs.relief import ReliefReport
    from lsiorm._jobs.resumable import JobProgress
    from lsiorm._jobs.units import Unit
    from lsiorm._migration.dual_writes import DualFallback, DualWrites
    from lsiorm._migration.plan import MigrationReport
    from lsiorm._model.drift import DriftReport
    from lsiorm._ops.audit import CollectionSize
    from lsiorm._ops.batch import BatchWriteResult
    from lsiorm._ops.reads import Page
    from lsiorm._ops.tables import ApplyReport
    from lsiorm._ops.transactions import TransactWriteResult
    from lsiorm._query.values import Query, Scan
    from lsiorm._requests.batch import DeleteTarget, GetKey
    from lsiorm._requests.transactions import Get, TransactAction

__all__ = ["JobKeywords", "SessionConfig", "SessionCore"]  # the last two: lsiorm._session_core

E = TypeVar("E", bound=Entity)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
S = TypeVar("S", bound="SessionCore")


def call(
    session: SessionCore,
    /,
    operation: str,
    params: dict[str, Any],
    *,
    tables: Sequence[Table] = (),
    timeout: float | None = None,
) -> Operation[dict[str, Any]]:
    """Send one raw DynamoDB request through this session's hooks, retries and typed errors.

    `tables` names the declared tables the request touches, for hooks such as the
    item-collection watcher. Returns the response as botocore gives it.
    """
    return deadline.bounded(
        pipeline.call(session.ctx, operation, params, tuple(tables), built=False), timeout
    )


def create_table(
    session: SessionCore,
    /,
    table: Table,
    *,
    wait: bool = True,
    exists_ok: bool = False,
    timeout: float | None = None,
) -> Operation[bool]:
    """Create the declared table (and wait until it is ACTIVE); return whether it was created.

    `exists_ok=True` leaves an existing table as it is instead of raising. A table with a
    `ttl_attribute` is always waited for and gets time to live enabled on it, an existing
    one too when TTL is disabled there.
    """
    from lsiorm._ops import tables

    return deadline.bounded(
        tables.create_table(session.ctx, table, wait=wait, exists_ok=exists_ok), timeout
    )


def delete_table(
    session: SessionCore, /, table: Table, *, wait: bool = True, timeout: float | None = None
) -> Operation[None]:
    """Delete the table (and wait until it is gone)."""
    from lsiorm._ops import tables

    return deadline.bounded(tables.delete_table(session.ctx, table, wait=wait), timeout)


def check_table(
    session: SessionCore, /, table: Table, *, timeout: float | None = None
) -> Operation[DriftReport]:
    """Compare the declaration and TTL with the live table; report drift in plain words."""
    from lsiorm._ops import tables

    return deadline.bounded(tables.check_table(session.ctx, table), timeout)


def apply_table(
    session: SessionCore,
    /,
    table: Table,
    *,
    dry_run: bool = False,
    timeout: float | None = None,
) -> Operation[ApplyReport]:
    """Bring the live table to its declared settings with the fewest requests, in the order
    DynamoDB allows (one UpdateTable of every throughput and protection change, the stream's
    own UpdateTables, then continuous backups, time to live, tags and the resource policy),
    waiting for it to be ACTIVE after each UpdateTable; then check it again.

    `dry_run=True` only plans: `report.plan` lists each request and why, and the drift no
    request can fix. Settings the table does not declare are left as they are.
    """
    from lsiorm._ops import tables

    return deadline.bounded(tables.apply_table(session.ctx, table, dry_run=dry_run), timeout)


# -- single items ---------------------------------------------------------------------------------


def put(
    session: SessionCore,
    /,
    entity: E,
    *,
    create_only: bool = False,
    condition: Condition | None = None,
    timeout: float | None = None,
) -> Operation[E]:
    """Write an entity and return it as stored; `create_only` refuses to overwrite."""
    return deadline.bounded(
        items.put(session.ctx, entity, create_only=create_only, condition=condition), timeout
    )


def get(
    session: SessionCore,
    /,
    cls: type[E],
    key: Mapping[str, Any] | None = None,
    *,
    consistent: bool = False,
    required: bool = False,
    timeout: float | None = None,
    **fields: Any,
) -> Operation[E | None]:
    """Read one item by its key fields, given as `key=` and/or keywords."""
    timeout, fields = _timeout_or_key(cls, key, timeout, fields)
    cls, _, _, values = keyed_target(cls, key, fields)
    return deadline.bounded(
        items.get(
            pipeline.reading(session.ctx), cls, values, consistent=consistent, required=required
        ),
        timeout,
    )


def update(
    session: SessionCore,
    /,
    target: type[E] | E,
    key: Mapping[str, Any] | None = None,
    *,
    set: Mapping[str, Any] | None = None,
    remove: Sequence[str] = (),
    add: Mapping[str, Any] | None = None,
    condition: Condition | None = None,
    idempotency: Idempotency = "none",
    delete: Mapping[str, Any] | None = None,
    append: Mapping[str, Any] | None = None,
    prepend: Mapping[str, Any] | None = None,
    if_not_exists: Mapping[str, Any] | None = None,
    upsert: bool = False,
    timeout: float | None = None,
    **fields: Any,
) -> Operation[E]:
    """Update an item and return it as stored; rewrites affected key attributes.

    Each change is keyed by a field name or a path into it (`"address.city"`,
    `"lines[0].qty"`): `set` writes values (None removes a field), `remove` drops
    paths, `add` adds to a number or a set, `delete` takes elements out of a set,
    `append`/`prepend` extend a list, `if_not_exists` writes only where there is no
    value. The item must exist, unless `upsert` is True: then a missing item is created
    with its derived keys, from these changes over the model's defaults.

    `idempotency` decides how an update that adds to a number or extends a list is kept
    from being applied twice when an answer is lost (see docs/reliability.md): `"none"`
    (no resend after an ambiguous failure: OutcomeUnknownError) or `"transaction"`
    (applied once as a transaction with a request token: twice the write units, plus one
    consistent read).
    """
    from lsiorm._requests.update_plan import update_spec

    spec = update_spec(set, remove, add, delete, append, prepend, if_not_exists, upsert)
    timeout, fields = _timeout_or_key(target, key, timeout, fields)
    cls, instance, _, values = keyed_target(target, key, fields)
    return deadline.bounded(
        items.update(
            session.ctx,
            cls,
            values,
            spec,
            condition=condition,
            instance=instance,
            idempotency=idempotency,
        ),
        timeout,
    )


def delete(
    session: SessionCore,
    /,
    target: type[E] | E,
    key: Mapping[str, Any] | None = None,
    *,
    condition: Condition | None = None,
    timeout: float | None = None,
    **fields: Any,
) -> Operation[E | None]:
    """Delete one item; return what was deleted, or None.

    Raises OutcomeUnknownError if an attempt whose answer was lost may have deleted it;
    `delete_result` reports that case as `deleted=None` instead.
    """
    timeout, fields = _timeout_or_key(target, key, timeout, fields)
    result = delete_result(session, target, key, condition=condition, **fields)
    return deadline.bounded(_deleted(result, target), timeout)


def _deleted(result: Operation[DeleteResult[E]], target: type[E] | E) -> Operation[E | None]:
    """What a delete deleted, from its `delete_result`."""
    return items.deleted_item((yield from result), target)


def delete_result(
    session: SessionCore,
    /,
    target: type[E] | E,
    key: Mapping[str, Any] | None = None,
    *,
    condition: Condition | None = None,
    timeout: float | None = None,
    **fields: Any,
) -> Operation[DeleteResult[E]]:
    """Delete one item; say whether this call deleted it (True, False, None: unknown)."""
    timeout, fields = _timeout_or_key(target, key, timeout, fields)
    cls, instance, meta, values = keyed_target(target, key, fields)
    expected = (
        getattr(instance, meta.version_field)
        if instance is not None and meta.version_field is not None
        else None
    )
    return deadline.bounded(
        items.delete_result(
            session.ctx, cls, values, condition=condition, expected_version=expected
        ),
        timeout,
    )


def _timeout_or_key(
    target: type[Entity] | Entity,
    key: Mapping[str, Any] | None,
    timeout: float | None,
    fields: dict[str, Any],
) -> tuple[float | None, dict[str, Any]]:
    """The call's timeout and key fields: an entity with a key field named ``timeout`` gets
    ``timeout=`` as that field (as before calls took a timeout), unless ``key`` gives it."""
    if timeout is None or "timeout" not in meta_of(target).primary_fields:
        return timeout, fields
    if key is not None and "timeout" in key:
        return timeout, fields
    return None, {**fields, "timeout": timeout}


# -- item collections and key jobs ---------------------------------------------------------------


def audit_collection(
    session: SessionCore,
    /,
    table: Table,
    partition_value: Any,
    *,
    timeout: float | None = None,
) -> Operation[CollectionSize]:
    """Read one item collection (consistently) and return its size by the size model.

    `partition_value` is the partition key as stored (the key text, such as `"HOST#h1"`), or an
    entity of the collection, whose key gives it."""
    from lsiorm._ops import audit

    return deadline.bounded(audit.audit_collection(session.ctx, table, partition_value), timeout)


def largest_collections(
    session: SessionCore,
    /,
    table: Table,
    threshold_gb: float | None = None,
    *,
    limit: int | None = None,
    timeout: float | None = None,
) -> Operation[list[CollectionSize]]:
    """Scan the table; return collections at or above the threshold, largest first."""
    from lsiorm._ops import audit

    return deadline.bounded(
        audit.largest_collections(session.ctx, table, threshold_gb, limit=limit), timeout
    )


def audit_keys(
    session: SessionCore,
    /,
    target: Table | type[Entity],
    *,
    partition: Any = None,
    segments: int = 4,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | bool | None = None,
    executor: Executor | None = None,
    ledger: str | None = None,
    read_budget: float | None = None,
    export: str | None = None,
    lease_seconds: float = 60.0,
    detach: bool = False,
    timeout: float | None = None,
) -> Operation[KeyAuditReport]:
    """Check every item's stored keys against its declaration (read-only; priced first).

    `progress` is called with a JobProgress as it starts and after each page; True draws a
    progress bar (items, rate, ETA from an estimated total) on stderr. The units (scan
    segments, or the files of a DynamoDB export given as `export`, a folder or an `s3://` URL)
    run in threads here, or on `executor` (any `concurrent.futures.Executor`, a Dask client's
    executor included); then the job keeps its ledger in the table (or in the table named
    `ledger`).
    `detach` only opens the run in the ledger and returns at once (`report.job` names it):
    its units are then run anywhere with `run_unit`, one call each.
    """
    from lsiorm._jobs import key_audit

    options = JobKeywords.given(locals()).options(
        session, in_memory=executor is None and ledger is None and not detach
    )
    job = partial(
        key_audit.audit_keys,
        session.ctx,
        target,
        options,
        partition=partition,
        segments=segments,
        dry_run=dry_run,
        page_size=page_size,
    )
    return deadline.bounded(_reporting(job, progress, "audit-keys"), timeout)


def adopt(
    session: SessionCore,
    /,
    target: Table | type[Entity],
    *,
    segments: int = 4,
    examples: int = 3,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | bool | None = None,
    timeout: float | None = None,
) -> Operation[AdoptionReport]:
    """Sort every item of a table another tool wrote against its declarations (read-only).

    For each declared entity (or only `target`, an entity class): how many items parse under
    its declaration and how many do not, with examples and the reason; and the items that
    match no declaration or more than one. The read is priced first (`estimate` of the
    report); `dry_run` stops there. `progress` is called with a JobProgress after each page;
    True draws a progress bar on stderr. See docs/existing-tables.md.
    """

    from lsiorm._jobs import adoption

    job = partial(
        adoption.adopt,
        session.ctx,
        target,
        segments=segments,
        examples=examples,
        dry_run=dry_run,
        page_size=page_size,
    )
    return deadline.bounded(_reporting(job, progress, "adopt"), timeout)


def _ignored_checkpoint(checkpoint: object) -> None:
    """Warn about the `checkpoint=` of the key jobs of 0.2's development versions, which the
    ledger replaced."""
    if checkpoint is not None:
        warnings.warn(
            "checkpoint= is ignored and will be removed: a key job keeps its positions in its "
            "ledger in DynamoDB, so running the same call again resumes it (see the "
            "migrations guide, 'The ledger').",
            DeprecationWarning,
            stacklevel=4,
        )


def backfill(
    session: SessionCore,
    /,
    entity: type[Entity],
    *,
    partition: Any = None,
    segments: int = 4,
    write_budget: float | None = None,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | bool | None = None,
    executor: Executor | None = None,
    ledger: str | None = None,
    read_budget: float | None = None,
    export: str | None = None,
    concurrency: int = 8,
    lease_seconds: float = 60.0,
    detach: bool = False,
    checkpoint: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> Operation[BackfillReport]:
    """Rewrite the stale derived keys of an entity's items, each only if unchanged.

    The job's units run in threads here (`concurrency` at once) or on `executor`; its ledger
    (positions, counts, leases) is in the table's reserved partition, or in the table named
    `ledger`, so a run that stopped resumes from any process, and running it again once it is
    done starts a new run. `write_budget` and `read_budget` are units per second shared by
    every worker, lowered on throttling. `export` reads a DynamoDB export (a folder or an
    `s3://` URL) instead of scanning. A unit whose worker died is taken over once its lease
    of `lease_seconds` runs out. `detach` only opens the run in the ledger and returns at once
    (`report.job` names it; nothing is counted yet): its units are then run anywhere with
    `run_unit`, one call each (a Step Functions map, Ray tasks). `progress` is called with a
    JobProgress as it starts and after each page; True draws a progress bar (items, rate, ETA
    from an estimated total) on stderr.
    """
    from lsiorm._jobs import backfill as backfill_job

    _ignored_checkpoint(checkpoint)
    options = JobKeywords.given(locals()).options(session)
    job = partial(
        backfill_job.backfill,
        session.ctx,
        entity,
        options,
        partition=partition,
        segments=segments,
        dry_run=dry_run,
        page_size=page_size,
    )
    return deadline.bounded(_reporting(job, progress, "backfill"), timeout)


def collect_orphans(
    session: SessionCore,
    /,
    table: Table,
    *,
    segments: int = 4,
    dry_run: bool = False,
    page_size: int | None = None,
    write_budget: float | None = None,
    read_budget: float | None = None,
    ledger: str | None = None,
    concurrency: int = 8,
    lease_seconds: float = 60.0,
    progress: Callable[[JobProgress], object] | bool | None = None,
) -> Operation[OrphanReport]:
    """Delete the S3 objects of the table's offloaded values that no item references.

    A consistent scan (in `segments` units) marks every object an item references; then the
    objects under the table's prefix in the keyring's bucket are listed, and each one no mark
    names and older than the keyring's grace period before the scan began is deleted (`dry_run`
    counts them only). Both runs are resumable from the ledger (the table's reserved partition,
    or the table named `ledger`) and paced: `read_budget` for the scan, `write_budget` deletes
    per second. Objects a writer put for an item not yet written are never deleted (see
    docs/security.md). Needs a session with a keyring that names the bucket.
    """
    from lsiorm._jobs import orphans

    options = JobKeywords.given(locals()).options(session, in_memory=dry_run)
    job = partial(
        orphans.collect_orphans,
        session.ctx,
        table,
        options,
        segments=segments,
        dry_run=dry_run,
        page_size=page_size,
    )
    return _reporting(job, progress, "collect-orphans")


def relieve_collection(
    session: SessionCore,
    /,
    table: Table,
    partition: Any,
    *,
    entity: type[Entity] | None = None,
    match: Callable[[Entity], bool] | None = None,
    to_table: Table | None = None,
    to_file: str | os.PathLike[str] | None = None,
    write_budget: float | None = None,
    dry_run: bool = False,
    page_size: int | None = 100,
    progress: Callable[[JobProgress], object] | bool | None = None,
    ledger: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> Operation[ReliefReport]:
    """Move a collection's matching items to a table or file: copy, verify, then delete.

    Its ledger is in the table's reserved partition (or in the table named `ledger`): a run
    that stopped resumes. `progress` is called with a JobProgress as it starts and after each
    page; True draws a progress bar (items, rate, ETA from an estimated total) on stderr.
    """
    from lsiorm._io.jsonlines import JsonLinesFile
    from lsiorm._jobs import relief

    _ignored_checkpoint(checkpoint)
    options = JobKeywords.given(locals()).options(session)
    given = {**locals(), "to_file": None if to_file is None else JsonLinesFile(to_file)}
    job = partial(
        relief.relieve_collection,
        session.ctx,
        table,
        partition,
        options,
        relief.Relief.given(given),
    )
    return deadline.bounded(_reporting(job, progress, "relief"), timeout)


def migrate_table(
    session: SessionCore,
    /,
    table: Table,
    source: str,
    *,
    finish: bool = False,
    status: bool = False,
    abandon: bool = False,
    segments: int = 4,
    write_budget: float | None = None,
    read_budget: float | None = None,
    page_size: int | None = None,
    concurrency: int = 8,
    follow: float = 0.0,
    ledger: str | None = None,
    progress: Callable[[JobProgress], object] | bool | None = None,
    executor: Executor | None = None,
    lease_seconds: float = 60.0,
    detach: bool = False,
    timeout: float | None = None,
) -> Operation[MigrationReport]:
    """Copy the live table `source` into the table `table` declares, while writers go on.

    The destination is created from the declaration if it does not exist. The copy (in
    `segments` scan units, paced to `write_budget` and `read_budget`), the catch-up from the
    source's stream and a verification run; calling it again resumes from the ledger (in the
    destination's reserved partition, or the table named `ledger`) and catches up again, then
    keeps catching up for `follow` seconds. The report says when it is ready to switch. With
    writers paused, `finish=True` drains the stream, verifies and marks it switched.
    `status=True` only reads where it stands; `abandon=True` deletes what it created. The
    source table is never written. `progress` is called with a JobProgress after each page
    (with the stream lag during the catch-up); True draws a progress bar on stderr.
    The units of the copy and of the verification run in threads here (`concurrency` at once)
    or on `executor`, as a key job's do; a unit whose worker died is taken over once its lease
    of `lease_seconds` runs out. `detach` only opens the copy's run (once the copy is done:
    catches up and opens the verification's) and returns at once: its units are then run
    anywhere with `run_unit`, and the next call goes on from there.
    """
    if finish + status + abandon + detach > 1:
        raise ValidationError(
            "migrate.one-action", "Give at most one of finish=, status=, abandon= and detach=."
        )
    options = JobKeywords.given(locals()).options(session)
    ctx = dataclasses.replace(session.ctx, route=None)  # also from a session with dual writes
    from lsiorm._migration import phases as migration

    if status:
        return deadline.bounded(migration.migration_status(ctx, table, source, options), timeout)
    if abandon:
        return deadline.bounded(migration.abandon_migration(ctx, table, source, options), timeout)
    job = partial(
        migration.migrate_table,
        ctx,
        table,
        source,
        options,
        finish=finish,
        segments=segments,
        page_size=page_size,
        follow=follow,
    )
    return deadline.bounded(_reporting(job, progress, "migrate-table"), timeout)


def dual_writes(
    session: SessionCore,
    /,
    table: Table,
    source: str,
    *,
    reads: str = "source",
    ledger: str | None = None,
    on_fallback: Callable[[DualFallback], object] | None = None,
) -> Operation[DualWrites]:
    """Begin the dual-write period of the migration of `source` into the table `table`
    declares: check that its copy is done and that both tables have the same primary key (a
    typed error before any write otherwise), record it in the ledger, and return the route a
    session with dual writes takes (`Session.dual_writes` returns that session)."""
    from lsiorm._migration.dual_writes import open_dual_writes

    options = JobKeywords.given(locals()).options(session)
    plain = dataclasses.replace(session.ctx, route=None)  # a session with dual writes too
    return open_dual_writes(plain, table, source, options, reads=reads, on_fallback=on_fallback)


def with_route(session: S, route: DualWrites) -> S:
    """A session like `session` (same client, driver, hooks and meters) whose requests take
    `route`."""
    twin = copy.copy(session)
    twin.ctx = dataclasses.replace(session.ctx, route=route)
    twin.dual = route
    return twin


def jobs(
    session: SessionCore,
    /,
    table: Table,
    *,
    ledger: str | None = None,
    timeout: float | None = None,
) -> Operation[list[JobRecord]]:
    """The runs of key jobs in the table's ledger (or the table named `ledger`), newest first."""
    return deadline.bounded(_ledger(session, table, ledger).jobs(), timeout)


def job(
    session: SessionCore,
    /,
    table: Table,
    job_id: str,
    *,
    ledger: str | None = None,
    timeout: float | None = None,
) -> Operation[JobRecord]:
    """One run with its units, their counts and leases (`record.counts()` adds them up)."""
    return deadline.bounded(_ledger(session, table, ledger).job(job_id), timeout)


def cancel_job(
    session: SessionCore,
    /,
    table: Table,
    job_id: str,
    *,
    ledger: str | None = None,
    timeout: float | None = None,
) -> Operation[bool]:
    """Cancel a run: its workers stop at their next page; return False if it had ended."""
    return deadline.bounded(
        _ledger(session, table, ledger).set_state(
            job_id, "cancelled", only_from=("running", "paused")
        ),
        timeout,
    )


def run_unit(
    session: SessionCore,
    /,
    table: Table,
    job_id: str,
    unit: Unit,
    *,
    ledger: str | None = None,
    lease_seconds: float = 60.0,
    timeout: float | None = None,
) -> Operation[str]:
    """Run one unit of a job as its ledger declares it (a worker's entry point: a Step
    Functions map state or a Ray task calls it); return ``"done"`` (also for a unit done
    before), ``"held"`` (another worker holds its lease: try again after it expires) or
    ``"lost"`` (its lease was taken over, or the run was stopped or cancelled).
    """
    from lsiorm._jobs.options import ledger_location

    location = ledger_location(session.ctx, table, ledger)
    return deadline.bounded(
        declared_unit(session.ctx, location, lease_seconds, job_id, unit), timeout
    )


def declared_unit(
    ctx: Context,
    location: LedgerLocation,
    lease_seconds: float,
    job_id: str,
    unit: Unit,
    owner: str | None = None,
) -> Operation[str]:
    """Run one unit of any job as its ledger declares it: the key jobs' kinds, and a table
    migration's (whose units need its state), reading exports where a declaration says."""
    from lsiorm._io.exports import open_export
    from lsiorm._jobs.catalog import run_declared_unit
    from lsiorm._migration.catalog import UNIT_SOURCES

    return run_declared_unit(
        ctx, location, lease_seconds, job_id, unit, open_export, owner, sources=UNIT_SOURCES
    )


def _ledger(session: SessionCore, table: Table, ledger: str | None) -> JobLedger:
    from lsiorm._jobs.ledger import JobLedger
    from lsiorm._jobs.options import ledger_location

    return JobLedger(session.ctx, ledger_location(session.ctx, table, ledger))


# -- batches and transactions ---------------------------------------------------------------------


def batch_write(
    session: SessionCore,
    /,
    puts: Sequence[Entity] = (),
    deletes: Sequence[DeleteTarget] = (),
    *,
    concurrency: int = 8,
    timeout: float | None = None,
) -> Operation[BatchWriteResult]:
    """Write and delete in chunks of 25, `concurrency` chunks at a time; unprocessed items are
    retried, never dropped.
    """
    from lsiorm._ops import batch

    return deadline.bounded(
        batch.batch_write(session.ctx, puts, deletes, concurrency=concurrency), timeout
    )


def batch_get(
    session: SessionCore,
    /,
    cls_or_classes: type[E] | Sequence[type[E]],
    keys: Sequence[GetKey[E]],
    *,
    consistent: bool = False,
    concurrency: int = 8,
    timeout: float | None = None,
) -> Operation[list[E]]:
    """Read many items in chunks of 100, `concurrency` chunks at a time; unprocessed keys are
    retried, never dropped.
    """
    from lsiorm._ops import batch

    return deadline.bounded(
        batch.batch_get(
            pipeline.reading(session.ctx),
            cls_or_classes,
            keys,
            consistent=consistent,
            concurrency=concurrency,
        ),
        timeout,
    )


def transact_write(
    session: SessionCore,
    /,
    actions: Sequence[TransactAction],
    *,
    token: str | None = None,
    timeout: float | None = None,
) -> Operation[TransactWriteResult]:
    """Run put/update/delete/condition-check actions as one transaction."""
    from lsiorm._ops import transactions

    return deadline.bounded(transactions.transact_write(session.ctx, actions, token), timeout)


def transact_get(
    session: SessionCore, /, gets: Sequence[Get], *, timeout: float | None = None
) -> Operation[list[Entity | None]]:
    """Read items in one transaction; None where an item does not exist."""
    from lsiorm._ops import transactions

    return deadline.bounded(transactions.transact_get(pipeline.reading(session.ctx), gets), timeout)


def load(
    session: SessionCore, /, entity: E, *fields: str, timeout: float | None = None
) -> Operation[E]:
    """Return the entity with its lazy offloaded values fetched from S3.

    A field declared ``Offloaded(eager=False)`` is read as an `OffloadedRef`; this fetches each
    one (those named in ``fields``, or all), checks the object's digest and size, decrypts it
    under the item and attribute it was read from when it is encrypted, and returns a copy of
    the entity holding the values (the entity itself when nothing was unloaded).
    """
    from lsiorm._ops import offload_loads

    return deadline.bounded(offload_loads.load(session.ctx, entity, fields), timeout)


# -- queries and scans ----------------------------------------------------------------------------


def all(
    session: SessionCore, /, source: Query[E] | Scan[E], *, timeout: float | None = None
) -> Operation[list[E]]:
    """Run a query or scan and return every result (up to its limit)."""
    from lsiorm._ops import reads

    return deadline.bounded(reads.all(pipeline.reading(session.ctx), source), timeout)


def first(
    session: SessionCore, /, source: Query[E] | Scan[E], *, timeout: float | None = None
) -> Operation[E | None]:
    """Return the first result of a query or scan, or None."""
    from lsiorm._ops import reads

    return deadline.bounded(reads.first(pipeline.reading(session.ctx), source), timeout)


def count(
    session: SessionCore, /, source: Query[Any] | Scan[Any], *, timeout: float | None = None
) -> Operation[int]:
    """Return how many items match (Select=COUNT; no item is transferred)."""
    from lsiorm._ops import reads

    return deadline.bounded(reads.count(pipeline.reading(session.ctx), source), timeout)


def page(
    session: SessionCore, /, source: Query[E] | Scan[E], *, timeout: float | None = None
) -> Operation[Page[E]]:
    """Return up to `source.limit(n)` results (every result without a limit) with the cursor
    that resumes after them (`source.after(cursor)`). For a page of a listing, give `limit(n)`:
    `page_size(n)` only sets how many items each request evaluates, and `pages` yields the
    pages of those requests."""
    from lsiorm._ops import reads

    return deadline.bounded(reads.page(pipeline.reading(session.ctx), source), timeout)
