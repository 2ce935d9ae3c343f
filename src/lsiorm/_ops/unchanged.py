"""The one guard of every move and rewrite a key job makes: the item is unchanged since read.

Its requests are built purely in `lsiorm._requests.unchanged`; this module sends them and
reads what they answer.

"Unchanged" means two things: every attribute read still has its value, and no attribute was
added. DynamoDB's conditions can state the first (one equality per attribute read) and the
absence of attributes named in advance, but not "no other attribute exists". So the guard has
two halves, and every job (backfill, re-key, relief, the table copy) uses both:

* `unchanged_condition` (before the write): every attribute read is equal, and every
  *watched* attribute that was absent is still absent. The watched attributes are those that
  decide what the job does: the fields of the entities involved, the key attributes and the
  type attribute (`watched_attributes`). A writer that changes anything the job looked at makes
  the job's write fail, and the job reads the item again.
* the check after the write: a write that keeps the item (an UpdateItem that only sets or
  removes derived attributes) loses nothing an unwatched writer added; a write that removes
  the item (the delete that ends a move) returns the image it deleted (``ReturnValues=ALL_OLD``),
  and `delete_unchanged` reports the attributes it had beyond those read. The job then gives
  them to the copy, so an attribute added between the read and the delete survives the move.

Two instants remain that no condition can close, and both are documented: a delete whose
answer was lost has no image (`Removal.unsure`); and a writer that writes the *copy* in the
instant between the delete of the original and the hand-over of added attributes keeps its
write, but an attribute it removes there that was added to the original just before the delete
comes back, and a number it adds to there that was created on the original just before keeps
the copy's value (`give_attributes`).

A delete whose answer was lost (the connection dropped after DynamoDB applied it) has no
image: its resend finds the item gone. `Removal.unsure` says so, and the job keeps its copy as
it was read (the delete was most likely its own).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, same_item
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._requests.unchanged import (
    fill_update,
    rewrite_update,
    unchanged_condition,
    unchanged_target,
    watched_attributes,
)
from lsiorm.errors import ConditionFailedError, DynamoError, ThrottledError

__all__ = [
    "Removal",
    "added_attributes",
    "delete_unchanged",
    "give_attributes",
    # Built in lsiorm._requests.unchanged; named here for the migration's modules until they
    # import them from there.
    "unchanged_condition",
    "watched_attributes",
    "withdraw_copy",
]


def added_attributes(read: Mapping[str, Any], old: Mapping[str, Any]) -> WireItem:
    """The attributes of ``old`` (an image a write replaced) that ``read`` did not have, or
    whose value differs (which a write guarded by `unchanged_condition` never meets)."""
    return {
        name: value
        for name, value in old.items()
        if name not in read or not same_item({name: read[name]}, {name: value})
    }


@dataclass
class Removal:
    """What `delete_unchanged` did.

    ``deleted``: the item was deleted; ``added`` holds the attributes it had beyond those read
    (given to the copy by the caller). Not ``deleted``: the condition failed, because the item
    changed or is gone; ``unsure`` says an earlier attempt of this delete may have applied (its
    answer was lost), so an item found gone was most likely deleted by it.
    """

    deleted: bool
    added: WireItem = field(default_factory=dict)
    unsure: bool = False


def delete_unchanged(
    ctx: Context,
    table: Table,
    key: Mapping[str, Any],
    item: Mapping[str, Any],
    watched: frozenset[str],
) -> Operation[Removal]:
    """Delete the item at ``key`` on the condition that it is ``item`` unchanged; return what
    it had beyond ``item`` (the check after the write), or that the condition failed."""
    lost: list[bool] = []

    def note(error: DynamoError) -> None:
        if not isinstance(error, (ThrottledError, ConditionFailedError)):
            lost.append(True)  # the request may have reached DynamoDB and applied

    params = {**unchanged_target(table, key, item, watched), "ReturnValues": "ALL_OLD"}
    try:
        response = yield from call(ctx, "DeleteItem", params, (table,), on_error=note)
    except ConditionFailedError:
        return Removal(False, unsure=bool(lost))
    old = response.get("Attributes")
    return Removal(True, added_attributes(item, old) if old else {})


def give_attributes(
    ctx: Context,
    table: Table,
    key: Mapping[str, Any],
    copy: Mapping[str, Any],
    added: Mapping[str, Any],
) -> Operation[None]:
    """Give ``added`` (the attributes a writer added to the original between a job's read and
    its delete) to the job's ``copy`` of the item at ``key``.

    On the condition that the copy is as the job wrote it, the attributes are set. A copy that a
    writer changed since (in the instant after the original was deleted) gets those of them it
    still lacks; a copy a writer deleted since stays deleted.
    """
    if not added:
        return
    params = rewrite_update(table, key, copy, frozenset(added), sets=dict(sorted(added.items())))
    try:
        yield from call(ctx, "UpdateItem", params, (table,))
        return
    except ConditionFailedError:
        pass
    with contextlib.suppress(ConditionFailedError):
        yield from call(ctx, "UpdateItem", fill_update(table, key, added), (table,))


def withdraw_copy(
    ctx: Context, table: Table, key: Mapping[str, Any], copy: Mapping[str, Any]
) -> Operation[None]:
    """Delete a job's copy at ``key``, if it is still exactly ``copy`` (the original it was
    made from changed or was deleted; a copy someone changed since is theirs, and stays)."""
    params = unchanged_target(table, key, copy, frozenset())
    with contextlib.suppress(ConditionFailedError):
        yield from call(ctx, "DeleteItem", params, (table,))
