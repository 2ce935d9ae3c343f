"""A table migration's plan, its state in the ledger, and its reports.

`plan_migration` is pure: from the DescribeTable answers of the source and the destination it
refuses a source whose stream cannot feed a catch-up, and estimates the copy's time. The state
(`MigrationState`) is one item in the ledger's partition, written by `MigrationStore` on the
condition that nobody wrote it since it was read. `lsiorm._migration.phases` runs the phases.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lsiorm._jobs.ledger import JobRecord, LedgerLocation
from lsiorm._migration.stream_replay import check_view
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConditionFailedError, ResourceNotFoundError, ValidationError

__all__ = [
    "RETENTION_WARNING",
    "MigrationPlan",
    "MigrationReport",
    "MigrationState",
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


@dataclass
class MigrationState:
    """A migration as its ledger item holds it.

    ``phase``: ``copy``, ``catch-up``, ``switched`` or ``abandoned``. ``shards`` maps each
    shard id to its parent, the last sequence number applied and whether it is read to its
    end. ``lag`` is ``[records, seconds]`` of the last catch-up pass, which ended at
    ``caught_up_at`` (seconds since the epoch; 0 before the first).
    """

    id: str
    declaration: dict[str, Any]
    phase: str = "copy"
    created_destination: bool = False
    stream_arn: str = ""
    shards: dict[str, dict[str, Any]] = field(default_factory=dict)
    copy_job: str | None = None
    applied: int = 0
    skipped: int = 0
    #: Changes that could not be applied on a condition (an item whose condition would be
    #: longer than DynamoDB allows); verification reports their items.
    unapplied: int = 0
    lag: list[float] = field(default_factory=lambda: [0, 0.0])
    verify: dict[str, Any] = field(default_factory=dict)
    #: The shards' positions when the last clean verification started (None: there is none).
    verified_from: dict[str, str | None] | None = None
    #: Verifications begun so far: the epoch of the last, in its runs' declarations.
    verify_epoch: int = 0
    #: The verification in progress (None: none): its ``epoch``, the shards' positions at its
    #: ``start``, and the ids of its runs done (``jobs``, by kind).
    verifying: dict[str, Any] | None = None
    #: The runs of the last verification that ended (deleted when the next one begins).
    verify_jobs: list[str] = field(default_factory=list)
    caught_up_at: float = 0.0
    #: What a worker elsewhere needs to run a unit of the migration (`worker_info`).
    worker: dict[str, Any] = field(default_factory=dict)
    version: int = 0


class MigrationStore:
    """Reads and writes the state item, each write conditional on the version it read (two
    processes catching up one migration at once would break the per-item order)."""

    def __init__(self, ctx: Context, location: LedgerLocation) -> None:
        self.ctx = ctx
        self.location = location

    def key(self, migration_id: str) -> dict[str, Any]:
        return self.location.key(f"migration#{migration_id}")

    def _read(self, migration_id: str) -> Operation[dict[str, Any] | None]:
        params = {
            "TableName": self.location.table,
            "Key": self.key(migration_id),
            "ConsistentRead": True,
        }
        try:
            response = yield from call(self.ctx, "GetItem", params)
        except ResourceNotFoundError:
            return None
        item: dict[str, Any] | None = response.get("Item")
        return item

    def load(self, migration_id: str) -> Operation[MigrationState | None]:
        item = yield from self._read(migration_id)
        if item is None:
            return None
        data = json.loads(item["data"]["S"])
        return MigrationState(**data)

    def save(self, state: MigrationState) -> Operation[None]:
        previous = state.version
        state.version += 1
        item = {
            **self.key(state.id),
            "data": {"S": json.dumps(asdict(state), sort_keys=True)},
            "phase": {"S": state.phase},
            "version": {"N": str(state.version)},
        }
        params: dict[str, Any] = {"TableName": self.location.table, "Item": item}
        if previous:
            params["ConditionExpression"] = "#v = :v"
            params["ExpressionAttributeNames"] = {"#v": "version"}
            params["ExpressionAttributeValues"] = {":v": {"N": str(previous)}}
        else:
            params["ConditionExpression"] = "attribute_not_exists(#v)"
            params["ExpressionAttributeNames"] = {"#v": "version"}
        try:
            yield from call(self.ctx, "PutItem", params)
        except ConditionFailedError as exc:
            # A write whose answer was lost and whose resend met itself is this one.
            there = yield from self._read(state.id)
            if there is not None and there.get("data") == item["data"]:
                return
            state.version = previous
            raise ValidationError(
                "migrate.concurrent",
                "Another process changed this migration's state meanwhile: run one migration "
                "process at a time (its copy may run on many workers).",
            ) from exc

    def save_dual(self, migration_id: str, data: Mapping[str, Any]) -> Operation[None]:
        """Record that dual writes began (an item of its own: the state's version is the
        catch-up's, which runs meanwhile)."""
        item = {
            **self.location.key(f"migration#{migration_id}#dual"),
            "data": {"S": json.dumps(dict(data), sort_keys=True)},
        }
        yield from call(self.ctx, "PutItem", {"TableName": self.location.table, "Item": item})

    def load_dual(self, migration_id: str) -> Operation[dict[str, Any] | None]:
        """What `save_dual` recorded, or None."""
        params = {
            "TableName": self.location.table,
            "Key": self.location.key(f"migration#{migration_id}#dual"),
            "ConsistentRead": True,
        }
        response = yield from call(self.ctx, "GetItem", params)
        item = response.get("Item")
        if not item:
            return None
        data: dict[str, Any] = json.loads(item["data"]["S"])
        return data

    def states(self) -> Operation[list[MigrationState]]:
        """Every migration whose state is in this ledger."""
        loc = self.location
        params: dict[str, Any] = {
            "TableName": loc.table,
            "KeyConditionExpression": "#p = :p AND begins_with(#s, :s)",
            "ExpressionAttributeNames": {"#p": loc.partition_key, "#s": loc.sort_key},
            "ExpressionAttributeValues": {":p": {"S": loc.namespace}, ":s": {"S": "migration#"}},
            "ConsistentRead": True,
        }
        found: list[MigrationState] = []
        while True:
            try:
                response = yield from call(self.ctx, "Query", dict(params))
            except ResourceNotFoundError:
                return found
            for item in response.get("Items") or ():
                if item[loc.sort_key]["S"].count("#") == 1:  # not a migration's other items
                    found.append(MigrationState(**json.loads(item["data"]["S"])))
            last = response.get("LastEvaluatedKey")
            if not last:
                return found
            params["ExclusiveStartKey"] = last

    def delete(self, migration_id: str) -> Operation[None]:
        params = {"TableName": self.location.table, "Key": self.key(migration_id)}
        yield from call(self.ctx, "DeleteItem", params)


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
            f"  catch-up: {state.applied} changes applied, {state.skipped} skipped; "
            f"lag {records} records, {seconds:.1f} s behind (measured {ago:.0f} s ago)"
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

    @property
    def clean(self) -> bool:
        """Whether the destination holds exactly the derived source items."""
        return not (self.missing or self.different or self.extra)

    def __str__(self) -> str:
        verdict = "clean" if self.clean else "DIFFERENCES"
        lines = [
            f"  verify: {verdict}: {self.source} source items, {self.matched} matched, "
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
