"""A table migration's runs by name: how a worker anywhere runs a unit of its copy or verification.

The copy (``migrate-copy``), the catch-up's shards (``migrate-catch-up``) and the verification
of the source's items (``migrate-verify``) may run on an executor, like the key jobs
(`lsiorm._jobs.catalog`). Their units need the
migration's two tables, which the runs' declarations leave out (they would change the runs'
fingerprints whenever the models move): a worker reads them from the migration's state
(`MigrationState.worker`, kept by `lsiorm._migration.run.worker_info`). `UNIT_SOURCES` is what
the session layer hands `run_declared_unit` for these kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.catalog import UnitSource
from lsiorm._jobs.engine import JobKind, PageSource, scan_pages
from lsiorm._jobs.ledger import LedgerLocation
from lsiorm._jobs.scans import ScanSpec
from lsiorm._migration.catch_up import CATCH_UP, REPLAY_MARGIN, ShardKind, shard_pages
from lsiorm._migration.plan import MigrationStore
from lsiorm._migration.run import worker_destination, worker_source
from lsiorm._migration.state_items import MigrationState
from lsiorm._migration.table_copy import CopyKind, VerifyKind
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = ["UNIT_SOURCES", "catch_up_unit", "migration_unit"]


def _state(
    ctx: Context, location: LedgerLocation, declaration: Mapping[str, Any]
) -> Operation[MigrationState]:
    state = yield from MigrationStore(ctx, location).load(str(declaration.get("migration")))
    if state is None or not state.worker:
        raise ValidationError(
            "migrate.unknown", f"No migration {declaration.get('migration')!r} is recorded."
        )
    return state


def migration_unit(
    ctx: Context, location: LedgerLocation, declaration: Mapping[str, Any]
) -> Operation[tuple[Callable[[Context, RateBudget], JobKind[Any]], PageSource]]:
    """The kind and the page source of a unit of a migration's copy or verification: the
    tables come from what the migration's state keeps for workers."""
    state = yield from _state(ctx, location, declaration)
    info = state.worker
    destination = worker_destination(info)
    source = worker_source(info)
    spec = ScanSpec(source, None, None, 1, page_size=info.get("page_size"))

    def kind_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        if declaration.get("kind") == "migrate-copy":
            return CopyKind(unit_ctx, destination, budget)
        return VerifyKind(unit_ctx, source, destination)

    return kind_for, scan_pages(spec, skip=reserved_partition(source))


def catch_up_unit(
    ctx: Context, location: LedgerLocation, declaration: Mapping[str, Any]
) -> Operation[tuple[Callable[[Context, RateBudget], JobKind[Any]], PageSource]]:
    """The kind and the page source of a unit of the catch-up (a stream shard): the
    destination, the copy's start and the concurrency come from the migration's state."""
    state = yield from _state(ctx, location, declaration)
    destination = worker_destination(state.worker)
    cutoff = None if state.copy_started is None else state.copy_started - REPLAY_MARGIN
    concurrency = int(state.worker.get("concurrency", 8))

    def kind_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        return ShardKind(unit_ctx, destination, cutoff=cutoff, concurrency=concurrency)

    stream = str(declaration.get("stream") or state.stream_arn)
    return kind_for, shard_pages(stream, cutoff=cutoff, tables=(worker_source(state.worker),))


#: The runs of a table migration that a worker elsewhere may run units of, by kind.
UNIT_SOURCES: Mapping[str, UnitSource] = {
    "migrate-copy": migration_unit,
    "migrate-verify": migration_unit,
    CATCH_UP: catch_up_unit,
}
