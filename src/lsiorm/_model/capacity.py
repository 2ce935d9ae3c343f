"""The size and capacity model: index entry sizes and the read and write units of a request.

Every function is pure. The rules are DynamoDB's published ones (see ``docs/capacity.md``),
checked case by case against the ConsumedCapacity that DynamoDB Local reports.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeVar

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import instance_meta, meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.item_encoding import stamped, wire_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, item_from_wire, item_size
from lsiorm.errors import ValidationError

__all__ = [
    "INDEX_ENTRY_OVERHEAD",
    "ITEM_STORAGE_OVERHEAD",
    "READ_UNIT_BYTES",
    "WRITE_UNIT_BYTES",
    "CapacityUnits",
    "ConsumedCapacity",
    "FetchRule",
    "ReadEstimate",
    "Select",
    "WriteEstimate",
    "dry_run_delete",
    "dry_run_put",
    "estimate_batch_get",
    "estimate_condition_check",
    "estimate_get",
    "estimate_query",
    "estimate_request",
    "estimate_scan",
    "estimate_transact_get",
    "estimate_write",
    "index_entry",
    "index_entry_size",
    "needs_fetch",
    "read_units",
    "write_units",
]

#: One write capacity unit covers up to this many bytes.
WRITE_UNIT_BYTES: Final = 1024
#: One strongly consistent read capacity unit covers up to this many bytes.
READ_UNIT_BYTES: Final = 4096
#: Bytes DynamoDB adds to every index entry, in storage and in write units (not in reads).
INDEX_ENTRY_OVERHEAD: Final = 100
#: Bytes DynamoDB adds to every table item in storage.
ITEM_STORAGE_OVERHEAD: Final = 100

Index: TypeAlias = "LocalIndex | GlobalIndex"
Select = Literal["ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "SPECIFIC_ATTRIBUTES", "COUNT"]
U = TypeVar("U", bound="CapacityUnits")


@dataclass(frozen=True)
class CapacityUnits:
    """Capacity units of one request, for the table and for each index."""

    table: str
    table_units: float
    #: Units per index name; an index that costs nothing is left out.
    per_index: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """The units of the table and every index together (ConsumedCapacity.CapacityUnits)."""
        return self.table_units + sum(self.per_index.values())

    def __str__(self) -> str:
        parts = "".join(f" + {name} {units:g}" for name, units in self.per_index.items())
        return f"{self.total:g} units: table {self.table_units:g}{parts}"

    def __add__(self: U, other: U) -> U:
        """Return the units of two requests together (a batch write sums its writes)."""
        if type(other) is not type(self) or other.table != self.table:
            return NotImplemented
        per_index = dict(self.per_index)
        for name, units in other.per_index.items():
            per_index[name] = per_index.get(name, 0.0) + units
        return type(self)(self.table, self.table_units + other.table_units, per_index)

    @classmethod
    def from_consumed(cls: type[U], consumed: Mapping[str, Any]) -> U:
        """Read a ``ConsumedCapacity`` (ReturnConsumedCapacity=INDEXES) into the same shape."""
        per_index: dict[str, float] = {}
        for group in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
            for name, units in (consumed.get(group) or {}).items():
                value = float(units.get("CapacityUnits") or 0.0)
                if value:
                    per_index[name] = value
        table = consumed.get("Table") or {}
        return cls(
            str(consumed.get("TableName", "")), float(table.get("CapacityUnits") or 0.0), per_index
        )


@dataclass(frozen=True)
class WriteEstimate(CapacityUnits):
    """The write capacity units one write consumes, for the table and for each index."""


@dataclass(frozen=True)
class ReadEstimate(CapacityUnits):
    """The read capacity units one query page consumes: index reads and base-table fetches.

    For a query of an index, ``per_index`` holds the reads of the index entries and
    ``table_units`` the fetches of base-table items, as DynamoDB reports them.
    """


@dataclass(frozen=True)
class ConsumedCapacity(CapacityUnits):
    """The capacity DynamoDB reported for one table (``ReturnConsumedCapacity=INDEXES``).

    ``table_units`` is what the table consumed and ``per_index`` each index; ``total`` is
    DynamoDB's ``CapacityUnits``. Compare it with an estimate with `matches`.
    """

    def matches(self, estimate: CapacityUnits) -> bool:
        """Whether an estimate gives exactly these figures, for the table and every index."""
        return (
            self.table == estimate.table
            and self.table_units == estimate.table_units
            and self.per_index == estimate.per_index
        )


def write_units(size: int) -> int:
    """Return the write units for ``size`` bytes: one per started 1 KB, and at least one."""
    return max(1, -(-size // WRITE_UNIT_BYTES))


def read_units(size: int, *, consistent: bool) -> float:
    """Return the read units for ``size`` bytes: one per started 4 KB, half if eventual."""
    units = -(-size // READ_UNIT_BYTES)
    return float(units) if consistent else units / 2


def _resolve(table: Table, index: Index | str | None) -> Index | None:
    if index is None or isinstance(index, (LocalIndex, GlobalIndex)):
        return index
    return table.index(index)


def index_entry(table: Table, index: Index | str, item: Mapping[str, Any]) -> WireItem | None:
    """Return the entry a wire item has in an index, or None when the item is not in it.

    An item is in an index only when it has every key attribute of the index (sparse index).
    The entry holds the table's key, the index key and the projected attributes.
    """
    resolved = _resolve(table, index)
    assert resolved is not None
    if any(key not in item for key in table.index_key_names(resolved)):
        return None
    keep = table.projected_attributes(resolved)
    if keep is None:
        return dict(item)
    return {name: value for name, value in item.items() if name in keep}


def index_entry_size(table: Table, index: Index | str, item: Mapping[str, Any]) -> int | None:
    """Return the stored size of an item's index entry (with 100 bytes overhead), or None."""
    entry = index_entry(table, index, item)
    return None if entry is None else item_size(entry) + INDEX_ENTRY_OVERHEAD


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # Compared as values, so "1.0" equals "1" and set order does not matter.
    return a == b or item_from_wire(a) == item_from_wire(b)


