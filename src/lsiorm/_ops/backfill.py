"""Backfill and re-key: rewrite the derived key attributes of stale items, and only those.

The job reads a partition or the whole table (parallel scan segments) and checks each item of
one entity type with `check_item_keys`. A stale item is rewritten
on the condition that it is unchanged since it was read, so a concurrent writer's update is
never overwritten; a rewrite whose condition fails re-reads the item and tries again.

* Only index slots or the type attribute differ: one UpdateItem that sets the derived values
  and removes the slots the declaration no longer derives.
* The primary key differs (a new sort key format, say): a move, in one transaction: put the
  item under its new key, create-only, and delete the old one on the condition that it is
  unchanged.

The job writes a checkpoint file after every page, so a run that stops (crash, Ctrl-C, an
error) resumes from where its segments were. Writes are paced to a budget of write units per
second, priced by the capacity model (LSI and GSI write amplification included); a dry run
reads the items and prices the rewrites without writing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm._model.capacity import ReadEstimate, WriteEstimate, estimate_write
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire, same_item
from lsiorm._ops.key_audit import ItemKeyCheck, ScanSpec, check_item_keys, price_scan, scan_items
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.rekeying import move_request, moved_item, watched_attributes
from lsiorm._ops.resumable import (
    MAX_EXPRESSION_BYTES,
    CheckpointStore,
    JobProgress,
    Ledger,
    WriteBudget,
    unchanged_condition,
)
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConditionFailedError, TransactionCanceledError, ValidationError

__all__ = [
    "MAX_EXPRESSION_BYTES",
    "BackfillReport",
    "WriteBudget",
    "backfill",
    "unchanged_condition",
]


# -- the report and the checkpoint ----------------------------------------------------------


@dataclass
class BackfillReport:
    """What a backfill did.

    ``rewritten`` items had stale keys and were rewritten in place, ``moved`` of them by a move
    to a new primary key; ``current`` items needed nothing; ``retried`` counts rewrites skipped
    because the item changed since it was read (each was re-read and tried again); ``gone``
    items were deleted (or, during a re-keying, moved by a write) by someone else before they
    could be rewritten; ``failed`` lists the
    stored keys (and why) of items given up on. A ``dry_run`` writes nothing: ``rewritten``
    then counts the items that would be rewritten and ``estimate`` prices them. Counts include
    the runs a checkpoint resumes; items rewritten in a page that was cut short count as
    ``current`` when the resumed run reads them again. An item this run moved to a key the scan
    reaches later is not counted again when it is read there.
    """

    table: str
    entity: str
    read_estimate: ReadEstimate
    estimate: WriteEstimate
    dry_run: bool = False
    scanned: int = 0
    rewritten: int = 0
    moved: int = 0
    current: int = 0
    retried: int = 0
    gone: int = 0
    other: int = 0
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    units_spent: float = 0.0
    elapsed: float = 0.0
    checkpoint: str | None = None
    resumed: bool = False

    @property
    def complete(self) -> bool:
        """Whether every stale item was rewritten (nothing failed)."""
        return not self.failed

    def __str__(self) -> str:
        verb = "would rewrite" if self.dry_run else "rewritten"
        lines = [
            f"Backfill of {self.entity} in table {self.table!r}"
            + (" (dry run)" if self.dry_run else "")
            + (" (resumed)" if self.resumed else ""),
            f"  read priced at {self.read_estimate}",
            f"  rewrites priced at {self.estimate} ({self.estimate.total:g} write units)",
            f"  {self.scanned} items read in {self.elapsed:.1f} s",
            f"  {verb}: {self.rewritten} (moved to a new key: {self.moved})",
            f"  already current: {self.current}",
            f"  skipped because changed, and retried: {self.retried}",
            f"  deleted meanwhile: {self.gone}",
            f"  failed: {len(self.failed)}",
        ]
        lines.extend(f"    {key}: {why}" for key, why in self.failed[:10])
        if self.checkpoint is not None:
            lines.append(f"  checkpoint: {self.checkpoint}")
        return "\n".join(lines)


_COUNTERS = ("scanned", "rewritten", "moved", "current", "retried", "gone", "other")


def _identity(spec: ScanSpec, entity: type[Entity]) -> dict[str, Any]:
    partition = spec.partition
    return {
        "table": spec.table.name,
        "entity": meta_of(entity).type_name,
        "segments": spec.parallel,
        "partition": None if partition is None else repr(partition),
    }


def _add(report: BackfillReport, part: BackfillReport) -> None:
    for name in _COUNTERS:
        setattr(report, name, getattr(report, name) + getattr(part, name))
    report.failed.extend(part.failed)
    report.estimate = report.estimate + part.estimate


def _saved(report: BackfillReport) -> dict[str, Any]:
    return {
        "counts": {name: getattr(report, name) for name in _COUNTERS},
        "failed": [[key, why] for key, why in report.failed],
    }


def _restore(report: BackfillReport, data: Mapping[str, Any]) -> None:
    for name in _COUNTERS:
        setattr(report, name, int(data.get("counts", {}).get(name, 0)))
    report.failed = [(dict(key), str(why)) for key, why in data.get("failed", [])]
    report.resumed = True


# -- the job --------------------------------------------------------------------------------


def backfill(
    ctx: Context,
    entity: type[Entity],
    *,
    partition: Any = None,
    segments: int = 4,
    write_budget: float | None = None,
    checkpoint: CheckpointStore | None = None,
    dry_run: bool = False,
    max_attempts: int = 10,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Operation[BackfillReport]:
    """Rewrite the stale key attributes of ``entity``'s items; see the module docstring.

    ``write_budget`` is in write units per second (None: unpaced). ``checkpoint`` is where
    the job stores its position after each page, and resumes from when it holds one; a
    finished job leaves it with every segment done, so running it again reads nothing.
    ``page_size`` caps the items read per page. A dry run neither reads nor stores it.
    """
    meta = meta_of(entity)
    table: Table = meta.table
    spec = ScanSpec(table, entity, partition, segments, page_size=page_size)
    read_estimate, total = yield from price_scan(ctx, spec)
    report = BackfillReport(
        table.name, meta.type_name, read_estimate, WriteEstimate(table.name, 0.0), dry_run
    )
    store = checkpoint if not dry_run else None
    if checkpoint is not None:
        report.checkpoint = str(checkpoint)
    ledger: Ledger[BackfillReport, BackfillReport] = Ledger(
        report,
        new_part=lambda: BackfillReport(
            table.name, meta.type_name, read_estimate, WriteEstimate(table.name, 0.0), dry_run
        ),
        merge=_add,
        changed=lambda whole: whole.rewritten,
        segments=spec.parallel,
        total=total,
        progress=progress,
        clock=clock,
        store=store,
        identity=_identity(spec, entity),
        saved=_saved,
        name=f"backfill of {table.name}",
    )
    data = ledger.resume(table, "backfill.checkpoint")
    if data is not None:
        _restore(report, data)
    budget = WriteBudget(write_budget, clock)
    watched = watched_attributes(entity)
    only = (entity,)

    def reread(key: WireItem) -> Operation[WireItem | None]:
        response = yield from call(
            ctx, "GetItem", {"TableName": table.name, "Key": key, "ConsistentRead": True}, (table,)
        )
        found: WireItem | None = response.get("Item")
        return found

    def rewrite(item: WireItem, check: ItemKeyCheck) -> Operation[None]:
        condition, names, values = unchanged_condition(item, watched)
        if not check.moves:
            sets = [p.attribute for p in check.problems if p.kind != "extra"]
            removes = [p.attribute for p in check.problems if p.kind == "extra"]
            for i, name in enumerate(sets):
                names[f"#s{i}"] = name
                values[f":s{i}"] = check.expected[name]
            for i, name in enumerate(removes):
                names[f"#r{i}"] = name
            clauses = []
            if sets:
                clauses.append("SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(sets))))
            if removes:
                clauses.append("REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes))))
            params: dict[str, Any] = {
                "TableName": table.name,
                "Key": check.stored_key,
                "UpdateExpression": " ".join(clauses),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
            yield from call(ctx, "UpdateItem", params, (table,))
            return
        yield from call(ctx, "TransactWriteItems", move_request(item, check), (table,))

    def cost(item: WireItem, check: ItemKeyCheck) -> WriteEstimate:
        new = moved_item(item, check)
        if not check.moves:
            return estimate_write(table, item, new)
        return estimate_write(table, None, new, transactional=True) + estimate_write(
            table, item, None, transactional=True
        )

    # Keys this run moved items to: a scan that reaches them later reads the same items again.
    arrived: set[tuple[Any, ...]] = set()

    def moved_to(check: ItemKeyCheck) -> None:
        arrived.add(_key_identity({k: check.expected[k] for k in _key_names(table)}))

    def visit(part: BackfillReport, item: WireItem) -> Operation[bool]:
        if arrived and _key_identity(item, _key_names(table)) in arrived:
            return False  # moved here by this run: counted already
        part.scanned += 1
        current: WireItem | None = item
        for _attempt in range(max_attempts):
            if current is None:
                part.gone += 1
                return False
            try:
                check = check_item_keys(table, current, only)
            except ValidationError as exc:
                part.failed.append(
                    ({k: from_wire(current[k]) for k in _key_names(table)}, str(exc))
                )
                return False
            if check is None:
                part.other += 1
                return False
            if check.current:
                part.current += 1
                return False
            units = cost(current, check)
            if dry_run:
                part.estimate = part.estimate + units
                part.rewritten += 1
                part.moved += check.moves
                return True
            yield from budget.take(units.total)
            try:
                yield from rewrite(current, check)
            except ValidationError as exc:  # raised before any request: nothing was written
                part.failed.append(
                    ({k: from_wire(v) for k, v in check.stored_key.items()}, str(exc))
                )
                return False
            except ConditionFailedError:
                part.retried += 1
            except TransactionCanceledError as exc:
                reasons = exc.reasons
                if reasons and reasons[0].code == "ConditionalCheckFailed":
                    new_key = {k: v for k, v in check.expected.items() if k in _key_names(table)}
                    # A retry of a move whose first response was lost finds its own work done:
                    # the old item gone and the new one exactly what this move put.
                    gone = yield from reread(check.stored_key)
                    there = yield from reread(new_key)
                    if (
                        gone is None
                        and there is not None
                        and same_item(there, moved_item(current, check))
                    ):
                        part.estimate = part.estimate + units
                        part.rewritten += 1
                        part.moved += 1
                        moved_to(check)
                        return True
                    if gone is None:
                        # Someone else moved it (a write during a re-keying) or deleted it.
                        part.gone += 1
                        return False
                    key = {k: from_wire(v) for k, v in new_key.items()}
                    part.failed.append(
                        (
                            {k: from_wire(v) for k, v in check.stored_key.items()},
                            f"an item already exists under the new key {key}",
                        )
                    )
                    return False
                part.retried += 1
            else:
                part.estimate = part.estimate + units
                part.rewritten += 1
                part.moved += check.moves
                if check.moves:
                    moved_to(check)
                return True
            current = yield from reread(check.stored_key)
        part.failed.append(
            (
                {k: from_wire(v) for k, v in item.items() if k in _key_names(table)},
                f"changed on each of {max_attempts} attempts",
            )
        )
        return False

    yield from scan_items(ctx, spec, visit, ledger)
    report.units_spent = budget.spent
    report.elapsed = ledger.elapsed
    return report


def _key_identity(item: Mapping[str, Any], names: Iterable[str] | None = None) -> tuple[Any, ...]:
    """A hashable identity of a primary key in wire form (attribute, type tag, value)."""
    keys = item if names is None else {k: item[k] for k in names if k in item}
    return tuple(sorted((k, *next(iter(v.items()))) for k, v in keys.items()))


def _key_names(table: Table) -> tuple[str, ...]:
    return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))
