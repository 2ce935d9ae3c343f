"""Dual writes of a table migration, planned: each write to the source as one transaction that
also writes the destination (pure; `lsiorm._migration.dual_writes` sends them).

During the dual-write period of a migration the application writes the live source table, its
table of record, and every write is mirrored to the destination *in the same transaction*, so
the destination takes, at the instant the source changes, the state the source then holds, re-
derived through the destination's declaration (`derive_item`). Why that and nothing else: the
catch-up's replay rule (`lsiorm._migration.stream_replay`) converges when every destination
write that is not a replay writes a state the source held at that same instant, and the catch-
up later reads every record after it. A destination state equal to New_j then acts like a copy
taken at record j. A mirror written *after* the source write breaks this: it can land after the
catch-up applied a later change of the item, and an A-B-A change (a flag set and reset) lets
even a condition on the destination's old image hold for the wrong reason; the destination
would stay stale for good.

The transaction of each write (the source action keeps the caller's condition):

* PutItem: [source Put, destination Put of the derived item]; DeleteItem: [source Delete,
  destination Delete of the same key]. No read is needed, unless the request asks for the old
  image (``ReturnValues``): then it is read first and guarded like an update.
* UpdateItem: the new image is computed from the item read just before (consistently) with
  lsiorm's model of UpdateItem (`apply_actions`, on the update plan's actions): [source Update
  on the caller's condition AND "unchanged since the read" (`unchanged_condition`),
  destination Put of the derived new image]. If the source changed since the read, the
  transaction is cancelled, and the caller reads again.
* TransactWriteItems: each Put and Delete on the table gets its mirrored action; an Update in
  a transaction cannot be mirrored (its effect is not known here).
* BatchWriteItem: a chunk of N writes becomes one transaction of up to 2N actions (a batch
  has at most 25, a transaction 100), at twice a batch's write units on each table.

Whatever cannot be made exact is not mirrored: `plan_write` and the others return the reason
as a string, and the caller sends the request to the source alone, for the catch-up to carry.
That is why the catch-up must keep running through the period.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._jobs.resumable import key_of
from lsiorm._migration.table_copy import derive_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem
from lsiorm._ops.unchanged import unchanged_condition
from lsiorm._requests.limits import MAX_TRANSACTION_ACTIONS
from lsiorm._requests.update_effect import PathError, apply_actions
from lsiorm.errors import ValidationError

__all__ = [
    "WRITES",
    "DualPlan",
    "Mirrored",
    "is_ledger",
    "needs_read",
    "plan_batch",
    "plan_transaction",
    "plan_write",
]

#: The operations that write items.
WRITES = frozenset({"PutItem", "DeleteItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem"})

#: Parameters of a single-item write that a transaction's action takes over, per operation.
_ACTION_PARAMS = {
    "PutItem": ("Put", frozenset({"Item"})),
    "DeleteItem": ("Delete", frozenset({"Key"})),
    "UpdateItem": ("Update", frozenset({"Key", "UpdateExpression"})),
}
_CONDITION_PARAMS = frozenset(
    {
        "ConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "ReturnValuesOnConditionCheckFailure",
    }
)
#: Parameters that go to the transaction itself.
_REQUEST_PARAMS = ("ReturnConsumedCapacity", "ReturnItemCollectionMetrics")
_GUARD_PLACEHOLDER = re.compile(r"([#:])u(\d+)")


@dataclass(frozen=True)
class DualPlan:
    """What the mirroring needs to know: the destination's declaration (the table the models
    declare), the declared name of the source table, and the attributes the guard watches."""

    table: Table
    source: str
    watched: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Mirrored:
    """A write made dual: the TransactWriteItems parameters (declared table names: the
    source's and the destination's), the answer the original request gives when it commits
    (None: the transaction's own), whether the source action is guarded by the item read, and
    how many of the actions are the caller's (the mirrored ones follow them)."""

    request: dict[str, Any]
    answer: dict[str, Any] | None
    guarded: bool
    actions: int


def is_ledger(params: Mapping[str, Any], table: Table) -> bool:
    """Whether a single-item request addresses the jobs' ledger partition of the table (it
    belongs to the destination and is never mirrored)."""
    item = params.get("Key") or params.get("Item") or {}
    return bool(item.get(table.partition_key.name) == {"S": NAMESPACE})


def needs_read(operation: str, params: Mapping[str, Any]) -> bool:
    """Whether a single-item write must read the source item first: an update (its new
    image is computed from it), or a write that returns the item's old or new image."""
    return operation == "UpdateItem" or params.get("ReturnValues", "NONE") != "NONE"


def plan_write(
    plan: DualPlan,
    operation: str,
    params: Mapping[str, Any],
    old: WireItem | None,
    effect: Sequence[Any] | None,
) -> Mirrored | str:
    """The dual transaction of a PutItem, DeleteItem or UpdateItem on the table; ``old`` is
    the source item read before (when `needs_read`), ``effect`` an update's actions. A string
    says why the write cannot be mirrored exactly."""
    kind, own = _ACTION_PARAMS[operation]
    extra = set(params) - own - _CONDITION_PARAMS - {"TableName", "ReturnValues", *_REQUEST_PARAMS}
    if extra:
        return "parameters " + ", ".join(sorted(extra))
    returns = params.get("ReturnValues", "NONE")
    if returns not in ("NONE", "ALL_OLD", "ALL_NEW") or (returns == "ALL_NEW" and kind != "Update"):
        return "return-values"
    key = dict(params["Key"]) if "Key" in params else key_of(plan.table, params["Item"])
    if operation == "PutItem":
        new: WireItem | None = dict(params["Item"])
    elif operation == "DeleteItem":
        new = None
    elif effect is None:
        return "update-effect-unknown"  # a raw UpdateItem: its new image cannot be computed
    else:
        try:
            new = apply_actions(old if old is not None else key, effect)
        except PathError:
            return "update-path"  # DynamoDB refuses it: the source alone says how
    mirror = _mirror(plan, key, new)
    if isinstance(mirror, str):
        return mirror
    body = {k: v for k, v in params.items() if k in own or k in _CONDITION_PARAMS}
    body["TableName"] = plan.source
    guarded = needs_read(operation, params)
    if guarded:
        try:
            _guard(body, old, plan.watched | set(new or ()))
        except ValidationError:
            return "condition-too-long"
    request: dict[str, Any] = {"TransactItems": [{kind: body}, mirror]}
    request.update({k: params[k] for k in _REQUEST_PARAMS if k in params})
    if returns == "ALL_NEW":
        answer: dict[str, Any] = {"Attributes": new} if new else {}
    elif returns == "ALL_OLD":
        answer = {"Attributes": old} if old else {}
    else:
        answer = {}
    return Mirrored(request, answer, guarded, 1)


def _mirror(plan: DualPlan, key: WireItem, new: WireItem | None) -> dict[str, Any] | str:
    """The destination action that gives the source item's key the derived ``new`` image
    (None: absent)."""
    if new is None:
        return {"Delete": {"TableName": plan.table.name, "Key": dict(key)}}
    derived = derive_item(plan.table, new).item
    if derived is None:
        return "unmatched"  # no entity recognizes it: the catch-up reports it the same way
    if key_of(plan.table, derived) != key:
        return "key-moves"  # the destination derives another key: only a replay moves it
    return {"Put": {"TableName": plan.table.name, "Item": derived}}


def _guard(body: dict[str, Any], old: WireItem | None, watched: frozenset[str]) -> None:
    """AND the condition "the item is ``old`` unchanged" to the action's own condition."""
    condition, names, values = unchanged_condition(old or {}, watched)

    def ours(text: str) -> str:
        return _GUARD_PLACEHOLDER.sub(r"\1dw\2", text)

    own = body.get("ConditionExpression")
    guard = ours(condition)  # terms joined by AND: no parentheses needed
    body["ConditionExpression"] = f"{_grouped(own)} AND {guard}" if own else guard
    body["ExpressionAttributeNames"] = {
        **body.get("ExpressionAttributeNames", {}),
        **{ours(k): v for k, v in names.items()},
    }
    if values:
        body["ExpressionAttributeValues"] = {
            **body.get("ExpressionAttributeValues", {}),
            **{ours(k): v for k, v in values.items()},
        }
    # What was there when the guard failed tells a changed item from a false condition.
    body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"


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


def plan_transaction(plan: DualPlan, params: Mapping[str, Any]) -> Mirrored | str:
    """A TransactWriteItems with each Put and Delete on the table mirrored (the caller's
    actions first, addressed to the source, then the mirrored ones)."""
    own: list[dict[str, Any]] = []
    mirrored: list[dict[str, Any]] = []
    for action in params["TransactItems"]:
        ((kind, body),) = action.items()
        if body.get("TableName") != plan.table.name:
            own.append(action)
            continue
        own.append({kind: {**body, "TableName": plan.source}})
        if kind == "ConditionCheck":
            continue
        if kind == "Update":
            return "update-in-transaction"
        key = dict(body["Key"]) if kind == "Delete" else key_of(plan.table, body["Item"])
        mirror = _mirror(plan, key, body.get("Item"))
        if isinstance(mirror, str):
            return mirror
        mirrored.append(mirror)
    if len(own) + len(mirrored) > MAX_TRANSACTION_ACTIONS:
        return "too-many-actions"
    request = {**params, "TransactItems": own + mirrored}
    return Mirrored(request, None, False, len(own))


def plan_batch(plan: DualPlan, params: Mapping[str, Any]) -> Mirrored | str:
    """A BatchWriteItem chunk as one transaction: each put and delete (those on the table
    addressed to the source), and the mirrored action of each on the table."""
    actions: list[dict[str, Any]] = []
    mirrored: list[dict[str, Any]] = []
    for name, writes in params["RequestItems"].items():
        ours = name == plan.table.name
        target = plan.source if ours else name
        for write in writes:
            if "PutRequest" in write:
                item = dict(write["PutRequest"]["Item"])
                actions.append({"Put": {"TableName": target, "Item": item}})
                key, new = key_of(plan.table, item), item
            else:
                key, new = dict(write["DeleteRequest"]["Key"]), None
                actions.append({"Delete": {"TableName": target, "Key": key}})
            if not ours:
                continue
            mirror = _mirror(plan, key, new)
            if isinstance(mirror, str):
                return mirror
            mirrored.append(mirror)
    if len(actions) + len(mirrored) > MAX_TRANSACTION_ACTIONS:
        return "too-many-actions"
    request: dict[str, Any] = {"TransactItems": actions + mirrored}
    if "ReturnConsumedCapacity" in params:
        request["ReturnConsumedCapacity"] = params["ReturnConsumedCapacity"]
    return Mirrored(request, {"UnprocessedItems": {}}, False, len(actions))
