"""Wire items to entities: decode_item, with each class's decoder built on first use."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lsiorm._model.entity_meta import meta_of
from lsiorm._model.generated_decoder import ItemDecoder, generate_decoder, model_keys
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire

if TYPE_CHECKING:
    from lsiorm._model.entity import Entity


def decode_item(
    table: Table,
    wire: Mapping[str, Mapping[str, Any]],
    only: Iterable[type[Entity]] | None = None,
) -> Entity | None:
    """Return a wire item as the entity its type attribute names.

    Items of a type not in ``only`` (when given) or of no registered type give None. Only the
    attributes the model reads are decoded; a malformed attribute it ignores raises nothing.
    """
    type_av = wire.get(table.type_attribute)
    type_name = type_av.get("S") if type_av is not None else None
    found = table.entities.get(type_name) if type_name is not None else None
    if found is None or (only is not None and found not in tuple(only)):
        return None
    decode = _ITEM_DECODERS.get(found)
    if decode is None:
        cls = typing.cast("type[Entity]", found)
        decode = _item_decoder(cls)
        if cls.__pydantic_complete__:
            _ITEM_DECODERS[cls] = decode
    return decode(wire)


# One decoder per entity class, built on first use and kept for the life of the process, as
# entity classes normally are: a weak mapping would cost more per item than the decode saves.
_ITEM_DECODERS: dict[type, ItemDecoder] = {}


def _absent_is_none(cls: type[Entity]) -> tuple[str, ...]:
    """Stored names of fields that allow None and have no None default: absent reads as None.

    None is stored as absence (see :func:`build_item`), so a field declared ``x: T | None``
    must read back as None when its attribute is missing: without a default, and also with a
    default other than None (``x: T | None = "new"`` written as None is absent, not "new").
    """
    fields = cls.model_fields
    return tuple(fields[name].alias or name for name in meta_of(cls).absent_is_none)


def _item_decoder(cls: type[Entity]) -> ItemDecoder:
    """Build the function that turns a wire item into a ``cls`` instance.

    The result always equals ``cls.model_validate(item_from_wire(item))`` restricted to the
    attributes the model reads; attributes it ignores (keys, the type attribute, index keys)
    are not decoded. Where the model may read more than its fields, the whole item is decoded.
    """
    keys = model_keys(cls) if cls.__pydantic_complete__ else None
    absent = _absent_is_none(cls)
    if keys is not None:
        return generate_decoder(cls, keys, absent)

    def validate(wire: Mapping[str, Any]) -> Entity:
        item = item_from_wire(wire)
        for name in absent:
            item.setdefault(name, None)
        return cls.model_validate(item)

    return validate
