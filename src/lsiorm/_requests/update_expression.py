"""Render an update plan to UpdateItem params: the update expression, its guards, the condition."""

from __future__ import annotations

from typing import Any

from lsiorm._conditions import Placeholders
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._requests.items import compile_entity_condition, join_conditions
from lsiorm._requests.paths import render
from lsiorm._requests.update_plan import Guard, Op, UpdatePlan

__all__ = ["guard_text", "render_stored_update", "render_update", "update_texts"]

_CLAUSES: dict[Op, str] = {
    "set": "SET",
    "set_if_absent": "SET",
    "append": "SET",
    "prepend": "SET",
    "remove": "REMOVE",
    "add": "ADD",
    "delete": "DELETE",
}


def render_update(meta: EntityMeta[Entity], plan: UpdatePlan) -> dict[str, Any]:
    """Return UpdateItem params for a plan: exact expression text with placeholders."""
    ph = Placeholders()
    expression, guards = update_texts(plan, ph)
    user = (
        compile_entity_condition(meta, plan.condition, ph) if plan.condition is not None else None
    )
    params: dict[str, Any] = {
        "TableName": plan.table,
        "Key": plan.key,
        "UpdateExpression": expression,
        "ConditionExpression": join_conditions(guards, user),
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    return ph.into(params)


def render_stored_update(plan: UpdatePlan, ph: Placeholders | None = None) -> dict[str, Any]:
    """Return UpdateItem params for a plan on stored attributes, with no entity behind it (a
    key job's rewrite, the ledger's transitions): its actions, its guards as the condition, no
    values returned. ``ph`` allocates the placeholders (one with a prefix of its own for a
    request that is joined onto another)."""
    if plan.condition is not None:
        raise ValueError("a stored update's condition is its guards; it has no entity condition")
    ph = Placeholders() if ph is None else ph
    expression, guards = update_texts(plan, ph, guards_first=True)
    params: dict[str, Any] = {
        "TableName": plan.table,
        "Key": plan.key,
        "UpdateExpression": expression,
    }
    if guards:
        params["ConditionExpression"] = guards
    return ph.into(params)


def update_texts(
    plan: UpdatePlan, ph: Placeholders, *, guards_first: bool = False
) -> tuple[str, str]:
    """The update expression of a plan's actions and the condition of its guards (joined with
    AND; empty without guards), with placeholders allocated in ``ph``: the first guard's, the
    actions', the other guards' (``guards_first``: every guard's, then the actions')."""
    first = len(plan.guards) if guards_first else 1
    conditions = [guard_text(g, ph) for g in plan.guards[:first]]
    parts: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    for action in plan.actions:
        path = render(action.path, ph.name)
        op = action.op
        if op == "set":
            text = f"{path} = {ph.value(action.value)}"
        elif op == "set_if_absent":
            text = f"{path} = if_not_exists({path}, {ph.value(action.value)})"
        elif op == "append":
            text = f"{path} = list_append(if_not_exists({path}, {ph.value({'L': []})}), "
            text += f"{ph.value(action.value)})"
        elif op == "prepend":
            text = f"{path} = list_append({ph.value(action.value)}, "
            text += f"if_not_exists({path}, {ph.value({'L': []})}))"
        elif op == "remove":
            text = path
        else:
            text = f"{path} {ph.value(action.value)}"
        parts[_CLAUSES[op]].append(text)
    conditions += [guard_text(g, ph) for g in plan.guards[first:]]
    clauses = [f"{clause} {', '.join(texts)}" for clause, texts in parts.items() if texts]
    return " ".join(clauses), " AND ".join(conditions)


def guard_text(guard: Guard, ph: Placeholders) -> str:
    """The condition text of one guard, with placeholders allocated in ``ph``."""
    name = ph.name(guard.attribute)
    if guard.kind == "exists":
        return f"attribute_exists({name})"
    if guard.kind == "absent":
        return f"attribute_not_exists({name})"
    if guard.kind == "equals":
        return f"{name} = {ph.value(guard.value)}"
    # An upsert creates the item, or changes one of its own type, never another entity's.
    if guard.value is None:
        return f"(attribute_not_exists({name}) OR attribute_not_exists({ph.name(guard.other)}))"
    return f"(attribute_not_exists({name}) OR {ph.name(guard.other)} = {ph.value(guard.value)})"
