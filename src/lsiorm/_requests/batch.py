"""Batch requests built without I/O: entries, key identities, refusals, chunks and params.

A batch is checked whole before anything is sent: a key named twice, a versioned entity (a batch
cannot check versions) and a key whose class cannot be told are refused. Its entries are then
split into chunks (25 writes or 100 keys, within 16 MB), each one request; sending them and
re-sending what DynamoDB hands back is `lsiorm._ops.batch`.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Final, TypeAlias, TypeVar, cast

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, instance_meta, meta_of
from lsiorm._model.item_encoding import encode_entity, stamped
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire, item_size, item_to_wire
from lsiorm._requests.items import key_values
from lsiorm._requests.limits import MAX_BATCH_GET_KEYS, MAX_BATCH_WRITE_REQUESTS
from lsiorm.errors import ValidationError

#: DynamoDB's limit on the requests of one BatchWriteItem call.
MAX_BATCH_WRITE: Final = MAX_BATCH_WRITE_REQUESTS
#: DynamoDB's limit on the keys of one BatchGetItem call.
MAX_BATCH_GET: Final = MAX_BATCH_GET_KEYS
#: DynamoDB's limit on the size of one batch request.
MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024

E = TypeVar("E", bound=Entity)
T = TypeVar("T")

DeleteTarget: TypeAlias = Entity | tuple[type[Entity], Mapping[str, Any]]
"""What to delete: an entity, or its class with its key field values."""

GetKey: TypeAlias = Mapping[str, Any] | E | tuple[type[E], Mapping[str, Any]]
"""What to read: key field values (with one class), an entity, or a (class, key fields) pair."""

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


def item_identity(table: Table, item: Mapping[str, Mapping[str, Any]]) -> KeyIdentity:
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


@dataclass(eq=False, slots=True)
class BatchEntry:
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


def _key_entry(
    order: int, cls: type[Entity], given: Entity | Mapping[str, Any], source: Any, kind: str | None
) -> BatchEntry:
    """The entry of the item with key fields ``given`` (a delete, or a read when kind is None)."""
    meta = meta_of(cls)
    wire_key = item_to_wire(meta.key(key_values(meta, given, {})))
    ident = key_identity(meta.table.name, wire_key)
    return BatchEntry(order, meta.table, cls, ident, wire_key, source, item_size(wire_key), kind)


def key_entries(table: Table, keys: Sequence[dict[str, Any]]) -> list[BatchEntry]:
    """Return the read entries of wire primary keys of one table, each its own source."""
    return [
        BatchEntry(n, table, None, key_identity(table.name, key), key, key, item_size(key))
        for n, key in enumerate(keys)
    ]


def _describe(entry: BatchEntry) -> str:
    key = item_from_wire(_entry_key(entry))
    what = entry.cls.__name__ if entry.cls is not None else "item"
    return f"{what} {key!r} in table {entry.table.name!r}"


def _entry_key(entry: BatchEntry) -> dict[str, Any]:
    if entry.kind == _PUT:
        return primary_key_of(entry.table, entry.request)
    return dict(entry.request)


def _refuse_duplicates(entries: Sequence[BatchEntry]) -> None:
    seen: dict[KeyIdentity, BatchEntry] = {}
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


def _by_table(entries: list[BatchEntry]) -> list[BatchEntry]:
    """Order entries table by table (first appearance first), keeping their order within one."""
    first: dict[str, int] = {}
    for entry in entries:
        first.setdefault(entry.table.name, len(first))
    if len(first) < 2:
        return entries  # already in order
    return sorted(entries, key=lambda e: (first[e.table.name], e.order))


def _refuse_versioned(meta: EntityMeta[Entity], what: str) -> None:
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
_paused = 0  # how many threads are inside collector_paused()
_resume = False  # whether the collector was on when the first of them came in


@contextmanager
def collector_paused() -> Iterator[None]:
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


def write_entries(puts: Sequence[Entity], deletes: Sequence[DeleteTarget]) -> list[BatchEntry]:
    """Return the entries of a batch write, table by table; refuse what a batch cannot do."""
    with collector_paused():
        return _build_write_entries(puts, deletes)


def _build_write_entries(
    puts: Sequence[Entity], deletes: Sequence[DeleteTarget]
) -> list[BatchEntry]:
    entries: list[BatchEntry] = []
    checked: set[type[Entity]] = set()
    now = datetime.now(timezone.utc)
    for entity in puts:
        cls = type(entity)
        if cls not in checked:
            _refuse_versioned(instance_meta(entity), "put")  # refuses what is no entity
            checked.add(cls)
        meta = cls.__lsiorm__
        assert meta is not None
        if meta.created_field is not None or meta.updated_field is not None:
            entity = stamped(entity, now)
        # One pass: the item, its size and its key identity are worked out once, here.
        item, size = encode_entity(entity)
        entries.append(
            BatchEntry(
                len(entries),
                meta.table,
                cls,
                item_identity(meta.table, item),
                item,
                entity,
                size,
                _PUT,
            )
        )
    for target in deletes:
        cls, key = _delete_target(target)
        if isinstance(key, Entity):
            _refuse_versioned(meta_of(cls), "delete")
        entries.append(_key_entry(len(entries), cls, key, target, _DELETE))
    # An entity being re-keyed also deletes its items' old-form keys (no twin is left).
    for extra in old_form_entries(entries, _DELETE):
        extra.order = len(entries)
        entries.append(extra)
    _refuse_duplicates(entries)
    return _by_table(entries)


def get_entries(
    cls_or_classes: type[E] | Sequence[type[E]], keys: Sequence[GetKey[E]]
) -> list[BatchEntry]:
    """Return the entries of a batch get, table by table; refuse keys of unknown classes."""
    classes: tuple[type[Entity], ...] = (
        (cls_or_classes,) if isinstance(cls_or_classes, type) else tuple(cls_or_classes)
    )
    if not classes:
        raise ValidationError("batch.no-class", "batch_get needs at least one entity class.")
    entries: list[BatchEntry] = []
    for key in keys:
        cls: type[Entity]
        given: Entity | Mapping[str, Any]
        if isinstance(key, Entity):
            cls, given = type(key), key
        elif isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], type):
            cls, given = key[0], key[1]
        elif len(classes) == 1 and not isinstance(key, tuple):
            # A mapping of key fields; anything else is refused naming them (key.not-fields).
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
        entries.append(_key_entry(len(entries), cls, given, key, None))
    _refuse_duplicates(entries)
    return _by_table(entries)


def _given(source: Any) -> Entity | Mapping[str, Any]:
    """The key fields a caller gave for one entry: an entity, or a mapping (maybe paired)."""
    if isinstance(source, tuple):
        given: Entity | Mapping[str, Any] = source[1]
        return given
    return cast("Entity | Mapping[str, Any]", source)


def read_key_values(entry: BatchEntry) -> dict[str, Any]:
    """The validated key field values a read entry was given."""
    assert entry.cls is not None
    return key_values(meta_of(entry.cls), _given(entry.source), {})


def old_form_entries(entries: Sequence[BatchEntry], kind: str | None = None) -> list[BatchEntry]:
    """The same entries under their keys' old form, for entities being re-keyed.

    Only entries of an entity whose primary key differs in its ``rekeying_from`` style get one;
    it keeps the entry's order and source. ``kind`` is what the new entries do (None: read).
    """
    out: list[BatchEntry] = []
    for entry in entries:
        cls = entry.cls
        if cls is None or not meta_of(cls).moves_when_rekeyed:
            continue
        meta = meta_of(cls)
        if entry.kind == _PUT:
            given: Entity | Mapping[str, Any] = entry.source
        elif entry.kind == _DELETE:
            given = _delete_target(entry.source)[1]
        else:
            given = _given(entry.source)
        old = meta.old_key(key_values(meta, given, {}))
        if old is None:
            continue
        wire_key = item_to_wire(old)
        out.append(
            BatchEntry(
                entry.order,
                entry.table,
                cls,
                key_identity(entry.table.name, wire_key),
                wire_key,
                entry.source,
                item_size(wire_key),
                kind,
            )
        )
    return out


def write_params(entries: Sequence[BatchEntry]) -> dict[str, Any]:
    """Return the BatchWriteItem params of write entries."""
    items: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        request = (
            {_PUT: {"Item": entry.request}}
            if entry.kind == _PUT
            else {_DELETE: {"Key": entry.request}}
        )
        items.setdefault(entry.table.name, []).append(request)
    return {"RequestItems": items}


def get_params(
    entries: Sequence[BatchEntry], consistent: bool, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return the BatchGetItem params of read entries; ``extra`` goes into each table's part."""
    items: dict[str, dict[str, Any]] = {}
    for entry in entries:
        spec = items.get(entry.table.name)
        if spec is None:
            spec = items[entry.table.name] = {"Keys": [], **(extra or {})}
            if consistent:
                spec["ConsistentRead"] = True
        spec["Keys"].append(entry.request)
    return {"RequestItems": items}


