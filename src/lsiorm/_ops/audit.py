"""Collection audit: the size of item collections, read from the table and measured by the model.

DynamoDB reports a collection's size only to writes, and only on AWS itself (DynamoDB Local and
moto return no ItemCollectionMetrics). An audit reads the items instead and applies the size
model of `_model/capacity.py`: each table item with its storage overhead, and each item's
entry in every LSI with the index entry overhead. GSI entries are not part of a collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm._model.capacity import (
    INDEX_ENTRY_OVERHEAD,
    ITEM_STORAGE_OVERHEAD,
    ReadEstimate,
    estimate_request,
    index_entry,
)
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import AttributeValue, from_wire, item_size, to_wire
from lsiorm._ops.pages import read_pages
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reserved import reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm._requests.pages import PagedRead, ReadPage
from lsiorm._requests.reads import item_scan, partition_query
from lsiorm.errors import ValidationError

__all__ = [
    "CollectionSize",
    "audit_collection",
    "collection_size",
    "largest_collections",
    "measure_collection",
]

_GB = 1024**3


@dataclass(frozen=True)
class CollectionSize:
    """The measured size of one item collection.

    ``key`` is the partition key value as Python. ``table_bytes`` counts each item plus 100
    bytes of storage overhead; ``index_bytes`` counts, per LSI, each entry plus 100 bytes.
    """

    table: str
    attribute: str
    key: Any
    items: int
    table_bytes: int
    index_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """The bytes of the table items and every LSI entry together."""
        return self.table_bytes + sum(self.index_bytes.values())

    @property
    def gb(self) -> float:
        """The total size in GB (1 GB = 2**30 bytes)."""
        return self.total_bytes / _GB

    def exceeds(self, threshold_gb: float) -> bool:
        """Return whether the collection is at or above ``threshold_gb``."""
        return self.gb >= threshold_gb


class _Tally:
    """Running totals of one collection."""

    def __init__(self, table: Table, key: Any) -> None:
        self.table = table
        self.key = key
        self.items = 0
        self.table_bytes = 0
        self.index_bytes = dict.fromkeys((i.name for i in table.local_indexes), 0)

    def add(self, item: Mapping[str, Any]) -> None:
        self.items += 1
        self.table_bytes += item_size(item) + ITEM_STORAGE_OVERHEAD
        for index in self.table.local_indexes:
            entry = index_entry(self.table, index, item)
            if entry is not None:
                self.index_bytes[index.name] += item_size(entry) + INDEX_ENTRY_OVERHEAD

    def result(self) -> CollectionSize:
        return CollectionSize(
            self.table.name,
            self.table.partition_key.name,
            self.key,
            self.items,
            self.table_bytes,
            dict(self.index_bytes),
        )


def collection_size(table: Table, key: Any, items: Iterable[Mapping[str, Any]]) -> CollectionSize:
    """Return the size of a collection from its wire items (all with partition value ``key``)."""
    tally = _Tally(table, key)
    for item in items:
        tally.add(item)
    return tally.result()


_TAGS = {"S": "a string", "N": "a number", "B": "bytes"}


def _partition_value(table: Table, value: Any) -> AttributeValue:
    """The partition key value of a collection: given as stored (``"HOST#h1"``, or its
    attribute value), or as an entity of the collection, whose key gives it."""
    if isinstance(value, Entity):
        home = meta_of(value).table
        if home is not table:
            raise ValidationError(
                "audit.entity-table",
                f"{type(value).__name__} is declared on table {home.name!r}, not on "
                f"{table.name!r}.",
                table=table.name,
            )
        return dict(value.to_wire()[table.partition_key.name])
    av: AttributeValue = dict(value) if isinstance(value, Mapping) else to_wire(value)
    declared = table.partition_key.type
    if list(av) != [declared]:
        raise ValidationError(
            "audit.key-type",
            f"The partition key {table.partition_key.name!r} of table {table.name!r} is "
            f"{_TAGS[declared]}, but the audit was given {value!r}. Give the value as stored "
            "(the key text, such as 'HOST#h1'), or an entity of the collection.",
            table=table.name,
        )
    return av


def audit_collection(
    ctx: Context, table: Table, partition_value: Any, *, page_size: int | None = None
) -> Operation[CollectionSize]:
    """Read one collection with consistent, paginated queries and return its size.

    ``partition_value`` is the partition key value, as Python or as an AttributeValue;
    ``page_size`` caps the items of each page (DynamoDB's own cap is 1 MB a page).
    """
    size, _ = yield from measure_collection(ctx, table, partition_value, page_size=page_size)
    return size


def measure_collection(
    ctx: Context,
    table: Table,
    partition_value: Any,
    *,
    page_size: int | None = None,
    consistent: bool = True,
) -> Operation[tuple[CollectionSize, ReadEstimate]]:
    """`audit_collection`, and the capacity model's price of each of its pages, summed.

    A job that then reads the same collection in the same pages, with the same consistency,
    reads what the price says, to the unit (a filter does not lower what a page reads).
    """
    av = _partition_value(table, partition_value)
    params = partition_query(table.name, table.partition_key.name, av, consistent=consistent)
    tally = _Tally(table, from_wire(av))
    price = ReadEstimate(table.name, 0.0)

    def add(page: ReadPage) -> None:
        nonlocal price
        price = price + estimate_request(table, "Query", page.request, page.items)
        for item in page.items:
            tally.add(item)

    yield from read_pages(ctx, PagedRead("Query", params, page_size, tables=(table,)), add)
    return tally.result(), price


def largest_collections(
    ctx: Context,
    table: Table,
    threshold_gb: float | None = None,
    *,
    limit: int | None = None,
    consistent: bool = False,
    page_size: int | None = None,
) -> Operation[list[CollectionSize]]:
    """Scan the table and return its collections at or above ``threshold_gb``, largest first.

    ``threshold_gb`` defaults to the table's ``collection_warning_gb``; 0 returns every
    collection. ``limit`` keeps only the largest ones. Only running totals are kept per
    collection, never the items. The partition of the jobs' ledger is left out: it is
    lsiorm's own (`reserved_partition`), not one of the table's collections.
    """
    threshold = table.collection_warning_gb if threshold_gb is None else threshold_gb
    if threshold < 0:
        raise ValidationError(
            "audit.threshold",
            f"The collection size threshold is {threshold} GB; it cannot be negative.",
            table=table.name,
        )
    operation, params = item_scan(
        table.name, partition_key=table.partition_key.name, consistent=consistent
    )
    tallies: dict[Any, _Tally] = {}
    pk = table.partition_key.name
    skip = reserved_partition(table)

    def add(page: ReadPage) -> None:
        for item in page.items:
            if item.get(pk) == skip:
                continue
            key = from_wire(item[pk])
            tally = tallies.get(key)
            if tally is None:
                tally = tallies[key] = _Tally(table, key)
            tally.add(item)

    yield from read_pages(ctx, PagedRead(operation, params, page_size, tables=(table,)), add)
    sizes = [t.result() for t in tallies.values()]
    found = sorted((s for s in sizes if s.exceeds(threshold)), key=_largest_first)
    return found if limit is None else found[:limit]


def _largest_first(size: CollectionSize) -> tuple[int, str]:
    return (-size.total_bytes, repr(size.key))
