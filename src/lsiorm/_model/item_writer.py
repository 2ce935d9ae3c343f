"""ItemWriter: what encoding an entity class's items needs of the class, worked out once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lsiorm._model.entity_meta import EntityMeta, EntityModel, checked_key
from lsiorm._model.field_types import plain_model
from lsiorm._model.template import slot_codec
from lsiorm._model.wire import AttributeValue, utf8_len


class ItemWriter:
    """What encoding an item needs of one entity class, worked out once."""

    __slots__ = ("collide", "fast", "fields", "meta", "shards", "text_keys", "type_attribute")

    def __init__(self, meta: EntityMeta[EntityModel]) -> None:
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
        #: The attribute the type name is stored in, or None for items that carry none.
        self.type_attribute = meta.type_attribute
        #: Whether a field is stored under the name of a key or of the type attribute.
        #: (Or under a multi-attribute key's name, as its key text: the key replaces it.)
        coded = {meta.attributes[name] for name in meta.stored_codecs}
        self.collide = self.fields is not None and bool(
            {attr for _, attr, _ in self.fields}
            & {*meta.templates, meta.table.type_attribute, *coded}
        )
        primary = {k for k in meta.table.index_key_attributes(None) if k is not None}
        # Text templates, in the order meta.key then meta.index_keys render them: (attribute,
        # literal-or-(field, encode) parts, primary?). Number and binary keys, and fields stored
        # as keys, take meta's way.
        ordered = [meta.partition_template, meta.sort_template]
        ordered += [t for a, t in meta.templates.items() if a not in primary]
        self.text_keys: tuple[tuple[str, tuple[Any, ...], bool], ...] | None = None
        # Fields stored as multi-attribute index keys are checked as keys by meta.index_keys.
        if not meta.stored_keys and all(t is None or not t.is_direct for t in ordered):
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
        #: The class's own straight-line encoder, or None; set by whoever builds the writer
        #: (see `generate_encoder`).
        self.fast: Callable[[EntityModel], tuple[dict[str, AttributeValue], int] | None] | None = (
            None
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
