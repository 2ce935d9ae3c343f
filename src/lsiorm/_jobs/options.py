"""How a key job runs, apart from what it does: its ledger, executor, rate budget and input.

Every key job (audit, backfill, relief) takes one `JobOptions`. The session layer builds it
from the method's keywords (``ledger=``, ``executor=``, ``write_budget=``, ``export=``); the
job itself only asks it for its units, its pages, its ledger and how to submit a unit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.budget import initial_rate
from lsiorm._jobs.engine import JobRun, PageSource, run_units, scan_pages, without_partition
from lsiorm._jobs.ledger import JobLedger, JobRecord, LedgerLocation, new_owner
from lsiorm._jobs.memory_ledger import Ledger, MemoryLedger
from lsiorm._jobs.resumable import JobProgress
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.units import ExportUnit, ScanUnit, Unit, scan_units
from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = ["ExportInput", "JobOptions", "ledger_location"]


@dataclass(frozen=True)
class ExportInput:
    """A DynamoDB export to read instead of scanning: its units (one per data file), how to
    read a unit's pages, its item count from the manifest, and where it is (for the job's
    declaration)."""

    location: str
    units: tuple[ExportUnit, ...]
    pages: PageSource
    items: int | None = None


def ledger_location(ctx: Context, table: Table, ledger: str | None) -> LedgerLocation:
    """Where a job on ``table`` keeps its ledger: the table's reserved partition, or the table
    named ``ledger``, keyed PK and SK. Names are declared ones: the ledger's requests go through
    the session, which applies its prefix (and a remote worker's session applies its own)."""
    if ledger is not None:
        return LedgerLocation(ledger, "PK", "SK")
    pk, sk = table.partition_key, table.sort_key
    if pk.type != "S" or sk is None or sk.type != "S":
        raise ValidationError(
            "jobs.ledger-table",
            f"Table {table.name!r} has no string partition and sort key, so it cannot hold the "
            "job's ledger; name a ledger table with ledger= (lsiorm.ledger_table(name) declares "
            "one).",
            table=table.name,
        )
    return LedgerLocation(table.name, pk.name, sk.name)


@dataclass(frozen=True)
class JobOptions:
    """How a job runs; see the module docstring.

    ``ledger`` is the declared name of a ledger table, or None for the job's own table.
    ``in_memory`` keeps the ledger in this process (a read-only audit, a dry run).
    ``worker(location, lease_seconds, job_id, unit, owner)`` is what an ``executor`` runs per
    unit, in whatever process it chooses (``owner``: the claim token of that submission).
    ``detach`` only opens the run: its units are run elsewhere, one call of `Session.run_unit`
    each.
    """

    ledger: str | None = None
    in_memory: bool = False
    executor: Any = None
    worker: Callable[..., Any] | None = None
    write_budget: float | None = None
    read_budget: float | None = None
    export: ExportInput | None = None
    concurrency: int = 8
    lease_seconds: float = 60.0
    detach: bool = False
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)
    ledger_clock: Callable[[], float] = field(default=time.time, compare=False)

    def units(self, spec: ScanSpec) -> Sequence[Unit]:
        """The units of the job's input: the export's files, or a scan's segments (or the
        query of one partition)."""
        if self.export is not None:
            return self.export.units
        if spec.partition is None:
            return scan_units(spec.parallel)
        values = spec.params()["ExpressionAttributeValues"]
        return (ScanUnit(0, 1, values[":pk"]),)

    def pages(self, spec: ScanSpec) -> PageSource:
        """How a unit reads its pages: from the export, or by the scan (or query) of ``spec``;
        either way without the items of the table's reserved partition, which hold the jobs'
        ledger (of this job or of an earlier one, wherever this one keeps its own)."""
        skip = reserved_partition(spec.table)
        if self.export is not None:
            return without_partition(self.export.pages, spec.table, skip)
        return scan_pages(spec, skip=skip)

    def ledger_for(self, ctx: Context, table: Table, *, writes: bool = True) -> Ledger:
        """The job's ledger: in DynamoDB, or in this process for a job that writes nothing."""
        if self.in_memory or not writes:
            if self.executor is not None:
                raise ValidationError(
                    "jobs.memory-ledger",
                    "A dry run keeps its ledger in this process, so it cannot run on an "
                    "executor; run it without executor=.",
                    table=table.name,
                )
            return MemoryLedger(self.ledger_clock)
        location = ledger_location(ctx, table, self.ledger)
        return JobLedger(ctx, location, lease_seconds=self.lease_seconds, clock=self.ledger_clock)

    def submitter(self, ledger: Ledger) -> Callable[[str, Unit], Future[Any]] | None:
        """How to run a unit on the executor, or None to run units in threads here."""
        if self.executor is None:
            return None
        if self.worker is None or not isinstance(ledger, JobLedger):
            raise ValidationError(
                "jobs.executor",
                "This session cannot send units to an executor: its workers build their own "
                "sessions from this one's parameters, and it was given a client, a "
                "boto3_session/aioboto3_session or a table_names function, which cannot be "
                "sent to them. Build it from endpoint_url=, region_name=, profile_name= and "
                "table_prefix= instead.",
            )
        executor, worker, location = self.executor, self.worker, ledger.location
        lease = ledger.lease_seconds

        def submit(job_id: str, unit: Unit) -> Future[Any]:
            # A token per submission: the claim's owner, and what makes each submission a call
            # of its own for an executor that caches calls by their arguments (Dask).
            owner = new_owner()
            future: Future[Any] = executor.submit(worker, location, lease, job_id, unit, owner)
            return future

        return submit

    def run(
        self,
        ctx: Context,
        ledger: Ledger,
        job: JobRun[Any],
        progress: Callable[[JobProgress], object] | None,
        *,
        concurrency: int | None = None,
    ) -> Operation[tuple[JobRecord, bool]]:
        """Run ``job``'s units on ``ledger`` as these options say: in threads here (at most
        ``concurrency``, else the options' own), or on the executor; or only open it."""
        return run_units(
            ctx,
            ledger,
            job,
            submit=self.submitter(ledger),
            concurrency=self.concurrency if concurrency is None else concurrency,
            progress=progress,
            clock=self.clock,
            detach=self.detach,
        )

    def declared(self) -> dict[str, Any]:
        """What of these options changes the job's work (the input), for its fingerprint."""
        return {"input": self.export.location if self.export is not None else "scan"}

    def rate(self) -> dict[str, float]:
        """The job's starting rate (its targets)."""
        return initial_rate(self.write_budget, self.read_budget)
