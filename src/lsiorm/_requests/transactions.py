"""Transaction requests built without I/O: the action values, their parts, TransactItems params.

Each write action is a small value (`Put`, `Update`, `Delete`,
`ConditionCheck`) turned into its part of the request by the same builders as the
single-item operations, so keys, key-template rewrites, optimistic locking and conditions mean
exactly what they mean there. A transaction is refused before it is sent when it is empty, has
more than 100 actions, touches one item twice, or has a ClientRequestToken DynamoDB would refuse.
Sending it, and reading a cancellation, is `lsiorm._ops.transactions`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from lsiorm._conditions import Condition
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire, item_to_wire
from lsiorm._requests.batch import KeyIdentity, key_identity, primary_key_of
from lsiorm._requests.items import delete_request, keyed_target, put_request
from lsiorm._requests.limits import MAX_TRANSACTION_ACTIONS
from lsiorm._requests.update_expression import render_update
from lsiorm._requests.update_plan import UpdateSpec, plan_update, update_spec
from lsiorm.errors import ValidationError


@dataclass(frozen=True)
class Put:
    """Write an entity, as `Session.put` does (``create_only``, version check)."""

    entity: Entity
    create_only: bool = False
    condition: Condition | None = None


@dataclass(frozen=True)
class Update:
    """Update an existing item, given as an instance or as its class and key fields.

    The changes are spelled as in ``Session.update``; ``upsert=True`` creates a missing item.
    """

    target: type[Entity] | Entity
    key: Mapping[str, Any] | None = None
    set: Mapping[str, Any] | None = None
    remove: Sequence[str] = ()
    add: Mapping[str, Any] | None = None
    condition: Condition | None = None
    delete: Mapping[str, Any] | None = None
    append: Mapping[str, Any] | None = None
    prepend: Mapping[str, Any] | None = None
    if_not_exists: Mapping[str, Any] | None = None
    upsert: bool = False

    def spec(self) -> UpdateSpec:
        """The changes of this action, as an update spells them."""
        return update_spec(
            self.set,
            self.remove,
            self.add,
            self.delete,
            self.append,
            self.prepend,
            self.if_not_exists,
            self.upsert,
        )


@dataclass(frozen=True)
class Delete:
    """Delete an item; an instance of a versioned entity also checks its version."""

    target: type[Entity] | Entity
    key: Mapping[str, Any] | None = None
    condition: Condition | None = None


@dataclass(frozen=True)
class ConditionCheck:
    """Require a condition of an item without changing it.

    An instance of a versioned entity also requires its version to be the stored one, so
    ``ConditionCheck(instance)`` alone means "this item is unchanged".
    """

    target: type[Entity] | Entity
    condition: Condition | None = None
    key: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Get:
    """Read one item in a `Session.transact_get`."""

    target: type[Entity] | Entity
    key: Mapping[str, Any] | None = None


TransactAction: TypeAlias = Put | Update | Delete | ConditionCheck


@dataclass(frozen=True)
class TransactPart:
    """One action as sent: its request fragment, the item it touches, and who asked for it."""

    kind: str
    cls: type[Entity]
    table: Table
    key: dict[str, Any]
    body: dict[str, Any]
    subject: Any
    stored: Entity | None = None

    @property
    def ident(self) -> KeyIdentity:
        """The identity of the item this action touches."""
        return key_identity(self.table.name, self.key)


def _subject(instance: Entity | None, cls: type[Entity], values: dict[str, Any]) -> Any:
    return instance if instance is not None else (cls, values)


def _expected_version(meta: EntityMeta[Entity], instance: Entity | None) -> int | None:
    if instance is None or meta.version_field is None:
        return None
    version: int | None = getattr(instance, meta.version_field)
    return version


def _delete_params(action: Delete | ConditionCheck) -> tuple[type[Entity], dict[str, Any], Any]:
    """Return the class, DeleteItem params and subject of a delete or a condition check.

    An instance of a versioned entity adds its version to the condition.
    """
    cls, instance, meta, values = keyed_target(action.target, action.key, {})
    params = delete_request(
        meta,
        values,
        condition=action.condition,
        expected_version=_expected_version(meta, instance),
    )
    return cls, params, _subject(instance, cls, values)


def _part(kind: str, cls: type[Entity], params: dict[str, Any], subject: Any) -> TransactPart:
    meta = meta_of(cls)
    body = {k: v for k, v in params.items() if k != "ReturnValues"}
    # The item as it stood when a condition failed comes back in the cancellation reason.
    if "ConditionExpression" in body:
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    key = primary_key_of(meta.table, body["Item"] if kind == "Put" else body["Key"])
    return TransactPart(kind, cls, meta.table, key, body, subject)


def _write_part(action: TransactAction) -> TransactPart:
    if isinstance(action, Put):
        params, stored = put_request(
            action.entity, create_only=action.create_only, condition=action.condition
        )
        part = _part("Put", type(action.entity), params, action.entity)
        return replace(part, stored=stored)
    if isinstance(action, Update):
        cls, instance, meta, values = keyed_target(action.target, action.key, {})
        plan = plan_update(
            meta, values, action.spec(), condition=action.condition, instance=instance
        )
        params = render_update(meta, plan)
        return _part("Update", cls, params, _subject(instance, cls, values))
    if isinstance(action, Delete):
        return _part("Delete", *_delete_params(action))
    if isinstance(action, ConditionCheck):
        # A conditional delete request carries exactly a condition check's key and expression.
        cls, params, subject = _delete_params(action)
        if "ConditionExpression" not in params:
            raise ValidationError(
                "transaction.condition-check-empty",
                f"ConditionCheck on {cls.__name__} has no condition; give condition= (or a "
                "versioned instance, whose version is then checked).",
                table=params["TableName"],
            )
        return _part("ConditionCheck", cls, params, subject)
    raise ValidationError(
        "transaction.action",
        f"A transaction action is a Put, Update, Delete or ConditionCheck, not {action!r}.",
    )


def _check_count(count: int, what: str) -> None:
    if count == 0:
        raise ValidationError("transaction.empty", f"A {what} needs at least one action.")
    if count > MAX_TRANSACTION_ACTIONS:
        raise ValidationError(
            "transaction.max-100",
            f"A {what} has {count} actions; DynamoDB allows at most {MAX_TRANSACTION_ACTIONS}. "
            "Split it (atomicity then holds within each part only).",
        )


def _check_distinct(parts: Sequence[TransactPart], what: str) -> None:
    seen: dict[KeyIdentity, int] = {}
    for i, part in enumerate(parts):
        first = seen.setdefault(part.ident, i)
        if first != i:
            key = item_from_wire(part.key)
            raise ValidationError(
                "transaction.duplicate-item",
                f"Actions {first} and {i} of the {what} both touch {part.cls.__name__} {key!r} "
                f"in table {part.table.name!r}; DynamoDB allows one action per item.",
                table=part.table.name,
                key=key,
            )


def _check_token(token: str) -> None:
    if not 1 <= len(token) <= 36:
        raise ValidationError(
            "transaction.token",
            f"A ClientRequestToken has 1 to 36 characters; {token!r} has {len(token)}.",
        )


def transact_write_plan(
    actions: Sequence[TransactAction], token: str | None
) -> tuple[dict[str, Any], list[TransactPart]]:
    """Return TransactWriteItems params and the part of each action; refuse a bad transaction."""
    _check_count(len(actions), "transaction")
    parts = [_write_part(a) for a in actions]
    _check_distinct(parts, "transaction")
    token = token if token is not None else str(uuid.uuid4())
    _check_token(token)
    params = {"TransactItems": [{p.kind: p.body} for p in parts], "ClientRequestToken": token}
    return params, parts


def transact_write_request(
    actions: Sequence[TransactAction], token: str | None = None
) -> dict[str, Any]:
    """Return TransactWriteItems params for these actions (no I/O); a uuid4 token if none."""
    return transact_write_plan(actions, token)[0]


def _get_parts(gets: Sequence[Get]) -> list[TransactPart]:
    parts: list[TransactPart] = []
    for get in gets:
        if not isinstance(get, Get):
            raise ValidationError(
                "transaction.action", f"transact_get takes Get values, not {get!r}."
            )
        cls, instance, meta, values = keyed_target(get.target, get.key, {})
        key = item_to_wire(meta.key(values))
        body = {"TableName": meta.table.name, "Key": key}
        parts.append(
            TransactPart("Get", cls, meta.table, key, body, _subject(instance, cls, values))
        )
    return parts


def transact_get_plan(gets: Sequence[Get]) -> tuple[dict[str, Any], list[TransactPart]]:
    """Return TransactGetItems params and the part of each read; refuse a bad read."""
    _check_count(len(gets), "transactional read")
    parts = _get_parts(gets)
    _check_distinct(parts, "transactional read")
    return {"TransactItems": [{"Get": p.body} for p in parts]}, parts


def transact_get_request(gets: Sequence[Get]) -> dict[str, Any]:
    """Return TransactGetItems params for these reads (no I/O)."""
    return transact_get_plan(gets)[0]
