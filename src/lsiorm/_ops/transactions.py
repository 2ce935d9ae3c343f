"""Transactions over typed entities: sending TransactWriteItems and TransactGetItems.

The requests are built by `lsiorm._requests.transactions`. Retries. A transaction is sent
with one ``ClientRequestToken`` (a uuid4 unless given), the same on every attempt, so a retry
after a dropped connection cannot apply it twice. Besides what
`is_retryable` retries, two answers are retried here: a cancellation whose
every failing reason is transient (TransactionConflict, ProvisionedThroughputExceeded,
ThrottlingError; a cancelled transaction changed nothing), and TransactionInProgressException
(an earlier attempt with this token is still running). A cancellation with any other reason,
such as a failed condition, is raised at once with its reasons tied to the actions. Which
failures are retried is decided by a predicate given to the one retry loop of the request; the
errors themselves are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.rekeying import ensure_moved, old_wire_key
from lsiorm._ops.retry import is_retryable
from lsiorm._ops.service_errors import failed_item, restated
from lsiorm._ops.steps import Operation
from lsiorm._requests.limits import MAX_TRANSACTION_ACTIONS
from lsiorm._requests.transactions import (
    ConditionCheck,
    Delete,
    Get,
    Put,
    TransactAction,
    TransactPart,
    Update,
    transact_get_plan,
    transact_get_request,
    transact_write_plan,
    transact_write_request,
)
from lsiorm.errors import (
    CancellationReason,
    DynamoError,
    ItemCollectionSizeLimitError,
    TransactionCanceledError,
)

# lsiorm 0.1's ``lsiorm.transactions`` resolves to this module (see _compat), so the names it
# had stay importable here; the action values and request builders among them live in
# `lsiorm._requests.transactions`.
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

_TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError"}
)


@dataclass(frozen=True)
class TransactWriteResult:
    """A committed transaction: its token, and per action the entity as stored.

    ``stored[i]`` is the written entity for a [`Put`][lsiorm.Put] (version bumped when
    versioned) and None for the other actions. ``response`` is DynamoDB's answer (consumed
    capacity, item collection metrics), kept whole.
    """

    token: str
    stored: tuple[Entity | None, ...]
    response: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The capacity the transaction consumed, per table, when the session's capacity meter
    #: asked for it; empty otherwise.
    consumed: tuple[ConsumedCapacity, ...] = ()


def _transient(exc: BaseException) -> bool:
    """Return True for what a transaction retries: see the module doc."""
    if is_retryable(exc):
        return True
    if isinstance(exc, TransactionCanceledError):
        failed = {r.code for r in exc.failed}
        return bool(failed) and failed <= _TRANSIENT_REASONS
    return isinstance(exc, DynamoError) and exc.code == "TransactionInProgressException"


def _send(
    ctx: Context, operation: str, params: dict[str, Any], parts: Sequence[TransactPart]
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
    exc: TransactionCanceledError, parts: Sequence[TransactPart]
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


def _tied(exc: TransactionCanceledError, parts: Sequence[TransactPart]) -> TransactionCanceledError:
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
                item=failed_item(part.table, reason.item) if part is not None else None,
            )
        )
    failed = [r for r in reasons if r.code not in ("None", "")]
    what = "; ".join(
        f"action {r.index} ({parts[r.index].kind} {parts[r.index].cls.__name__}): {r.code}"
        for r in failed
        if r.index < len(parts)
    )
    return restated(
        exc,
        TransactionCanceledError,
        f"Transaction cancelled by {len(failed)} of {len(parts)} actions: "
        f"{what or 'no reason given'}.",
        reasons=reasons,
    )


def transact_write(
    ctx: Context, actions: Sequence[TransactAction], token: str | None = None
) -> Operation[TransactWriteResult]:
    """Apply all actions atomically, or none.

    Raises `TransactionCanceledError` when DynamoDB cancels it; its
    ``reasons[i].entity`` is action ``i``'s entity (or ``(class, key fields)`` when given by
    key) and ``reasons[i].item`` the stored item, decoded, when a condition failed.
    """
    params, parts = transact_write_plan(actions, token)
    for part in parts:
        # An item of an entity being re-keyed is moved to its new key form first.
        meta = meta_of(part.cls)
        if meta.moves_when_rekeyed:
            yield from ensure_moved(ctx, meta, _key_fields(part))
    response = yield from _send(ctx, "TransactWriteItems", params, parts)
    return TransactWriteResult(
        params["ClientRequestToken"], tuple(p.stored for p in parts), response
    )


def _key_fields(part: TransactPart) -> dict[str, Any]:
    """The key field values an action was given (its entity's, or the ones passed with it)."""
    meta = meta_of(part.cls)
    if isinstance(part.subject, tuple):
        return dict(part.subject[1])
    return {f: getattr(part.subject, f) for f in meta.primary_fields}


def transact_get(ctx: Context, gets: Sequence[Get]) -> Operation[list[Entity | None]]:
    """Read items as one consistent snapshot; None where an item is absent or another type.

    Items of entities being re-keyed that are not found are read again under their keys' old
    form, in a second snapshot.
    """
    params, parts = transact_get_plan(gets)
    response = yield from _send(ctx, "TransactGetItems", params, parts)
    out = _decoded(parts, response)
    for n, (part, found) in enumerate(zip(parts, out, strict=True)):
        if found is not None and not meta_of(part.cls).holds_key(found, _key_fields(part)):
            out[n] = None  # another item's plain key text: not the one asked for
    again: dict[int, TransactPart] = {}
    for n, (part, found) in enumerate(zip(parts, out, strict=True)):
        meta = meta_of(part.cls)
        old_key = old_wire_key(meta, _key_fields(part)) if found is None else None
        if old_key is not None:
            again[n] = replace(part, key=old_key, body={**part.body, "Key": old_key})
    if again:
        retry = list(again.values())
        params = {"TransactItems": [{"Get": p.body} for p in retry]}
        response = yield from _send(ctx, "TransactGetItems", params, retry)
        for n, found in zip(again, _decoded(retry, response), strict=True):
            out[n] = found
    return out


def _decoded(parts: Sequence[TransactPart], response: Mapping[str, Any]) -> list[Entity | None]:
    out: list[Entity | None] = []
    for part, answer in zip(parts, response.get("Responses") or [], strict=False):
        item = answer.get("Item")
        out.append(decode_stored(part.table, item, only=(part.cls,)) if item else None)
    out.extend([None] * (len(parts) - len(out)))
    return out
