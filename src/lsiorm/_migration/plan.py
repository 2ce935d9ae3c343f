"""A table migration's plan, its state in the ledger, and its reports.

`plan_migration` is pure: from the DescribeTable answers of the source and the destination it
refuses a source whose stream cannot feed a catch-up, and estimates the copy's time. The state
(`lsiorm._migration.state_items.MigrationState`) is an lsiorm entity in the ledger's partition,
which `MigrationStore` reads and writes, each save a put over the version it read.
`lsiorm._migration.phases` runs the phases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.ledger import JobRecord, LedgerLocation, read_item, read_items
from lsiorm._migration.state_items import (
    MigrationEntities,
    MigrationState,
    check_migration_format,
)
from lsiorm._migration.stream_replay import check_view
from lsiorm._ops import items as ops
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConditionFailedError, ResourceNotFoundError, ValidationError

__all__ = [
    "RETENTION_WARNING",
    "MigrationPlan",
    "MigrationReport",
    "MigrationStore",
    "VerifyReport",
    "estimate_copy_seconds",
    "migration_summary",
    "plan_migration",
]

#: Past this estimated copy time, a warning: the stream keeps records for 24 hours.
RETENTION_WARNING = 20 * 3600.0
#: Examples shown per kind of difference.
EXAMPLES = 20


# -- the plan (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MigrationPlan:
    """What a migration will do, decided from the two DescribeTable answers."""

    source: str
    destination: str
    stream_arn: str
    item_count: int
    size_bytes: int
    estimated_seconds: float | None
    create_destination: bool

    @property
    def too_slow(self) -> bool:
        """Whether the copy may outrun the stream's retention (24 hours)."""
        return self.estimated_seconds is not None and self.estimated_seconds > RETENTION_WARNING


def estimate_copy_seconds(
    item_count: int, size_bytes: int, write_budget: float | None, read_budget: float | None
) -> float | None:
    """Seconds the copy takes at the rate budget (None without one): each item costs a write
    unit per KB, and the scan half a read unit per 4 KB."""
    if item_count <= 0:
        return 0.0
    per_item = max(1.0, math.ceil(size_bytes / item_count / 1024))
    times = []
    if write_budget:
        times.append(item_count * per_item / write_budget)
    if read_budget:
        times.append(size_bytes / 4096 / 2 / read_budget)
    return max(times) if times else None


def plan_migration(
    source: Mapping[str, Any],
    destination: Mapping[str, Any] | None,
    *,
    write_budget: float | None = None,
    read_budget: float | None = None,
    live_source: str | None = None,
) -> MigrationPlan:
    """Decide the plan from DescribeTable's ``Table`` of the source and of the destination (None
    when it does not exist); refuse a source whose stream lacks either image. The refusals name
    ``live_source``, the table's live name under a session's table prefix, when given."""
    name = str(source.get("TableName"))
    shown = live_source or name
    spec = source.get("StreamSpecification") or {}
    arn = source.get("LatestStreamArn")
    if not spec.get("StreamEnabled") or not arn:
        raise ValidationError(
            "migrate.no-stream",
            f"Table {shown!r} has no stream; a migration catches up from it. Enable it with "
            f"`aws dynamodb update-table --table-name {shown} --stream-specification "
            "StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES`, then start again.",
            table=shown,
        )
    check_view(str(spec.get("StreamViewType", "")), shown)
    items, size = int(source.get("ItemCount", 0)), int(source.get("TableSizeBytes", 0))
    return MigrationPlan(
        name,
        str((destination or {}).get("TableName", "")),
        str(arn),
        items,
        size,
        estimate_copy_seconds(items, size, write_budget, read_budget),
        destination is None,
    )


# -- the state in the ledger ------------------------------------------------------------------


