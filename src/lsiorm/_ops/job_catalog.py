"""The kinds of key job by name: how a worker anywhere runs a unit of a job it did not start.

A worker elsewhere (a process of a pool, a Dask worker, a Lambda function of a Step Functions
map) gets a ledger location, a job id and a unit. It reads the job's declaration from the
ledger, imports the entity classes it names (``module:QualifiedName``: they must be importable
where the worker runs), and builds the same kind and page source the job's own process uses.
A table migration's copy and verification read those from the migration's state instead
(`MigrationState.worker`), so that they stay out of the runs' fingerprints.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._ops.backfill import kind_factory
from lsiorm._ops.budget import RateBudget
from lsiorm._ops.job_engine import JobKind, PageSource, run_unit, scan_pages, without_partition
from lsiorm._ops.job_options import ExportInput
from lsiorm._ops.key_audit import AuditKind
from lsiorm._ops.ledger import JobLedger, LedgerLocation, new_owner
from lsiorm._ops.migration_plan import MigrationStore
from lsiorm._ops.migration_run import worker_source
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.resumable import Position
from lsiorm._ops.scans import ScanSpec
from lsiorm._ops.steps import Operation
from lsiorm._ops.table_copy import CopyKind, VerifyKind
from lsiorm._ops.units import ScanUnit, Unit
from lsiorm.errors import ValidationError

__all__ = ["imported", "run_declared_unit"]


def imported(path: str) -> Any:
    """The object at ``module:Qualified.Name``; a ValidationError when it cannot be imported."""
    module, _, name = path.partition(":")
    if "<locals>" in name or not name:
        raise ValidationError(
            "jobs.not-importable",
            f"{path} is defined inside a function; a worker elsewhere cannot import it. "
            "Declare it at module level to run the job on an executor.",
        )
    try:
        found: Any = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ValidationError("jobs.not-importable", f"Cannot import {path}: {exc}") from exc
    return found


def _kind_and_table(
    declaration: Mapping[str, Any],
) -> tuple[Callable[[Context, RateBudget], JobKind[Any]], Any, type[Entity] | None]:
    kind = declaration.get("kind")
    if kind == "backfill":
        entity: type[Entity] = imported(declaration["entity"])
        factory = kind_factory(
            entity,
            dry_run=bool(declaration.get("dry_run")),
            max_attempts=int(declaration.get("max_attempts", 10)),
            exported=declaration.get("input", "scan") != "scan",
        )
        return factory, meta_of(entity).table, entity
    if kind == "audit":
        only = imported(declaration["entity"]) if declaration.get("entity") else None
        classes = [imported(p) for p in declaration.get("entities", ())]
        if not classes:
            raise ValidationError(
                "jobs.not-importable", "The audit's table declares no entity to import it by."
            )
        table = meta_of(classes[0]).table
        examples = int(declaration.get("examples", 3))

        def audit_kind(ctx: Context, budget: RateBudget) -> AuditKind:
            return AuditKind(table, only, examples)

        return audit_kind, table, only
    raise ValidationError(
        "jobs.not-distributable",
        f"A {kind} job runs in the process that started it; it cannot run on a worker.",
    )


def _declared_unit(
    declaration: Mapping[str, Any], open_export: Callable[[str], ExportInput]
) -> tuple[Callable[[Context, RateBudget], JobKind[Any]], PageSource]:
    """The kind and the page source of a key job's unit, from its declaration (its pages
    without the items of the jobs' ledger, as `JobOptions.pages` reads them)."""
    kind_for, table, entity = _kind_and_table(declaration)
    source = declaration.get("input", "scan")
    skip = reserved_partition(table)
    if source != "scan":
        return kind_for, without_partition(open_export(str(source)).pages, table, skip)
    page_size = declaration.get("page_size")

    def pages(ctx: Context, unit: Unit, position: Position) -> Operation[Any]:
        assert isinstance(unit, ScanUnit)
        spec = ScanSpec(table, entity, unit.partition, unit.total_segments, page_size=page_size)
        return (yield from scan_pages(spec, skip=skip)(ctx, unit, position))

    return kind_for, pages


#: The runs of a table migration that a worker elsewhere may run units of.
MIGRATION_KINDS = ("migrate-copy", "migrate-verify")


def _migration_unit(
    ctx: Context, location: LedgerLocation, declaration: Mapping[str, Any]
) -> Operation[tuple[Callable[[Context, RateBudget], JobKind[Any]], PageSource]]:
    """The kind and the page source of a unit of a migration's copy or verification: the
    tables come from what the migration's state keeps for workers."""
    state = yield from MigrationStore(ctx, location).load(str(declaration.get("migration")))
    if state is None or not state.worker:
        raise ValidationError(
            "migrate.unknown", f"No migration {declaration.get('migration')!r} is recorded."
        )
    info = state.worker
    classes = [imported(path) for path in info["entities"]]
    if not classes:
        raise ValidationError(
            "jobs.not-importable", "The migration's table declares no entity to import it by."
        )
    destination: Table = meta_of(classes[0]).table
    source = worker_source(info)
    spec = ScanSpec(source, None, None, 1, page_size=info.get("page_size"))

    def kind_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        if declaration.get("kind") == "migrate-copy":
            return CopyKind(unit_ctx, destination, budget)
        return VerifyKind(unit_ctx, source, destination)

    return kind_for, scan_pages(spec, skip=reserved_partition(source))


def run_declared_unit(
    ctx: Context,
    location: LedgerLocation,
    lease_seconds: float,
    job_id: str,
    unit: Unit,
    open_export: Callable[[str], ExportInput],
    owner: str | None = None,
) -> Operation[str]:
    """Run ``unit`` of the job ``job_id`` as its declaration in the ledger says (claimed with
    a token of this execution, under the submission's token ``owner`` when given)."""
    ledger = JobLedger(ctx, location, lease_seconds=lease_seconds)
    record = yield from ledger.job(job_id, units=False)
    declaration = record.declaration
    if declaration.get("kind") in MIGRATION_KINDS:
        kind_for, pages = yield from _migration_unit(ctx, location, declaration)
    else:
        kind_for, pages = _declared_unit(declaration, open_export)
    # A token per execution, under the submission's: an executor may run one submission
    # again (Dask retries a task whose worker died), and that run must not take the dead
    # run's lease for its own; it waits for the lease to lapse, as any other worker does.
    token = new_owner() if owner is None else f"{owner}.{new_owner()}"
    result = yield from run_unit(ctx, kind_for, pages, ledger, job_id, unit, owner=token)
    if result == "held":  # a unit done already is done, not held (a map item run again)
        held = yield from ledger.unit_record(job_id, unit)
        if held is not None and held.state == "done":
            return "done"
    return result
