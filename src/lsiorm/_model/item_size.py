"""An item's size as DynamoDB counts it, worked out from an entity without sending it; and the
largest item an entity's declared bounds allow (`lsiorm check` warns when it nears 400 KB).

A protected field is counted as it will be stored (`lsiorm._model.sealing`): compressed when
declared (compression is deterministic, so its size is exact), plus the header and the
encryption overhead (exact once the session holding the keyring has a data key, else with AWS
KMS's sizes), or the 46-byte reference of a value offloaded to S3. A stored item read back
carries its envelopes (the opened values remember them), so its size is exact too.
"""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Iterator, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from pydantic import BaseModel

from lsiorm._model.beacons import BeaconKeys, beacon_keys, beacon_scope
from lsiorm._model.entity_meta import EntityModel, meta_of
from lsiorm._model.field_protection import FieldProtection
from lsiorm._model.field_types import bare_type
from lsiorm._model.item_encoding import encode_entity
from lsiorm._model.protection import table_protection
from lsiorm._model.schema import Table
from lsiorm._model.sealing import REFERENCE_BYTES, compress, encryption_overhead, payload_of
from lsiorm._model.wire import MAX_ITEM_BYTES, WireItem, item_size, utf8_len

if TYPE_CHECKING:
    from lsiorm._model.entity import Entity

__all__ = [
    "entity_size_bound",
    "field_size_bounds",
    "size_warnings",
    "sizing_beacons",
    "stored_item",
    "stored_size",
]

#: The bytes encryption adds to a value with AWS KMS's sizes: an ARN of 75 bytes and the
#: 184-byte wrapped AES-256 data key of a symmetric KMS key.
ASSUMED_OVERHEAD: Final = encryption_overhead("k" * 75, 184)
_HEADER: Final = 6
#: The share of 400 KB past which `lsiorm check` warns.
WARN_AT: Final = 0.75


