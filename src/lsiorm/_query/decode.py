"""Decoding result rows into entities, complete or partial (see `missing_fields`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, cast

from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.item_decoding import item_decoder
from lsiorm._model.item_types import named_type
from lsiorm._model.number_fit import check_values
from lsiorm._model.stored_item import invalid_stored_item
from lsiorm._model.wire import from_wire
from lsiorm._query.plan import QueryPlan
from lsiorm.errors import KeyEncodingError, ValidationError

#: Key of the set of missing fields in a partial model's ``__dict__`` (see `missing_fields`).
MISSING_KEY: Final = "__lsiorm_missing__"


def missing_fields(entity: Entity) -> frozenset[str]:
    """Return the fields a partial result does not carry (empty for a complete entity).

    Reading a missing field raises AttributeError; lsiorm never fills one with a default.
    """
    missing = entity.__dict__.get(MISSING_KEY)
    return missing if isinstance(missing, frozenset) else frozenset()


log = logging.getLogger("lsiorm.query")


def decode(plan: QueryPlan, item: dict[str, Any], classes: Sequence[type[Entity]]) -> Entity | None:
    """Return one returned item as its entity (partial when fields are missing), or None.

    The type attribute names the class when the item has it; otherwise (KEYS_ONLY and INCLUDE
    indexes, and entities whose items carry no type attribute) the item's key attributes are
    matched against each class's templates. Items of another type are dropped.
    """
    table = plan.table
    type_av = item.get(table.type_attribute)
    if type_av is not None:
        # An entity whose items carry no type attribute does not own an item that names it,
        # whole or not (what decode_stored gives).
        found = named_type(table, type_av)
        if found is None or found not in classes:
            return None
        known = cast("type[Entity]", found)
        if plan.selected is None and not plan.unavailable:
            # A whole item of a known type: its stored fields already hold every value, so the
            # class's decoder reads them directly instead of parsing key strings back.
            stored = _WHOLE.get(known)
            if stored is None:
                stored = _WHOLE[known] = frozenset(meta_of(known).attributes.values())
            if item.keys() >= stored:
                return item_decoder(known)(item)
        candidates: Sequence[type[Entity]] = (known,)
    else:
        candidates = classes
    for cls in candidates:
        meta = meta_of(cls)
        values = _values(meta, item, plan.key_attributes, strict=type_av is None)
        if values is None:
            continue
        # lsiorm writes the type attribute into every item of a typed entity, so such an item
        # fetched from the table without it was not fetched at all (moto does not fetch on
        # LSIs): never default its fields.
        unfetched = type_av is None and meta.typed and bool(plan.fetched)
        if unfetched:
            _warn_unfetched(plan)
        return _build(plan, meta, item, values, unfetched=unfetched)
    return None


#: Per entity class, the attribute names of its stored fields (worked out once).
_WHOLE: dict[type[Entity], frozenset[str]] = {}

_UNFETCHED_SEEN: set[tuple[str, str | None]] = set()


def _warn_unfetched(plan: QueryPlan) -> None:
    """Log once per table and index that the engine did not fetch non-projected attributes."""
    where = (plan.table.name, plan.index.name if plan.index is not None else None)
    if where in _UNFETCHED_SEEN:
        return
    _UNFETCHED_SEEN.add(where)
    log.warning(
        "Query of %s on index %s: the engine returned items without the non-projected "
        "attributes %s that DynamoDB fetches from the table (moto does not fetch on LSI "
        "queries); those fields are missing from the results (see missing_fields()).",
        where[0],
        where[1],
        ", ".join(plan.fetched),
    )


def _values(
    meta: EntityMeta[Entity], item: dict[str, Any], keys: Sequence[str], *, strict: bool
) -> dict[str, Any] | None:
    """Return field values from the item's attributes and parsed key text.

    ``strict`` (no type attribute to go by) requires every key attribute of the item to parse
    with this class's template; otherwise the item belongs to another class.
    """
    values: dict[str, Any] = {}
    for name, attr in meta.attributes.items():
        av = item.get(attr)
        if av is not None:
            values[name] = from_wire(av)
    meta.read_coded(values, by_attribute=False)
    for attr in keys:
        av = item.get(attr)
        if av is None:
            continue
        tpl = meta.templates.get(attr)
        if tpl is None:
            if strict and attr not in meta.stored_keys:  # a stored key is a field, read above
                return None
            continue
        try:
            parsed = tpl.parse(from_wire(av))
        except KeyEncodingError:
            if strict:
                return None
            continue
        for name, value in parsed.items():
            if name in tpl.recoverable:  # others come from the item's attributes only
                values.setdefault(name, value)
    return values


def _build(
    plan: QueryPlan,
    meta: EntityMeta[Entity],
    item: dict[str, Any],
    values: dict[str, Any],
    *,
    unfetched: bool = False,
) -> Entity:
    """Return the entity, partial when the read selected fields, could not return some (a GSI
    in partial mode) or the engine did not fetch them (``unfetched``).

    Values the model refuses raise ValidationError (``item.invalid``) naming the ``item``.
    """
    cls = meta.cls
    partial = (
        unfetched
        or plan.selected is not None
        or (bool(plan.unavailable) and plan.missing_mode == "partial")
    )
    if not partial:
        check_values(meta.number_checks, values)  # pydantic would round a float silently
        meta.fill_absent(values)  # None is stored as absence
        try:
            entity: Entity = cls.model_validate(values)
        except PydanticValidationError as error:
            raise invalid_stored_item(cls, item, error) from error
        return entity
    wanted = plan.selected if plan.selected is not None else tuple(cls.model_fields)
    present = {}
    meta.fill_nested(values)
    for name in wanted:
        if name in values:
            try:
                present[name] = meta.validate_field(name, values[name])
            except ValidationError as error:
                cause = error.__cause__
                if not isinstance(cause, PydanticValidationError):
                    raise  # a number the field cannot hold exactly, say: its own error
                raise invalid_stored_item(cls, item, cause, field=name) from cause
    if not unfetched:
        # None is stored as absence: a field the read asked for and could return, but did not
        # get, is None. A field the index does not project (GSI) stays missing.
        for name in wanted:
            if name not in present and name in meta.nullable and name not in plan.unavailable:
                present[name] = None
    made = cls.model_construct(_fields_set=set(present), **present)
    # model_construct fills defaults; a field that was not read must not look present.
    for name in cls.model_fields:
        if name not in present:
            made.__dict__.pop(name, None)
    made.__dict__[MISSING_KEY] = frozenset(cls.model_fields) - frozenset(present)
    return made
