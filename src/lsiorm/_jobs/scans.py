"""What a key job reads: a whole table in parallel segments, or one partition; and its price.

`ScanSpec` is the read as a value (its paged Scan or Query, built in `lsiorm._requests.reads`);
`price_scan` prices it with the capacity model before anything is read. A read of the whole
table leaves out the partition that holds the jobs' own ledger (`ScanSpec.read` and
`split_off`): its items are neither handed on nor counted as read, only counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsiorm._model.capacity import ReadEstimate, read_units
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import AttributeValue, to_wire
from lsiorm._ops.audit import measure_collection
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._requests.pages import PagedRead
from lsiorm._requests.reads import item_scan
from lsiorm.errors import ValidationError

__all__ = ["ScanSpec", "price_scan", "priced_scan", "split_off"]


@dataclass(frozen=True)
class ScanSpec:
    """What to read: a whole table in ``segments`` parallel segments, or one partition.

    ``entity`` narrows the read to one entity type (a filter on the type attribute; the read
    still costs what it scans). ``partition`` is a partition key value (Python or wire).
    """

    table: Table
    entity: type[Entity] | None = None
    partition: Any = None
    segments: int = 1
    consistent: bool = False
    page_size: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.segments <= 1_000_000:
            raise ValidationError(
                "scan.segments",
                f"segments is {self.segments}; a scan has 1 to 1,000,000 segments.",
                table=self.table.name,
            )

    @property
    def parallel(self) -> int:
        """The number of segments actually read (a partition is one query)."""
        return 1 if self.partition is not None else self.segments

    def partition_value(self) -> AttributeValue | None:
        """The partition read, as a wire value (None: the whole table); a value of another type
        than the table's partition key is refused."""
        if self.partition is None:
            return None
        table, pk = self.table, self.table.partition_key
        av: AttributeValue = (
            dict(self.partition) if isinstance(self.partition, Mapping) else to_wire(self.partition)
        )
        if list(av) != [pk.type]:
            raise ValidationError(
                "audit.key-type",
                f"The partition key {pk.name!r} of table {table.name!r} has type {pk.type}, "
                f"but the job was given {self.partition!r}.",
                table=table.name,
            )
        return av

    def read(self, skip: Mapping[str, Any] | None) -> tuple[PagedRead, AttributeValue | None]:
        """The paged read of this spec (every segment's: see `PagedRead.segment`) that leaves
        out partition ``skip`` (a partition key value, or None), and the value to leave out of
        its pages with `split_off` (None for one partition's query: it never reaches another
        partition).

        A filter (an entity type's) lets that partition's items through, so that they can be
        left out of the items read too (DynamoDB counts an item a filter drops as read).
        """
        table = self.table
        kept = None if skip is None or self.partition is not None else dict(skip)
        meta = meta_of(self.entity) if self.entity is not None else None
        operation, params = item_scan(
            table.name,
            partition_key=table.partition_key.name,
            partition=self.partition_value(),
            # an untyped entity's items have no type; its keys tell them from other untyped
            # types' (see check_item_keys)
            type_attribute=table.type_attribute if meta is not None else None,
            type_name=meta.type_name if meta is not None and meta.typed else None,
            skip=kept,
            consistent=self.consistent,
        )
        return PagedRead(operation, params, self.page_size, tables=(table,)), kept


def split_off(
    table: Table, items: Iterable[Mapping[str, Any]], skip: Mapping[str, Any] | None
) -> tuple[list[Any], int]:
    """The items of a page outside partition ``skip``, and how many were in it."""
    items = list(items)
    if skip is None:
        return items, 0
    pk = table.partition_key.name
    kept = [item for item in items if item.get(pk) != skip]
    return kept, len(items) - len(kept)


def price_scan(ctx: Context, spec: ScanSpec) -> Operation[tuple[ReadEstimate, int | None]]:
    """Price reading ``spec`` with the capacity model; return the price and an item count.

    A whole table is priced from DescribeTable, without reading it: TableSizeBytes rounded up
    to 4 KB, halved unless consistent, and ItemCount (DynamoDB refreshes both about every six
    hours, so the price is an estimate). A partition is a query that reads only its item
    collection, which DescribeTable says nothing about: it is measured by reading it once, in
    the job's own pages, so its price (and its item count) is exact, and costs what it says.
    """
    if spec.partition is not None:
        size, price = yield from measure_collection(
            ctx, spec.table, spec.partition, page_size=spec.page_size, consistent=spec.consistent
        )
        return price, size.items
    described = yield from call(ctx, "DescribeTable", {"TableName": spec.table.name}, (spec.table,))
    live = described.get("Table") or {}
    size_bytes = int(live.get("TableSizeBytes") or 0)
    count = live.get("ItemCount")
    units = read_units(size_bytes, consistent=spec.consistent)
    return ReadEstimate(spec.table.name, units), (int(count) if count is not None else None)


def priced_scan(
    ctx: Context,
    target: Table | type[Entity],
    partition: Any,
    segments: int,
    page_size: int | None,
) -> Operation[tuple[ScanSpec, ReadEstimate, int | None]]:
    """The read of a job's target (a table: every type; an entity class: its items), with its
    price and item count (`price_scan`)."""
    if isinstance(target, Table):
        spec = ScanSpec(target, None, partition, segments, page_size=page_size)
    else:
        spec = ScanSpec(meta_of(target).table, target, partition, segments, page_size=page_size)
    estimate, total = yield from price_scan(ctx, spec)
    return spec, estimate, total
