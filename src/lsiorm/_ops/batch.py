"""Batch writes and batch gets: chunking, duplicate checks and retries of unprocessed items.

A batch is split into chunks (25 writes or 100 keys, within 16 MB). Each chunk is one
sub-operation that sends its requests and re-sends whatever DynamoDB hands back as
UnprocessedItems / UnprocessedKeys, with the session's backoff, until nothing is left or the
retry policy stops. The chunks run as one :class:`~lsiorm.steps.Gather` step: one by one under the
sync driver, concurrently (bounded) under the async one.

A chunk has one retry budget. Its requests go through :func:`lsiorm._ops.pipeline.send_once`
(hooks, no retry), and one :func:`~lsiorm._ops.pipeline.retried` loop re-sends both a
failed request (throttling, 5xx, dropped connection) and a partly processed one. So a chunk never
sends more than ``policy.max_attempts`` requests, instead of ``max_attempts`` squared with two
nested loops. Query hydration reads base items through the same chunk runner (:func:`read_keys`).

When the policy stops, or a chunk fails with an error that is never retried, the items that were
not done are reported, as the very objects the caller passed in, by
:class:`~lsiorm.errors.BatchWriteIncompleteError` / :class:`~lsiorm.errors.BatchGetIncompleteError`.
Nothing is dropped silently.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Final, TypeAlias, TypeVar, cast

from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.item_decoding import decode_item
from lsiorm._model.item_encoding import encode_entity, stamped
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire, item_size, item_to_wire
from lsiorm._ops.pipeline import Context, retried, send_once
from lsiorm._ops.steps import Gather, Operation
from lsiorm._requests.items import key_values
from lsiorm.errors import (
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    DynamoError,
    ValidationError,
)

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

#: DynamoDB's limit on the requests of one BatchWriteItem call.
MAX_BATCH_WRITE = 25
#: DynamoDB's limit on the keys of one BatchGetItem call.
MAX_BATCH_GET = 100
#: DynamoDB's limit on the size of one batch request.
MAX_REQUEST_BYTES = 16 * 1024 * 1024

E = TypeVar("E", bound=Entity)
T = TypeVar("T")

DeleteTarget: TypeAlias = Entity | tuple[type[Entity], Mapping[str, Any]]
"""What to delete: an entity, or its class with its key field values."""

KeyIdentity: TypeAlias = tuple[str, tuple[tuple[str, str, Hashable], ...]]
"""A table name and a primary key, hashable, with equal numbers equal (``"1"`` and ``"1.0"``)."""


def key_identity(table: str, key: Mapping[str, Mapping[str, Any]]) -> KeyIdentity:
    """Return the hashable identity of a wire-format primary key in a table."""
    parts: list[tuple[str, str, Hashable]] = []
    for name in sorted(key):
        ((tag, raw),) = key[name].items()
        value: Hashable = Decimal(raw) if tag == "N" else bytes(raw) if tag == "B" else raw
        parts.append((name, tag, value))
    return (table, tuple(parts))


def _item_identity(table: Table, item: Mapping[str, Mapping[str, Any]]) -> KeyIdentity:
    """``key_identity(table.name, primary_key_of(table, item))``, for the common case quickly."""
    first = table.partition_key.name
    names: tuple[str, ...] = (first,)
    if table.sort_key is not None:
        second = table.sort_key.name
        names = (first, second) if first < second else (second, first)
    parts = []
    for name in names:
        av = item[name]
        raw = av.get("S")
        if raw is None or len(av) != 1:
            return key_identity(table.name, primary_key_of(table, item))
        parts.append((name, "S", raw))
    return (table.name, tuple(parts))


def primary_key_of(table: Table, item: Mapping[str, Any]) -> dict[str, Any]:
    """Return the primary key attributes of a wire item (or of a wire key)."""
    names = [table.partition_key.name]
    if table.sort_key is not None:
        names.append(table.sort_key.name)
    return {name: item[name] for name in names}


def chunked(
    entries: Sequence[T], max_count: int, max_bytes: int, size: Callable[[T], int]
) -> list[list[T]]:
    """Split entries, in order, into runs of at most ``max_count`` entries and ``max_bytes``.

    An entry larger than ``max_bytes`` on its own gets a run of its own (DynamoDB will judge it).
    """
    chunks: list[list[T]] = []
    current: list[T] = []
    used = 0
    for entry in entries:
        n = size(entry)
        if current and (len(current) >= max_count or used + n > max_bytes):
            chunks.append(current)
            current, used = [], 0
        current.append(entry)
        used += n
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True)
class BatchWriteResult:
    """What a finished batch write did: requests written and API calls it took."""

    written: int
    calls: int
    #: The capacity the batch consumed, per table, when the session's capacity meter asked
    #: for it; empty otherwise.
    consumed: tuple[ConsumedCapacity, ...] = ()


@dataclass(eq=False, slots=True)
class _Entry:
    """One write request or one key to read, and the caller's object it came from."""

    order: int
    table: Table
    cls: type[Entity] | None
    ident: KeyIdentity
    #: The wire item of a put, or the wire key of a delete or a read.
    request: dict[str, Any]
    source: Any
    size: int
    #: What a write does: _PUT or _DELETE (None for a read). The BatchWriteItem request dict
    #: is built when its chunk is sent, so a large batch keeps fewer objects alive meanwhile.
    kind: str | None = None