class MigrationStore:
    """A migration's items in the ledger at ``location`` (`lsiorm._migration.state_items`):
    its state, each save a put over the version it read (two processes catching up one
    migration at once would break the per-item order), and when its dual writes began."""

    def __init__(self, ctx: Context, location: LedgerLocation) -> None:
        self.ctx = ctx
        self.location = location

    @property
    def entities(self) -> MigrationEntities:
        """The migration's entities, bound to its ledger's table (once per location)."""
        loc = self.location
        return MigrationEntities.at(loc.table, loc.partition_key, loc.sort_key, loc.namespace)

    def check(self, item: Mapping[str, Any] | None) -> None:
        """Refuse a migration's item the earlier format wrote."""
        check_migration_format(item, f"the ledger of table {self.location.table!r}")

    def load(self, migration_id: str) -> Operation[MigrationState | None]:
        """The state of migration ``migration_id``, read consistently (None: none is kept, or
        the ledger table does not exist)."""
        try:
            return (
                yield from read_item(
                    self.ctx, self.entities.state, {"id": migration_id}, self.check
                )
            )
        except ResourceNotFoundError:
            return None

    def save(self, state: MigrationState) -> Operation[None]:
        """Write ``state`` over the version it was read at (0: only where none is kept), and
        move it to the version written. A put whose answer was lost and whose resend met
        itself succeeded (the put tells that apart); another writer's version is a
        ``ValidationError("migrate.concurrent")``."""
        cls = self.entities.state
        item = state if type(state) is cls else cls.model_validate(state.model_dump())
        try:
            stored = yield from ops.put(self.ctx, item)
        except ConditionFailedError as exc:  # StaleVersionError, or created meanwhile
            raise ValidationError(
                "migrate.concurrent",
                "Another process changed this migration's state meanwhile: run one migration "
                "process at a time (its copy may run on many workers).",
            ) from exc
        state.version = stored.version

    def save_dual(self, migration_id: str, *, since: float, reads: str) -> Operation[None]:
        """Record that dual writes began at ``since``, their reads going to ``reads`` (an item
        of its own: the state's version is the catch-up's, which runs meanwhile)."""
        dual = self.entities.dual(migration=migration_id, since=since, reads=reads)
        yield from ops.put(self.ctx, dual)

    def load_dual(self, migration_id: str) -> Operation[dict[str, Any] | None]:
        """What `save_dual` recorded (``since`` and ``reads``), or None."""
        dual = yield from read_item(
            self.ctx, self.entities.dual, {"migration": migration_id}, self.check
        )
        return None if dual is None else {"since": dual.since, "reads": dual.reads}

    def states(self) -> Operation[list[MigrationState]]:
        """Every migration whose state is in this ledger (none when its table does not
        exist)."""
        try:
            return (yield from read_items(self.ctx, self.entities.state, self.check))
        except ResourceNotFoundError:
            return []


# -- in `lsiorm jobs` ---------------------------------------------------------------------------


def migration_summary(state: MigrationState, runs: Sequence[JobRecord], now: float) -> str:
    """A migration as `lsiorm jobs` shows it, from its state and the ledger's runs (newest
    first): the copy's items, rate and ETA, the catch-up's lag (and how long ago the pass that
    measured it ended), and the verification in progress or the last one."""
    mine = [r for r in runs if r.declaration.get("migration") == state.id]
    source, destination = state.declaration.get("source"), state.declaration.get("destination")
    lines = [f"migration {state.id}  {source!r} -> {destination!r}: {state.phase}"]
    copy = next((r for r in mine if r.kind == "migrate-copy"), None)
    if copy is not None:
        line = (
            f"  copy: run {copy.id} {copy.state}, units {copy.units_done}/{copy.units_total}, "
            f"{copy.items} items read, {copy.changed} copied"
        )
        if copy.items:
            line += f", {copy.items_per_second:.0f} items/s"
        if copy.eta is not None:
            line += f", ETA {copy.eta:.0f} s"
        lines.append(line)
    if state.caught_up_at:
        records, seconds = int(state.lag[0]), float(state.lag[1])
        ago = max(0.0, now - state.caught_up_at)
        lines.append(
            f"  catch-up: {state.applied} changes applied, {state.skipped} skipped"
            + (f", {state.before_copy} older than the copy" if state.before_copy else "")
            + f"; lag {records} records, {seconds:.1f} s behind (measured {ago:.0f} s ago)"
        )
    if state.verifying is not None:
        epoch = state.verifying.get("epoch")
        current = [
            r for r in mine if r.kind != "migrate-copy" and r.declaration.get("epoch") == epoch
        ]
        units = ", ".join(f"{r.kind} units {r.units_done}/{r.units_total}" for r in current)
        lines.append(f"  verify: in progress ({units or 'opening'})")
    elif state.verify:
        verdict = "clean" if state.verify.get("clean") else "DIFFERENCES"
        counts = ", ".join(
            f"{state.verify.get(k, 0)} {k}" for k in ("missing", "different", "extra")
        )
        lines.append(f"  verify: {verdict}: {state.verify.get('source', 0)} source items, {counts}")
    return "\n".join(lines)


