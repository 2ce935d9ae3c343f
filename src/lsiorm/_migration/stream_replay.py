"""The stream side of a table migration: shards and their order, reading records, and the
replay rule with its proof.

A table migration (`lsiorm._migration.phases`) copies the source table, then applies every change
its stream recorded to the destination (`lsiorm._migration.catch_up` runs that, a shard per
work unit). This module owns what that rests on:

* `shard_order`: shards in an order where every parent comes before its children. DynamoDB
  keeps the records of one item in one shard at a time, and when a shard splits, its records
  come before those of its children; reading parents first keeps each item's changes in order.
* `shard_page` and `read_shard`: one page of a shard's records after a sequence number (or
  from TRIM_HORIZON), read by the stream reader (`lsiorm._ops.stream_pages`), a position the
  stream trimmed refused (``migrate.stream-trimmed``); and the records of one shard page by
  page (the verification's reads). Iterators expire after 15 minutes, so none is ever stored
  in the ledger: a resumed reader asks for a new one after the last sequence number the ledger
  holds.
* `replay_of`: the pure replay rule. Each record carries the item before (OldImage) and after
  (NewImage) the change; both are derived through the destination's declaration, and the change
  is applied only if the destination still holds the derived old image (or nothing, for a new
  item). Otherwise it is skipped: the destination holds another state of the item already.

Why the destination ends at the source's final state, per item: the item's records come in
order, and record *i* has Old_i = New_(i-1). The copy wrote the item as it was at some instant
(the state after record *k*, or nothing). Replay starts from a position taken before the copy
began, so every record after *k* is replayed. A record applies when the destination holds the
derived Old_i; once one record applies, the destination holds New_i = Old_(i+1), so the next
applies, and so on to the last: the destination ends at the last record's image. If none
applies before record *k+1*, the destination still holds what the copy wrote, New_k =
Old_(k+1), so record *k+1* applies. Either way the destination ends at the last image (or
absent after a removal). The same holds when records are replayed again after a resume (a
replay always runs on to the end of the shard), and when a condition holds for the wrong reason
(an attribute the guard does not watch): the write replaces the whole item, and the records
after it apply in turn. Records older than the copy need not be replayed at all (the proof
holds for any prefix of an item's records left out, as long as every record from the copy's
read of the item on is applied); the catch-up reads them but does not apply those clearly older
than the copy's start (`lsiorm._migration.catch_up.REPLAY_MARGIN`). Those it does replay may
show an item briefly in an older state, until its later records are applied.

A change that moves the item to another destination key (a field its keys derive from changed)
is one transaction: delete the old derived key if it holds the derived old image, and put the
new image whatever is at the new key. The put must not be conditional: an older record
replayed again (after a resume, or from before the copy) may put the item back at a key it
left, and the records after it must then carry it on to the new key, or a stale twin would
stay behind. What the put overwrites at the new key is the same item in a later state, and the
records after it bring it back.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm._ops.stream_pages import read_records
from lsiorm._requests.stream_pages import PAGE_LIMIT, RecordPage, Shard, ShardRead
from lsiorm._requests.unchanged import (
    create_only_put,
    replacing_move,
    unchanged_put,
    unchanged_target,
)
from lsiorm.errors import DynamoError, ValidationError

__all__ = [
    "Replay",
    "ShardPage",
    "StreamRecord",
    "check_view",
    "read_shard",
    "record_of",
    "repaired",
    "replay_of",
    "replay_request",
    "shard_order",
    "shard_page",
]


@dataclass(frozen=True)
class StreamRecord:
    """One change of one source item: ``event`` is INSERT, MODIFY or REMOVE; ``old`` and
    ``new`` are the images (None when there is none); ``created`` is the record's approximate
    time (seconds since the epoch)."""

    event: str
    keys: WireItem
    old: WireItem | None
    new: WireItem | None
    sequence: str
    created: float | None = None


def repaired(value: Any) -> Any:
    """An image's attribute values with every empty one (``{}``) read as the empty map it
    stands for. DynamoDB Local writes an empty map inside a stream record as ``{}``, without
    its ``M`` (DynamoDB writes ``{"M": {}}``); an attribute value always has exactly one type,
    so ``{}`` can mean nothing else, and sent back as it is it would be refused. A value of
    another mapping type than a plain dict (a protected value opened from its envelope, which
    remembers that envelope) is kept as it is."""
    if isinstance(value, Mapping) and type(value) is dict:
        if not value:
            return {"M": {}}
        if len(value) == 1:
            ((tag, inner),) = value.items()
            if tag == "M" and isinstance(inner, Mapping):
                return {"M": {k: repaired(v) for k, v in inner.items()}}
            if tag == "L" and isinstance(inner, list):
                return {"L": [repaired(v) for v in inner]}
    return value


def _image(value: Any) -> WireItem | None:
    if not value:
        return None
    return {name: repaired(attribute) for name, attribute in value.items()}


def record_of(raw: Mapping[str, Any]) -> StreamRecord:
    """A record of a GetRecords answer as a `StreamRecord` (its images `repaired`)."""
    body = raw.get("dynamodb") or {}
    when = body.get("ApproximateCreationDateTime")
    if isinstance(when, datetime.datetime):
        created: float | None = when.timestamp()
    elif isinstance(when, (int, float)):
        created = float(when)
    else:
        created = None
    return StreamRecord(
        str(raw.get("eventName")),
        dict(body.get("Keys") or {}),
        _image(body.get("OldImage")),
        _image(body.get("NewImage")),
        str(body.get("SequenceNumber")),
        created,
    )


def shard_order(shards: Iterable[Shard]) -> list[Shard]:
    """The shards with every parent before its children (a parent the stream no longer lists
    is ignored), otherwise in the order given."""
    given = list(shards)
    by_id = {s.id: s for s in given}
    placed: set[str] = set()
    order: list[Shard] = []

    def place(shard: Shard, seen: frozenset[str]) -> None:
        if shard.id in placed:
            return
        parent = by_id.get(shard.parent) if shard.parent is not None else None
        if parent is not None and parent.id not in seen:
            place(parent, seen | {shard.id})
        placed.add(shard.id)
        order.append(shard)

    for shard in given:
        place(shard, frozenset({shard.id}))
    return order


# -- the replay rule (pure) -----------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """What one record does to the destination, each part on its condition.

    ``delete``: the key of the derived old image, deleted if it holds ``old`` exactly;
    ``put``: the derived new image, put if the destination holds ``old`` at the same key
    (``old`` None: if nothing is there), or, when the key moves, with the delete (whatever is
    at the new key). Both parts apply together or not at all.
    """

    key_names: tuple[str, ...]
    old: WireItem | None
    put: WireItem | None
    delete: WireItem | None


def _key(item: Mapping[str, Any], names: Sequence[str]) -> WireItem:
    return {name: dict(item[name]) for name in names if name in item}


def replay_of(
    old: WireItem | None, new: WireItem | None, key_names: Sequence[str]
) -> Replay | None:
    """The replay of a record whose derived images are ``old`` and ``new`` (None: absent, or
    not derivable); None when there is nothing to do."""
    names = tuple(key_names)
    if old is None and new is None:
        return None
    if old is None:
        return Replay(names, None, new, None)
    if new is None:
        return Replay(names, old, None, _key(old, names))
    if _key(old, names) == _key(new, names):
        return Replay(names, old, new, None)
    return Replay(names, old, new, _key(old, names))


def replay_request(
    replay: Replay, table: Table, watched: frozenset[str]
) -> tuple[str, dict[str, Any]]:
    """The request of a replay to ``table``: a conditional PutItem or DeleteItem, or a
    transaction of both when the key moves (built by `lsiorm._requests.unchanged`).
    ``watched`` attributes must be absent where ``old`` has none."""
    if replay.put is not None and replay.delete is None:
        if replay.old is None:
            return "PutItem", create_only_put(table, replay.put)
        return "PutItem", unchanged_put(table, replay.put, replay.old, watched)
    assert replay.old is not None
    assert replay.delete is not None
    if replay.put is None:
        return "DeleteItem", unchanged_target(table, replay.delete, replay.old, watched)
    return "TransactWriteItems", replacing_move(
        table, replay.delete, replay.old, replay.put, watched
    )


# -- reading the stream -------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardPage:
    """One GetRecords page of a shard: its records, and the iterator of the next page (None:
    the shard is closed and read to its end)."""

    records: tuple[StreamRecord, ...]
    next_iterator: str | None


def shard_page(
    ctx: Context, read: ShardRead, after: str | None, iterator: str | None = None
) -> Operation[RecordPage | None]:
    """The page of ``read``'s shard after sequence number ``after`` (the stream reader's
    `read_records`; None: the stream no longer holds a shard read from its start), a position
    the stream trimmed refused: the changes after it are lost to the migration.

    A shard that is gone once it has been read up to a record is refused too: the stream
    dropped it with the records after that one (it keeps a closed shard 24 hours)."""
    try:
        page = yield from read_records(ctx, read, after, iterator)
    except DynamoError as exc:
        if exc.code != "TrimmedDataAccessException":
            raise
        raise _trimmed(read, after) from exc
    if page is None and after is not None:
        raise _trimmed(read, after)
    return page


def _trimmed(read: ShardRead, after: str | None) -> ValidationError:
    return ValidationError(
        "migrate.stream-trimmed",
        f"The stream no longer holds the changes after record {after} of shard "
        f"{read.shard} (it keeps them for 24 hours): changes may be lost. Abandon the "
        "migration and start it again (with a higher rate budget), or catch up more often.",
    )


def read_shard(
    ctx: Context,
    stream_arn: str,
    shard: str,
    after: str | None,
    on_page: Callable[[ShardPage], Operation[bool]],
    *,
    closed: bool = False,
    limit: int = PAGE_LIMIT,
    tables: tuple[Table, ...] = (),
) -> Operation[bool]:
    """Read ``shard`` after sequence number ``after`` (None: from TRIM_HORIZON), handing each
    page to ``on_page`` until a page is empty (caught up; a ``closed`` shard is read on to its
    end) or ``on_page`` returns False; return whether the shard is read to its end (closed,
    nothing more will come).

    A shard the stream no longer holds (trimmed after 24 hours) counts as read to its end.
    ``tables``: the source, whose protected values the session opens.
    """
    read = ShardRead(stream_arn, shard, limit, tables)
    position, iterator = after, None
    while True:
        page = yield from shard_page(ctx, read, position, iterator)
        if page is None:
            return True
        records = tuple(record_of(raw) for raw in page.records)
        go_on = yield from on_page(ShardPage(records, page.next))
        if page.last or not go_on or (not records and not closed):
            return page.last
        position, iterator = page.position, page.next


def check_view(view: str, source: str) -> None:
    """Refuse a stream whose records lack either image."""
    if view != "NEW_AND_OLD_IMAGES":
        raise ValidationError(
            "migrate.stream-view",
            f"The stream of table {source!r} records {view or 'no'} images; a migration needs "
            "both images of each change. Enable it with `aws dynamodb update-table "
            f"--table-name {source} --stream-specification "
            "StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES` (a stream with another view "
            "type must be disabled first).",
            table=source,
        )
