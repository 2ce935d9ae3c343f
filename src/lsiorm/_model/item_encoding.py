"""Entities to items: the python-valued item, the wire item and its size, timestamps on a put."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, TypeVar

from lsiorm._model.entity_meta import EntityModel, meta_of
from lsiorm._model.generated_encoder import generate_encoder
from lsiorm._model.item_writer import ItemWriter
from lsiorm._model.offloaded_ref import OffloadedRef, reference_of
from lsiorm._model.shards import check_shard
from lsiorm._model.wire import (
    MAX_ITEM_BYTES,
    AttributeValue,
    TextError,
    invalid_text,
    to_wire_sized,
    utf8_len,
    value_size,
)
from lsiorm._model.write_checks import check_valid, too_large

M = TypeVar("M", bound=EntityModel)


def stamped(entity: M, now: datetime | None = None) -> M:
    """Return the entity with its declared timestamps set for a put at ``now``.

    ``updated_at`` becomes now; ``created_at`` becomes now unless the entity has one (it was
    read from the table, or the caller set it).
    """
    meta = meta_of(entity)
    if meta.created_field is None and meta.updated_field is None:
        return entity
    moment = now or datetime.now(timezone.utc)
    changes: dict[str, Any] = {}
    if meta.updated_field is not None:
        changes[meta.updated_field] = meta.validate_field(meta.updated_field, moment)
    if meta.created_field is not None and getattr(entity, meta.created_field) is None:
        changes[meta.created_field] = meta.validate_field(meta.created_field, moment)
    return entity.model_copy(update=changes)


def build_item(entity: EntityModel) -> dict[str, Any]:
    """Return an entity as a python-valued item with derived keys and its type name."""
    meta = meta_of(entity)
    check_valid(meta, entity)
    values = {name: getattr(entity, name) for name in type(entity).model_fields}
    for name in meta.shard_fields:
        check_shard(meta, name, values.get(name))
    keys = meta.key(values)
    keys.update(meta.index_keys(values))  # key checks run before serialising the fields
    # None is absence: a field that holds None is not stored at all, as an update that sets
    # it to None REMOVEs it, so conditions and ADD see the same item either way; so is a None
    # in a field of a nested model, at any depth (see `absence`).
    item = entity.model_dump(mode="python", by_alias=True, exclude_none=True)
    item.update(keys)
    if meta.type_attribute is not None:
        item[meta.type_attribute] = meta.type_name
    return item


def wire_item(entity: EntityModel) -> dict[str, Any]:
    """Return an entity in wire format, refusing items over DynamoDB's 400 KB limit."""
    return encode_entity(entity)[0]


def encode_entity(entity: EntityModel) -> tuple[dict[str, AttributeValue], int]:
    """Return an entity's wire item and its size in bytes, built in one pass.

    The result equals ``item_to_wire(build_item(entity))`` and its ``item_size``: key checks
    run first, then every field is converted and sized once. Items over DynamoDB's 400 KB limit
    are refused, and so is text UTF-8 cannot encode (``item.invalid-unicode``, naming its path).
    """
    try:
        return _encode(entity)
    except TextError as error:
        meta = meta_of(entity)
        stored = entity.model_dump(mode="python", by_alias=True, exclude_none=True)
        raise invalid_text(type(entity).__name__, stored, error, table=meta.table.name) from error


def _encode(entity: EntityModel) -> tuple[dict[str, AttributeValue], int]:
    cls = type(entity)
    writer = WRITERS.get(cls)
    if writer is None:
        writer = ItemWriter(meta_of(cls))
        if cls.__pydantic_complete__:
            writer.fast = generate_encoder(writer)
            WRITERS[cls] = writer
    if writer.fast is not None:
        done = writer.fast(entity)
        if done is not None:
            return done
    meta = writer.meta
    check_valid(meta, entity)
    values = entity.__dict__
    for name in writer.shards:
        check_shard(meta, name, values.get(name))
    keys = writer.keys(values)  # key checks run before the fields are converted
    item: dict[str, AttributeValue] = {}
    size = 0
    if writer.fields is not None:
        for name, attr, attr_size in writer.fields:
            value = values[name]
            if type(value) is str:  # most values: inlined
                item[attr] = {"S": value}
                size += attr_size + (len(value) if value.isascii() else utf8_len(value))
                continue
            if value is None:
                continue  # None is absence (see build_item)
            av, n = _sized(value)
            item[attr] = av
            size += attr_size + n
    else:
        for attr, value in entity.model_dump(
            mode="python", by_alias=True, exclude_none=True
        ).items():
            av, n = _sized(value)
            item[attr] = av
            size += utf8_len(attr) + n
    # Keys and the type attribute replace a field of the same stored name, if there is one
    # (only possible when a field's serialization alias names one).
    if writer.type_attribute is not None:
        keys[writer.type_attribute] = meta.type_name
    may_collide = writer.fields is None or writer.collide
    for attr, value in keys.items():
        if may_collide:
            replaced = item.get(attr)
            if replaced is not None:
                size -= utf8_len(attr) + value_size(replaced)
        if type(value) is str:
            item[attr] = {"S": value}
            n = len(value) if value.isascii() else utf8_len(value)
        else:
            av, n = to_wire_sized(value)
            item[attr] = av
        size += (len(attr) if attr.isascii() else utf8_len(attr)) + n
    if size > MAX_ITEM_BYTES and not meta.protected:
        # Protected values are counted as stored once sealed (lsiorm._ops.protection).
        too_large(meta, size)
    return item, size


def _sized(value: Any) -> tuple[AttributeValue, int]:
    """A field's AttributeValue and size; an unloaded lazy value is its stored reference."""
    if type(value) is OffloadedRef:
        return reference_of(value), len(value.stored)
    return to_wire_sized(value)


#: One writer per entity class, built on first use once the class is complete.
WRITERS: dict[type, ItemWriter] = {}
