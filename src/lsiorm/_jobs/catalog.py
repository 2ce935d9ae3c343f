"""The kinds of key job by name: how a worker anywhere runs a unit of a job it did not start.

A worker elsewhere (a process of a pool, a Dask worker, a Lambda function of a Step Functions
map) gets a ledger location, a job id and a unit. It reads the job's declaration from the
ledger, imports the entity classes it names (``module:QualifiedName``: they must be importable
where the worker runs), and builds the same kind and page source the job's own process uses.
Kinds of other layers (a table migration's copy and verification, which read their tables
from the migration's state) are given to `run_declared_unit` as `UnitSource` functions by
the caller, so that the key jobs never import the migration.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from lsiorm._jobs.backfill import kind_factory
from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import JobKind, PageSource, run_unit, scan_pages, without_partition
from lsiorm._jobs.key_audit import AuditKind
from lsiorm._jobs.ledger import JobLedger, LedgerLocation, new_owner
from lsiorm._jobs.options import ExportInput
from lsiorm._jobs.resumable import Position
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = ["UnitSource", "imported", "run_declared_unit"]


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


#: How a worker makes the kind and the page source of a unit whose declaration is of a kind
#: this module does not know (a table migration's runs, `lsiorm._migration.catalog`): from the
#: ledger's location and the run's declaration.
UnitSource = Callable[
    [Context, LedgerLocation, Mapping[str, Any]],
    Operation[tuple[Callable[[Context, RateBudget], JobKind[Any]], PageSource]],
]


def run_declared_unit(
    ctx: Context,
    location: LedgerLocation,
    lease_seconds: float,
    job_id: str,
    unit: Unit,
    open_export: Callable[[str], ExportInput],
    owner: str | None = None,
    *,
    sources: Mapping[str, UnitSource] | None = None,
) -> Operation[str]:
    """Run ``unit`` of the job ``job_id`` as its declaration in the ledger says (claimed with
    a token of this execution, under the submission's token ``owner`` when given). A
    declaration whose kind ``sources`` names is made by that source; the key jobs' kinds are
    this module's own."""
    ledger = JobLedger(ctx, location, lease_seconds=lease_seconds)
    record = yield from ledger.job(job_id, units=False)
    declaration = record.declaration
    source = (sources or {}).get(str(declaration.get("kind")))
    if source is not None:
        kind_for, pages = yield from source(ctx, location, declaration)
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