def _entry_write_units(index: Index, entry: Mapping[str, Any]) -> int:
    # DynamoDB Local adds the 100-byte entry overhead to LSI entries only, not to GSI entries.
    overhead = INDEX_ENTRY_OVERHEAD if isinstance(index, LocalIndex) else 0
    return write_units(item_size(entry) + overhead)


def _index_write(
    table: Table, index: Index, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> int:
    before = index_entry(table, index, old) if old is not None else None
    after = index_entry(table, index, new) if new is not None else None
    if before is None and after is None:
        return 0
    if before is None or after is None:
        entry = after if before is None else before
        assert entry is not None
        return _entry_write_units(index, entry)
    old_units = _entry_write_units(index, before)
    new_units = _entry_write_units(index, after)
    keys = table.index_key_names(index)
    if not _same({k: before[k] for k in keys}, {k: after[k] for k in keys}):
        return old_units + new_units  # the old entry is deleted, the new one put
    if _same(before, after):
        return 0
    return max(old_units, new_units)


def estimate_write(
    table: Table,
    old_item: Mapping[str, Any] | None,
    new_item: Mapping[str, Any] | None,
    *,
    transactional: bool = False,
    batched: bool = False,
) -> WriteEstimate:
    """Return the write units of changing one item from ``old_item`` to ``new_item`` (wire).

    A put of a new item has no ``old_item``; a delete has no ``new_item``; an overwrite or an
    update has both. The table pays for the larger of the two items; each index pays 1 unit
    per started KB of an entry put or removed (an LSI entry counts 100 bytes of overhead, a
    GSI entry none), both when its key changes, the larger when its entry changes in place,
    and nothing when the entry is untouched. A transactional write costs twice as much.

    A write that finds no item and leaves none (a delete of a missing item) costs 1 unit, and
    2 inside a BatchWriteItem (``batched=True``), as DynamoDB Local charges it.
    """
    if old_item is None and new_item is None:
        return WriteEstimate(table.name, 2.0 if batched else 1.0)
    old_size = item_size(old_item) if old_item is not None else 0
    new_size = item_size(new_item) if new_item is not None else 0
    factor = 2 if transactional else 1
    per_index: dict[str, float] = {}
    indexes: tuple[Index, ...] = (*table.local_indexes, *table.global_indexes)
    for index in indexes:
        units = _index_write(table, index, old_item, new_item)
        if units:
            per_index[index.name] = float(units * factor)
    return WriteEstimate(
        table.name, float(write_units(max(old_size, new_size)) * factor), per_index
    )


def estimate_condition_check(table: Table, item: Mapping[str, Any] | None) -> WriteEstimate:
    """Return the units of a ConditionCheck action of a transaction on ``item`` (None: missing).

    It reads the item transactionally: 2 units per started 4 KB, and 2 for a missing item.
    They are reported with the transaction's writes, so the result adds to their estimates.
    """
    size = item_size(item) if item is not None else 0
    return WriteEstimate(table.name, float(2 * max(1, -(-size // READ_UNIT_BYTES))))


# -- reads of single items -----------------------------------------------------------------------


def estimate_get(
    table: Table,
    item: Mapping[str, Any] | None,
    *,
    consistent: bool = False,
    transactional: bool = False,
    batched: bool = False,
) -> ReadEstimate:
    """Return the read units of reading one item by its key (``item`` None: it is missing).

    The whole stored item is charged, whatever the ProjectionExpression: 1 unit per started
    4 KB, half when eventually consistent. A missing item still costs the minimum (0.5 or 1),
    except in a BatchGetItem (``batched=True``), where it costs nothing. A TransactGetItems
    read (``transactional=True``) costs 2 units per started 4 KB, and 2 for a missing item.
    """
    size = item_size(item) if item is not None else 0
    blocks = -(-size // READ_UNIT_BYTES)
    if transactional:
        return ReadEstimate(table.name, float(2 * max(1, blocks)))
    if item is None and batched:
        return ReadEstimate(table.name, 0.0)
    units = float(max(1, blocks))
    return ReadEstimate(table.name, units if consistent else units / 2)


def estimate_batch_get(
    table: Table, items: Iterable[Mapping[str, Any] | None], *, consistent: bool = False
) -> ReadEstimate:
    """Return the read units of a BatchGetItem on one table: each item rounded on its own.

    ``items`` holds the stored item of each key read, None for a key with no item.
    """
    total = ReadEstimate(table.name, 0.0)
    for item in items:
        total = total + estimate_get(table, item, consistent=consistent, batched=True)
    return total


def estimate_transact_get(table: Table, items: Iterable[Mapping[str, Any] | None]) -> ReadEstimate:
    """Return the read units of a TransactGetItems on one table: twice each item's 4 KB units."""
    total = ReadEstimate(table.name, 0.0)
    for item in items:
        total = total + estimate_get(table, item, transactional=True)
    return total


# -- queries and scans ---------------------------------------------------------------------------


def _top_level(path: str) -> str:
    cut = min((i for i in (path.find("."), path.find("[")) if i >= 0), default=len(path))
    return path[:cut]


FetchRule = Literal["engine", "documented"]


def needs_fetch(
    table: Table,
    index: Index | str | None,
    attributes: Collection[str] = (),
    *,
    select: Select | None = None,
    rule: FetchRule = "engine",
) -> bool:
    """Return whether a query reads base-table items besides the index entries.

    Only a query of an LSI that does not project ALL fetches: for ``select="ALL_ATTRIBUTES"``,
    and for a ProjectionExpression (``attributes``: top-level names or document paths).
    ``rule="engine"`` (the default) follows DynamoDB Local, which fetches for every
    ProjectionExpression on such an LSI; ``rule="documented"`` follows AWS's documentation,
    which fetches only when an attribute is not projected (see ``docs/capacity.md``).
    A scan never fetches (see `estimate_scan`).
    """
    resolved = _resolve(table, index)
    if not isinstance(resolved, LocalIndex):
        return False
    projected = table.projected_attributes(resolved)
    if projected is None:
        return False
    if select == "ALL_ATTRIBUTES":
        return True
    if select in ("ALL_PROJECTED_ATTRIBUTES", "COUNT"):
        return False
    if rule == "engine":
        return bool(attributes)
    return any(_top_level(a) not in projected for a in attributes)


def estimate_query(
    table: Table,
    index: Index | str | None,
    items: Iterable[Mapping[str, Any]],
    *,
    consistent: bool = False,
    select: Select | None = None,
    attributes: Collection[str] = (),
    fetch: bool | None = None,
    rule: FetchRule = "engine",
) -> ReadEstimate:
    """Return the read units of one query page that reads ``items`` (full base-table items).

    ``items`` are the items the key condition matches, before any filter (a filter does not
    lower the cost); items without the index key are not in the index and are skipped. The
    index entries' sizes are summed, then rounded up to 4 KB; each fetched item is rounded up
    to 4 KB on its own. ``Select=COUNT`` costs the same reads. Whether items are fetched
    follows `needs_fetch` with ``rule``; ``fetch`` overrides it.
    """
    resolved = _resolve(table, index)
    if resolved is None:
        return _table_read(table, items, consistent)
    fetching = (
        needs_fetch(table, resolved, attributes, select=select, rule=rule)
        if fetch is None
        else fetch
    )
    if fetching and isinstance(resolved, GlobalIndex):
        raise ValidationError(
            "capacity.gsi-fetch",
            f"Global secondary index {resolved.name!r} cannot fetch from table {table.name!r}; "
            "a query of a GSI returns only projected attributes.",
            table=table.name,
        )
    index_bytes = 0
    fetched = 0.0
    for item, entry in _index_entries(table, resolved, items):
        index_bytes += item_size(entry)
        if fetching:
            fetched += read_units(item_size(item), consistent=consistent)
    return _index_read(table, resolved, index_bytes, fetched, consistent)


def estimate_scan(
    table: Table,
    index: Index | str | None,
    items: Iterable[Mapping[str, Any]],
    *,
    consistent: bool = False,
) -> ReadEstimate:
    """Return the read units of one scan page that reads ``items`` (full base-table items).

    The sizes are summed, then rounded up to 4 KB, whatever the Select, ProjectionExpression
    or filter. A scan of an index is charged to the index, for the whole items in it (not their
    entries), and nothing to the table, even when the index projects only keys: that is how
    DynamoDB Local charges it (see ``docs/capacity.md``).
    """
    resolved = _resolve(table, index)
    if resolved is None:
        return _table_read(table, items, consistent)
    size = sum(item_size(item) for item, _ in _index_entries(table, resolved, items))
    return _index_read(table, resolved, size, 0.0, consistent)


def _index_entries(
    table: Table, index: Index, items: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[Mapping[str, Any], WireItem]]:
    """Yield each item that is in the index, with its entry there (sparse: not every item)."""
    for item in items:
        entry = index_entry(table, index, item)
        if entry is not None:
            yield item, entry


def _table_read(table: Table, items: Iterable[Mapping[str, Any]], consistent: bool) -> ReadEstimate:
    """The read of whole table items: their sizes summed, then rounded up to 4 KB."""
    size = sum(item_size(item) for item in items)
    return ReadEstimate(table.name, read_units(size, consistent=consistent))


def _index_read(
    table: Table, index: Index, size: int, fetched: float, consistent: bool
) -> ReadEstimate:
    """A read of ``size`` bytes from an index, plus ``fetched`` units from the table."""
    units = read_units(size, consistent=consistent)
    return ReadEstimate(table.name, fetched, {index.name: units} if units else {})


def _projection_attributes(params: Mapping[str, Any]) -> list[str]:
    text = params.get("ProjectionExpression")
    if not text:
        return []
    names: Mapping[str, str] = params.get("ExpressionAttributeNames") or {}
    out = []
    for part in str(text).split(","):
        path = part.strip()
        head = _top_level(path)
        out.append(names.get(head, head) + path[len(head) :])
    return out


def estimate_request(
    table: Table,
    operation: Literal["Query", "Scan"],
    params: Mapping[str, Any],
    items: Iterable[Mapping[str, Any]],
) -> ReadEstimate:
    """Return the read units of one Query or Scan request (its exact ``params``, as sent).

    ``items`` are the full base-table items the request reads (for a page, those before its
    filter and within its Limit). Index, consistency, Select and ProjectionExpression are taken
    from ``params``, and the engine's fetch rule applies.
    """
    index_name = params.get("IndexName")
    index = table.index(index_name) if index_name else None
    consistent = bool(params.get("ConsistentRead"))
    if operation == "Scan":
        return estimate_scan(table, index, items, consistent=consistent)
    return estimate_query(
        table,
        index,
        items,
        consistent=consistent,
        select=params.get("Select"),
        attributes=_projection_attributes(params),
    )


# -- dry runs of entity writes -------------------------------------------------------------------


def _wire_of(value: Entity | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return wire_item(value) if isinstance(value, Entity) else value


def _bumped(entity: Entity) -> Entity:
    """The entity as a put stores it: a versioned entity's version goes up by one."""
    meta = meta_of(entity)
    if meta.version_field is None:
        return entity
    current = getattr(entity, meta.version_field) or 0
    return entity.model_copy(update={meta.version_field: current + 1})


def dry_run_put(
    entity: Entity,
    old: Entity | Mapping[str, Any] | None = None,
    *,
    assume_new: bool = False,
    transactional: bool = False,
) -> WriteEstimate:
    """Return the write units a put of ``entity`` would consume, priced as the put writes it.

    ``old`` is the stored item with the same key (an entity or a wire item). An overwrite
    costs more than a new item, so without ``old`` the put is refused unless
    ``assume_new=True`` says no item has that key, or the entity is versioned with no version
    yet (such a put only ever creates). A versioned entity is priced with the version it
    will be stored with (one more than now).
    """
    meta = instance_meta(entity)
    stored = _bumped(stamped(entity))
    creates = meta.version_field is not None and not getattr(entity, meta.version_field)
    if old is None and not (assume_new or creates):
        raise ValidationError(
            "capacity.old-item-unknown",
            f"dry_run_put({type(entity).__name__}) cannot price the put without the item it "
            "would overwrite: pass old= (the stored entity or wire item), or assume_new=True "
            "when no item has this key.",
            table=meta.table.name,
        )
    return estimate_write(meta.table, _wire_of(old), wire_item(stored), transactional=transactional)


def dry_run_delete(entity: Entity, *, transactional: bool = False) -> WriteEstimate:
    """Return the write units a delete of the stored ``entity`` would consume."""
    table = instance_meta(entity).table
    return estimate_write(table, wire_item(entity), None, transactional=transactional)
