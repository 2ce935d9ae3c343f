"""TableSpec: a table declaration as a plain frozen value, and what follows from its key schemas.

`Table` holds one; the declaration rules and the drift check read
it, so they need nothing of the Table around it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from lsiorm._model.indexes import (
    BillingMode,
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    SecondaryIndex,
)
from lsiorm._model.table_settings import TableSettings

#: A key attribute's role in a key schema: partition (HASH) or sort (RANGE).
KeyRole = Literal["HASH", "RANGE"]


@dataclass(frozen=True)
class TableSpec:
    """What a table declares, as given (see `Table`'s arguments)."""

    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None
    local_indexes: tuple[LocalIndex, ...]
    global_indexes: tuple[GlobalIndex, ...]
    billing_mode: BillingMode
    read_capacity: int | None
    write_capacity: int | None
    type_attribute: str
    collection_warning_gb: float
    ttl_attribute: str | None
    #: The key style of the entities' fields where neither they nor the field say one.
    key_style: str = "printable"
    #: The key style items of the table's entities may still carry (see `Table`), or None.
    rekeying_from: str | None = None
    #: The operational settings declared (`lsiorm._model.table_settings`); none by default.
    settings: TableSettings = field(default_factory=TableSettings)

    def secondary_indexes(self) -> Iterator[SecondaryIndex]:
        """Yield the local indexes, then the global ones."""
        yield from self.local_indexes
        yield from self.global_indexes

    def key_attribute_uses(self) -> Iterator[KeyAttribute]:
        """Yield every key attribute of every key schema, repeats included."""
        yield self.partition_key
        if self.sort_key is not None:
            yield self.sort_key
        for lsi in self.local_indexes:
            yield lsi.sort_key
        for gsi in self.global_indexes:
            yield from gsi.partition_attributes
            yield from gsi.sort_attributes

    @property
    def key_attributes(self) -> dict[str, KeyType]:
        """Map every key attribute of the table and its indexes to its type."""
        return {attribute.name: attribute.type for attribute in self.key_attribute_uses()}

    def index_key_attributes(self, index: SecondaryIndex | None) -> tuple[str, str | None]:
        """Return the partition and sort key attribute names of the table (None) or an index.

        A multi-attribute index has no such pair: `key_schema` gives its attributes.
        """
        if index is None:
            return self.partition_key.name, _name(self.sort_key)
        if isinstance(index, LocalIndex):
            return self.partition_key.name, index.sort_key.name
        if index.multi_attribute:
            raise ValueError(
                f"Index {index.name!r} has a multi-attribute key; read its key_schema instead."
            )
        ((partition,), sort) = index.partition_attributes, index.sort_attributes
        return partition.name, sort[0].name if sort else None

    def key_schema(self, index: SecondaryIndex | None) -> tuple[tuple[str, KeyRole], ...]:
        """Return the key attributes of the table (None) or an index with their roles, in order."""
        if isinstance(index, GlobalIndex):
            return (
                *((a.name, "HASH") for a in index.partition_attributes),
                *((a.name, "RANGE") for a in index.sort_attributes),
            )
        partition, sort = self.index_key_attributes(index)
        return ((partition, "HASH"),) + (((sort, "RANGE"),) if sort is not None else ())

    def index_key_names(self, index: SecondaryIndex | None) -> tuple[str, ...]:
        """Return the key attribute names of the table (None) or an index, in key schema order."""
        return tuple(name for name, _ in self.key_schema(index))

    @property
    def multi_key_attributes(self) -> frozenset[str]:
        """The key attributes of the multi-attribute indexes, which entities bind to fields."""
        return frozenset(
            name
            for gsi in self.global_indexes
            if gsi.multi_attribute
            for name in self.index_key_names(gsi)
        )

    def projected_attributes(self, index: SecondaryIndex) -> frozenset[str] | None:
        """Return the attributes an index holds, or None when it projects ALL of them."""
        if index.projection.type == "ALL":
            return None
        keys = (*self.index_key_names(None), *self.index_key_names(index))
        return frozenset(keys) | frozenset(index.projection.attributes)


def _name(key: KeyAttribute | None) -> str | None:
    return key.name if key is not None else None