_PUT: Final = "PutRequest"
_DELETE: Final = "DeleteRequest"


def _describe(entry: _Entry) -> str:
    key = item_from_wire(_entry_key(entry))
    what = entry.cls.__name__ if entry.cls is not None else "item"
    return f"{what} {key!r} in table {entry.table.name!r}"


def _entry_key(entry: _Entry) -> dict[str, Any]:
    if entry.kind == _PUT:
        return primary_key_of(entry.table, entry.request)
    return dict(entry.request)


def _refuse_duplicates(entries: Sequence[_Entry]) -> None:
    seen: dict[KeyIdentity, _Entry] = {}
    for entry in entries:
        first = seen.setdefault(entry.ident, entry)
        if first is not entry:
            raise ValidationError(
                "batch.duplicate-key",
                f"The batch names {_describe(entry)} twice (entries {first.order} and "
                f"{entry.order}); DynamoDB refuses a batch that names one key twice, so send the "
                "second one in a later batch.",
                table=entry.table.name,
                key=item_from_wire(_entry_key(entry)),
            )


def _by_table(entries: list[_Entry]) -> list[_Entry]:
    """Order entries table by table (first appearance first), keeping their order within one."""
    first: dict[str, int] = {}
    for entry in entries:
        first.setdefault(entry.table.name, len(first))
    if len(first) < 2:
        return entries  # already in order
    return sorted(entries, key=lambda e: (first[e.table.name], e.order))


def _refuse_versioned(meta: EntityMeta, what: str) -> None:
    if meta.version_field is not None:
        raise ValidationError(
            "batch.versioned-entity",
            f"{meta.cls.__name__} uses optimistic locking ({meta.version_field}), which a batch "
            f"{what} cannot check; use put/delete or a transaction for it.",
            table=meta.table.name,
        )


def _delete_target(target: DeleteTarget) -> tuple[type[Entity], Entity | Mapping[str, Any]]:
    if isinstance(target, Entity):
        return type(target), target
    if isinstance(target, tuple) and len(target) == 2 and isinstance(target[0], type):
        return target[0], target[1]
    raise ValidationError(
        "batch.delete-target",
        f"A batch delete takes an entity or a (class, key fields) pair, not {target!r}.",
    )


