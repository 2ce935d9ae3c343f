"""The requests of the one guard every move and rewrite of a key job carries: the item is
unchanged since it was read.

What "unchanged" means, and the check after the write that completes it, is told in
`lsiorm._ops.unchanged`, which sends these requests. Here they are built, purely:

* `unchanged_guards`: one guard per attribute, equal as read or (a *watched* attribute that
  was not read) still absent; `unchanged_condition` is their condition text.
* `unchanged_target`: the item addressed on that condition (a ``DeleteItem``, a transaction's
  ``Delete`` or ``ConditionCheck``); `create_only_put`: an item put only where none is;
  `move_transaction`: both in one transaction, an item's copy under its new key and its
  original checked (or deleted) on that condition.
* `unchanged_put`: an item put over the one at its key on that condition; `replacing_move`:
  the item deleted on that condition and its image put under another key whatever is there
  (a stream change replayed by a migration's catch-up, see `lsiorm._migration.stream_replay`).
* `guarded_action`: that condition joined onto a write another allocator built (a user's
  write made dual during a migration), in placeholders of its own.
* `rewrite_update`: derived attributes set and removed in place, on that condition;
  `fill_update`: attributes set where the item still lacks them; `copy_put`: a copy written
  where none is, or over an earlier identical one, or over its own older copy only.

Conditions are compiled by the one condition compiler (guards as `update_expression`
renders them); placeholders are ``#uK``/``:uK``, apart from those of a request the condition
is joined onto.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lsiorm._conditions import Placeholders
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._requests.limits import MAX_EXPRESSION_BYTES
from lsiorm._requests.update_expression import guard_text, render_stored_update
from lsiorm._requests.update_plan import Action, Guard, UpdatePlan
from lsiorm.errors import ValidationError

__all__ = [
    "CONDITION_PARAMS",
    "copy_put",
    "create_only_put",
    "fill_update",
    "guarded_action",
    "move_transaction",
    "replacing_move",
    "rewrite_update",
    "unchanged_condition",
    "unchanged_guards",
    "unchanged_put",
    "unchanged_target",
    "watched_attributes",
]

#: The letter of the guard's placeholders (``#u0``, ``:u0``).
_PREFIX = "u"
#: The letters of a guard joined onto a request another allocator built (``#dw0``, ``:dw0``).
_JOINED_PREFIX = "dw"
#: The parameters of a write that make up its condition.
CONDITION_PARAMS = frozenset(
    {
        "ConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "ReturnValuesOnConditionCheckFailure",
    }
)


def watched_attributes(table: Table, entities: Iterable[type[Entity]]) -> frozenset[str]:
    """The attributes whose absence a job's write requires, besides those it read: the stored
    names of the entities' fields, the table's key attributes and its type attribute."""
    names = {*table.key_attributes, table.type_attribute}
    for entity in entities:
        names.update(meta_of(entity).attributes.values())
    return frozenset(names)


def unchanged_guards(item: Mapping[str, Any], watched: frozenset[str]) -> tuple[Guard, ...]:
    """One guard per attribute of ``item`` or ``watched``, by name: equal to its value as read,
    or (watched but not read) absent."""
    return tuple(
        Guard("equals", name, item[name]) if name in item else Guard("absent", name)
        for name in sorted(set(item) | watched)
    )


def _condition(guards: Sequence[Guard], ph: Placeholders) -> str:
    return _checked(" AND ".join(guard_text(g, ph) for g in guards), len(guards))


def _checked(expression: str, compared: int) -> str:
    """``expression``, refused before anything is sent when DynamoDB would refuse its size."""
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        raise ValidationError(
            "jobs.condition-too-long",
            f"The item has {compared} attributes to compare; the condition that it is "
            f"unchanged would exceed DynamoDB's {MAX_EXPRESSION_BYTES} byte expression limit.",
        )
    return expression


def unchanged_condition(
    item: Mapping[str, Any], watched: frozenset[str]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A condition that holds only while the item is as read: its text, names and values.

    Every attribute read must still have its value, and every attribute of ``watched`` that
    was not read must still be absent (see `lsiorm._ops.unchanged`).
    """
    ph = Placeholders(prefix=_PREFIX)
    expression = _condition(unchanged_guards(item, watched), ph)
    return expression, ph.names, ph.values


def unchanged_target(
    table: Table, key: Mapping[str, Any], item: Mapping[str, Any], watched: frozenset[str]
) -> dict[str, Any]:
    """The parameters that address the item at ``key`` on the condition that it is ``item``
    unchanged (a ``DeleteItem``, or a transaction's ``Delete`` or ``ConditionCheck``)."""
    ph = Placeholders(prefix=_PREFIX)
    params = {
        "TableName": table.name,
        "Key": dict(key),
        "ConditionExpression": _condition(unchanged_guards(item, watched), ph),
    }
    return ph.into(params)


