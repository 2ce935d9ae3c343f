"""Key attributes, projections and secondary indexes: the parts a table is declared with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

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


@dataclass(frozen=True)
class GlobalIndex:
    """A global secondary index: its own partition key and, optionally, sort key.

    Args:
        name: The index name (3 to 255 characters of ``A-Za-z0-9_.-``).
        partition_key: The index partition key attribute.
        sort_key: The index sort key attribute, or None for a partition-key-only index.
        projection: The attributes copied into the index (``Projection.all()`` by default).
        read_capacity: Read capacity units, required only on a ``PROVISIONED`` table.
        write_capacity: Write capacity units, required only on a ``PROVISIONED`` table.
    """

    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None = None
    projection: Projection = Projection()
    read_capacity: int | None = None
    write_capacity: int | None = None


SecondaryIndex: TypeAlias = "LocalIndex | GlobalIndex"


def kind_of(index: SecondaryIndex) -> str:
    """Return "local" or "global", as messages name the kind of an index."""
    return "local" if isinstance(index, LocalIndex) else "global"