_PAUSE_LOCK = threading.Lock()
_paused = 0  # how many threads are inside _collector_paused()
_resume = False  # whether the collector was on when the first of them came in


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a batch's items are built.

    Building 10,000 items keeps about ten new containers per item alive until the batch is
    sent, and each of them makes the collector walk every object of the process again (about
    a fifth of a batch's CPU). Nothing built here forms a cycle, so the pause frees nothing
    later than it would be freed anyway; cyclic garbage made meanwhile by other threads waits
    for the next collection after the pause. Scoped to this synchronous section (it never
    spans a request), safe with several threads (the collector comes back on when the last
    one leaves, and only if it was on when the first came in).
    """
    global _paused, _resume
    with _PAUSE_LOCK:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


def _write_entries(puts: Sequence[Entity], deletes: Sequence[DeleteTarget]) -> list[_Entry]:
    with _collector_paused():
        return _build_write_entries(puts, deletes)


def _build_write_entries(puts: Sequence[Entity], deletes: Sequence[DeleteTarget]) -> list[_Entry]:
    entries: list[_Entry] = []
    checked: set[type[Entity]] = set()
    now = datetime.now(timezone.utc)
    for entity in puts:
        cls = type(entity)
        if cls not in checked:
            if not isinstance(entity, Entity):
                raise ValidationError(
                    "batch.put-target", f"A batch put takes entities, not {entity!r}."
                )
            _refuse_versioned(meta_of(entity), "put")
            checked.add(cls)
        meta = cls.__lsiorm__
        assert meta is not None
        if meta.created_field is not None or meta.updated_field is not None:
            entity = stamped(entity, now)
        # One pass: the item, its size and its key identity are worked out once, here.
        item, size = encode_entity(entity)
        entries.append(
            _Entry(
                len(entries),
                meta.table,
                cls,
                _item_identity(meta.table, item),
                item,
                entity,
                size,
                _PUT,
            )
        )
    for target in deletes:
        cls, key = _delete_target(target)
        meta = meta_of(cls)
        if isinstance(key, Entity):
            _refuse_versioned(meta, "delete")
        wire_key = item_to_wire(meta.key(key_values(meta, key, {})))
        entries.append(
            _Entry(
                len(entries),
                meta.table,
                cls,
                key_identity(meta.table.name, wire_key),
                wire_key,
                target,
                item_size(wire_key),
                _DELETE,
            )
        )
    _refuse_duplicates(entries)
    return _by_table(entries)


GetKey: TypeAlias = Mapping[str, Any] | E | tuple[type[E], Mapping[str, Any]]


def _get_entries(
    cls_or_classes: type[E] | Sequence[type[E]], keys: Sequence[GetKey[E]]
) -> list[_Entry]:
    classes: tuple[type[Entity], ...] = (
        (cls_or_classes,) if isinstance(cls_or_classes, type) else tuple(cls_or_classes)
    )
    if not classes:
        raise ValidationError("batch.no-class", "batch_get needs at least one entity class.")
    entries: list[_Entry] = []
    for key in keys:
        cls: type[Entity]
        given: Entity | Mapping[str, Any]
        if isinstance(key, Entity):
            cls, given = type(key), key
        elif isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], type):
            cls, given = key[0], key[1]
        elif isinstance(key, Mapping) and len(classes) == 1:
            cls, given = classes[0], key
        else:
            raise ValidationError(
                "batch.key-class",
                f"Cannot tell which class the key {key!r} is for; with several classes give "
                "each key as an entity or a (class, key fields) pair.",
            )
        if cls not in classes:
            raise ValidationError(
                "batch.key-class",
                f"Key {key!r} is for {cls.__name__}, which is not among the classes asked for "
                f"({', '.join(c.__name__ for c in classes)}).",
            )
        meta = meta_of(cls)
        wire_key = item_to_wire(meta.key(key_values(meta, given, {})))
        entries.append(
            _Entry(
                len(entries),
                meta.table,
                cls,
                key_identity(meta.table.name, wire_key),
                wire_key,
                key,
                item_size(wire_key),
            )
        )
    _refuse_duplicates(entries)
    return _by_table(entries)


def _write_params(entries: Sequence[_Entry]) -> dict[str, Any]:
    items: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        request = (
            {_PUT: {"Item": entry.request}}
            if entry.kind == _PUT
            else {_DELETE: {"Key": entry.request}}
        )
        items.setdefault(entry.table.name, []).append(request)
    return {"RequestItems": items}


def _get_params(
    entries: Sequence[_Entry], consistent: bool, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    items: dict[str, dict[str, Any]] = {}
    for entry in entries:
        spec = items.get(entry.table.name)
        if spec is None:
            spec = items[entry.table.name] = {"Keys": [], **(extra or {})}
            if consistent:
                spec["ConsistentRead"] = True
        spec["Keys"].append(entry.request)
    return {"RequestItems": items}


def batch_write_requests(
    puts: Sequence[Entity] = (), deletes: Sequence[DeleteTarget] = ()
) -> list[dict[str, Any]]:
    """Return the BatchWriteItem params of each chunk, in sending order (no I/O)."""
    entries = _write_entries(puts, deletes)
    return [_write_params(c) for c in chunked(entries, MAX_BATCH_WRITE, MAX_REQUEST_BYTES, _size)]


def batch_get_requests(
    cls_or_classes: type[E] | Sequence[type[E]],
    keys: Sequence[GetKey[E]],
    *,
    consistent: bool = False,
) -> list[dict[str, Any]]:
    """Return the BatchGetItem params of each chunk, in sending order (no I/O)."""
    entries = _get_entries(cls_or_classes, keys)
    return [
        _get_params(c, consistent)
        for c in chunked(entries, MAX_BATCH_GET, MAX_REQUEST_BYTES, _size)
    ]


def _size(entry: _Entry) -> int:
    return entry.size


# -- sending -----------------------------------------------------------------------------------


@dataclass
class _ChunkOutcome:
    left: list[_Entry]
    calls: int = 0
    error: DynamoError | None = None
    found: dict[int, Any] = field(default_factory=dict)


_Take: TypeAlias = Callable[[Mapping[str, Any], Sequence[_Entry], dict[int, Any]], list[_Entry]]
_Decode: TypeAlias = Callable[[_Entry, Mapping[str, Any]], Any]
"""Turns an item read for an entry into the value handed back (None: counts as not found)."""


def _matching(
    pending: Sequence[_Entry], listed: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[_Entry]:
    """Return the pending entries whose keys appear in ``listed`` ({table: [wire keys]}).

    They keep the order DynamoDB listed them in, so the next attempt re-sends exactly what it
    handed back; reports sort them into the caller's order.
    """
    by_ident = {e.ident: e for e in pending}
    out: list[_Entry] = []
    for table_name, wire_keys in listed.items():
        for wire_key in wire_keys:
            entry = by_ident.pop(key_identity(table_name, wire_key), None)
            if entry is not None:
                out.append(entry)
    return out


def _take_writes(
    response: Mapping[str, Any], pending: Sequence[_Entry], found: dict[int, Any]
) -> list[_Entry]:
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
        response: Mapping[str, Any], pending: Sequence[_Entry], found: dict[int, Any]
    ) -> list[_Entry]:
        return _take_read(response, pending, found, decode)

    return take


def _take_read(
    response: Mapping[str, Any],
    pending: Sequence[_Entry],
    found: dict[int, Any],
    decode: _Decode,
) -> list[_Entry]:
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
    entries: list[_Entry],
    params_of: Callable[[Sequence[_Entry]], dict[str, Any]],
    take: _Take,
) -> Operation[_ChunkOutcome]:
    """Send one chunk, then its unprocessed remainder, until done or the policy stops."""
    outcome = _ChunkOutcome(list(entries))
    tables = tuple({e.table.name: e.table for e in entries}.values())

    def attempt() -> Operation[list[_Entry]]:
        outcome.calls += 1
        response = yield from send_once(ctx, operation, params_of(outcome.left), tables)
        outcome.left = take(response, outcome.left, outcome.found)
        return outcome.left

    try:
        yield from retried(ctx.retry, attempt, retry_result=bool)
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
    :class:`~lsiorm.errors.BatchWriteIncompleteError`, ``unprocessed`` holds the caller's own
    put entities and delete targets that were not done, in the order given; everything else
    was written. A request whose connection dropped is reported as not done although DynamoDB
    may have applied it; puts and deletes are idempotent, so sending them again is safe.
    """
    _check_concurrency(concurrency)
    entries = _write_entries(puts, deletes)
    chunks = chunked(entries, MAX_BATCH_WRITE, MAX_REQUEST_BYTES, _size)
    if not chunks:
        return BatchWriteResult(0, 0)
    ops = [_run_chunk(ctx, "BatchWriteItem", c, _write_params, _take_writes) for c in chunks]
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
) -> tuple[list[_Entry], DynamoError | None, str]:
    """Return what no chunk got done (in the caller's order), the first error, and its code."""
    left = sorted((e for o in outcomes for e in o.left), key=lambda e: e.order)
    error = next((o.error for o in outcomes if o.left and o.error is not None), None)
    return left, error, error.code if error is not None else default_cause


