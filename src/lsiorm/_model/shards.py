"""Write shards: the Shard marker, a field's shard, an item's shard value and its range check."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsiorm._model.wire import item_to_wire, json_default
from lsiorm.errors import DeclarationError, KeyEncodingError

if TYPE_CHECKING:
    from lsiorm._model.entity_meta import EntityMeta, EntityModel


@dataclass(frozen=True)
class Shard:
    """Marks an int field as a write shard in 1..count: ``Annotated[int, Shard(10)]``.

    Put the field in a GSI partition template (``"STATUS#{status}#{shard:02d}"``); a query on
    that GSI then reads every shard and merges them in sort-key order. The value is derived from
    the item's primary key (a stable CRC-32), or drawn at random when ``random`` is True.
    """

    count: int
    random: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise DeclarationError(
                "shard.count",
                f"Shard(count) needs a whole number of at least 1, got {self.count!r}.",
            )


def shard_of(meta: EntityMeta[EntityModel], name: str) -> Shard | None:
    """Return the Shard marker of a field, or None if it is not a shard."""
    info = meta.cls.model_fields.get(name)
    if info is None:
        return None
    return next((m for m in info.metadata if isinstance(m, Shard)), None)


def shard_fields(meta: EntityMeta[EntityModel]) -> tuple[str, ...]:
    """Return the fields declared as write shards, in field order."""
    return tuple(n for n in meta.cls.model_fields if shard_of(meta, n) is not None)


def shard_for(meta: EntityMeta[EntityModel], field_name: str, values: Mapping[str, Any]) -> int:
    """Return the shard (1..count) of an item of ``meta``'s class with these field values.

    Deterministic shards hash the item's primary key with CRC-32, so the same item always lands
    on the same shard in every process; random shards ignore ``values``.
    """
    shard = shard_of(meta, field_name)
    name = meta.cls.__name__
    if shard is None:
        raise DeclarationError(
            "shard.not-a-shard",
            f"{name}.{field_name} is not declared with Shard(...), so it has no shard value.",
        )
    if field_name in meta.primary_fields:
        raise DeclarationError(
            "shard.in-primary-key",
            f"{name}.{field_name} is a shard but also part of the primary key; a shard is "
            "derived from the primary key, so it cannot be part of it.",
        )
    if shard.random:
        return random.randint(1, shard.count)
    key = item_to_wire(meta.key({k: meta.validate_field(k, v) for k, v in values.items()}))
    text = json.dumps(key, sort_keys=True, default=json_default, ensure_ascii=True)
    return zlib.crc32(text.encode("ascii")) % shard.count + 1


def check_shard(meta: EntityMeta[EntityModel], name: str, value: Any) -> None:
    """Refuse a shard value outside 1..count (``shard.range``); None and other types pass."""
    shard = shard_of(meta, name)
    assert shard is not None
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return  # None leaves the sparse key out; a wrong type is caught by the key check
    if not 1 <= value <= shard.count:
        raise KeyEncodingError(
            "shard.range",
            f"{meta.cls.__name__}.{name} is {value}, outside its shards 1..{shard.count}; a "
            "query on the sharded index would never find the item. Leave it out (None) to "
            "have it derived from the primary key.",
            table=meta.table.name,
        )
