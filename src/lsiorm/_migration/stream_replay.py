"""The stream side of a table migration: shards and their order, reading records, and the
replay rule with its proof.

A table migration (`lsiorm._migration.phases`) copies the source table, then applies every change
its stream recorded to the destination (`lsiorm._migration.catch_up` runs that, a shard per
work unit). This module owns what that rests on:

* `shard_order`: shards in an order where every parent comes before its children. DynamoDB
  keeps the records of one item in one shard at a time, and when a shard splits, its records
  come before those of its children; reading parents first keeps each item's changes in order.
* `shard_iterator` and `read_shard`: a shard iterator after a sequence number (or at
  TRIM_HORIZON), and the records of one shard page by page (the verification's reads).
  Iterators expire after 15 minutes, so none is ever stored in the ledger: a resumed reader
  asks for a new one after the last sequence number the ledger holds.
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
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._ops.unchanged import unchanged_condition
from lsiorm.errors import DynamoError, ResourceNotFoundError, ValidationError

__all__ = [
    "Replay",
    "Shard",
    "ShardPage",
    "StreamRecord",
    "describe_shards",
    "read_shard",
    "record_of",
    "repaired",
    "replay_of",
    "replay_request",
    "shard_iterator",
    "shard_order",
]

#: Records per GetRecords request (DynamoDB's most).
PAGE_LIMIT = 1000


@dataclass(frozen=True)
class Shard:
    """One shard of a stream: its id, its parent's id, and whether it is closed (split or
    ended: it has an ending sequence number, so reading it reaches an end)."""

    id: str
    parent: str | None = None
    closed: bool = False


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
    replay: Replay, table_name: str, watched: frozenset[str]
) -> tuple[str, dict[str, Any]]:
    """The request of a replay: a conditional PutItem or DeleteItem, or a transaction of both
    when the key moves. ``watched`` attributes must be absent where ``old`` has none."""
    pk = replay.key_names[0]
    absent = {
        "ConditionExpression": "attribute_not_exists(#pk)",
        "ExpressionAttributeNames": {"#pk": pk},
    }

    def same(old: WireItem) -> dict[str, Any]:
        condition, names, values = unchanged_condition(old, watched)
        body: dict[str, Any] = {"ConditionExpression": condition}
        body["ExpressionAttributeNames"] = names
        if values:
            body["ExpressionAttributeValues"] = values
        return body

    if replay.put is not None and replay.delete is None:
        guard = absent if replay.old is None else same(replay.old)
        return "PutItem", {"TableName": table_name, "Item": dict(replay.put), **guard}
    assert replay.old is not None
    assert replay.delete is not None
    delete = {"TableName": table_name, "Key": dict(replay.delete), **same(replay.old)}
    if replay.put is None:
        return "DeleteItem", delete
    put = {"TableName": table_name, "Item": dict(replay.put)}
    return "TransactWriteItems", {"TransactItems": [{"Delete": delete}, {"Put": put}]}


# -- reading the stream -------------------------------------------------------------------------


def describe_shards(ctx: Context, stream_arn: str) -> Operation[tuple[str, list[Shard]]]:
    """The stream's view type and its shards (every page of DescribeStream)."""
    shards: list[Shard] = []
    params: dict[str, Any] = {"StreamArn": stream_arn}
    view = ""
    while True:
        response = yield from call(ctx, "DescribeStream", dict(params))
        description = response.get("StreamDescription") or {}
        view = str(description.get("StreamViewType", view))
        for raw in description.get("Shards") or ():
            ending = (raw.get("SequenceNumberRange") or {}).get("EndingSequenceNumber")
            shards.append(Shard(raw["ShardId"], raw.get("ParentShardId"), ending is not None))
        last = description.get("LastEvaluatedShardId")
        if not last:
            return view, shards
        params["ExclusiveStartShardId"] = last


@dataclass(frozen=True)
class ShardPage:
    """One GetRecords page of a shard: its records, and the iterator of the next page (None:
    the shard is closed and read to its end)."""

    records: tuple[StreamRecord, ...]
    next_iterator: str | None


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
    """
    position = after
    iterator = yield from shard_iterator(ctx, stream_arn, shard, position)
    while iterator is not None:
        try:
            params = {"ShardIterator": iterator, "Limit": limit}
            # ``tables``: the source, whose protected values the session opens.
            answer = yield from call(ctx, "GetRecords", params, tables)
        except DynamoError as exc:
            if exc.code != "ExpiredIteratorException":
                raise
            # 15 minutes since the iterator was handed out: a new one after the last record.
            iterator = yield from shard_iterator(ctx, stream_arn, shard, position)
            continue
        records = tuple(record_of(raw) for raw in answer.get("Records") or ())
        iterator = answer.get("NextShardIterator")
        if records:
            position = records[-1].sequence
        go_on = yield from on_page(ShardPage(records, iterator))
        if not go_on or (not records and not closed):
            return iterator is None
    return True


def shard_iterator(
    ctx: Context, stream_arn: str, shard: str, after: str | None
) -> Operation[str | None]:
    """A shard iterator after sequence number ``after`` (None: TRIM_HORIZON); None when the
    stream no longer holds the shard."""
    params: dict[str, Any] = {"StreamArn": stream_arn, "ShardId": shard}
    if after is None:
        params["ShardIteratorType"] = "TRIM_HORIZON"
    else:
        params["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
        params["SequenceNumber"] = after
    try:
        response = yield from call(ctx, "GetShardIterator", params)
    except ResourceNotFoundError:
        return None
    except DynamoError as exc:
        if exc.code != "TrimmedDataAccessException":
            raise
        raise ValidationError(
            "migrate.stream-trimmed",
            f"The stream no longer holds the changes after record {after} of shard {shard} "
            "(it keeps them for 24 hours): changes may be lost. Abandon the migration and "
            "start it again (with a higher rate budget), or catch up more often.",
        ) from exc
    found: str | None = response.get("ShardIterator")
    return found


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
