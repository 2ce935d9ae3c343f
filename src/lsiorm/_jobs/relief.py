"""Collection relief: move the items of one item collection that match a condition elsewhere.

An item collection of a table with LSIs cannot grow past 10 GB. Relief moves some of its items
(older than a date, or of one entity type, or anything a predicate picks) to another table or
to a JSON Lines file, crash-safely and page by page:

1. **copy** each matching item: a create-only put into the destination table (an identical
   copy already there, from an earlier run, is accepted), or a line appended to the file;
2. **verify** the copies: read back from the table (consistently) or from the file, and
   compared with the originals;
3. **delete** the originals, each on the condition that it is unchanged since it was read
   (`lsiorm._ops.unchanged`: every attribute equal, and no attribute added: the delete returns
   the image it removed, and an attribute a writer added meanwhile is given to the copy). An
   original that changed meanwhile is read again and, if it still matches, copied again (the
   newer copy replaces the older one; in a file, the last line of a key wins). An original
   another writer deleted meanwhile stays deleted: its copy in a table is withdrawn.

The job runs on the job engine (`lsiorm._jobs.engine`) as one unit, the query of the
collection: its position and counts are committed to the ledger after each page, so a stopped
run resumes from any process; writes are paced to the job's rate budget. Before a page's writes,
the keys it will move are committed (its intent), so that a run resumed after a page was cut
short counts the items that page moved, although they are no longer there to be read. The
report says how much the collection shrank, by the audit's size model, measured before and
after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import JobRun, digest
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import JobProgress, from_json_av, json_av, key_of, plain_key
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.write_tally import (
    TallyingKind,
    WriteJobReport,
    WriteTally,
    closing_lines,
    take_run,
    written_estimate,
)
from lsiorm._model.capacity import ReadEstimate, WriteEstimate, estimate_write
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, same_item
from lsiorm._ops.audit import audit_collection, collection_size, measure_collection
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._ops.unchanged import (
    Removal,
    delete_unchanged,
    give_attributes,
    unchanged_condition,
    watched_attributes,
    withdraw_copy,
)
from lsiorm.errors import ConditionFailedError, ValidationError

__all__ = ["ItemFile", "ReliefReport", "relieve_collection"]


@dataclass
class ReliefReport(WriteJobReport):
    """What a relief did to one collection.

    ``moved`` items were copied, verified and deleted; ``kept`` did not match; ``retried``
    counts originals that changed between copy and delete; ``gone`` counts originals another
    writer deleted between copy and delete (a table's copies of them are withdrawn);
    ``stale_copies`` counts lines left in a file for originals that changed so that they no
    longer match and stayed, or that another writer deleted (a table's such copies are
    deleted). ``bytes_before`` and ``bytes_after`` are the collection's size by the audit's
    size model (item plus LSI entries, with overheads). In a ``dry_run`` nothing is written:
    ``moved`` counts the matching items and ``bytes_after`` is what would remain.
    """

    table: str
    partition: Any
    destination: str
    moved: int = 0
    kept: int = 0
    stale_copies: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    estimate: WriteEstimate | None = None
    read_estimate: ReadEstimate | None = None

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
            f"  deleted by another writer while moving: {self.gone}",
            f"  copies left of items that stayed: {self.stale_copies}",
            f"  failed: {len(self.failed)}",
            f"  collection size: {self.bytes_before} -> {self.bytes_after} bytes "
            f"(shrank by {self.shrank_bytes} bytes)",
        ]
        if self.read_estimate is not None:
            lines.append(f"  its read of the collection priced at {self.read_estimate}")
        if self.estimate is not None:
            lines.append(f"  writes priced at {self.estimate} ({self.estimate.total:g} units)")
        lines.extend(closing_lines(self))
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
    options: JobOptions,
    *,
    entity: type[Entity] | None = None,
    match: Callable[[Entity], bool] | None = None,
    to_table: Table | None = None,
    to_file: ItemFile | None = None,
    dry_run: bool = False,
    page_size: int | None = 100,
    max_attempts: int = 10,
    progress: Callable[[JobProgress], object] | None = None,
) -> Operation[ReliefReport]:
    """Move the items of one collection that match to ``to_table`` or ``to_file``.

    An item matches when it is of ``entity`` (if given) and ``match(item)`` is true (if given;
    it receives the decoded entity). With neither, every item of the collection moves. The
    destination table must have the same primary key attributes. The collection is measured
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
        table.name, before.key, destination, dry_run=dry_run, bytes_before=before.total_bytes
    )
    report.read_estimate = read_estimate
    matched: list[WireItem] = []

    def kind_for(unit_ctx: Context, budget: RateBudget) -> ReliefKind:
        return ReliefKind(
            unit_ctx,
            table,
            budget,
            entity=entity,
            match=match,
            to_table=to_table,
            to_file=to_file,
            dry_run=dry_run,
            max_attempts=max_attempts,
            matched=matched,
        )

    declaration = {
        "kind": "relief",
        "table": ctx.live_name(table),
        "partition": repr(before.key),
        "destination": destination,
        "entity": None if entity is None else f"{entity.__module__}:{entity.__qualname__}",
        "match": None if match is None else f"{match.__module__}:{match.__qualname__}",
        "page_size": page_size,
        "dry_run": dry_run,
    }
    run = JobRun(
        declaration,
        options.units(spec),
        kind_for,
        options.pages(spec),
        options.rate(),
        before.items,
    )
    ledger = options.ledger_for(ctx, table, writes=not dry_run)
    record, resumed = yield from options.run(ctx, ledger, run, progress, concurrency=1)
    counts = take_run(report, record, resumed, _COUNTERS)
    report.estimate = written_estimate(table.name, counts)
    if dry_run:
        gone = collection_size(table, before.key, matched)
        report.bytes_after = report.bytes_before - gone.total_bytes
    else:
        after = yield from audit_collection(ctx, table, partition)
        report.bytes_after = after.total_bytes
    return report


