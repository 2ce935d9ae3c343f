"""Backfill and re-key: rewrite the derived key attributes of stale items, and only those.

The job reads a partition or the whole table (parallel scan segments) and checks each item of
one entity type with :func:`~lsiorm._ops.key_audit.check_item_keys`. A stale item is rewritten
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

import base64
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsiorm._model.capacity import ReadEstimate, WriteEstimate, estimate_write
from lsiorm._model.entity import Entity, meta_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import from_wire
from lsiorm._ops.key_audit import (
    DONE,
    ItemKeyCheck,
    JobProgress,
    Position,
    ScanSpec,
    WireItem,
    check_item_keys,
    price_scan,
    scan_items,
)
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import ConditionFailedError, TransactionCanceledError, ValidationError

__all__ = [
    "BackfillReport",
    "WriteBudget",
    "backfill",
    "load_checkpoint",
    "unchanged_condition",
]


# -- pacing ---------------------------------------------------------------------------------


class WriteBudget:
    """A token bucket of write units per second, shared by every segment of one job.

    It holds at most one second of units, so a burst never exceeds the budget by more than
    one second's worth. A write that costs more than a second's units waits for all of them.
    """

    def __init__(
        self, units_per_second: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if units_per_second is not None and units_per_second <= 0:
            raise ValidationError(
                "backfill.budget",
                f"The write budget is {units_per_second} units per second; it must be positive.",
            )
        self.rate = units_per_second
        self.clock = clock
        self.available = units_per_second or 0.0
        self.last = clock()
        self.spent = 0.0

    def take(self, units: float) -> Operation[None]:
        """Wait (with Sleep steps) until ``units`` are available, then spend them."""
        self.spent += units
        if self.rate is None:
            return
        while True:
            now = self.clock()
            self.available = min(self.rate, self.available + (now - self.last) * self.rate)
            self.last = now
            if self.available >= min(units, self.rate):
                self.available -= units
                return
            yield Sleep((min(units, self.rate) - self.available) / self.rate)


# -- the conditions -------------------------------------------------------------------------


def unchanged_condition(
    item: Mapping[str, Any], also_absent: frozenset[str]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A condition that holds only while the item is exactly as read.

    Every attribute read must still have its value, and every attribute of ``also_absent``
    that was not read (the entity's fields and key attributes) must still be absent: a writer
    that sets a field the keys derive from must make the rewrite fail, not be undone by it.
    """
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    parts: list[str] = []
    for i, name in enumerate(sorted(set(item) | also_absent)):
        names[f"#u{i}"] = name
        if name in item:
            values[f":u{i}"] = item[name]
            parts.append(f"#u{i} = :u{i}")
        else:
            parts.append(f"attribute_not_exists(#u{i})")
    expression = " AND ".join(parts)
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        raise ValidationError(
            "jobs.condition-too-long",
            f"The item has {len(names)} attributes to compare; the condition that it is "
            f"unchanged would exceed DynamoDB's {MAX_EXPRESSION_BYTES} byte expression limit.",
        )
    return expression, names, values


#: DynamoDB's limit on the length of one expression.
MAX_EXPRESSION_BYTES = 4096


def _watched_attributes(entity: type[Entity]) -> frozenset[str]:
    meta = meta_of(entity)
    table = meta.table
    return frozenset({*meta.attributes.values(), *table.key_attributes, table.type_attribute})


# -- the report and the checkpoint ----------------------------------------------------------


