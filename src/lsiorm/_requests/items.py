"""Single-item request builders (put, get, update, delete): pure functions returning exact API
params, so tests compare dicts.

`moving_put` is a put during a re-keying: the new item and the deletion of its old-form key in
one transaction.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from lsiorm._conditions import (
    Condition,
    Contains,
    Placeholders,
    compile_condition,
    field_conditions,
)
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, instance_meta, key_only_answer, meta_of
from lsiorm._model.field_types import bare_type
from lsiorm._model.item_encoding import stamped, wire_item
from lsiorm._model.protection import check_condition_field
from lsiorm._model.wire import TextError, invalid_text, item_to_wire, to_wire
from lsiorm.errors import ValidationError

E = TypeVar("E", bound=Entity)


def encode_value(meta: EntityMeta[Entity], field: str, value: Any, *, element: bool = False) -> Any:
    """Return a python value for a field as a wire AttributeValue, validated by its type.

    ``element`` skips validation against the field type (for ``contains`` on a collection).
    """
    if element:
        return to_wire(value)
    return to_wire(meta.stored_value(field, meta.validate_field(field, value)))


def compile_entity_condition(
    meta: EntityMeta[Entity], condition: Condition, ph: Placeholders
) -> str:
    """Return expression text for a condition in an entity's field terms (writes and filters).

    Field names become their stored attribute names; values are validated by the field's type
    and encoded, except elements (``contains``) and text compared with a str, Enum or Literal
    field, which goes out as text (a begins_with prefix of a value is no value of the field).
    """
    fields = meta.cls.model_fields
    elements = _element_fields(condition)
    if meta.protected:
        for part in field_conditions(condition):
            check_condition_field(meta, part.field, part.op)

    def attribute_of(name: str) -> str:
        if name not in fields:
            raise ValidationError(
                "condition.unknown-field",
                f"Condition names {name!r}, which is not a field of {meta.cls.__name__} "
                f"(fields: {', '.join(fields)}).",
                table=meta.table.name,
            )
        if name in meta.key_only_fields:
            raise ValidationError(
                "condition.key-only-field",
                f"Condition names {meta.cls.__name__}.{name}, which no attribute holds: "
                f"{key_only_answer(meta, name)}.",
                table=meta.table.name,
            )
        return meta.attributes[name]

    def encode(name: str, value: Any) -> Any:
        try:
            if name not in elements and isinstance(value, str) and _is_text_field(meta, name):
                return to_wire(value)
            return encode_value(meta, name, value, element=name in elements)
        except TextError as error:
            where = f"The condition on {meta.cls.__name__}.{name}"
            raise invalid_text(where, value, error, table=meta.table.name) from error

    return compile_condition(condition, ph, attribute_of=attribute_of, encode=encode)


def _is_text_field(meta: EntityMeta[Entity], name: str) -> bool:
    """Whether the field holds text: str, an Enum, or a Literal of strings (maybe optional)."""
    annotation = bare_type(meta.cls.model_fields[name].annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return all(isinstance(value, str) for value in typing.get_args(annotation))
    return isinstance(annotation, type) and issubclass(annotation, (str, Enum))


def _element_fields(condition: Condition | None) -> set[str]:
    """Fields whose condition values are elements (contains), not whole field values."""
    return {c.field for c in field_conditions(condition) if isinstance(c.op, Contains)}


def join_conditions(*parts: str | None) -> str | None:
    """The conjunction of condition texts (None without any), each part in parentheses once:
    DynamoDB refuses a part in two pairs of them ("redundant parentheses")."""
    present = [p for p in parts if p]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return " AND ".join(p if _enclosed(p) else f"({p})" for p in present)


def _enclosed(text: str) -> bool:
    """Whether condition text is one group in parentheses as a whole, ``(a OR b)`` (its names
    and values are placeholders, so every parenthesis in it is the expression's own)."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for at, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and at < len(text) - 1:
            return False
    return True


def key_values(
    meta: EntityMeta[Entity], key: Mapping[str, Any] | Entity | None, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """Return validated field values that identify one item, from a dict, entity or keywords.

    A key given otherwise (its text, a tuple of values) is refused naming the key fields
    (``key.not-fields``).
    """
    raw: dict[str, Any] = {}
    if isinstance(key, Entity):
        raw.update({f: getattr(key, f) for f in meta.primary_fields})
    elif isinstance(key, Mapping):
        raw.update(key)
    elif key is not None:
        raise _not_fields(meta, key)
    raw.update(fields)
    return {name: meta.validate_field(name, value) for name, value in raw.items()}


def keyed_target(
    target: type[E] | E, key: Mapping[str, Any] | None, fields: Mapping[str, Any]
) -> tuple[type[E], E | None, EntityMeta[E], dict[str, Any]]:
    """What a call that names one item was given: its class, the instance (or None), the
    class's metadata and the validated key field values.

    The item is named by an entity class with its key (``key=`` and/or keywords), or by an
    instance. Anything else is refused before any request, naming what to pass
    (``entity.expected``, ``key.not-fields``).
    """
    if isinstance(target, type):
        cls, instance = target, None
    else:
        cls, instance = type(target), target
    meta = meta_of(target)
    return cls, instance, meta, key_values(meta, instance if instance is not None else key, fields)


def _not_fields(meta: EntityMeta[Entity], key: object) -> ValidationError:
    names = [f for t in (meta.partition_template, meta.sort_template) if t for f in t.fields]
    fields = list(dict.fromkeys(names))
    keywords = ", ".join(f"{f}=..." for f in fields)
    mapping = ", ".join(f"{f!r}: ..." for f in fields)
    return ValidationError(
        "key.not-fields",
        f"Got {key!r} as the key of {meta.cls.__name__}; a key names its key fields: "
        f"{keywords} as keywords, or key={{{mapping}}} (or an instance of "
        f"{meta.cls.__name__}).",
        table=meta.table.name,
    )


def wire_key(meta: EntityMeta[Entity], values: Mapping[str, Any]) -> dict[str, Any]:
    return item_to_wire(meta.key(values))


def put_request(
    entity: Entity,
    *,
    create_only: bool = False,
    condition: Condition | None = None,
    now: datetime | None = None,
) -> tuple[dict[str, Any], Entity]:
    """Return PutItem params and the entity as it will be stored.

    A versioned entity's version goes up by one; declared timestamps are set (at ``now``).
    """
    meta = instance_meta(entity)
    stored = entity = stamped(entity, now)
    ph = Placeholders()
    version_cond: str | None = None
    if meta.version_field is not None:
        current = getattr(entity, meta.version_field) or 0
        stored = entity.model_copy(update={meta.version_field: current + 1})
        if current == 0:
            create_only = True
        else:
            vname = ph.name(meta.attributes[meta.version_field])
            version_cond = f"{vname} = {ph.value(to_wire(current))}"
    params: dict[str, Any] = {"TableName": meta.table.name, "Item": wire_item(stored)}
    exists_cond = (
        f"attribute_not_exists({ph.name(meta.table.partition_key.name)})" if create_only else None
    )
    user_cond = compile_entity_condition(meta, condition, ph) if condition is not None else None
    expr = join_conditions(exists_cond, version_cond, user_cond)
    if expr:
        params["ConditionExpression"] = expr
    return ph.into(params), stored


def moving_put(
    params: Mapping[str, Any], old_key: Mapping[str, Any], *, token: str
) -> dict[str, Any]:
    """TransactWriteItems parameters that send the put ``params`` (a `put_request`'s, without
    a condition) and delete the item at ``old_key`` (wire: the item's key in an older form) in
    one transaction; ``token`` (the ClientRequestToken) makes a resend apply once."""
    return {
        "TransactItems": [
            {"Put": dict(params)},
            {"Delete": {"TableName": params["TableName"], "Key": dict(old_key)}},
        ],
        "ClientRequestToken": token,
    }


def get_request(
    meta: EntityMeta[Entity], values: Mapping[str, Any], *, consistent: bool = False
) -> dict[str, Any]:
    """Return GetItem params for the item with these key field values."""
    params: dict[str, Any] = {"TableName": meta.table.name, "Key": wire_key(meta, values)}
    if consistent:
        params["ConsistentRead"] = True
    return params


def delete_request(
    meta: EntityMeta[Entity],
    values: Mapping[str, Any],
    *,
    condition: Condition | None = None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    """Return DeleteItem params; the old item is returned so the caller gets what was deleted."""
    ph = Placeholders()
    params: dict[str, Any] = {
        "TableName": meta.table.name,
        "Key": wire_key(meta, values),
        "ReturnValues": "ALL_OLD",
    }
    version_cond = None
    if expected_version is not None and meta.version_field is not None:
        vname = ph.name(meta.attributes[meta.version_field])
        version_cond = f"{vname} = {ph.value(to_wire(expected_version))}"
    user_cond = compile_entity_condition(meta, condition, ph) if condition is not None else None
    expr = join_conditions(version_cond, user_cond)
    if expr:
        params["ConditionExpression"] = expr
    return ph.into(params)