@dataclass
class _Part(WriteTally):
    """One page of a relief: its items to move, its counts, failures and priced writes."""

    page: list[WireItem] = field(default_factory=list)

    def fail(self, table: Table, item: Mapping[str, Any], why: str) -> None:
        self.failed.append([plain_key(table, item), why])


@dataclass(eq=False, repr=False)
class ReliefKind(TallyingKind):
    """What a relief does with a page: pick the matching items, then copy, verify, delete."""

    ctx: Context
    table: Table
    budget: RateBudget
    _: KW_ONLY
    entity: type[Entity] | None
    match: Callable[[Entity], bool] | None
    to_table: Table | None
    to_file: ItemFile | None
    dry_run: bool
    max_attempts: int
    matched: list[WireItem]

    def __post_init__(self) -> None:
        entity, table = self.entity, self.table
        # What the match reads must not change unseen: the fields of the entities it decodes.
        candidates = (entity,) if entity is not None else tuple(table.entities.values())
        self.watched = (
            frozenset()
            if entity is None and self.match is None
            else watched_attributes(table, candidates)
        )
        self.in_file: dict[str, WireItem] = {}
        if self.to_file is not None and not self.dry_run:
            for item in self.to_file.read():
                self.in_file[_key_text(key_of(table, item))] = item

    def new_part(self) -> _Part:
        return _Part(estimate=WriteEstimate(self.table.name, 0.0))

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """The keys of the items this page will move (a dry run moves none)."""
        if self.dry_run:
            return {}
        return {
            digest(key): {"k": json_av(key)}
            for key in (key_of(self.table, item) for item in items if self.matches(item))
        }

    def settle(self, part: _Part, recovered: dict[str, Any]) -> Operation[None]:
        """Count the items of a page cut short that are no longer there to be read: moved
        when their copy is in the destination, else deleted by another writer."""
        for name, entry in list(recovered.items()):
            del recovered[name]
            key = from_json_av(entry["k"])
            part.add("scanned")
            copied = yield from self.has_copy(key)
            part.add("moved" if copied else "gone")

    def has_copy(self, key: WireItem) -> Operation[bool]:
        if self.to_table is None:
            return _key_text(key) in self.in_file
        response = yield from call(
            self.ctx,
            "GetItem",
            {"TableName": self.to_table.name, "Key": dict(key), "ConsistentRead": True},
            (self.to_table,),
        )
        return "Item" in response

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("moved", 0))

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        pass

    def matches(self, item: WireItem) -> bool:
        entity, match = self.entity, self.match
        if entity is None and match is None:
            return True
        try:
            decoded = decode_stored(self.table, item, (entity,) if entity is not None else None)
        except Exception:  # an undecodable item matches no condition on its type or fields
            return False
        if decoded is None:
            return False
        return match is None or bool(match(decoded))

    def visit(self, part: _Part, item: WireItem, recovered: dict[str, Any]) -> Operation[bool]:
        if recovered:  # read again: counted now, not by `settle`
            recovered.pop(digest(key_of(self.table, item)), None)
        part.add("scanned")
        if not self.matches(item):
            part.add("kept")
            return False
        if self.dry_run:
            self.matched.append(item)
            self.moved(part, item)
            return True
        try:  # an item whose delete condition cannot be built is never copied
            unchanged_condition(item, self.watched)
        except ValidationError as exc:
            part.fail(self.table, item, str(exc))
            return False
        part.page.append(item)
        return True
        yield  # a generator: the writes run per page, in end_page

    def moved(self, part: _Part, item: WireItem) -> None:
        """Count ``item`` moved, at the price of its move (the same in a dry run and a real
        one: its copy and its delete, each once, however many attempts it took)."""
        part.add("moved")
        assert part.estimate is not None
        part.estimate = part.estimate + _move_units(self.table, self.to_table, item)

    def end_page(self, part: _Part) -> Operation[None]:
        if part.page:
            yield from self.move_page(part, list(part.page))
            part.page.clear()

    def copy_to_table(self, item: WireItem, previous: WireItem | None) -> Operation[None]:
        assert self.to_table is not None
        if previous is None:  # create-only, or an identical copy from an earlier run
            same, names, values = unchanged_condition(item, frozenset())
            params: dict[str, Any] = {
                "TableName": self.to_table.name,
                "Item": item,
                "ConditionExpression": f"attribute_not_exists(#pk) OR ({same})",
                "ExpressionAttributeNames": {"#pk": self.to_table.partition_key.name, **names},
                "ExpressionAttributeValues": values,
            }
        else:  # replace our own older copy, and only that
            same, names, values = unchanged_condition(previous, frozenset())
            params = {
                "TableName": self.to_table.name,
                "Item": item,
                "ConditionExpression": same,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        yield from call(self.ctx, "PutItem", params, (self.to_table,))

    def verify_table(self, items: list[WireItem]) -> Operation[list[bool]]:
        assert self.to_table is not None
        found: list[bool] = []
        for item in items:
            response = yield from call(
                self.ctx,
                "GetItem",
                {
                    "TableName": self.to_table.name,
                    "Key": key_of(self.table, item),
                    "ConsistentRead": True,
                },
                (self.to_table,),
            )
            copy = response.get("Item")
            found.append(copy is not None and same_item(copy, item))
        return found

    def write_file(self, items: list[WireItem]) -> list[bool]:
        assert self.to_file is not None
        fresh = [
            i
            for i in items
            if not _same_copy(self.in_file.get(_key_text(key_of(self.table, i))), i)
        ]
        if fresh:
            self.to_file.append(fresh)
        # Verify: read the file back, the last line of each key wins.
        back = {_key_text(key_of(self.table, i)): i for i in self.to_file.read()}
        self.in_file.update(back)
        return [same_item(back.get(_key_text(key_of(self.table, i)), {}), i) for i in items]

    def delete_original(self, item: WireItem) -> Operation[Removal]:
        yield from self.budget.take_write(estimate_write(self.table, item, None).total)
        removal = yield from delete_unchanged(
            self.ctx, self.table, key_of(self.table, item), item, self.watched
        )
        return removal

    def give_copy(self, item: WireItem, added: WireItem) -> Operation[None]:
        """Give the copy of ``item`` the attributes a writer added to the original between
        its read and its delete (a file gets the whole item again: its last line wins)."""
        if self.to_table is not None:
            yield from give_attributes(
                self.ctx, self.to_table, key_of(self.table, item), item, added
            )
            return
        assert self.to_file is not None
        whole = {**item, **added}
        self.to_file.append([whole])
        self.in_file[_key_text(key_of(self.table, item))] = whole

    def move_page(self, part: _Part, items: list[WireItem]) -> Operation[None]:
        pending: list[tuple[WireItem, WireItem | None]] = [(i, None) for i in items]
        for _attempt in range(self.max_attempts):
            if not pending:
                return
            # 1. copy
            current = [item for item, _ in pending]
            if self.to_table is not None:
                for item, previous in pending:
                    yield from self.budget.take_write(_put_units(self.to_table, item))
                    try:
                        yield from self.copy_to_table(item, previous)
                    except ValidationError as exc:
                        part.fail(self.table, item, str(exc))
                        current.remove(item)
                        continue
                    except ConditionFailedError:
                        part.fail(self.table, item, "the destination holds another item")
                        current.remove(item)
                verified = yield from self.verify_table(current)
            else:
                verified = self.write_file(current)
            # 2. verify
            ready = []
            for item, ok in zip(current, verified, strict=True):
                if ok:
                    ready.append(item)
                else:
                    part.fail(self.table, item, "the copy did not verify")
            # 3. delete the originals that are unchanged
            again: list[tuple[WireItem, WireItem | None]] = []
            for item in ready:
                try:
                    removal = yield from self.delete_original(item)
                except ValidationError as exc:  # the condition is too long: nothing was sent
                    part.fail(self.table, item, str(exc))
                    continue
                if removal.deleted:
                    if removal.added:
                        yield from self.give_copy(item, removal.added)
                    self.moved(part, item)
                    continue
                response = yield from call(
                    self.ctx,
                    "GetItem",
                    {
                        "TableName": self.table.name,
                        "Key": key_of(self.table, item),
                        "ConsistentRead": True,
                    },
                    (self.table,),
                )
                newer = response.get("Item")
                if newer is None and removal.unsure:
                    # Gone, most likely by this delete (its answer was lost and its resend
                    # found nothing): the original is gone and its copy is kept.
                    self.moved(part, item)
                    continue
                part.add("retried")
                if newer is not None and self.matches(newer):
                    again.append((newer, item))
                    continue
                # Another writer deleted it, or changed it so that it stays: withdraw the copy.
                part.add("gone" if newer is None else "kept")
                if self.to_table is not None:
                    key = key_of(self.table, item)
                    yield from withdraw_copy(self.ctx, self.to_table, key, item)
                else:
                    part.add("stale_copies")
            pending = again
        for item, _ in pending:
            part.fail(self.table, item, f"changed on each of {self.max_attempts} attempts")


_COUNTERS = ("scanned", "moved", "kept", "retried", "gone", "stale_copies")


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