@dataclass
class BackfillReport:
    """What a backfill did.

    ``rewritten`` items had stale keys and were rewritten in place, ``moved`` of them by a move
    to a new primary key; ``current`` items needed nothing; ``retried`` counts rewrites skipped
    because the item changed since it was read (each was re-read and tried again); ``gone``
    items were deleted by someone else before they could be rewritten; ``failed`` lists the
    stored keys (and why) of items given up on. A ``dry_run`` writes nothing: ``rewritten``
    then counts the items that would be rewritten and ``estimate`` prices them. Counts include
    the runs a checkpoint resumes; items rewritten in a page that was cut short count as
    ``current`` when the resumed run reads them again.
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


def _encode_av(av: Mapping[str, Any]) -> dict[str, Any]:
    ((tag, raw),) = av.items()
    if tag == "B":
        return {"B64": base64.b64encode(raw).decode()}
    return {tag: raw}


def _decode_av(av: Mapping[str, Any]) -> dict[str, Any]:
    ((tag, raw),) = av.items()
    if tag == "B64":
        return {"B": base64.b64decode(raw)}
    return {tag: raw}


def _identity(spec: ScanSpec, entity: type[Entity]) -> dict[str, Any]:
    partition = spec.partition
    return {
        "table": spec.table.name,
        "entity": meta_of(entity).type_name,
        "segments": spec.parallel,
        "partition": None if partition is None else repr(partition),
    }


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Return a checkpoint file's content, or None when there is none."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    data: dict[str, Any] = json.loads(text)
    return data


def _save_checkpoint(
    path: Path, identity: Mapping[str, Any], positions: Mapping[int, Position], report: Any
) -> None:
    data = {
        **identity,
        "positions": {
            str(n): (
                p if p is None or isinstance(p, str) else {k: _encode_av(v) for k, v in p.items()}
            )
            for n, p in positions.items()
        },
        "counts": {name: getattr(report, name) for name in _COUNTERS},
        "failed": [[key, why] for key, why in report.failed],
    }
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=1, default=str))
    os.replace(temporary, path)  # a crash leaves the old checkpoint or the new one, never half


def _resume(
    data: Mapping[str, Any], identity: Mapping[str, Any], report: BackfillReport
) -> dict[int, Position]:
    for name, value in identity.items():
        if data.get(name) != value:
            raise ValidationError(
                "backfill.checkpoint",
                f"The checkpoint is for {name} {data.get(name)!r}, not {value!r}; remove it or "
                "run the job it belongs to.",
                table=report.table,
            )
    for name in _COUNTERS:
        setattr(report, name, int(data.get("counts", {}).get(name, 0)))
    report.failed = [(dict(key), str(why)) for key, why in data.get("failed", [])]
    report.resumed = True
    return {
        int(n): (p if p is None or isinstance(p, str) else {k: _decode_av(v) for k, v in p.items()})
        for n, p in data.get("positions", {}).items()
    }


# -- the job --------------------------------------------------------------------------------


def _new_item(item: Mapping[str, Any], check: ItemKeyCheck) -> WireItem:
    out = {k: v for k, v in item.items()}
    for problem in check.problems:
        if problem.kind == "extra":
            out.pop(problem.attribute, None)
    out.update(check.expected)
    return out


def backfill(
    ctx: Context,
    entity: type[Entity],
    *,
    partition: Any = None,
    segments: int = 4,
    write_budget: float | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    max_attempts: int = 10,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Operation[BackfillReport]:
    """Rewrite the stale key attributes of ``entity``'s items; see the module docstring.

    ``write_budget`` is in write units per second (None: unpaced). ``checkpoint`` names the
    file the job stores its position in and resumes from when it exists; a finished job
    leaves it with every segment done, so running it again reads nothing. ``page_size`` caps
    the items read per page (a checkpoint is stored after each page).
    """
    meta = meta_of(entity)
    table: Table = meta.table
    spec = ScanSpec(table, entity, partition, segments, page_size=page_size)
    read_estimate, total = yield from price_scan(ctx, spec)
    report = BackfillReport(
        table.name, meta.type_name, read_estimate, WriteEstimate(table.name, 0.0), dry_run
    )
    identity = _identity(spec, entity)
    path = Path(checkpoint) if checkpoint is not None else None
    positions: dict[int, Position] = {}
    if path is not None:
        report.checkpoint = str(path)
        data = load_checkpoint(path)
        if data is not None and not dry_run:
            positions = _resume(data, identity, report)
    budget = WriteBudget(write_budget, clock)
    watched = _watched_attributes(entity)
    only = (entity,)
    started = clock()
    pk = table.partition_key.name

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
        delete: dict[str, Any] = {
            "TableName": table.name,
            "Key": check.stored_key,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            delete["ExpressionAttributeValues"] = values
        put = {
            "TableName": table.name,
            "Item": _new_item(item, check),
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": pk},
        }
        yield from call(
            ctx,
            "TransactWriteItems",
            {
                "TransactItems": [{"Put": put}, {"Delete": delete}],
                "ClientRequestToken": uuid.uuid4().hex,
            },
            (table,),
        )

    def cost(item: WireItem, check: ItemKeyCheck) -> WriteEstimate:
        new = _new_item(item, check)
        if not check.moves:
            return estimate_write(table, item, new)
        return estimate_write(table, None, new, transactional=True) + estimate_write(
            table, item, None, transactional=True
        )

    def visit(item: WireItem) -> Operation[bool]:
        report.scanned += 1
        current: WireItem | None = item
        for _attempt in range(max_attempts):
            if current is None:
                report.gone += 1
                return False
            try:
                check = check_item_keys(table, current, only)
            except ValidationError as exc:
                report.failed.append(
                    ({k: from_wire(current[k]) for k in _key_names(table)}, str(exc))
                )
                return False
            if check is None:
                report.other += 1
                return False
            if check.current:
                report.current += 1
                return False
            units = cost(current, check)
            if dry_run:
                report.estimate = report.estimate + units
                report.rewritten += 1
                report.moved += check.moves
                return True
            yield from budget.take(units.total)
            try:
                yield from rewrite(current, check)
            except ValidationError as exc:  # raised before any request: nothing was written
                report.failed.append(
                    ({k: from_wire(v) for k, v in check.stored_key.items()}, str(exc))
                )
                return False
            except ConditionFailedError:
                report.retried += 1
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
                        and _same_item(there, _new_item(current, check))
                    ):
                        report.estimate = report.estimate + units
                        report.rewritten += 1
                        report.moved += 1
                        return True
                    key = {k: from_wire(v) for k, v in new_key.items()}
                    report.failed.append(
                        (
                            {k: from_wire(v) for k, v in check.stored_key.items()},
                            f"an item already exists under the new key {key}",
                        )
                    )
                    return False
                report.retried += 1
            else:
                report.estimate = report.estimate + units
                report.rewritten += 1
                report.moved += check.moves
                return True
            current = yield from reread(check.stored_key)
        report.failed.append(
            (
                {k: from_wire(v) for k, v in item.items() if k in _key_names(table)},
                f"changed on each of {max_attempts} attempts",
            )
        )
        return False

    def on_page(number: int, position: Position) -> None:
        positions[number] = position
        report.units_spent = budget.spent
        if path is not None and not dry_run:
            _save_checkpoint(path, identity, positions, report)
        if progress is not None:
            done = sum(1 for p in positions.values() if p == DONE)
            progress(
                JobProgress(
                    report.scanned, report.rewritten, clock() - started, total, done, spec.parallel
                )
            )

    yield from scan_items(ctx, spec, visit, start=positions, on_page=on_page)
    report.units_spent = budget.spent
    report.elapsed = clock() - started
    return report


def _same_item(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a == b:
        return True
    return {k: from_wire(v) for k, v in a.items()} == {k: from_wire(v) for k, v in b.items()}


def _key_names(table: Table) -> tuple[str, ...]:
    return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))
