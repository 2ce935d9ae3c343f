"""Key attributes, projections and secondary indexes: the parts a table is declared with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from lsiorm._model.table_settings import OnDemandThroughput, WarmThroughput

KeyType = Literal["S", "N", "B"]
ProjectionType = Literal["KEYS_ONLY", "INCLUDE", "ALL"]
BillingMode = Literal["PAY_PER_REQUEST", "PROVISIONED"]


@dataclass(frozen=True)
class KeyAttribute:
    """An attribute used in a key schema, with its scalar DynamoDB type.

    Args:
        name: The attribute name, as stored in items.
        type: ``"S"`` (string, the default), ``"N"`` (number) or ``"B"`` (binary).
    """

    name: str
    type: KeyType = "S"


@dataclass(frozen=True)
class Projection:
    """Which attributes DynamoDB copies into a secondary index.

    Build one with `keys_only`, `include` or `all` (the default). The choice
    is fixed when the table is created.

    Args:
        type: ``"KEYS_ONLY"``, ``"INCLUDE"`` or ``"ALL"``.
        attributes: The non-key attributes an ``INCLUDE`` projection copies.
    """

    type: ProjectionType = "ALL"
    attributes: tuple[str, ...] = ()

    @classmethod
    def keys_only(cls) -> Projection:
        """Project only the table and index keys."""
        return cls("KEYS_ONLY")

    @classmethod
    def include(cls, *attributes: str) -> Projection:
        """Project the keys plus these non-key attributes (repeats are dropped, order kept)."""
        return cls("INCLUDE", tuple(dict.fromkeys(attributes)))

    @classmethod
    def all(cls) -> Projection:
        """Project every attribute of the item."""
        return cls("ALL")


@dataclass(frozen=True)
class LocalIndex:
    """A local secondary index: the table's partition key with another sort key.

    Local indexes exist only if declared when the table is created (at most five), share the
    table's partition key and its 10 GB item collection limit, and allow consistent reads.

    Args:
        name: The index name (3 to 255 characters of ``A-Za-z0-9_.-``).
        sort_key: The index sort key attribute; items without it are not in the index.
        projection: The attributes copied into the index (``Projection.all()`` by default).
    """

    name: str
    sort_key: KeyAttribute
    projection: Projection = Projection()


#: What a GlobalIndex key takes: one attribute (a str names a string attribute), or a list of
#: one to four of them for a multi-attribute key.
KeyAttributes: TypeAlias = "KeyAttribute | str | Sequence[KeyAttribute | str]"


@dataclass(frozen=True, init=False)
class GlobalIndex:
    """A global secondary index: its own partition key and, optionally, sort key.

    Each key is either one attribute, derived from an entity's key template, or a list of one
    to four attributes (a multi-attribute key). In a multi-attribute index every key attribute
    is stored natively typed and bound to one entity field, and queries need equality on every
    partition attribute and read the sort attributes from left to right.

    Args:
        name: The index name (3 to 255 characters of ``A-Za-z0-9_.-``).
        partition_key: The index partition key attribute, or a list of one to four of them.
        sort_key: The index sort key attribute, a list of one to four of them, or None for a
            partition-key-only index.
        projection: The attributes copied into the index (``Projection.all()`` by default).
        read_capacity: Read capacity units, required only on a ``PROVISIONED`` table.
        write_capacity: Write capacity units, required only on a ``PROVISIONED`` table.
        warm_throughput: The index's pre-warmed read and write units per second (None: not
            managed); see `Table`.
        on_demand_throughput: The index's on-demand maximum throughput, on a
            ``PAY_PER_REQUEST`` table (None: not managed).
    """

    name: str
    partition_key: KeyAttribute | tuple[KeyAttribute, ...]
    sort_key: KeyAttribute | tuple[KeyAttribute, ...] | None
    projection: Projection
    read_capacity: int | None
    write_capacity: int | None
    warm_throughput: WarmThroughput | None
    on_demand_throughput: OnDemandThroughput | None

    def __init__(
        self,
        name: str,
        partition_key: KeyAttributes,
        sort_key: KeyAttributes | None = None,
        projection: Projection = Projection(),
        read_capacity: int | None = None,
        write_capacity: int | None = None,
        *,
        warm_throughput: WarmThroughput | None = None,
        on_demand_throughput: OnDemandThroughput | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "partition_key", _attributes(partition_key))
        set_(self, "sort_key", None if sort_key is None else _attributes(sort_key))
        set_(self, "projection", projection)
        set_(self, "read_capacity", read_capacity)
        set_(self, "write_capacity", write_capacity)
        set_(self, "warm_throughput", warm_throughput)
        set_(self, "on_demand_throughput", on_demand_throughput)

    @property
    def multi_attribute(self) -> bool:
        """Whether a key was given as a list: every key attribute is then bound to a field."""
        return isinstance(self.partition_key, tuple) or isinstance(self.sort_key, tuple)

    @property
    def partition_attributes(self) -> tuple[KeyAttribute, ...]:
        """The partition key attributes, in order."""
        return _as_tuple(self.partition_key)

    @property
    def sort_attributes(self) -> tuple[KeyAttribute, ...]:
        """The sort key attributes, in order (empty for a partition-key-only index)."""
        return _as_tuple(self.sort_key)


def _attributes(key: KeyAttributes) -> KeyAttribute | tuple[KeyAttribute, ...]:
    """One attribute as given, or a list as a tuple; a str names a string attribute."""
    if isinstance(key, str):
        return KeyAttribute(key)
    if isinstance(key, KeyAttribute) or not isinstance(key, Sequence):
        return key  # anything else is refused by the table's declaration rules
    return tuple(KeyAttribute(k) if isinstance(k, str) else k for k in key)


def _as_tuple(key: KeyAttribute | tuple[KeyAttribute, ...] | None) -> tuple[KeyAttribute, ...]:
    if key is None:
        return ()
    return key if isinstance(key, tuple) else (key,)


SecondaryIndex: TypeAlias = "LocalIndex | GlobalIndex"


def kind_of(index: SecondaryIndex) -> str:
    """Return "local" or "global", as messages name the kind of an index."""
    return "local" if isinstance(index, LocalIndex) else "global"
