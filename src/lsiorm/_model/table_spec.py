"""TableSpec: a table declaration as a plain frozen value, and what follows from its key schemas.

`Table` holds one; the declaration rules and the drift check read
it, so they need nothing of the Table around it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lsiorm._model.indexes import (
    BillingMode,
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    SecondaryIndex,
)


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
    key_style: str = "readable"
    #: The key style items of the table's entities may still carry (see `Table`), or None.
    rekeying_from: str | None = None

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
            yield gsi.partition_key
            if gsi.sort_key is not None:
                yield gsi.sort_key

    @property
    def key_attributes(self) -> dict[str, KeyType]:
        """Map every key attribute of the table and its indexes to its type."""
        return {attribute.name: attribute.type for attribute in self.key_attribute_uses()}

    def index_key_attributes(self, index: SecondaryIndex | None) -> tuple[str, str | None]:
        """Return the partition and sort key attribute names of the table (None) or an index."""
        if index is None:
            return self.partition_key.name, _name(self.sort_key)
        if isinstance(index, LocalIndex):
            return self.partition_key.name, index.sort_key.name
        return index.partition_key.name, _name(index.sort_key)

    def projected_attributes(self, index: SecondaryIndex) -> frozenset[str] | None:
        """Return the attributes an index holds, or None when it projects ALL of them."""
        if index.projection.type == "ALL":
            return None
        keys = (*self.index_key_attributes(None), *self.index_key_attributes(index))
        return frozenset(k for k in keys if k is not None) | frozenset(index.projection.attributes)


def _name(key: KeyAttribute | None) -> str | None:
    return key.name if key is not None else None
