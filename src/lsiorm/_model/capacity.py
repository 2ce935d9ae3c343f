"""The size and capacity model: index entry sizes and the read and write units of a request.

Every function is pure. The rules are DynamoDB's published ones (see ``docs/capacity.md``),
checked case by case against the ConsumedCapacity that DynamoDB Local reports.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeVar

from lsiorm._model.entity import Entity, meta_of, wire_item
from lsiorm._model.schema import GlobalIndex, LocalIndex, Table
from lsiorm._model.wire import WireItem, item_from_wire, item_size
from lsiorm.errors import ValidationError

__all__ = [
    "INDEX_ENTRY_OVERHEAD",
    "ITEM_STORAGE_OVERHEAD",
    "READ_UNIT_BYTES",
    "WRITE_UNIT_BYTES",
    "ReadEstimate",
    "Select",
    "WriteEstimate",
    "dry_run_delete",
    "dry_run_put",
    "dry_run_update",
    "estimate_query",
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
U = TypeVar("U", bound="_Units")


@dataclass(frozen=True)
class _Units:
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
class WriteEstimate(_Units):
    """The write capacity units one write consumes, for the table and for each index."""


@dataclass(frozen=True)
class ReadEstimate(_Units):
    """The read capacity units one query page consumes: index reads and base-table fetches.

    For a query of an index, ``per_index`` holds the reads of the index entries and
    ``table_units`` the fetches of base-table items, as DynamoDB reports them.
    """


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
    partition, sort = table.index_key_attributes(resolved)
    if partition not in item or (sort is not None and sort not in item):
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
        return write_units(item_size(entry) + INDEX_ENTRY_OVERHEAD)
    old_units = write_units(item_size(before) + INDEX_ENTRY_OVERHEAD)
    new_units = write_units(item_size(after) + INDEX_ENTRY_OVERHEAD)
    keys = [k for k in table.index_key_attributes(index) if k is not None]
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
) -> WriteEstimate:
    """Return the write units of changing one item from ``old_item`` to ``new_item`` (wire).

    A put of a new item has no ``old_item``; a delete has no ``new_item``; an overwrite or an
    update has both. The table pays for the larger of the two items; each index pays 1 unit
    per started KB of an entry put or removed, both when its key changes, the larger when its
    entry changes in place, and nothing when the entry is untouched. A transactional write
    costs twice as much.
    """
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


def _top_level(path: str) -> str:
    cut = min((i for i in (path.find("."), path.find("[")) if i >= 0), default=len(path))
    return path[:cut]


def needs_fetch(
    table: Table,
    index: Index | str | None,
    attributes: Collection[str] = (),
    *,
    select: Select | None = None,
) -> bool:
    """Return whether a query reads base-table items besides the index entries.

    Only an LSI that does not project ALL fetches: for ``select="ALL_ATTRIBUTES"``, or when
    ``attributes`` (top-level names or document paths) name an attribute it does not project.
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
) -> ReadEstimate:
    """Return the read units of one query page that reads ``items`` (full base-table items).

    ``items`` are the items the key condition matches, before any filter (a filter does not
    lower the cost); items without the index key are not in the index and are skipped. The
    index entries' sizes are summed, then rounded up to 4 KB; each fetched item is rounded up
    to 4 KB on its own. ``fetch`` overrides :func:`needs_fetch`, for engines that fetch in
    other cases (see ``docs/capacity.md``).
    """
    resolved = _resolve(table, index)
    if resolved is None:
        size = sum(item_size(item) for item in items)
        return ReadEstimate(table.name, read_units(size, consistent=consistent))
    fetching = needs_fetch(table, resolved, attributes, select=select) if fetch is None else fetch
    if fetching and isinstance(resolved, GlobalIndex):
        raise ValidationError(
            "capacity.gsi-fetch",
            f"Global secondary index {resolved.name!r} cannot fetch from table {table.name!r}; "
            "a query of a GSI returns only projected attributes.",
            table=table.name,
        )
    index_bytes = 0
    fetched = 0.0
    for item in items:
        entry = index_entry(table, resolved, item)
        if entry is None:
            continue
        index_bytes += item_size(entry)
        if fetching:
            fetched += read_units(item_size(item), consistent=consistent)
    units = read_units(index_bytes, consistent=consistent)
    return ReadEstimate(table.name, fetched, {resolved.name: units} if units else {})


def _wire_of(value: Entity | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return wire_item(value) if isinstance(value, Entity) else value


def dry_run_put(
    entity: Entity,
    old: Entity | Mapping[str, Any] | None = None,
    *,
    transactional: bool = False,
) -> WriteEstimate:
    """Return the write units a put of ``entity`` would consume, over ``old`` if it exists.

    ``old`` is the stored item with the same key, as an entity or a wire item.
    """
    table = meta_of(entity).table
    return estimate_write(table, _wire_of(old), wire_item(entity), transactional=transactional)


def dry_run_update(
    entity: Entity,
    *,
    set: Mapping[str, Any] | None = None,
    remove: Collection[str] = (),
    transactional: bool = False,
) -> WriteEstimate:
    """Return the write units of updating the stored ``entity`` with ``set`` and ``remove``.

    Field values are validated as an update validates them; key attributes derived from the
    changed fields are rewritten, and dropped when a field they need is removed.
    """
    meta = meta_of(entity)
    changes = {name: meta.validate_field(name, value) for name, value in (set or {}).items()}
    for name in remove:
        changes[name] = meta.validate_field(name, None)
    after = entity.model_copy(update=changes)
    return estimate_write(
        meta.table, wire_item(entity), wire_item(after), transactional=transactional
    )


def dry_run_delete(entity: Entity, *, transactional: bool = False) -> WriteEstimate:
    """Return the write units a delete of the stored ``entity`` would consume."""
    table = meta_of(entity).table
    return estimate_write(table, wire_item(entity), None, transactional=transactional)
