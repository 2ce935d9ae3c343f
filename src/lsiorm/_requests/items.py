"""Single-item request builders (put, get, update, delete): pure functions returning exact API
params, so tests compare dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lsiorm._conditions import (
    Condition,
    Contains,
    Placeholders,
    compile_condition,
    field_conditions,
)
from lsiorm._model.entity import (
    Entity,
    EntityMeta,
    allows_none,
    checked_key,
    meta_of,
    wire_item,
)
from lsiorm._model.wire import item_to_wire, to_wire
from lsiorm.errors import (
    PartialKeyUpdateError,
    ValidationError,
)


def encode_value(meta: EntityMeta, field: str, value: Any, *, element: bool = False) -> Any:
    """Return a python value for a field as a wire AttributeValue, validated by its type.

    ``element`` skips validation against the field type (for ``contains`` on a collection).
    """
    if element:
        return to_wire(value)
    valid = meta.validate_field(field, value)
    dumped = meta.adapter(field).dump_python(valid, mode="python")
    return to_wire(dumped)


def compile_entity_condition(meta: EntityMeta, condition: Condition, ph: Placeholders) -> str:
    """Return expression text for a condition in an entity's field terms (writes and filters).

    Field names become their stored attribute names; values are validated by the field's type
    and encoded, except elements (``contains``) and text compared with a str or Enum field,
    which goes out as text (a begins_with prefix of an enum value is no member of the enum).
    """
    fields = meta.cls.model_fields
    elements = _element_fields(condition)

    def attribute_of(name: str) -> str:
        if name not in fields:
            raise ValidationError(
                "condition.unknown-field",
                f"Condition names {name!r}, which is not a field of {meta.cls.__name__} "
                f"(fields: {', '.join(fields)}).",
                table=meta.table.name,
            )
        return meta.attributes[name]

    def encode(name: str, value: Any) -> Any:
        if name not in elements and isinstance(value, str) and _is_text_field(meta, name):
            return to_wire(value)
        return encode_value(meta, name, value, element=name in elements)

    return compile_condition(condition, ph, attribute_of=attribute_of, encode=encode)


def _is_text_field(meta: EntityMeta, name: str) -> bool:
    annotation = meta.cls.model_fields[name].annotation
    return isinstance(annotation, type) and issubclass(annotation, (str, Enum))


def _element_fields(condition: Condition | None) -> set[str]:
    """Fields whose condition values are elements (contains), not whole field values."""
    return {c.field for c in field_conditions(condition) if isinstance(c.op, Contains)}


def _join(*parts: str | None) -> str | None:
    present = [f"({p})" for p in parts if p]
    if not present:
        return None
    return present[0][1:-1] if len(present) == 1 else " AND ".join(present)


def key_values(
    meta: EntityMeta, key: Mapping[str, Any] | Entity | None, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """Return validated field values that identify one item, from a dict, entity or keywords."""
    raw: dict[str, Any] = {}
    if isinstance(key, Entity):
        raw.update({f: getattr(key, f) for f in meta.primary_fields})
    elif key is not None:
        raw.update(key)
    raw.update(fields)
    return {name: meta.validate_field(name, value) for name, value in raw.items()}


def _wire_key(meta: EntityMeta, values: Mapping[str, Any]) -> dict[str, Any]:
    return item_to_wire(meta.key(values))


def put_request(
    entity: Entity, *, create_only: bool = False, condition: Condition | None = None
) -> tuple[dict[str, Any], Entity]:
    """Return PutItem params and the entity as it will be stored (version bumped if versioned)."""
    meta = meta_of(entity)
    stored = entity
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
    expr = _join(exists_cond, version_cond, user_cond)
    if expr:
        params["ConditionExpression"] = expr
    return ph.into(params), stored


def get_request(
    meta: EntityMeta, values: Mapping[str, Any], *, consistent: bool = False
) -> dict[str, Any]:
    """Return GetItem params for the item with these key field values."""
    params: dict[str, Any] = {"TableName": meta.table.name, "Key": _wire_key(meta, values)}
    if consistent:
        params["ConsistentRead"] = True
    return params


def delete_request(
    meta: EntityMeta,
    values: Mapping[str, Any],
    *,
    condition: Condition | None = None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    """Return DeleteItem params; the old item is returned so the caller gets what was deleted."""
    ph = Placeholders()
    params: dict[str, Any] = {
        "TableName": meta.table.name,
        "Key": _wire_key(meta, values),
        "ReturnValues": "ALL_OLD",
    }
    version_cond = None
    if expected_version is not None and meta.version_field is not None:
        vname = ph.name(meta.attributes[meta.version_field])
        version_cond = f"{vname} = {ph.value(to_wire(expected_version))}"
    user_cond = compile_entity_condition(meta, condition, ph) if condition is not None else None
    expr = _join(version_cond, user_cond)
    if expr:
        params["ConditionExpression"] = expr
    return ph.into(params)


@dataclass(frozen=True)
class UpdateSpec:
    """The typed changes of one update: fields to set, remove, and add to (numbers, sets)."""

    set: Mapping[str, Any]
    remove: tuple[str, ...] = ()
    add: Mapping[str, Any] | None = None


def update_request(
    meta: EntityMeta,
    values: Mapping[str, Any],
    spec: UpdateSpec,
    *,
    condition: Condition | None = None,
    instance: Entity | None = None,
) -> dict[str, Any]:
    """Return UpdateItem params, rewriting every key attribute whose template fields change.

    A template that would be only partly known after the update is refused (it would leave the
    index key stale), unless ``instance`` supplies the unchanged fields: then their current
    stored values are made a condition of the update, so a stale instance cannot corrupt a key.
    """
    cls_name = meta.cls.__name__
    add = dict(spec.add or {})
    sets = {name: meta.validate_field(name, v) for name, v in spec.set.items()}
    removes = set(spec.remove)
    for name in removes | set(add):
        if name not in meta.cls.model_fields:
            meta.validate_field(name, None)  # raises field.unknown
    touched = set(sets) | removes | set(add)
    if not touched:
        raise ValidationError("update.empty", f"Update of {cls_name} changes nothing.")
    moved = touched & meta.primary_fields
    if moved:
        raise ValidationError(
            "update.primary-key-field",
            f"Update of {cls_name} changes {', '.join(sorted(moved))}, part of the primary key; "
            "that would be a different item. Delete and put instead.",
            table=meta.table.name,
        )
    if meta.version_field is not None and meta.version_field in touched:
        raise ValidationError(
            "update.version-field",
            f"{cls_name}.{meta.version_field} is managed by optimistic locking; do not set it.",
        )
    for name in removes:
        info = meta.cls.model_fields[name]
        # None is absence: a required field that allows None may be removed (it reads as None).
        if info.is_required() and not allows_none(info.annotation):
            raise ValidationError(
                "update.remove-required",
                f"Cannot remove {cls_name}.{name}: the field is required.",
            )
    for name in add:
        if name in meta.key_fields:
            raise ValidationError(
                "update.add-key-field",
                f"Cannot ADD to {cls_name}.{name}: it is part of a key template and the new key "
                "must be computed client-side. Use set= with the new value.",
            )
    for name, value in sets.items():
        if value is None:
            removes.add(name)
    sets = {k: v for k, v in sets.items() if v is not None}

    ph = Placeholders()
    set_parts: list[str] = []
    remove_parts: list[str] = []
    add_parts: list[str] = []
    conditions: list[str] = [f"attribute_exists({ph.name(meta.table.partition_key.name)})"]

    for name, value in sets.items():
        set_parts.append(
            f"{ph.name(meta.attributes[name])} = {ph.value(encode_value(meta, name, value))}"
        )
    for name in sorted(removes):
        remove_parts.append(ph.name(meta.attributes[name]))
    for name, value in add.items():
        add_parts.append(f"{ph.name(meta.attributes[name])} {ph.value(to_wire(value))}")

    primary_attrs = {meta.table.partition_key.name}
    if meta.table.sort_key is not None:
        primary_attrs.add(meta.table.sort_key.name)
    for attr, tpl in meta.templates.items():
        if attr in primary_attrs or not (set(tpl.fields) & touched):
            continue
        if set(tpl.fields) & removes:
            remove_parts.append(ph.name(attr))  # the slot becomes sparse: drop its key
            continue
        known = {f: sets[f] for f in tpl.fields if f in sets}
        missing = [f for f in tpl.fields if f not in known]
        if missing and instance is None:
            raise PartialKeyUpdateError(
                "update.partial-key",
                f"Update of {cls_name} changes {', '.join(sorted(set(tpl.fields) & touched))} but "
                f"key attribute {attr!r} (template {tpl.source!r}) also needs "
                f"{', '.join(missing)}; pass them in set= too (or update through the instance) "
                "so the key can be rewritten instead of left stale.",
                table=meta.table.name,
            )
        for f in missing:
            current = getattr(instance, f)
            known[f] = current
            attr_f = ph.name(meta.attributes[f])
            if current is None:
                conditions.append(f"attribute_not_exists({attr_f})")
            else:
                conditions.append(f"{attr_f} = {ph.value(encode_value(meta, f, current))}")
        if any(v is None for v in known.values()):
            remove_parts.append(ph.name(attr))
            continue
        rendered = checked_key(meta, tpl, tpl.render(known))
        set_parts.append(f"{ph.name(attr)} = {ph.value(to_wire(rendered))}")

    if meta.version_field is not None:
        vname = ph.name(meta.attributes[meta.version_field])
        if instance is not None:
            current_version = getattr(instance, meta.version_field) or 0
            conditions.append(f"{vname} = {ph.value(to_wire(current_version))}")
            set_parts.append(f"{vname} = {ph.value(to_wire(current_version + 1))}")
        else:
            add_parts.append(f"{vname} {ph.value(to_wire(1))}")

    clauses = []
    if set_parts:
        clauses.append("SET " + ", ".join(set_parts))
    if remove_parts:
        clauses.append("REMOVE " + ", ".join(remove_parts))
    if add_parts:
        clauses.append("ADD " + ", ".join(add_parts))
    user_cond = compile_entity_condition(meta, condition, ph) if condition is not None else None
    params: dict[str, Any] = {
        "TableName": meta.table.name,
        "Key": _wire_key(meta, values),
        "UpdateExpression": " ".join(clauses),
        "ConditionExpression": _join(" AND ".join(conditions), user_cond),
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    return ph.into(params)
