"""Single-item operations (put, get, update, delete): send the built request, type the outcome.

Each operation generator sends its request through the pipeline and decodes the response; the
sync and async sessions run the very same generators.

Outcomes under lost answers. An attempt can fail after its request reached DynamoDB: the
connection dropped after sending, a timeout, a 5xx answer. Such a failure is *ambiguous*: the
write may have been applied. What happens next depends on the write (docs/reliability.md):

* a write that gives the same result when applied twice (a plain put, a delete, an update that
  only SETs and REMOVEs) is simply sent again;
* a conditional write whose condition then fails is checked against the item DynamoDB returns
  with the failure (``ReturnValuesOnConditionCheckFailure=ALL_OLD``): if the stored item is
  the one this call wrote, the call succeeded;
* an update that ADDs to a number would be applied twice by a plain resend. By default it is
  not resent after an ambiguous failure; `OutcomeUnknownError` says so.
  With ``idempotency="transaction"`` it is sent as a one-action TransactWriteItems with a
  ClientRequestToken, which DynamoDB applies once however often it is resent within ten
  minutes (at twice the write units, plus one consistent read for the result);
* when the retries run out after an ambiguous failure, the outcome is unknown: the last
  error is then a TransportError or InternalServerError (which say so by their kind), or, if
  the last attempt was throttled, an OutcomeUnknownError.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.wire import same_item
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.protection import kept_references
from lsiorm._ops.rekeying import ensure_moved, old_wire_key
from lsiorm._ops.service_errors import failed_item, restated
from lsiorm._ops.steps import Operation
from lsiorm._requests.items import delete_request, get_request, moving_put, put_request
from lsiorm.errors import (
    ConditionFailedError,
    DynamoError,
    InternalServerError,
    NotFoundError,
    OutcomeUnknownError,
    RetryableError,
    StaleVersionError,
    TransactionCanceledError,
    TransportError,
    ValidationError,
)

if TYPE_CHECKING:
    # Updates and transactions are imported where they run: a get or a put does not need them.
    from lsiorm._conditions import Condition
    from lsiorm._requests.update_plan import UpdateSpec

__all__ = [
    "DeleteResult",
    "Idempotency",
    "delete_result",
    "deleted_item",
    "get",
    "is_ambiguous",
    "put",
    "update",
]

E = TypeVar("E", bound=Entity)

Idempotency = Literal["none", "transaction"]
"""How an update that ADDs to a number is kept from being applied twice (see module doc)."""

# Transport failures that happen before the request leaves: it cannot have been applied.
_NOT_SENT = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ProxyConnectionError",
        "ClientConnectorError",
    }
)


def is_ambiguous(exc: BaseException) -> bool:
    """Return True when a failed attempt may nevertheless have been applied by DynamoDB."""
    if isinstance(exc, TransportError):
        return exc.code not in _NOT_SENT
    return isinstance(exc, InternalServerError)


@dataclass(frozen=True)
class DeleteResult(Generic[E]):
    """What a delete did: ``deleted`` is True, False, or None when it cannot be known.

    ``item`` is the entity the call deleted (None when nothing was deleted, or when an earlier
    attempt of the same call deleted it and its answer was lost: then ``deleted`` is None).
    """

    item: E | None
    deleted: bool | None


class _Attempts:
    """Watches the failed attempts of one write: was any of them ambiguous?"""

    def __init__(
        self,
        operation: str,
        params: dict[str, Any],
        *,
        resend: bool = True,
        effect: tuple[Any, ...] | None = None,
    ) -> None:
        self.operation = operation
        self.params = params
        self.resend = resend
        #: What an update does to the item (its plan's actions), for a session that must know.
        self.effect = effect
        self.ambiguous: DynamoError | None = None

    def __call__(self, exc: DynamoError) -> None:
        if not is_ambiguous(exc):
            return
        self.ambiguous = exc
        if not self.resend:
            raise self.unknown(
                exc,
                "it may have been applied, and sending it again could apply it twice (it "
                "ADDs to a number). Read the item to see, or pass idempotency='transaction'",
            ) from exc

    def unknown(self, exc: DynamoError, why: str) -> OutcomeUnknownError:
        return restated(
            exc,
            OutcomeUnknownError,
            f"the outcome is unknown: {why}. Last failure: {exc}",
            request={"operation": self.operation, "params": self.params},
            operation=self.operation,
        )


def _send(ctx: Context, meta: EntityMeta[Entity], attempts: _Attempts) -> Operation[dict[str, Any]]:
    try:
        return (
            yield from call(
                ctx,
                attempts.operation,
                attempts.params,
                (meta.table,),
                on_error=attempts,
                effect=attempts.effect,
            )
        )
    except RetryableError as exc:
        # A last failure that is itself ambiguous (TransportError, InternalServerError) already
        # says the outcome is unknown; a throttle after an ambiguous failure would not.
        if attempts.ambiguous is not None and not is_ambiguous(exc):
            raise attempts.unknown(
                exc, "an attempt may have been applied before the retries ran out"
            ) from exc
        raise


def _same_item(stored: Any, ours: Mapping[str, Any]) -> bool:
    return isinstance(stored, Mapping) and same_item(*kept_references(stored, ours))


def put(
    ctx: Context, entity: E, *, create_only: bool = False, condition: Condition | None = None
) -> Operation[E]:
    """Write an entity; return it as stored."""
    params, stored = put_request(entity, create_only=create_only, condition=condition)
    meta = meta_of(entity)
    if meta.moves_when_rekeyed:
        old_key = old_wire_key(meta, {f: getattr(entity, f) for f in meta.primary_fields})
        if old_key is not None and "ConditionExpression" not in params:
            # The new item and the old key's deletion in one transaction: no twin is left.
            moving = moving_put(params, old_key, token=uuid.uuid4().hex)
            yield from call(ctx, "TransactWriteItems", moving, (meta.table,))
            return cast("E", stored)
        yield from ensure_moved(ctx, meta, {f: getattr(entity, f) for f in meta.primary_fields})
    if "ConditionExpression" in params:
        params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    attempts = _Attempts("PutItem", params)
    try:
        yield from _send(ctx, meta, attempts)
    except ConditionFailedError as exc:
        found = exc.response.get("Item")
        if attempts.ambiguous is not None and _same_item(found, params["Item"]):
            # An earlier attempt of this call wrote the item; its answer was lost.
            return cast("E", stored)
        exc.item = failed_item(meta.table, found)
        if meta.version_field is not None:
            expected = getattr(entity, meta.version_field) or 0
            if expected and _version_differs(meta, found, expected):
                raise _stale(meta, exc, expected, found) from exc
            if not expected and found:
                raise restated(
                    exc,
                    ConditionFailedError,
                    f"A {meta.cls.__name__} with this key already exists: a new instance "
                    f"({meta.version_field}=0) is written only where there is none; read the "
                    "stored one (the error's item) to write over it.",
                    item=exc.item,
                ) from exc
        raise
    return cast("E", stored)  # put_request returns a copy of the same class


def _version_differs(meta: EntityMeta[Entity], stored: Any, expected: Any) -> bool:
    """Whether the item a failed condition found (its ``ALL_OLD``) is gone or holds another
    version than ``expected``: then the version check failed; else only the caller's own
    condition did."""
    if not isinstance(stored, Mapping) or not stored or meta.version_field is None:
        return True
    held = stored.get(meta.attributes[meta.version_field])
    return not isinstance(held, Mapping) or held.get("N") != str(expected or 0)


def _stale(
    meta: EntityMeta[Entity], exc: DynamoError, expected: Any, stored: Any
) -> StaleVersionError:
    """The version check failed: say which version the write expected and which is stored.

    ``stored`` is the item the failed condition found, on the wire or already decoded (a
    transaction's cancellation reason), or None when there is none.
    """
    item = (
        stored if stored is None or isinstance(stored, Entity) else failed_item(meta.table, stored)
    )
    held = _held_version(meta, stored)
    now = "the item is gone" if held is None else f"it holds {meta.version_field}={held}"
    return restated(
        exc,
        StaleVersionError,
        f"{meta.cls.__name__} was changed by someone else: expected stored "
        f"{meta.version_field}={expected}, but {now}",
        item=item,
        expected_version=expected,
        stored_version=held,
    )


def _held_version(meta: EntityMeta[Entity], stored: Any) -> int | None:
    """The version a stored item holds (wire or entity), or None when there is no item."""
    if meta.version_field is None or not stored:
        return None
    if isinstance(stored, Entity):
        held = getattr(stored, meta.version_field, None)
        return held if isinstance(held, int) else None
    av = stored.get(meta.attributes[meta.version_field]) if isinstance(stored, Mapping) else None
    text = av.get("N") if isinstance(av, Mapping) else None
    return int(text) if isinstance(text, str) and text.lstrip("-").isdigit() else None


def get(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    *,
    consistent: bool = False,
    required: bool = False,
) -> Operation[E | None]:
    """Read one item by key; return None (or raise NotFoundError if required) when absent.

    While the entity is re-keyed (``rekeying_from``), a miss is read again under the key's old
    form.
    """
    meta = meta_of(cls)
    params = get_request(meta, values, consistent=consistent)
    response = yield from call(ctx, "GetItem", params, (meta.table,))
    item = response.get("Item")
    if not item and meta.moves_when_rekeyed:
        old_key = old_wire_key(meta, values)
        if old_key is not None:
            response = yield from call(ctx, "GetItem", {**params, "Key": old_key}, (meta.table,))
            item = response.get("Item")
    found = decode_stored(meta.table, item, only=(cls,)) if item else None
    if found is not None and not meta.holds_key(found, values):
        found = None  # plain keys of other values can be the same text: not the item asked for
    if found is None and required:
        raise NotFoundError(
            f"No {cls.__name__} with key {dict(values)!r} in table {meta.table.name!r}.",
            table=meta.table.name,
            key=params["Key"],
        )
    return cast("E | None", found)  # decode_stored(only=(cls,)) gives cls or None


def delete_result(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    *,
    condition: Condition | None = None,
    expected_version: int | None = None,
) -> Operation[DeleteResult[E]]:
    """Delete one item by key; say whether this call deleted it, and what it deleted."""
    meta = meta_of(cls)
    yield from ensure_moved(ctx, meta, values)
    params = delete_request(meta, values, condition=condition, expected_version=expected_version)
    if "ConditionExpression" in params:
        params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    attempts = _Attempts("DeleteItem", params)
    try:
        response = yield from _send(ctx, meta, attempts)
    except ConditionFailedError as exc:
        found = exc.response.get("Item")
        if attempts.ambiguous is not None and not found:
            # The item is gone; an earlier attempt of this call may have deleted it.
            return DeleteResult(None, None)
        exc.item = failed_item(meta.table, found)
        if expected_version is not None and _version_differs(meta, found, expected_version):
            raise _stale(meta, exc, expected_version, found) from exc
        raise
    old = response.get("Attributes")
    if old:
        return DeleteResult(cast("E | None", decode_stored(meta.table, old, only=(cls,))), True)
    return DeleteResult(None, None if attempts.ambiguous is not None else False)


def deleted_item(result: DeleteResult[E], target: type[E] | E) -> E | None:
    """Return what a delete deleted, or None; raise OutcomeUnknownError when that is unknown."""
    if result.deleted is None:
        meta = meta_of(target)
        raise OutcomeUnknownError(
            "the outcome is unknown: an attempt whose answer was lost may have deleted the "
            "item, which is gone now; what it held cannot be recovered",
            request={"operation": "DeleteItem"},
            operation="DeleteItem",
            table=meta.table.name,
        )
    return result.item


def update(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    spec: UpdateSpec,
    *,
    condition: Condition | None = None,
    instance: Entity | None = None,
    idempotency: Idempotency = "none",
) -> Operation[E]:
    """Update one existing item; return it as stored after the update."""
    from lsiorm._requests.update_effect import applied
    from lsiorm._requests.update_expression import render_update
    from lsiorm._requests.update_plan import plan_update

    meta = meta_of(cls)
    if idempotency not in ("none", "transaction"):
        raise ValidationError(
            "update.idempotency",
            f"idempotency is 'none' or 'transaction', not {idempotency!r}.",
            table=meta.table.name,
        )
    plan = plan_update(meta, values, spec, condition=condition, instance=instance)
    params = render_update(meta, plan)
    yield from ensure_moved(ctx, meta, values)
    additive = spec.additive
    if additive and idempotency == "transaction":
        return (yield from _update_once(ctx, cls, values, spec, condition, instance))
    attempts = _Attempts("UpdateItem", params, resend=not additive, effect=plan.actions)
    try:
        response = yield from _send(ctx, meta, attempts)
    except ConditionFailedError as exc:
        old = exc.response.get("Item")
        if not old:
            if spec.upsert:
                raise  # only the caller's own condition can fail on a missing item
            raise NotFoundError(
                f"No {cls.__name__} with key {dict(values)!r} in table {meta.table.name!r} "
                "to update.",
                table=meta.table.name,
                key=params["Key"],
            ) from exc
        if attempts.ambiguous is not None and not additive and applied(plan, old):
            # An earlier attempt of this call made these changes; its answer was lost.
            return cast("E", decode_stored(meta.table, old, only=(cls,)))
        exc.item = failed_item(meta.table, old)
        stored_type = old.get(meta.table.type_attribute)
        if spec.upsert and stored_type != ({"S": meta.type_name} if meta.typed else None):
            raise restated(
                exc,
                ConditionFailedError,
                f"An upsert of {cls.__name__} found an item of another type at key "
                f"{dict(values)!r}; it was left unchanged.",
                item=exc.item,
            ) from exc
        if instance is not None and meta.version_field is not None:
            expected = getattr(instance, meta.version_field)
            if _version_differs(meta, old, expected):
                raise _stale(meta, exc, expected, old) from exc
        raise
    found = decode_stored(meta.table, response.get("Attributes") or {}, only=(cls,))
    return cast("E", found)


def _update_once(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    spec: UpdateSpec,
    condition: Condition | None,
    instance: Entity | None,
) -> Operation[E]:
    """Apply an update as a one-action transaction (applied once), then read the result."""
    from lsiorm._ops.transactions import transact_write
    from lsiorm._requests.transactions import Update

    meta = meta_of(cls)
    action = Update(
        instance if instance is not None else cls,
        None if instance is not None else dict(values),
        set=dict(spec.set),
        remove=tuple(spec.remove),
        add=dict(spec.add or {}),
        delete=dict(spec.delete or {}),
        append=dict(spec.append or {}),
        prepend=dict(spec.prepend or {}),
        if_not_exists=dict(spec.if_not_exists or {}),
        upsert=spec.upsert,
        condition=condition,
    )
    try:
        yield from transact_write(ctx, [action])
    except TransactionCanceledError as exc:
        reason = exc.reasons[0] if exc.reasons else None
        if reason is None or reason.code != "ConditionalCheckFailed":
            raise
        old = reason.item
        if old is None:
            raise NotFoundError(
                f"No {cls.__name__} with key {dict(values)!r} in table {meta.table.name!r} "
                "to update.",
                table=meta.table.name,
                key=meta.key(values),
            ) from exc
        if instance is not None and meta.version_field is not None:
            expected = getattr(instance, meta.version_field) or 0
            if (getattr(old, meta.version_field) or 0) != expected:
                raise _stale(meta, exc, expected, old) from exc
        raise ConditionFailedError(
            f"the condition of this update of {cls.__name__} is false",
            item=old,
            code="ConditionalCheckFailedException",
            operation="TransactWriteItems",
            table=meta.table.name,
            key=meta.key(values),
            response=exc.response,
        ) from exc
    found = yield from get(ctx, cls, values, consistent=True)
    if found is None:
        raise NotFoundError(
            f"{cls.__name__} {dict(values)!r} was updated, then deleted before it could be read.",
            table=meta.table.name,
            key=meta.key(values),
        )
    return found
