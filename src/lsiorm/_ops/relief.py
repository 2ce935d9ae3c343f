"""Collection relief: move the items of one item collection that match a condition elsewhere.

An item collection of a table with LSIs cannot grow past 10 GB. Relief moves some of its items
(older than a date, or of one entity type, or anything a predicate picks) to another table or
to a JSON Lines file, crash-safely and page by page:

1. **copy** each matching item: a create-only put into the destination table (an identical
   copy already there, from an earlier run, is accepted), or a line appended to the file;
2. **verify** the copies: read back from the table (consistently) or from the file, and
   compared with the originals;
3. **delete** the originals, each on the condition that it is unchanged since it was read. An
   original that changed meanwhile is read again and, if it still matches, copied again (the
   newer copy replaces the older one; in a file, the last line of a key wins).

A checkpoint file stores the position after each page, so a stopped run resumes; writes are
paced to a budget of write units per second. The report says how much the collection shrank,
by the audit's size model, measured before and after.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsiorm._model.capacity import ReadEstimate, WriteEstimate, estimate_write
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, same_item
from lsiorm._ops.audit import audit_collection, collection_size, measure_collection
from lsiorm._ops.key_audit import ScanSpec
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.resumable import (
    DONE,
    CheckpointStore,
    JobProgress,
    Ledger,
    Position,
    WriteBudget,
    json_av,
    key_of,
    plain_key,
    unchanged_condition,
)
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConditionFailedError, ValidationError

__all__ = ["ItemFile", "ReliefReport", "relieve_collection"]


@dataclass
class ReliefReport:
    """What a relief did to one collection.

    ``moved`` items were copied, verified and deleted; ``kept`` did not match; ``retried``
    counts originals that changed between copy and delete (each was read again);
    ``stale_copies`` counts lines left in a file for originals that changed so that they no
    longer match and stayed (a table's such copies are deleted); ``failed`` lists keys and
    reasons. ``bytes_before`` and ``bytes_after`` are the collection's size by
    the audit's size model (item plus LSI entries, with overheads). In a ``dry_run`` nothing is
    written: ``moved`` counts the matching items and ``bytes_after`` is what would remain.
    """

    table: str
    partition: Any
    destination: str
    dry_run: bool = False
    scanned: int = 0
    moved: int = 0
    kept: int = 0
    retried: int = 0
    stale_copies: int = 0
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    estimate: WriteEstimate | None = None
    read_estimate: ReadEstimate | None = None
    elapsed: float = 0.0
    checkpoint: str | None = None
    resumed: bool = False

    @property
    def shrank_bytes(self) -> int:
        """How many bytes the collection lost."""
        return self.bytes_before - self.bytes_after

    def __str__(self) -> str:
        verb = "would move" if self.dry_run else "moved"
        lines = [
            f"Relief of collection {self.partition!r} of table {self.table!r} to "
            f"{self.destination}" + (" (dry run)" if self.dry_run else ""),
            f"  {self.scanned} items read in {self.elapsed:.1f} s",
            f"  {verb}: {self.moved}; kept: {self.kept}",
            f"  changed while moving, and retried: {self.retried}",
            f"  copies left of items that stayed: {self.stale_copies}",
            f"  failed: {len(self.failed)}",
            f"  collection size: {self.bytes_before} -> {self.bytes_after} bytes "
            f"(shrank by {self.shrank_bytes} bytes)",
        ]
        if self.read_estimate is not None:
            lines.append(f"  its read of the collection priced at {self.read_estimate}")
        if self.estimate is not None:
            lines.append(f"  writes priced at {self.estimate} ({self.estimate.total:g} units)")
        lines.extend(f"    {key}: {why}" for key, why in self.failed[:10])
        if self.checkpoint is not None:
            lines.append(f"  checkpoint: {self.checkpoint}")
        return "\n".join(lines)


# -- the file destination ------------------------------------------------------------------


class ItemFile(Protocol):
    """Where a relief to a file writes: read back whole, appended durably."""

    def read(self) -> list[WireItem]:
        """Every item in the file, in order (none when there is no file yet)."""
        ...

    def append(self, items: Iterable[WireItem]) -> None:
        """Append items; they are durable when this returns."""
        ...


def _key_text(key: Mapping[str, Any]) -> str:
    return json.dumps(json_av(key), sort_keys=True)


# -- the job --------------------------------------------------------------------------------


def relieve_collection(
    ctx: Context,
    table: Table,
    partition: Any,
    *,
    entity: type[Entity] | None = None,
    match: Callable[[Entity], bool] | None = None,
    to_table: Table | None = None,
    to_file: ItemFile | None = None,
    write_budget: float | None = None,
    checkpoint: CheckpointStore | None = None,
    dry_run: bool = False,
    page_size: int | None = 100,
    max_attempts: int = 10,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Operation[ReliefReport]:
    """Move the items of one collection that match to ``to_table`` or ``to_file``.

    An item matches when it is of ``entity`` (if given) and ``match(item)`` is true (if given;
    it receives the decoded entity). With neither, every item of the collection moves. The
    destination table must have the same primary key attributes. ``checkpoint`` is where the
    job stores its position after each page (and resumes from). The collection is measured
    first, in the job's own pages, so ``report.read_estimate`` prices the job's read of it.
    """
    if (to_table is None) == (to_file is None):
        raise ValidationError(
            "relief.destination",
            "Give exactly one destination: to_table= or to_file=.",
            table=table.name,
        )
    if to_table is not None and (
        to_table.partition_key != table.partition_key or to_table.sort_key != table.sort_key
    ):
        raise ValidationError(
            "relief.destination-keys",
            f"Table {to_table.name!r} has other primary key attributes than {table.name!r}; "
            "relief copies items unchanged, so the keys must be the same.",
            table=table.name,
        )
    destination = f"table {to_table.name!r}" if to_table is not None else f"file {to_file}"
    spec = ScanSpec(table, None, partition, 1, consistent=True, page_size=page_size)
    before, read_estimate = yield from measure_collection(
        ctx, table, partition, page_size=page_size
    )
    report = ReliefReport(
        table.name, before.key, destination, dry_run, bytes_before=before.total_bytes
    )
    report.estimate = WriteEstimate(table.name, 0.0)
    report.read_estimate = read_estimate
    if checkpoint is not None:
        report.checkpoint = str(checkpoint)
    # One collection, one segment: its counts go straight to the report; the ledger stores the
    # position and the counts once a page's items are copied, verified and deleted.
    ledger: Ledger[ReliefReport, None] = Ledger(
        report,
        new_part=lambda: None,
        merge=lambda whole, part: None,
        changed=lambda whole: whole.moved,
        segments=1,
        total=before.items,
        progress=progress,
        clock=clock,
        store=checkpoint if not dry_run else None,
        identity={
            "job": "relief",
            "table": table.name,
            "partition": repr(before.key),
            "destination": destination,
        },
        saved=lambda whole: {
            "counts": {n: getattr(whole, n) for n in _COUNTERS},
            "failed": [[key, why] for key, why in whole.failed],
        },
        name=f"relief of {table.name}",
    )
    data = ledger.resume(table, "relief.checkpoint")
    if data is not None:
        for name in _COUNTERS:
            setattr(report, name, int(data.get("counts", {}).get(name, 0)))
        report.failed = [(dict(k), str(w)) for k, w in data.get("failed", [])]
        report.resumed = True
    in_file: dict[str, WireItem] = {}
    if to_file is not None and not dry_run:
        for item in to_file.read():
            in_file[_key_text(key_of(table, item))] = item
    budget = WriteBudget(write_budget, clock)
    matched_sizes: list[WireItem] = []

    def matches(item: WireItem) -> bool:
        if entity is None and match is None:
            return True
        try:
            decoded = decode_stored(table, item, (entity,) if entity is not None else None)
        except Exception:  # an undecodable item matches no condition on its type or fields
            return False
        if decoded is None:
            return False
        return match is None or bool(match(decoded))

    def copy_to_table(item: WireItem, previous: WireItem | None) -> Operation[None]:
        assert to_table is not None
        if previous is None:  # create-only, or an identical copy from an earlier run
            same, names, values = unchanged_condition(item, frozenset())
            params: dict[str, Any] = {
                "TableName": to_table.name,
                "Item": item,
                "ConditionExpression": f"attribute_not_exists(#pk) OR ({same})",
                "ExpressionAttributeNames": {"#pk": to_table.partition_key.name, **names},
                "ExpressionAttributeValues": values,
            }
        else:  # replace our own older copy, and only that
            same, names, values = unchanged_condition(previous, frozenset())
            params = {
                "TableName": to_table.name,
                "Item": item,
                "ConditionExpression": same,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        yield from call(ctx, "PutItem", params, (to_table,))

    def verify_table(items: list[WireItem]) -> Operation[list[bool]]:
        assert to_table is not None
        found: list[bool] = []
        for item in items:
            response = yield from call(
                ctx,
                "GetItem",
                {"TableName": to_table.name, "Key": key_of(table, item), "ConsistentRead": True},
                (to_table,),
            )
            copy = response.get("Item")
            found.append(copy is not None and same_item(copy, item))
        return found

    def write_file(items: list[WireItem]) -> list[bool]:
        assert to_file is not None
        fresh = [i for i in items if not _same_copy(in_file.get(_key_text(key_of(table, i))), i)]
        if fresh:
            to_file.append(fresh)
        # Verify: read the file back, the last line of each key wins.
        back = {_key_text(key_of(table, i)): i for i in to_file.read()}
        in_file.update(back)
        return [same_item(back.get(_key_text(key_of(table, i)), {}), i) for i in items]

    def delete_original(item: WireItem) -> Operation[None]:
        condition, names, values = unchanged_condition(item, frozenset())
        yield from budget.take(estimate_write(table, item, None).total)
        yield from call(
            ctx,
            "DeleteItem",
            {
                "TableName": table.name,
                "Key": key_of(table, item),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            },
            (table,),
        )

    def move_page(items: list[WireItem]) -> Operation[None]:
        pending: list[tuple[WireItem, WireItem | None]] = [(i, None) for i in items]
        for _attempt in range(max_attempts):
            if not pending:
                return
            # 1. copy
            current = [item for item, _ in pending]
            if to_table is not None:
                for item, previous in pending:
                    yield from budget.take(_put_units(to_table, item))
                    try:
                        yield from copy_to_table(item, previous)
                    except ValidationError as exc:
                        report.failed.append((plain_key(table, item), str(exc)))
                        current.remove(item)
                        continue
                    except ConditionFailedError:
                        report.failed.append(
                            (plain_key(table, item), "the destination holds another item")
                        )
                        current.remove(item)
                verified = yield from verify_table(current)
            else:
                verified = write_file(current)
            # 2. verify
            ready = []
            for item, ok in zip(current, verified, strict=True):
                if ok:
                    ready.append(item)
                else:
                    report.failed.append((plain_key(table, item), "the copy did not verify"))
            # 3. delete the originals that are unchanged
            again: list[tuple[WireItem, WireItem | None]] = []
            for item in ready:
                try:
                    yield from delete_original(item)
                except ValidationError as exc:  # the condition is too long: nothing was sent
                    report.failed.append((plain_key(table, item), str(exc)))
                    continue
                except ConditionFailedError:
                    response = yield from call(
                        ctx,
                        "GetItem",
                        {
                            "TableName": table.name,
                            "Key": key_of(table, item),
                            "ConsistentRead": True,
                        },
                        (table,),
                    )
                    newer = response.get("Item")
                    if newer is None:
                        # Gone: this delete's lost response was retried, or another writer
                        # deleted it. Either way the original is gone and its copy is kept.
                        report.moved += 1
                        continue
                    report.retried += 1
                    if matches(newer):
                        again.append((newer, item))
                        continue
                    report.kept += 1
                    if to_table is not None:  # it stays: withdraw this run's copy of it
                        same, names, values = unchanged_condition(item, frozenset())
                        with contextlib.suppress(ConditionFailedError):
                            yield from call(
                                ctx,
                                "DeleteItem",
                                {
                                    "TableName": to_table.name,
                                    "Key": key_of(table, item),
                                    "ConditionExpression": same,
                                    "ExpressionAttributeNames": names,
                                    "ExpressionAttributeValues": values,
                                },
                                (to_table,),
                            )
                    else:
                        report.stale_copies += 1
                    continue
                report.moved += 1
            pending = again
        for item, _ in pending:
            report.failed.append(
                (plain_key(table, item), f"changed on each of {max_attempts} attempts")
            )

    page: list[WireItem] = []

    def visit(item: WireItem) -> Operation[bool]:
        report.scanned += 1
        if not matches(item):
            report.kept += 1
            return False
        if dry_run:
            report.moved += 1
            matched_sizes.append(item)
            assert report.estimate is not None
            report.estimate = report.estimate + _move_units(table, to_table, item)
            return True
        try:  # an item whose delete condition cannot be built is never copied
            unchanged_condition(item, frozenset())
        except ValidationError as exc:
            report.failed.append((plain_key(table, item), str(exc)))
            return False
        page.append(item)
        return True
        yield  # pragma: no cover - a generator: the writes run per page, in on_page's turn

    def pages() -> Operation[None]:
        position: Position = ledger.positions.get(0)
        if position == DONE:
            return
        params = spec.params()
        if isinstance(position, Mapping):
            params["ExclusiveStartKey"] = dict(position)
        while True:
            response = yield from call(ctx, "Query", params, (table,))
            for item in response.get("Items") or ():
                yield from visit(item)
            if page:
                yield from move_page(list(page))
                page.clear()
            last = response.get("LastEvaluatedKey")
            ledger.page_done(
                0, dict(last) if last else DONE, None, len(response.get("Items") or ())
            )
            if not last:
                return
            params = {**params, "ExclusiveStartKey": last}

    yield from pages()
    if dry_run:
        gone = collection_size(table, before.key, matched_sizes)
        report.bytes_after = report.bytes_before - gone.total_bytes
    else:
        after = yield from audit_collection(ctx, table, partition)
        report.bytes_after = after.total_bytes
    report.elapsed = ledger.elapsed
    return report


_COUNTERS = ("scanned", "moved", "kept", "retried")


def _same_copy(copy: Mapping[str, Any] | None, item: Mapping[str, Any]) -> bool:
    return copy is not None and same_item(copy, item)


def _put_units(table: Table, item: WireItem) -> float:
    return estimate_write(table, None, item).total


def _move_units(table: Table, to_table: Table | None, item: WireItem) -> WriteEstimate:
    delete = estimate_write(table, item, None)
    if to_table is None:
        return delete
    put = estimate_write(to_table, None, item)
    return delete + WriteEstimate(table.name, put.total)
