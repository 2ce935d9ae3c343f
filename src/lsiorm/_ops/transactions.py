"""Transactions over typed entities: TransactWriteItems and TransactGetItems.

Each write action is a small value (:class:`Put`, :class:`Update`, :class:`Delete`,
:class:`ConditionCheck`) turned into its part of the request by the same builders as the
single-item operations, so keys, key-template rewrites, optimistic locking
and conditions mean exactly what they mean there.

Retries. A transaction is sent with one ``ClientRequestToken`` (a uuid4 unless given), the same
on every attempt, so a retry after a dropped connection cannot apply it twice. Besides what
:func:`~lsiorm._ops.retry.is_retryable` retries, two answers are retried here: a cancellation whose
every failing reason is transient (TransactionConflict, ProvisionedThroughputExceeded,
ThrottlingError; a cancelled transaction changed nothing), and TransactionInProgressException
(an earlier attempt with this token is still running). A cancellation with any other reason,
such as a failed condition, is raised at once with its reasons tied to the actions. Which
failures are retried is decided by a predicate given to the one retry loop of the request; the
errors themselves are left as they are.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from lsiorm._conditions import Condition
from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.item_decoding import decode_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire, item_to_wire
from lsiorm._ops.batch import KeyIdentity, key_identity, primary_key_of
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.retry import is_retryable
from lsiorm._ops.steps import Operation
from lsiorm._requests.items import delete_request, key_values, put_request
from lsiorm._requests.updates import UpdateSpec, update_request, update_spec
from lsiorm.errors import (
    CancellationReason,
    DynamoError,
    ItemCollectionSizeLimitError,
    TransactionCanceledError,
    ValidationError,
)

__all__ = [
    "MAX_TRANSACTION_ACTIONS",
    "ConditionCheck",
    "Delete",
    "Get",
    "Put",
    "TransactAction",
    "TransactWriteResult",
    "Update",
    "transact_get",
    "transact_get_request",
    "transact_write",
    "transact_write_request",
]

#: DynamoDB's limit on the actions of one transaction.
MAX_TRANSACTION_ACTIONS = 100

_TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError"}
)


@dataclass(frozen=True)
class Put:
    """Write an entity, as :func:`lsiorm.crud.put` would (``create_only``, version check)."""

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
    """Read one item in a :func:`transact_get`."""

    target: type[Entity] | Entity
    key: Mapping[str, Any] | None = None


TransactAction: TypeAlias = Put | Update | Delete | ConditionCheck


@dataclass(frozen=True)
class TransactWriteResult:
    """A committed transaction: its token, and per action the entity as stored.

    ``stored[i]`` is the written entity for a :class:`Put` (version bumped when versioned) and
    None for the other actions. ``response`` is DynamoDB's answer (consumed capacity, item
    collection metrics), kept whole.
    """

    token: str
    stored: tuple[Entity | None, ...]
    response: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The capacity the transaction consumed, per table, when the session's capacity meter
    #: asked for it; empty otherwise.
    consumed: tuple[ConsumedCapacity, ...] = ()


@dataclass(frozen=True)
class _Part:
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


def _target(
    target: type[Entity] | Entity, key: Mapping[str, Any] | None
) -> tuple[type[Entity], Entity | None, EntityMeta, dict[str, Any]]:
    cls = target if isinstance(target, type) else type(target)
    instance = None if isinstance(target, type) else target
    meta = meta_of(cls)
    values = key_values(meta, instance if instance is not None else key, {})
    return cls, instance, meta, values


def _subject(instance: Entity | None, cls: type[Entity], values: dict[str, Any]) -> Any:
    return instance if instance is not None else (cls, values)


def _expected_version(meta: EntityMeta, instance: Entity | None) -> int | None:
    if instance is None or meta.version_field is None:
        return None
    version: int | None = getattr(instance, meta.version_field)
    return version


def _part(kind: str, cls: type[Entity], params: dict[str, Any], subject: Any) -> _Part:
    meta = meta_of(cls)
    body = {k: v for k, v in params.items() if k != "ReturnValues"}
    # The item as it stood when a condition failed comes back in the cancellation reason.
    if "ConditionExpression" in body:
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    key = primary_key_of(meta.table, body["Item"] if kind == "Put" else body["Key"])
    return _Part(kind, cls, meta.table, key, body, subject)


def _write_part(action: TransactAction) -> _Part:
    if isinstance(action, Put):
        params, stored = put_request(
            action.entity, create_only=action.create_only, condition=action.condition
        )
        part = _part("Put", type(action.entity), params, action.entity)
        return replace(part, stored=stored)
    if isinstance(action, Update):
        cls, instance, meta, values = _target(action.target, action.key)
        params = update_request(
            meta, values, action.spec(), condition=action.condition, instance=instance
        )
        return _part("Update", cls, params, _subject(instance, cls, values))
    if isinstance(action, Delete):
        cls, instance, meta, values = _target(action.target, action.key)
        params = delete_request(
            meta,
            values,
            condition=action.condition,
            expected_version=_expected_version(meta, instance),
        )
        return _part("Delete", cls, params, _subject(instance, cls, values))
    if isinstance(action, ConditionCheck):
        cls, instance, meta, values = _target(action.target, action.key)
        # A conditional delete request carries exactly a condition check's key and expression.
        params = delete_request(
            meta,
            values,
            condition=action.condition,
            expected_version=_expected_version(meta, instance),
        )
        if "ConditionExpression" not in params:
            raise ValidationError(
                "transaction.condition-check-empty",
                f"ConditionCheck on {cls.__name__} has no condition; give condition= (or a "
                "versioned instance, whose version is then checked).",
                table=meta.table.name,
            )
        return _part("ConditionCheck", cls, params, _subject(instance, cls, values))
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


def _check_distinct(parts: Sequence[_Part], what: str) -> None:
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


def _write_plan(
    actions: Sequence[TransactAction], token: str | None
) -> tuple[dict[str, Any], list[_Part]]:
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
    return _write_plan(actions, token)[0]


def _get_parts(gets: Sequence[Get]) -> list[_Part]:
    parts: list[_Part] = []
    for get in gets:
        if not isinstance(get, Get):
            raise ValidationError(
                "transaction.action", f"transact_get takes Get values, not {get!r}."
            )
        cls, instance, meta, values = _target(get.target, get.key)
        key = item_to_wire(meta.key(values))
        body = {"TableName": meta.table.name, "Key": key}
        parts.append(_Part("Get", cls, meta.table, key, body, _subject(instance, cls, values)))
    return parts


def _get_plan(gets: Sequence[Get]) -> tuple[dict[str, Any], list[_Part]]:
    _check_count(len(gets), "transactional read")
    parts = _get_parts(gets)
    _check_distinct(parts, "transactional read")
    return {"TransactItems": [{"Get": p.body} for p in parts]}, parts


def transact_get_request(gets: Sequence[Get]) -> dict[str, Any]:
    """Return TransactGetItems params for these reads (no I/O)."""
    return _get_plan(gets)[0]


# -- sending -----------------------------------------------------------------------------------


def _transient(exc: BaseException) -> bool:
    """Return True for what a transaction retries: see the module doc."""
    if is_retryable(exc):
        return True
    if isinstance(exc, TransactionCanceledError):
        failed = {r.code for r in exc.failed}
        return bool(failed) and failed <= _TRANSIENT_REASONS
    return isinstance(exc, DynamoError) and exc.code == "TransactionInProgressException"


def _send(
    ctx: Context, operation: str, params: dict[str, Any], parts: Sequence[_Part]
) -> Operation[dict[str, Any]]:
    tables = tuple({p.table.name: p.table for p in parts}.values())
    try:
        return (yield from call(ctx, operation, params, tables, retry_if=_transient))
    except TransactionCanceledError as exc:
        tied = _tied(exc, parts)
        full = _collection_full(tied, parts)
        if full is not None:
            raise full from tied
        raise tied from exc


def _collection_full(
    exc: TransactionCanceledError, parts: Sequence[_Part]
) -> ItemCollectionSizeLimitError | None:
    """Return the typed 10 GB error when an action was cancelled for its item collection.

    Its ``__cause__`` is the cancellation, with every action's reason; like any
    ItemCollectionSizeLimitError it is never retried.
    """
    for reason in exc.failed:
        if reason.code != "ItemCollectionSizeLimitExceeded" or reason.index >= len(parts):
            continue
        part = parts[reason.index]
        attribute = part.table.partition_key.name
        key = {attribute: part.key[attribute]} if attribute in part.key else None
        return ItemCollectionSizeLimitError(
            f"action {reason.index} ({part.kind} {part.cls.__name__}) would grow an item "
            f"collection past DynamoDB's 10 GB limit: {reason.message}",
            collection_key=key,
            code="ItemCollectionSizeLimitExceeded",
            operation=exc.operation,
            table=part.table.name,
            response=exc.response,
        )
    return None


def _old_item(part: _Part, item: Any) -> Entity | None:
    if not isinstance(item, Mapping):
        return None
    try:
        return decode_item(part.table, item, only=(part.cls,))
    except ValueError:  # a stored item that no longer fits the model
        return None


def _tied(exc: TransactionCanceledError, parts: Sequence[_Part]) -> TransactionCanceledError:
    """Return the cancellation with each reason tied to its action's entity and old item."""
    reasons = []
    for i, reason in enumerate(exc.reasons):
        part = parts[i] if i < len(parts) else None
        reasons.append(
            CancellationReason(
                i,
                reason.code,
                reason.message,
                entity=part.subject if part is not None else None,
                item=_old_item(part, reason.item) if part is not None else None,
            )
        )
    failed = [r for r in reasons if r.code not in ("None", "")]
    what = "; ".join(
        f"action {r.index} ({parts[r.index].kind} {parts[r.index].cls.__name__}): {r.code}"
        for r in failed
        if r.index < len(parts)
    )
    return TransactionCanceledError(
        f"Transaction cancelled by {len(failed)} of {len(parts)} actions: "
        f"{what or 'no reason given'}.",
        reasons=reasons,
        code=exc.code,
        operation=exc.operation,
        table=exc.table,
        key=exc.key,
        response=exc.response,
    )


def transact_write(
    ctx: Context, actions: Sequence[TransactAction], token: str | None = None
) -> Operation[TransactWriteResult]:
    """Apply all actions atomically, or none.

    Raises :class:`~lsiorm.errors.TransactionCanceledError` when DynamoDB cancels it; its
    ``reasons[i].entity`` is action ``i``'s entity (or ``(class, key fields)`` when given by
    key) and ``reasons[i].item`` the stored item, decoded, when a condition failed.
    """
    params, parts = _write_plan(actions, token)
    response = yield from _send(ctx, "TransactWriteItems", params, parts)
    return TransactWriteResult(
        params["ClientRequestToken"], tuple(p.stored for p in parts), response
    )


def transact_get(ctx: Context, gets: Sequence[Get]) -> Operation[list[Entity | None]]:
    """Read items as one consistent snapshot; None where an item is absent or another type."""
    params, parts = _get_plan(gets)
    response = yield from _send(ctx, "TransactGetItems", params, parts)
    out: list[Entity | None] = []
    for part, answer in zip(parts, response.get("Responses") or [], strict=False):
        item = answer.get("Item")
        out.append(decode_item(part.table, item, only=(part.cls,)) if item else None)
    out.extend([None] * (len(parts) - len(out)))
    return out
