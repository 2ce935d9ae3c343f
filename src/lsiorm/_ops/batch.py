"""Batch writes and batch gets: sending the chunks, and retries of unprocessed items.

A batch is checked and split into chunks (25 writes or 100 keys, within 16 MB) without I/O by
`lsiorm._requests.batch`. Each chunk is one
sub-operation that sends its requests and re-sends whatever DynamoDB hands back as
UnprocessedItems / UnprocessedKeys, with the session's backoff, until nothing is left or the
retry policy stops. The chunks run as one `Gather` step: one by one under the
sync driver, concurrently (bounded) under the async one.

A chunk has one retry budget. Its requests go through `lsiorm._ops.pipeline.send_once`
(hooks, no retry), and one `lsiorm._ops.retry.run_with_retries` loop re-sends both a
failed request (throttling, 5xx, dropped connection) and a partly processed one. So a chunk never
sends more than ``policy.max_attempts`` requests, instead of ``max_attempts`` squared with two
nested loops. Query hydration reads base items through the same chunk runner (`read_keys`).

When the policy stops, or a chunk fails with an error that is never retried, the items that were
not done are reported, as the very objects the caller passed in, by
`BatchWriteIncompleteError` / `BatchGetIncompleteError`.
Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, cast

from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context, send_once
from lsiorm._ops.retry import run_with_retries
from lsiorm._ops.steps import Gather, Operation
from lsiorm._requests.batch import (
    MAX_BATCH_GET,
    MAX_BATCH_WRITE,
    MAX_REQUEST_BYTES,
    BatchEntry,
    DeleteTarget,
    GetKey,
    KeyIdentity,
    batch_get_requests,
    batch_write_requests,
    chunked,
    get_chunks,
    get_entries,
    get_params,
    key_entries,
    key_identity,
    old_form_entries,
    primary_key_of,
    read_key_values,
    write_chunks,
    write_entries,
    write_params,
)
from lsiorm.errors import (
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    DynamoError,
    ValidationError,
)

# lsiorm 0.1's ``lsiorm.batch`` resolves to this module (see _compat), so the names it had stay
# importable here; the request builders among them live in `lsiorm._requests.batch`.
__all__ = [
    "MAX_BATCH_GET",
    "MAX_BATCH_WRITE",
    "MAX_REQUEST_BYTES",
    "BatchWriteResult",
    "DeleteTarget",
    "GetKey",
    "KeyIdentity",
    "KeyReads",
    "batch_get",
    "batch_get_requests",
    "batch_write",
    "batch_write_requests",
    "chunked",
    "key_identity",
    "primary_key_of",
    "read_keys",
]

E = TypeVar("E", bound=Entity)


@dataclass(frozen=True)
class BatchWriteResult:
    """What a finished batch write did: requests written and API calls it took."""

    written: int
    calls: int
    #: The capacity the batch consumed, per table, when the session's capacity meter asked
    #: for it; empty otherwise.
    consumed: tuple[ConsumedCapacity, ...] = ()


@dataclass
class _ChunkOutcome:
    left: list[BatchEntry]
    calls: int = 0
    error: DynamoError | None = None
    found: dict[int, Any] = field(default_factory=dict)


_Take: TypeAlias = Callable[
    [Mapping[str, Any], Sequence[BatchEntry], dict[int, Any]], list[BatchEntry]
]
_Decode: TypeAlias = Callable[[BatchEntry, Mapping[str, Any]], Any]
"""Turns an item read for an entry into the value handed back (None: counts as not found)."""


def _matching(
    pending: Sequence[BatchEntry], listed: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[BatchEntry]:
    """Return the pending entries whose keys appear in ``listed`` ({table: [wire keys]}).

    They keep the order DynamoDB listed them in, so the next attempt re-sends exactly what it
    handed back; reports sort them into the caller's order.
    """
    by_ident = {e.ident: e for e in pending}
    out: list[BatchEntry] = []
    for table_name, wire_keys in listed.items():
        for wire_key in wire_keys:
            entry = by_ident.pop(key_identity(table_name, wire_key), None)
            if entry is not None:
                out.append(entry)
    return out


def _take_writes(
    response: Mapping[str, Any], pending: Sequence[BatchEntry], found: dict[int, Any]
) -> list[BatchEntry]:
    unprocessed = response.get("UnprocessedItems")
    if not unprocessed:
        return []  # the common case: everything was written
    tables = {e.table.name: e.table for e in pending}
    listed: dict[str, list[Mapping[str, Any]]] = {}
    for table_name, requests in unprocessed.items():
        table = tables.get(table_name)
        if table is None:
            continue
        for request in requests:
            if "PutRequest" in request:
                key = primary_key_of(table, request["PutRequest"]["Item"])
            else:
                key = request["DeleteRequest"]["Key"]
            listed.setdefault(table_name, []).append(key)
    return _matching(pending, listed)


def _take_gets(decode: _Decode) -> _Take:
    """Return the response reader of a batch get that hands back ``decode(entry, item)``."""

    def take(
        response: Mapping[str, Any], pending: Sequence[BatchEntry], found: dict[int, Any]
    ) -> list[BatchEntry]:
        return _take_read(response, pending, found, decode)

    return take


def _take_read(
    response: Mapping[str, Any],
    pending: Sequence[BatchEntry],
    found: dict[int, Any],
    decode: _Decode,
) -> list[BatchEntry]:
    tables = {e.table.name: e.table for e in pending}
    by_ident = {e.ident: e for e in pending}
    for table_name, items in (response.get("Responses") or {}).items():
        table = tables.get(table_name)
        if table is None:
            continue
        for item in items:
            entry = by_ident.get(key_identity(table_name, primary_key_of(table, item)))
            if entry is None:
                continue
            value = decode(entry, item)
            if value is not None:
                found[entry.order] = value
    listed = {
        name: list(spec.get("Keys") or ())
        for name, spec in (response.get("UnprocessedKeys") or {}).items()
    }
    return _matching(pending, listed)


def _run_chunk(
    ctx: Context,
    operation: str,
    entries: list[BatchEntry],
    params_of: Callable[[Sequence[BatchEntry]], dict[str, Any]],
    take: _Take,
) -> Operation[_ChunkOutcome]:
    """Send one chunk, then its unprocessed remainder, until done or the policy stops."""
    outcome = _ChunkOutcome(list(entries))
    tables = tuple({e.table.name: e.table for e in entries}.values())

    def attempt() -> Operation[list[BatchEntry]]:
        outcome.calls += 1
        response = yield from send_once(ctx, operation, params_of(outcome.left), tables)
        outcome.left = take(response, outcome.left, outcome.found)
        return outcome.left

    try:
        yield from run_with_retries(ctx.retry, attempt, retry_result=bool, what=operation)
    except DynamoError as exc:
        # Also a request that failed for good: its items are reported, never dropped.
        outcome.error = exc
    return outcome


def _check_concurrency(concurrency: int) -> None:
    if concurrency < 1:
        raise ValidationError(
            "batch.concurrency", f"concurrency must be at least 1, got {concurrency}."
        )


def batch_write(
    ctx: Context,
    puts: Sequence[Entity] = (),
    deletes: Sequence[DeleteTarget] = (),
    *,
    concurrency: int = 8,
) -> Operation[BatchWriteResult]:
    """Put and delete many items with BatchWriteItem; raise if any could not be done.

    Entities with optimistic locking are refused (a batch cannot check versions). On
    `BatchWriteIncompleteError`, ``unprocessed`` holds the caller's own
    put entities and delete targets that were not done, in the order given; everything else
    was written. A request whose connection dropped is reported as not done although DynamoDB
    may have applied it; puts and deletes are idempotent, so sending them again is safe.
    """
    _check_concurrency(concurrency)
    entries = write_entries(puts, deletes)
    chunks = write_chunks(entries)
    if not chunks:
        return BatchWriteResult(0, 0)
    ops = [_run_chunk(ctx, "BatchWriteItem", c, write_params, _take_writes) for c in chunks]
    outcomes = cast(
        "list[_ChunkOutcome]", (yield Gather(tuple(ops), limit=concurrency, threads=True))
    )
    calls = sum(o.calls for o in outcomes)
    left, error, cause = _leftovers(outcomes, "UnprocessedItems")
    if left:
        raise BatchWriteIncompleteError(
            f"Batch write gave up: {len(left)} of {len(entries)} writes were not done "
            f"(cause: {cause}) after {calls} BatchWriteItem calls.",
            unprocessed=[e.source for e in left],
            cause_code=cause,
        ) from error
    return BatchWriteResult(len(entries), calls)


def _leftovers(
    outcomes: Sequence[_ChunkOutcome], default_cause: str
) -> tuple[list[BatchEntry], DynamoError | None, str]:
    """Return what no chunk got done (in the caller's order), the first error, and its code."""
    left = sorted((e for o in outcomes for e in o.left), key=lambda e: e.order)
    error = next((o.error for o in outcomes if o.left and o.error is not None), None)
    return left, error, error.code if error is not None else default_cause


@dataclass(frozen=True)
class _Reads:
    """What reading entries got: the values found (by entry order), and the entries not read."""

    found: dict[int, Any]
    left: list[BatchEntry]
    error: DynamoError | None
    cause: str


def _read(
    ctx: Context,
    entries: list[BatchEntry],
    params_of: Callable[[Sequence[BatchEntry]], dict[str, Any]],
    decode: _Decode,
    concurrency: int,
) -> Operation[_Reads]:
    """Read entries with BatchGetItem: chunked, concurrent, one retry loop per chunk."""
    chunks = get_chunks(entries)
    if not chunks:
        return _Reads({}, [], None, "UnprocessedKeys")
    take = _take_gets(decode)
    ops = [_run_chunk(ctx, "BatchGetItem", c, params_of, take) for c in chunks]
    outcomes = cast(
        "list[_ChunkOutcome]", (yield Gather(tuple(ops), limit=concurrency, threads=True))
    )
    found: dict[int, Any] = {}
    for o in outcomes:
        found.update(o.found)
    left, error, cause = _leftovers(outcomes, "UnprocessedKeys")
    return _Reads(found, left, error, cause)


def _decode_entry(entry: BatchEntry, item: Mapping[str, Any]) -> Entity | None:
    return decode_stored(entry.table, item, only=None if entry.cls is None else (entry.cls,))


def batch_get(
    ctx: Context,
    cls_or_classes: type[E] | Sequence[type[E]],
    keys: Sequence[GetKey[E]],
    *,
    consistent: bool = False,
    concurrency: int = 8,
) -> Operation[list[E]]:
    """Read many items with BatchGetItem; return those found, in the order of ``keys``.

    With one class, a key is a mapping of its key fields (or an instance). With several, each
    key is an instance or a ``(class, key fields)`` pair. An item stored as another type counts
    as not found. On `BatchGetIncompleteError`, ``unprocessed`` holds the
    caller's keys that were not read and ``found`` the entities that were.
    """
    _check_concurrency(concurrency)
    entries = get_entries(cls_or_classes, keys)

    def params_of(pending: Sequence[BatchEntry]) -> dict[str, Any]:
        return get_params(pending, consistent)

    reads = yield from _read(ctx, entries, params_of, _decode_entry, concurrency)
    # Entities being re-keyed: keys not found are read again in their old form.
    unread = {e.order for e in reads.left}
    missed = [e for e in entries if e.order not in reads.found and e.order not in unread]
    again = old_form_entries(missed) if missed else []
    if again:
        more = yield from _read(ctx, again, params_of, _decode_entry, concurrency)
        reads.found.update(more.found)
        reads.left.extend(more.left)
    for entry in entries:
        found = reads.found.get(entry.order)
        if found is not None and entry.cls is not None:
            meta = meta_of(entry.cls)
            if meta.ambiguous_primary and not meta.holds_key(found, read_key_values(entry)):
                del reads.found[entry.order]  # another item's plain key text: not asked for
    result = cast("list[E]", [reads.found[i] for i in sorted(reads.found)])
    if reads.left:
        raise BatchGetIncompleteError(
            f"Batch get gave up: {len(reads.left)} of {len(entries)} keys were not read "
            f"(cause: {reads.cause}).",
            unprocessed=[e.source for e in reads.left],
            found=result,
        ) from reads.error
    return result


@dataclass(frozen=True)
class KeyReads:
    """Base items read by primary key: per key position the item, and the positions not read."""

    items: dict[int, dict[str, Any]]
    left: list[int]
    error: DynamoError | None
    cause: str


def read_keys(
    ctx: Context,
    table: Table,
    keys: Sequence[dict[str, Any]],
    *,
    extra: Mapping[str, Any] | None = None,
    concurrency: int = 8,
) -> Operation[KeyReads]:
    """Read the items of distinct wire primary keys of one table, the way `batch_get` does.

    The same chunking (100 keys, 16 MB), concurrency and single retry loop per chunk. ``extra``
    goes into each request's table entry (e.g. a ProjectionExpression). Keys not read are
    reported by position, never raised here: the caller knows what they stand for.
    """
    entries = key_entries(table, keys)

    def params_of(pending: Sequence[BatchEntry]) -> dict[str, Any]:
        return get_params(pending, False, extra)

    reads = yield from _read(ctx, entries, params_of, lambda _, item: dict(item), concurrency)
    return KeyReads(reads.found, [e.order for e in reads.left], reads.error, reads.cause)