# -- the report -------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    """What a verification found: source items read, how many matched, the destination items
    missing, different or extra (with examples: destination keys), and both checksums."""

    source: int = 0
    matched: int = 0
    missing: int = 0
    different: int = 0
    extra: int = 0
    unmatched: int = 0
    source_checksum: int = 0
    destination_checksum: int = 0
    examples: dict[str, list[Any]] = field(default_factory=dict)
    #: Only the items changed since the last clean verification were checked (a cut-over
    #: with writers paused): ``source`` counts those checks, not the table's items.
    changed_only: bool = False

    @property
    def clean(self) -> bool:
        """Whether the destination holds exactly the derived source items."""
        return not (self.missing or self.different or self.extra)

    def __str__(self) -> str:
        verdict = "clean" if self.clean else "DIFFERENCES"
        what = (
            "items changed since the last clean verification checked"
            if self.changed_only
            else "source items"
        )
        lines = [
            f"  verify: {verdict}: {self.source} {what}, {self.matched} matched, "
            f"{self.missing} missing, {self.different} different, {self.extra} extra",
        ]
        for kind, keys in self.examples.items():
            lines.extend(f"    {kind}: {key}" for key in keys[:EXAMPLES])
        return "\n".join(lines)


@dataclass
class MigrationReport:
    """Where a migration stands: its phase, what the copy did, the catch-up's lag, the last
    verification, and whether it is ready to switch (lag zero, verification clean)."""

    source: str
    destination: str
    phase: str
    migration: str
    created_destination: bool = False
    copied: int = 0
    present: int = 0
    unmatched: int = 0
    as_stored: int = 0
    failed: int = 0
    examples: dict[str, list[Any]] = field(default_factory=dict)
    applied: int = 0
    skipped: int = 0
    unapplied: int = 0
    #: Changes the catch-up read but did not apply: older than the copy's start.
    before_copy: int = 0
    lag_records: int = 0
    lag_seconds: float = 0.0
    verify: VerifyReport | None = None
    estimated_seconds: float | None = None
    elapsed: float = 0.0
    copy_job: str | None = None
    #: When dual writes began (seconds since the epoch) and where their reads went; None when
    #: no session declared dual writes.
    dual_writes: dict[str, Any] | None = None

    @property
    def ready(self) -> bool:
        """Whether writers may be paused for the switch: no lag, and a clean verification."""
        return (
            self.phase in ("catch-up", "switched")
            and self.lag_records == 0
            and self.verify is not None
            and self.verify.clean
        )

    def __str__(self) -> str:
        state = "switched" if self.phase == "switched" else self.phase
        if self.ready and self.phase != "switched":
            state += " (ready to switch)"
        lines = [
            f"Migration of {self.source!r} to {self.destination!r}: {state}",
            f"  copy: {self.copied} copied, {self.present} already there, "
            f"{self.unmatched} unmatched, {self.as_stored} kept as stored, {self.failed} failed",
            f"  catch-up: {self.applied} changes applied, {self.skipped} skipped"
            + (f", {self.before_copy} older than the copy" if self.before_copy else "")
            + (f", {self.unapplied} too large to apply" if self.unapplied else "")
            + f"; lag {self.lag_records} records, {self.lag_seconds:.1f} s",
        ]
        for kind, values in self.examples.items():
            lines.extend(f"    {kind}: {value}" for value in values[:EXAMPLES])
        if self.dual_writes is not None:
            lines.append(f"  dual writes: declared (reads from the {self.dual_writes['reads']})")
        if self.verify is not None:
            lines.append(str(self.verify))
        lines.append(f"  migration: {self.migration}")
        return "\n".join(lines)