def create_only_put(table: Table, item: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that put ``item`` only where no item is (a move's copy)."""
    ph = Placeholders()
    params = {
        "TableName": table.name,
        "Item": item,
        "ConditionExpression": guard_text(Guard("absent", table.partition_key.name), ph),
    }
    return ph.into(params)


def move_transaction(
    table: Table,
    key: Mapping[str, Any],
    item: Mapping[str, Any],
    new: Mapping[str, Any],
    watched: frozenset[str],
    *,
    delete: bool,
    token: str,
) -> dict[str, Any]:
    """TransactWriteItems parameters that put ``new`` where no item is, on the condition that
    the item at ``key`` is ``item`` unchanged; with ``delete`` the original is deleted in the
    same transaction, else only checked. ``token`` (the ClientRequestToken) makes a resend of
    the same transaction apply once."""
    original = unchanged_target(table, key, item, watched)
    return {
        "TransactItems": [
            {"Put": create_only_put(table, new)},
            {"Delete" if delete else "ConditionCheck": original},
        ],
        "ClientRequestToken": token,
    }


def unchanged_put(
    table: Table, item: Mapping[str, Any], old: Mapping[str, Any], watched: frozenset[str]
) -> dict[str, Any]:
    """PutItem parameters that put ``item`` on the condition that the item at its key is
    ``old`` unchanged."""
    ph = Placeholders(prefix=_PREFIX)
    params = {
        "TableName": table.name,
        "Item": dict(item),
        "ConditionExpression": _condition(unchanged_guards(old, watched), ph),
    }
    return ph.into(params)


def replacing_move(
    table: Table,
    key: Mapping[str, Any],
    item: Mapping[str, Any],
    new: Mapping[str, Any],
    watched: frozenset[str],
) -> dict[str, Any]:
    """TransactWriteItems parameters that delete the item at ``key`` on the condition that it
    is ``item`` unchanged, and put ``new`` (under another key) whatever is there: both or
    neither."""
    return {
        "TransactItems": [
            {"Delete": unchanged_target(table, key, item, watched)},
            {"Put": {"TableName": table.name, "Item": dict(new)}},
        ]
    }


def guarded_action(
    body: Mapping[str, Any], item: Mapping[str, Any], watched: frozenset[str]
) -> dict[str, Any]:
    """``body`` (a write's parameters, or a transaction action's) on its own condition AND the
    condition that the item is ``item`` unchanged, whose placeholders (``#dwK``, ``:dwK``)
    cannot meet the body's. A failed condition returns the item as it was
    (``ReturnValuesOnConditionCheckFailure``): that tells a changed item from a false
    condition of the caller's."""
    ph = Placeholders(prefix=_JOINED_PREFIX)
    guard = _condition(unchanged_guards(item, watched), ph)  # terms joined by AND
    own = body.get("ConditionExpression")
    guarded = dict(body)
    guarded["ConditionExpression"] = f"{_grouped(own)} AND {guard}" if own else guard
    guarded["ExpressionAttributeNames"] = {**body.get("ExpressionAttributeNames", {}), **ph.names}
    if ph.values:
        guarded["ExpressionAttributeValues"] = {
            **body.get("ExpressionAttributeValues", {}),
            **ph.values,
        }
    guarded["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return guarded


def _grouped(expression: str) -> str:
    """The expression in parentheses, unless they enclose it already (DynamoDB refuses
    redundant parentheses)."""
    if expression.startswith("("):
        depth = 0
        for i, char in enumerate(expression):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                if i == len(expression) - 1:
                    return expression
                break
    return f"({expression})"


def rewrite_update(
    table: Table,
    key: Mapping[str, Any],
    item: Mapping[str, Any],
    watched: frozenset[str],
    *,
    sets: Mapping[str, Any],
    removes: Sequence[str] = (),
) -> dict[str, Any]:
    """UpdateItem parameters that set attributes ``sets`` (name to wire value) and remove
    ``removes`` of the item at ``key``, on the condition that it is ``item`` unchanged."""
    actions = tuple(Action("set", (name,), value) for name, value in sets.items())
    actions += tuple(Action("remove", (name,)) for name in removes)
    guards = unchanged_guards(item, watched)
    plan = UpdatePlan(table.name, dict(key), actions, guards)
    params = render_stored_update(plan, Placeholders(prefix=_PREFIX))
    _checked(params.get("ConditionExpression", ""), len(guards))
    return params


def fill_update(table: Table, key: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """UpdateItem parameters that give the item at ``key``, if it exists, those of ``values``
    it lacks (each attribute set only where absent)."""
    actions = tuple(
        Action("set_if_absent", (name,), value) for name, value in sorted(values.items())
    )
    guards = (Guard("exists", table.partition_key.name),)
    return render_stored_update(UpdatePlan(table.name, dict(key), actions, guards))


def copy_put(
    table: Table, item: Mapping[str, Any], previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """PutItem parameters of a job's copy of ``item``: where no item is or an identical copy
    (an earlier run's) is; or, given ``previous`` (its own older copy), only over that."""
    ph = Placeholders(prefix=_PREFIX)
    if previous is not None:
        condition = _condition(unchanged_guards(previous, frozenset()), ph)
    else:
        absent = guard_text(Guard("absent", table.partition_key.name), ph)
        same = _condition(unchanged_guards(item, frozenset()), ph)
        condition = f"{absent} OR ({same})"
    return ph.into({"TableName": table.name, "Item": dict(item), "ConditionExpression": condition})
