"""A table migration in progress: what its phases share and the runs it keeps in the ledger.

`Migration` holds the context, both tables, the state and the options of one call;
`run_declaration` names each job run of the migration in the ledger (the copy, the catch-up,
and each verification's two runs); `worker_info` is what a worker elsewhere needs to run a unit
of them (kept in the state, so that it does not change the runs' fingerprints), and
`worker_source` and `worker_destination` read it back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsiorm._jobs.catalog import imported
from lsiorm._jobs.ledger import JobLedger, fingerprint
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import JobProgress
from lsiorm._migration.plan import MigrationStore
from lsiorm._migration.state_items import MigrationState
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import KeyAttribute, Table
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = [
    "Migration",
    "delete_prefixed",
    "delete_runs",
    "job_ledger",
    "run_declaration",
    "worker_destination",
    "worker_info",
    "worker_source",
]


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


def job_ledger(m: Migration) -> JobLedger:
    """The ledger of the migration's job runs, at the state's location."""
    store = m.store
    return JobLedger(
        store.ctx,
        store.location,
        lease_seconds=m.options.lease_seconds,
        clock=m.options.ledger_clock,
    )


def run_declaration(m: Migration, kind: str, epoch: int | None = None) -> dict[str, Any]:
    """The declaration of one of the migration's job runs: ``migrate-copy``, or a
    verification's ``migrate-verify`` (the source's items) and ``migrate-extra`` (the
    destination's), whose ``epoch`` tells one verification from the next."""
    return {
        **m.state.declaration,
        "kind": kind,
        "migration": m.state.id,
        **({} if epoch is None else {"epoch": epoch}),
    }


def worker_info(m: Migration) -> dict[str, Any]:
    """What a worker elsewhere needs to run a unit of the migration: the source table (declared
    name and key schema), the destination's entity classes by import path, the page size."""
    source = m.source
    keys = [[source.partition_key.name, source.partition_key.type]]
    if source.sort_key is not None:
        keys.append([source.sort_key.name, source.sort_key.type])
    return {
        "source": source.name,
        "keys": keys,
        "entities": sorted(f"{c.__module__}:{c.__qualname__}" for c in m.table.entities.values()),
        "page_size": m.page_size,
        "concurrency": m.options.concurrency,
    }


def worker_source(info: Mapping[str, Any]) -> Table:
    """The source table as `worker_info` describes it."""
    keys = [KeyAttribute(name, kind) for name, kind in info["keys"]]
    return Table(info["source"], keys[0], keys[1] if len(keys) > 1 else None)


def worker_destination(info: Mapping[str, Any]) -> Table:
    """The destination table as `worker_info` describes it: the table of its entity classes,
    imported by their paths (a ValidationError when they cannot be)."""
    classes = [imported(path) for path in info["entities"]]
    if not classes:
        raise ValidationError(
            "jobs.not-importable", "The migration's table declares no entity to import it by."
        )
    table: Table = meta_of(classes[0]).table
    return table


def delete_runs(
    m: Migration, jobs: Sequence[str], declarations: Sequence[Mapping[str, Any]]
) -> Operation[None]:
    """Delete job runs of the migration from its ledger: each run's item and units, and the
    pointer of each declaration to its current run."""
    prefixes = [p for job in jobs for p in (f"job#{job}", f"unit#{job}#")]
    prefixes += [f"run#{fingerprint(d)}" for d in declarations]
    yield from delete_prefixed(m, prefixes)


def delete_prefixed(m: Migration, prefixes: Sequence[str]) -> Operation[None]:
    """Delete the ledger items of the migration's location whose sort keys begin with one of
    ``prefixes``."""
    yield from job_ledger(m).delete_prefixed(prefixes)