def write_chunks(entries: Sequence[BatchEntry]) -> list[list[BatchEntry]]:
    """Split write entries into the runs of one BatchWriteItem request each."""
    return chunked(entries, MAX_BATCH_WRITE, MAX_REQUEST_BYTES, _size)


def get_chunks(entries: Sequence[BatchEntry]) -> list[list[BatchEntry]]:
    """Split read entries into the runs of one BatchGetItem request each."""
    return chunked(entries, MAX_BATCH_GET, MAX_REQUEST_BYTES, _size)


def _size(entry: BatchEntry) -> int:
    return entry.size


def batch_write_requests(
    puts: Sequence[Entity] = (), deletes: Sequence[DeleteTarget] = ()
) -> list[dict[str, Any]]:
    """Return the BatchWriteItem params of each chunk, in sending order (no I/O)."""
    return [write_params(c) for c in write_chunks(write_entries(puts, deletes))]


def batch_get_requests(
    cls_or_classes: type[E] | Sequence[type[E]],
    keys: Sequence[GetKey[E]],
    *,
    consistent: bool = False,
) -> list[dict[str, Any]]:
    """Return the BatchGetItem params of each chunk, in sending order (no I/O)."""
    entries = get_entries(cls_or_classes, keys)
    return [get_params(c, consistent) for c in get_chunks(entries)]