@dataclass(frozen=True)
class _Reads:
    """What reading entries got: the values found (by entry order), and the entries not read."""

    found: dict[int, Any]
    left: list[_Entry]
    error: DynamoError | None
    cause: str


def _read(
    ctx: Context,
    entries: list[_Entry],
    params_of: Callable[[Sequence[_Entry]], dict[str, Any]],
    decode: _Decode,
    concurrency: int,
) -> Operation[_Reads]:
    """Read entries with BatchGetItem: chunked, concurrent, one retry loop per chunk."""
    chunks = chunked(entries, MAX_BATCH_GET, MAX_REQUEST_BYTES, _size)
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


def _decode_entry(entry: _Entry, item: Mapping[str, Any]) -> Entity | None:
    return decode_item(entry.table, item, only=None if entry.cls is None else (entry.cls,))


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
    as not found. On :class:`~lsiorm.errors.BatchGetIncompleteError`, ``unprocessed`` holds the
    caller's keys that were not read and ``found`` the entities that were.
    """
    _check_concurrency(concurrency)
    entries = _get_entries(cls_or_classes, keys)

    def params_of(pending: Sequence[_Entry]) -> dict[str, Any]:
        return _get_params(pending, consistent)

    reads = yield from _read(ctx, entries, params_of, _decode_entry, concurrency)
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
    """Read the items of distinct wire primary keys of one table, the way :func:`batch_get` does.

    The same chunking (100 keys, 16 MB), concurrency and single retry loop per chunk. ``extra``
    goes into each request's table entry (e.g. a ProjectionExpression). Keys not read are
    reported by position, never raised here: the caller knows what they stand for.
    """
    entries = [
        _Entry(n, table, None, key_identity(table.name, key), key, key, item_size(key))
        for n, key in enumerate(keys)
    ]

    def params_of(pending: Sequence[_Entry]) -> dict[str, Any]:
        return _get_params(pending, False, extra)

    reads = yield from _read(ctx, entries, params_of, lambda _, item: dict(item), concurrency)
    return KeyReads(reads.found, [e.order for e in reads.left], reads.error, reads.cause)
