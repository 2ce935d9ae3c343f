"""Entities to items: the python-valued item, the wire item and its size, timestamps on a put."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.field_types import plain_model
from lsiorm._model.generated_encoder import generate_encoder
from lsiorm._model.shards import check_shard
from lsiorm._model.template import slot_codec
from lsiorm._model.wire import (
    MAX_ITEM_BYTES,
    AttributeValue,
    to_wire_sized,
    utf8_len,
    value_size,
)
from lsiorm._model.write_checks import check_valid, checked_key, too_large

if TYPE_CHECKING:
    from lsiorm._model.entity import Entity


def stamped(entity: Entity, now: datetime | None = None) -> Entity:
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


def build_item(entity: Entity) -> dict[str, Any]:
    """Return an entity as a python-valued item with derived keys and its type name."""
    meta = meta_of(entity)
    check_valid(meta, entity)
    values = {name: getattr(entity, name) for name in type(entity).model_fields}
    for name in meta.shard_fields:
        check_shard(meta, name, values.get(name))
    keys = meta.key(values)
    keys.update(meta.index_keys(values))  # key checks run before serialising the fields
    # None is absence: a field that holds None is not stored at all, as an update that sets
    # it to None REMOVEs it, so conditions and ADD see the same item either way.
    item = {
        k: v for k, v in entity.model_dump(mode="python", by_alias=True).items() if v is not None
    }
    item.update(keys)
    item[meta.table.type_attribute] = meta.type_name
    return item


def wire_item(entity: Entity) -> dict[str, Any]:
    """Return an entity in wire format, refusing items over DynamoDB's 400 KB limit."""
    return encode_entity(entity)[0]


def encode_entity(entity: Entity) -> tuple[dict[str, AttributeValue], int]:
    """Return an entity's wire item and its size in bytes, built in one pass.

    The result equals ``item_to_wire(build_item(entity))`` and its ``item_size``: key checks
    run first, then every field is converted and sized once. Items over DynamoDB's 400 KB limit
    are refused.
    """
    cls = type(entity)
    writer = WRITERS.get(cls)
    if writer is None:
        writer = ItemWriter(meta_of(cls))
        if cls.__pydantic_complete__:
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
            av, n = to_wire_sized(value)
            item[attr] = av
            size += attr_size + n
    else:
        for attr, value in entity.model_dump(mode="python", by_alias=True).items():
            if value is None:
                continue
            av, n = to_wire_sized(value)
            item[attr] = av
            size += utf8_len(attr) + n
    # Keys and the type attribute replace a field of the same stored name, if there is one
    # (only possible when a field's serialization alias names one).
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
    if size > MAX_ITEM_BYTES:
        too_large(meta, size)
    return item, size


class ItemWriter:
    """What :func:`encode_entity` needs of one entity class, worked out once."""

    __slots__ = ("collide", "fast", "fields", "meta", "shards", "text_keys", "type_attribute")

    def __init__(self, meta: EntityMeta) -> None:
        self.meta = meta
        cls = meta.cls
        #: (field, stored attribute, its UTF-8 size) when reading the fields as they are stored
        #: on the instance gives what ``model_dump`` would; None when only model_dump will do.
        self.fields: tuple[tuple[str, str, int], ...] | None = (
            tuple(
                (name, attr, utf8_len(attr))
                for name, info in cls.model_fields.items()
                for attr in (info.serialization_alias or info.alias or name,)
            )
            if plain_model(cls)
            else None
        )
        self.shards = meta.shard_fields
        self.type_attribute = meta.table.type_attribute
        #: Whether a field is stored under the name of a key or of the type attribute.
        self.collide = self.fields is not None and bool(
            {attr for _, attr, _ in self.fields} & {*meta.templates, self.type_attribute}
        )
        primary = {meta.table.partition_key.name}
        if meta.table.sort_key is not None:
            primary.add(meta.table.sort_key.name)
        # Text templates, in the order meta.key then meta.index_keys render them: (attribute,
        # literal-or-(field, encode) parts, primary?). Number and binary keys take meta's way.
        ordered = [meta.partition_template, meta.sort_template]
        ordered += [t for a, t in meta.templates.items() if a not in primary]
        self.text_keys: tuple[tuple[str, tuple[Any, ...], bool], ...] | None = None
        if all(t is None or not t.is_direct for t in ordered):
            self.text_keys = tuple(
                (
                    t.attribute,
                    tuple(
                        seg if isinstance(seg, str) else (seg.field, slot_codec(seg).encode)
                        for seg in t.segments
                    ),
                    t.attribute in primary,
                )
                for t in ordered
                if t is not None
            )
        #: The class's own straight-line encoder (see :func:`generate_encoder`), or None.
        self.fast: Callable[[Entity], tuple[dict[str, AttributeValue], int] | None] | None = (
            generate_encoder(self) if cls.__pydantic_complete__ else None
        )

    def keys(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return the key attributes ``meta.key`` and ``meta.index_keys`` would, checked alike."""
        meta = self.meta
        if self.text_keys is None:
            keys = meta.key(values)
            keys.update(meta.index_keys(values))
            return keys
        out: dict[str, Any] = {}
        for attr, parts, primary in self.text_keys:
            texts = []
            for part in parts:
                if type(part) is str:
                    texts.append(part)
                    continue
                value = values.get(part[0])
                if value is None:
                    break
                texts.append(part[1](value))
            else:
                text = "".join(texts)
                # Text of at most 256 characters is at most 1,024 UTF-8 bytes, within every key
                # limit; anything else gets the full check (key.empty, the byte limits).
                if not text or len(text) > 256:
                    checked_key(meta, meta.templates[attr], text)
                out[attr] = text
                continue
            if primary:
                return meta.key(values)  # raises key.missing-field, as meta.key does
        return out


#: One writer per entity class, built on first use once the class is complete.
WRITERS: dict[type, ItemWriter] = {}
