"""Writes during a re-keying: an item still in its entity's old key form moves before it changes.

An entity declared with ``rekeying_from`` (say ``"exact"``, after upgrading from a 0.2
development version) may have items whose keys are still in the old style where the declared
one now writes other text. While the option is set, every write to such an item leaves no twin
behind:

* a put without a condition writes the new item and deletes the old key in one transaction;
* any other write (a conditional put, an update, a delete, a transaction's action) first moves
  the item if it is still in the old form, in one transaction that puts it under its new key
  (create-only) and deletes the old one on the condition that it is unchanged since it was
  read, as the backfill does; then it is written as usual, so its condition sees the item as
  it stands. A move whose condition fails (someone changed or moved the item meanwhile) reads
  it again and tries again. Where the new form exists already, it is the item: the old one is
  deleted if it is unchanged.

Reads look for both forms (see `lsiorm._query.rekeying`); the backfill moves the items no
write touched.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.key_check import ItemKeyCheck, check_item_keys
from lsiorm._model.wire import WireItem, item_to_wire
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._requests.reads import consistent_get
from lsiorm.errors import (
    ConditionFailedError,
    TransactionCanceledError,
    TransactionConflictError,
)

__all__ = [
    "MOVE_ATTEMPTS",
    "ensure_moved",
    "move_request",
    "moved_item",
    "old_wire_key",
]

#: How often a move is tried against concurrent changes before the write gives up.
MOVE_ATTEMPTS = 10


def moved_item(item: Mapping[str, Any], check: ItemKeyCheck) -> WireItem:
    """The item with its key attributes as the declaration derives them."""
    out = dict(item)
    for problem in check.problems:
        if problem.kind == "extra":
            out.pop(problem.attribute, None)
    out.update(check.expected)
    return out


def move_request(item: Mapping[str, Any], check: ItemKeyCheck) -> dict[str, Any]:
    """TransactWriteItems parameters that move an item to its derived primary key.

    The item is put under its new key only if nothing is there, and the old one is deleted only
    if it is unchanged since it was read.
    """
    table = meta_of(check.entity).table
    # The guarded requests are imported when an item is moved: a plain put only checks keys.
    from lsiorm._requests.unchanged import move_transaction, watched_attributes

    watched = watched_attributes(table, (check.entity,))
    new = moved_item(item, check)
    return move_transaction(
        table, check.stored_key, item, new, watched, delete=True, token=uuid.uuid4().hex
    )


def old_wire_key(meta: EntityMeta[Entity], values: Mapping[str, Any]) -> WireItem | None:
    """The primary key (wire) of these key values in the old form, when it differs."""
    old = meta.old_key(values)
    return None if old is None else item_to_wire(old)


def ensure_moved(
    ctx: Context, meta: EntityMeta[Entity], values: Mapping[str, Any]
) -> Operation[None]:
    """Move the item with these key values to its declared key form if it is still in the old.

    Nothing is sent for an entity whose primary key is the same in both forms.
    """
    old_key = old_wire_key(meta, values)
    if old_key is None:
        return
    table = meta.table
    for _attempt in range(MOVE_ATTEMPTS):
        response = yield from call(ctx, "GetItem", consistent_get(table.name, old_key), (table,))
        item = response.get("Item")
        if not item:
            return
        check = check_item_keys(table, item, (meta.cls,))
        if check is None or check.current:
            return  # another type's item, or already as declared: nothing of ours to move
        try:
            yield from call(ctx, "TransactWriteItems", move_request(item, check), (table,))
            return
        except TransactionCanceledError as exc:
            reasons = exc.reasons
            if not reasons or reasons[0].code != "ConditionalCheckFailed":
                continue  # the old item changed since it was read: read it again
        # The new form exists already, so it is the item: drop the stale old one if unchanged.
        from lsiorm._requests.unchanged import unchanged_target, watched_attributes

        params = unchanged_target(table, old_key, item, watched_attributes(meta.table, (meta.cls,)))
        try:
            yield from call(ctx, "DeleteItem", params, (table,))
            return
        except ConditionFailedError:
            continue
    raise TransactionConflictError(
        f"{meta.cls.__name__} {dict(values)!r} changed on each of {MOVE_ATTEMPTS} attempts to "
        "move it to its new key form; the write was not made",
        code="TransactionConflict",
        operation="TransactWriteItems",
        table=table.name,
        key=old_key,
    )
