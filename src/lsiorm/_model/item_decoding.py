"""Wire items to models: each entity class's item decoder, built on first use and kept."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.absence import Fill
from lsiorm._model.entity_meta import EntityModel, meta_of
from lsiorm._model.generated_decoder import generate_decoder, model_keys
from lsiorm._model.number_fit import check_values, field_checks
from lsiorm._model.stored_item import invalid_stored_item
from lsiorm._model.template import KeyTemplate
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import KeyEncodingError

M = TypeVar("M", bound=EntityModel)


def item_decoder(cls: type[M]) -> Callable[[Mapping[str, Any]], M]:
    """Return the function that turns a wire item into a ``cls`` instance.

    Only the attributes the model reads are decoded; a malformed attribute it ignores raises
    nothing. The decoder is kept once the class is complete.
    """
    decode = _ITEM_DECODERS.get(cls)
    if decode is None:
        decode = _item_decoder(cls)
        if cls.__pydantic_complete__:
            _ITEM_DECODERS[cls] = decode
    return decode


# One decoder per entity class, built on first use and kept for the life of the process, as
# entity classes normally are: a weak mapping would cost more per item than the decode saves.
_ITEM_DECODERS: dict[type, Callable[[Mapping[str, Any]], Any]] = {}


def _absent_is_none(cls: type[EntityModel]) -> tuple[str, ...]:
    """Stored names of fields that allow None and have no None default: absent reads as None.

    None is stored as absence (see `build_item`), so a field declared ``x: T | None``
    must read back as None when its attribute is missing: without a default, and also with a
    default other than None (``x: T | None = "new"`` written as None is absent, not "new").
    """
    fields = cls.model_fields
    return tuple(fields[name].alias or name for name in meta_of(cls).absent_is_none)


def _nested_fills(cls: type[EntityModel]) -> tuple[tuple[str, Fill], ...]:
    """The fills of fields holding records, under each key the field may be stored as: None
    inside them is stored as absence too (see `absence`)."""
    fields = cls.model_fields
    return tuple(
        (key, fill)
        for name, fill in meta_of(cls).nested_absence
        for key in dict.fromkeys((name, fields[name].alias or name))
    )


def _item_decoder(cls: type[M]) -> Callable[[Mapping[str, Any]], M]:
    """Build the function that turns a wire item into a ``cls`` instance.

    The result always equals ``cls.model_validate(item_from_wire(item))`` restricted to the
    attributes the model reads, once each number is checked to fit its field exactly
    (`number_fit`); attributes it ignores (keys, the type attribute, index keys) are not
    decoded. Where the model may read more than its fields, the whole item is decoded.
    A field kept only in keys and missing from the item is first parsed from its key.
    """
    meta = meta_of(cls)
    # A field stored as its own key text is read through its codec, by the general path.
    keys = model_keys(cls) if cls.__pydantic_complete__ and not meta.coded_fields else None
    absent = _absent_is_none(cls)
    fills = _nested_fills(cls)
    numbers = field_checks(cls)
    sources = _key_sources(cls)

    def validate(wire: Mapping[str, Any]) -> M:
        item = meta.read_coded(item_from_wire(wire), by_attribute=True)
        for attr, tpl, stored in sources:
            _fill_from_key(item, attr, tpl, stored)
        check_values(numbers, item)  # pydantic would round a float silently
        for name in absent:
            item.setdefault(name, None)
        for name, fill in fills:
            if name in item:
                item[name] = fill(item[name])
        try:
            return cls.model_validate(item)
        except PydanticValidationError as error:
            raise invalid_stored_item(cls, wire, error) from error

    if keys is None:
        return validate
    decode = generate_decoder(cls, keys, absent, numbers, fills)
    if not sources:
        return decode
    needed = tuple({name for _, _, stored in sources for name in stored.values()})

    def decode_or_fill(wire: Mapping[str, Any]) -> M:
        for name in needed:
            if name not in wire:
                return validate(wire)  # a value only its key holds
        return decode(wire)

    return decode_or_fill


KeySource = tuple[str, KeyTemplate, dict[str, str]]


def _key_sources(cls: type[EntityModel]) -> tuple[KeySource, ...]:
    """Key attributes that give back fields kept only in keys: (attribute, template, names).

    Items another tool wrote may hold a value only in a key (``USER#42`` and no ``user_id``);
    a field declared so (``Field(exclude=True)``, see `EntityMeta.key_only_fields`) is parsed
    from the key text, which the declaration checked gives it back alone.
    """
    meta = meta_of(cls)
    names = meta.attributes
    sources = []
    for attr, tpl in meta.templates.items():
        fields = sorted(tpl.recoverable & meta.key_only_fields)
        if fields and not tpl.is_direct:
            sources.append((attr, tpl, {f: names[f] for f in fields}))
    return tuple(sources)


def _fill_from_key(
    item: dict[str, Any], attr: str, tpl: KeyTemplate, stored: dict[str, str]
) -> None:
    """Fill the item's missing field attributes from key ``attr``'s text (attributes win)."""
    if attr not in item or all(name in item for name in stored.values()):
        return
    try:
        parsed = tpl.parse(item[attr])
    except KeyEncodingError:
        return  # the key does not match: validation then names the missing field
    for field, name in stored.items():
        item.setdefault(name, parsed[field])
