"""What an UpdateItem does to a stored item, modelled: dry runs price it, retries check it.

`apply_actions` applies an update plan to a stored item (wire form) as DynamoDB does: all
paths are read from the item as it was before the update, a set whose last elements are deleted
leaves the item, and a path whose parent is missing is refused (`PathError`).
`dry_run_update` prices an update with it, and a retried update asks `applied`
whether an earlier attempt whose answer was lost made its changes already.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lsiorm._model.capacity import WriteEstimate, estimate_write
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import instance_meta
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.wire import number_to_wire, same_item
from lsiorm._requests.paths import Step, quoted
from lsiorm._requests.update_plan import (
    Action,
    UpdateChanges,
    UpdatePlan,
    plan_update,
    update_spec,
)
from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    from typing_extensions import Unpack


class PathError(Exception):
    """The update names a path whose parent is missing or of the wrong kind (DynamoDB refuses)."""


def apply_actions(item: Mapping[str, Any] | None, actions: Sequence[Action]) -> dict[str, Any]:
    """Return the stored item (wire form) after these actions, as UpdateItem makes it.

    ``item`` None is a missing item. Raises PathError where DynamoDB refuses the document path.
    All paths are evaluated against the item as it was before the update, as DynamoDB does.
    """
    before: dict[str, Any] = dict(item or {})
    after: dict[str, Any] = copy.deepcopy(before)
    removals: list[tuple[Step, ...]] = []
    for action in actions:
        current = _lookup(before, action.path)
        if action.op == "remove":
            removals.append(action.path)
            continue
        if action.op == "set":
            new = action.value
        elif action.op == "set_if_absent":
            new = current if current is not None else action.value
        elif action.op == "append":
            new = {"L": [*(current or {"L": []})["L"], *action.value["L"]]}
        elif action.op == "prepend":
            new = {"L": [*action.value["L"], *(current or {"L": []})["L"]]}
        elif action.op == "add":
            new = _add(current, action.value)
        else:
            new = _delete(current, action.value)
        if new is None:
            removals.append(action.path)  # a set whose last elements were deleted
        else:
            _assign(after, action.path, new)
    # Removals of list elements shift what follows: take them from the end.
    for path in sorted(removals, key=_removal_order):
        _drop(after, path)
    return after


def applied(plan: UpdatePlan, stored: Mapping[str, Any]) -> bool:
    """Whether a stored item already holds every change of a (non-additive) update.

    Applying such an update again to an item that holds its changes changes nothing; the
    version counter of an update by class is left out, as it counts attempts.
    """
    actions = [a for a in plan.actions if not (a.derived and a.op == "add")]
    try:
        after = apply_actions(stored, actions)
    except PathError:
        return False
    return same_item(after, stored)


def dry_run_update(
    entity: Entity,
    *,
    transactional: bool = False,
    **changes: Unpack[UpdateChanges],
) -> WriteEstimate:
    """Return the write units of updating the stored ``entity`` with these changes.

    The changes (`UpdateChanges`: ``set=``, ``remove=``, ``add=``, ``delete=``, ``append=``,
    ``prepend=``, ``if_not_exists=``) are spelled and validated as ``Session.update`` takes
    them, and applied to the entity as DynamoDB applies them: a removed field (or one set to
    None) leaves the item, ``add`` sums numbers and joins sets, key attributes derived from
    changed fields are rewritten (and dropped when a field they need is gone), declared
    timestamps are set, and a versioned entity's version goes up by one.
    """
    unknown = changes.keys() - UpdateChanges.__optional_keys__
    if unknown:  # as Python words it for a keyword the signature does not have
        raise TypeError(f"dry_run_update() got an unexpected keyword argument {min(unknown)!r}")
    meta = instance_meta(entity)
    spec = update_spec(**changes)
    values = {name: getattr(entity, name) for name in meta.primary_fields}
    plan = plan_update(meta, values, spec, instance=entity)
    before = wire_item(entity)
    try:
        after = apply_actions(before, plan.actions)
    except PathError as exc:
        raise ValidationError(
            "update.path-missing-parent",
            f"The update of {meta.cls.__name__} writes inside {quoted(exc.args[0])}, whose "
            "parent this item does not hold; DynamoDB would refuse it.",
            table=meta.table.name,
        ) from exc
    return estimate_write(meta.table, before, after, transactional=transactional)


def _removal_order(path: tuple[Step, ...]) -> tuple[Any, ...]:
    return tuple((0, -s) if isinstance(s, int) else (1, s) for s in path[::-1])


def _lookup(item: Mapping[str, Any], path: tuple[Step, ...]) -> Any:
    node: Any = item.get(str(path[0]))
    for step in path[1:]:
        if node is None:
            return None
        node = _child(node, step)
    return node


def _container(item: dict[str, Any], path: tuple[Step, ...]) -> Any:
    node: Any = {"M": item}
    for step in path[:-1]:
        node = _child(node, step)
        if node is None:
            raise PathError(path)
    return node


def _child(node: Any, step: Step) -> Any:
    if isinstance(step, int):
        items = node.get("L")
        return items[step] if items is not None and step < len(items) else None
    members = node.get("M")
    return members.get(step) if members is not None else None


def _holder(item: dict[str, Any], path: tuple[Step, ...]) -> Any:
    """Return the list or map that holds the last step of ``path``; PathError if there is none."""
    parent = _container(item, path)
    holder = parent.get("L") if isinstance(path[-1], int) else parent.get("M")
    if holder is None:
        raise PathError(path)
    return holder


def _assign(item: dict[str, Any], path: tuple[Step, ...], value: Any) -> None:
    holder = _holder(item, path)
    step = path[-1]
    if isinstance(step, int) and step >= len(holder):
        holder.append(value)  # a position past the end appends
    else:
        holder[step] = value


def _drop(item: dict[str, Any], path: tuple[Step, ...]) -> None:
    holder = _holder(item, path)
    step = path[-1]
    if not isinstance(step, int):
        holder.pop(step, None)
    elif step < len(holder):
        del holder[step]


def _add(current: Mapping[str, Any] | None, delta: Mapping[str, Any]) -> dict[str, Any]:
    ((tag, raw),) = delta.items()
    if tag == "N":
        base = Decimal(current["N"]) if current is not None else Decimal(0)
        return {"N": number_to_wire(base + Decimal(raw))}
    existing = list(current.get(tag, ())) if current is not None else []
    return {tag: existing + [v for v in raw if v not in existing]}


def _delete(current: Mapping[str, Any] | None, delta: Mapping[str, Any]) -> Any:
    if current is None:
        return None
    ((tag, raw),) = delta.items()
    kept = [v for v in current.get(tag, ()) if v not in raw]
    return {tag: kept} if kept else None