class _SizingKeys:
    """Beacon text of the right length (a beacon's size does not depend on its key)."""

    def beacon(self, label: str, payload: bytes, bits: int) -> str:
        return "0" * (bits // 4)


def _overhead(table: str) -> int:
    keys = beacon_keys()
    overhead = getattr(keys, "overhead", None)
    return int(overhead(table)) if callable(overhead) else ASSUMED_OVERHEAD


def stored_value_size(spec: FieldProtection, av: Mapping[str, Any], table: str) -> int:
    """The stored bytes of one plain value of a protected attribute."""
    stored = getattr(av, "stored", None)  # read from the table: its envelope as stored
    if isinstance(stored, Mapping):
        return len(stored["B"])
    payload = payload_of(av)
    body = payload
    if spec.compression is not None:
        body = compress(payload, spec.compression, spec.level)[1]
    size = len(body) + (_overhead(table) if spec.encrypted else _HEADER)
    threshold = spec.offload_threshold
    if threshold is not None and size > threshold and size > REFERENCE_BYTES:
        return REFERENCE_BYTES
    return size


def stored_item(table: Table, item: Mapping[str, Any]) -> WireItem:
    """A wire item with each protected attribute replaced by bytes of its stored size (an item
    of the same size as the one DynamoDB will hold); other items as they are."""
    specs = table_protection(table)
    if not specs or not any(name in specs for name in item):
        return dict(item)
    out: WireItem = {}
    for name, av in item.items():
        spec = specs.get(name)
        out[name] = av if spec is None else {"B": bytes(stored_value_size(spec, av, table.name))}
    return out


def sizing_beacons() -> contextlib.AbstractContextManager[None]:
    """The beacon keys in force, or beacon text of the right length where none is: an item's
    size does not depend on the beacon key."""
    active = beacon_keys()
    keys: BeaconKeys = active if active is not None else _SizingKeys()
    return beacon_scope(keys)


def stored_size(entity: Entity) -> int:
    """The size in bytes DynamoDB will count for this entity's item, without sending it.

    Protected fields count as stored: compressed, encrypted (with the data key the session's
    keyring uses, inside a call of it; else AWS KMS's sizes), or as the reference of a value
    kept in S3. Beacons in keys count their hex text; no keyring is needed.
    """
    meta = meta_of(entity)
    with sizing_beacons():
        item, size = encode_entity(entity)
        if not meta.protected:
            return size
        return item_size(stored_item(meta.table, item))


# -- declared bounds -----------------------------------------------------------------------------

_NUMBER: Final = 21  # a number of 38 digits, as DynamoDB counts it
_FIXED: Final[dict[Any, int]] = {
    bool: 1,
    int: _NUMBER,
    float: _NUMBER,
    Decimal: _NUMBER,
    datetime: 32,
    date: 10,
    time: 15,
    UUID: 36,
}


def _max_length(metadata: Any) -> int | None:
    for item in metadata:
        found = getattr(item, "max_length", None)
        if isinstance(found, int):
            return found
    return None


def _bound(annotation: Any, metadata: Any = ()) -> int | None:
    """The most bytes a value of this type can take as DynamoDB counts it (None: no bound)."""
    longest = _max_length(metadata)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *more = typing.get_args(annotation)
        return _bound(inner, [*metadata, *more])
    base = bare_type(annotation)
    if base is not annotation:
        return _bound(base, metadata)
    if base in _FIXED:
        return _FIXED[base]
    if isinstance(base, type) and issubclass(base, Enum):
        return max((utf8_len(str(m.value)) for m in base), default=0) or _NUMBER
    if origin is typing.Literal:
        return max((utf8_len(str(v)) for v in typing.get_args(base)), default=0)
    if base is str:
        return None if longest is None else 4 * longest  # 4 UTF-8 bytes a character at most
    if base is bytes:
        return longest
    if origin in (list, set, frozenset, tuple) and longest is not None:
        args = [a for a in typing.get_args(base) if a is not Ellipsis]
        element = _bound(args[0]) if args else None
        return None if element is None else 3 + longest * (element + 1)
    if isinstance(base, type) and issubclass(base, BaseModel):
        total = 3
        for name, info in base.model_fields.items():
            inner = _bound(info.annotation, info.metadata)
            if inner is None:
                return None
            total += utf8_len(info.alias or name) + inner + 1
        return total
    return None


def _payload_bound(annotation: Any, metadata: Any = ()) -> int | None:
    """The most bytes the canonical payload of a value of this type can take (the sorted JSON
    of its AttributeValue, which a protected field seals: quotes, escapes and base64 make it
    larger than the value as DynamoDB counts it, at most about twice, plus its wrapping)."""
    longest = _max_length(metadata)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *more = typing.get_args(annotation)
        return _payload_bound(inner, [*metadata, *more])
    base = bare_type(annotation)
    if base is not annotation:
        return _payload_bound(base, metadata)
    if origin in (list, set, frozenset, tuple):
        args = [a for a in typing.get_args(base) if a is not Ellipsis]
        element = _payload_bound(args[0]) if args else None
        return None if element is None or longest is None else 8 + longest * (element + 1)
    if isinstance(base, type) and issubclass(base, BaseModel):
        total = 8
        for name, info in base.model_fields.items():
            inner = _payload_bound(info.annotation, info.metadata)
            if inner is None:
                return None
            total += 2 * utf8_len(info.alias or name) + 4 + inner
        return total
    plain = _bound(annotation, metadata)
    return None if plain is None else 2 * plain + 16


def _protected_bound(spec: FieldProtection, payload: int | None) -> int | None:
    """The most bytes a protected value takes in the item, from its payload's bound: its
    envelope (compression never makes it larger: a value it does not shrink is kept as it is),
    or for an offloaded field at most its threshold (a larger one is a reference)."""
    envelope = (
        None if payload is None else payload + (ASSUMED_OVERHEAD if spec.encrypted else _HEADER)
    )
    if spec.offload_threshold is not None:
        inline = max(spec.offload_threshold, REFERENCE_BYTES)
        return inline if envelope is None else min(envelope, inline)
    return envelope


def field_size_bounds(cls: type[EntityModel]) -> dict[str, int | None]:
    """Attribute -> the most bytes it can take in the item as stored, name included (None: no
    declared bound), for each field of the entity; protected fields as stored (their envelope,
    or at most their threshold when offloaded)."""
    meta = meta_of(cls)
    out: dict[str, int | None] = {}
    for name, info in cls.model_fields.items():
        attribute = meta.attributes[name]
        spec = meta.protected.get(name)
        if spec is None:
            bound = _bound(info.annotation, info.metadata)
        else:
            bound = _protected_bound(spec, _payload_bound(info.annotation, info.metadata))
        out[attribute] = None if bound is None else utf8_len(attribute) + bound
    return out


def entity_size_bound(cls: type[EntityModel]) -> tuple[int, tuple[str, ...]]:
    """The largest item the entity's declared bounds allow (keys and type attribute counted
    at most as their templates allow), and its attributes with no declared bound."""
    meta = meta_of(cls)
    bounds = field_size_bounds(cls)
    total = sum(b for b in bounds.values() if b is not None)
    unbounded = tuple(a for a, b in bounds.items() if b is None)
    for attribute in meta.templates:
        total += utf8_len(attribute) + (1024 if attribute in _sorts(meta.table) else 2048)
    if meta.type_attribute is not None:
        total += utf8_len(meta.type_attribute) + utf8_len(meta.type_name)
    return total, unbounded


def _sorts(table: Table) -> set[str]:
    names = {lsi.sort_key.name for lsi in table.local_indexes}
    names |= {a.name for g in table.global_indexes for a in g.sort_attributes}
    if table.sort_key is not None:
        names.add(table.sort_key.name)
    return names


def size_warnings(table: Table) -> Iterator[str]:
    """A line for each entity of the table whose declared bounds let an item near 400 KB."""
    for cls in table.entities.values():
        model = typing.cast("type[EntityModel]", cls)
        total, unbounded = entity_size_bound(model)
        if total < WARN_AT * MAX_ITEM_BYTES:
            continue
        others = f"; fields with no bound ({', '.join(unbounded)}) add to it" if unbounded else ""
        yield (
            f"{model.__name__} items can take up to {total} bytes by their declared bounds, "
            f"near DynamoDB's {MAX_ITEM_BYTES}-byte limit{others}: lower a max_length, or "
            "declare a large field Compressed() or Offloaded() (docs/security.md)."
        )
