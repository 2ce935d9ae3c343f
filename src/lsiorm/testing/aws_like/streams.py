"""Virtual stream shards: placement by hash, splits and rollovers, iterators, records, retention.

A `VirtualStream` holds the records of one DynamoDB stream in shards of its own, as AWS's
DynamoDB Streams serves them (see the DynamoDB Streams API reference and the developer guide's
"DynamoDB Streams" chapter for each fact below):

* **Shards own hash ranges.** The stream starts with ``StreamShards.shards`` open shards, each
  owning an equal part of the 128-bit hash space. A record goes to the open shard whose range
  holds the hash of its item's partition key value, so all of an item's records are in one
  shard at a time, in write order.
* **Splits and rollovers.** A split closes a shard and opens two children that each own half
  its range and name it as ``ParentShardId``; a rollover opens one child owning the same range.
  A closed shard has an ``EndingSequenceNumber`` (its last record's sequence number, or its
  starting one when it received none) and receives nothing more. Placing records and splitting
  happen under one lock, so an item's records after a split are in the child that owns its
  hash, after all its records in the parent: reading parents before children gives every
  item's records in write order, as AWS promises.
* **Sequence numbers** are numeric strings of 26 digits, strictly increasing in a shard (one
  counter for the engine), and every shard has a ``StartingSequenceNumber``.
* **Records** keep what the upstream engine recorded (eventID, eventName, Keys, images,
  SizeBytes, StreamViewType), with this stream's ``SequenceNumber`` and an
  ``ApproximateCreationDateTime`` that is the time the engine took the record in, rounded down
  to the second as AWS rounds it. The engine takes a record in after the write that made it
  (it reads the upstream stream every ``poll_interval`` and before every Streams call), so the
  time is never earlier than the write, and later by at most about that interval.
* **Iterators** (``TRIM_HORIZON``, ``LATEST``, ``AT_SEQUENCE_NUMBER``,
  ``AFTER_SEQUENCE_NUMBER``) are opaque tokens of a shard, a position and the time they were
  handed out; they expire 15 minutes later (``ExpiredIteratorException``), and each
  ``NextShardIterator`` is a new one. A closed shard read to its end gives no
  ``NextShardIterator``.
* **Retention.** Records are trimmed 24 hours after they were taken in. Asking for an iterator
  at a trimmed sequence number, or reading with an iterator that points before the oldest
  record kept, raises ``TrimmedDataAccessException``. A closed shard leaves the stream's
  description 24 hours after it closed (its records are all trimmed by then).
* **GetRecords** answers at most ``Limit`` records (1,000 at most: more is a
  ``ValidationException``) and at most 1 MB of them (``StreamShards.page_bytes``), and a shard
  answers at most ``StreamShards.get_records_per_second`` calls a second: past that,
  ``LimitExceededException``, and nothing is consumed (the same iterator works again).
* **DescribeStream** lists shards in pages (``Limit``, 100 at most and by default;
  ``ExclusiveStartShardId``; ``LastEvaluatedShardId`` when more remain).

The 24 hours and 15 minutes are multiplied by the engine's ``time_scale``. Every method takes
the time (``now``, seconds since the epoch, from the engine's clock), so the rules are exact
under a clock a test controls.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import copy
import hashlib
import json
import math
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lsiorm.testing.aws_like.options import StreamShards
from lsiorm.testing.aws_like.protocol import ServiceError
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.tables import hash_of, partition_id

__all__ = [
    "HASH_SPACE",
    "ITERATOR_MINUTES",
    "RETENTION_HOURS",
    "SEQUENCE_BASE",
    "Sequencer",
    "VirtualShard",
    "VirtualStream",
    "iterator_stream",
]

HASH_SPACE: Final = 1 << 128
#: Sequence numbers count up from here: 26 digits, like AWS's.
SEQUENCE_BASE: Final = 4 * 10**25
RETENTION_HOURS: Final = 24
ITERATOR_MINUTES: Final = 15
#: GetRecords' ``Limit`` and DescribeStream's: most and default.
RECORDS_LIMIT: Final = 1000
SHARDS_LIMIT: Final = 100


class Sequencer:
    """Sequence numbers for every stream of an engine, strictly increasing."""

    def __init__(self) -> None:
        self._last = SEQUENCE_BASE
        self._lock = threading.Lock()

    def next(self) -> int:
        """The next sequence number."""
        with self._lock:
            self._last += 1
            return self._last


@dataclass
class _Record:
    sequence: int
    taken_in: float
    size: int
    body: dict[str, Any]


@dataclass
class VirtualShard:
    """One shard: its hash range ``[low, high)``, lineage, sequence range and records."""

    id: str
    parent: str | None
    low: int
    high: int
    start: int
    created: float
    end: int | None = None
    closed_at: float | None = None
    #: Records not trimmed yet, in sequence order.
    records: list[_Record] = field(default_factory=list, repr=False)
    #: The highest trimmed sequence number (``start - 1`` before any is trimmed).
    trimmed_through: int = 0
    received: int = 0
    gone: bool = False
    reads: deque[float] = field(default_factory=deque, repr=False)

    @property
    def open(self) -> bool:
        """Whether the shard still receives records."""
        return self.end is None

    def owns(self, place: int) -> bool:
        """Whether a hash falls in the shard's range."""
        return self.low <= place < self.high

    def last_sequence(self) -> int:
        """The sequence number of the shard's last record (its start when it has none)."""
        if self.end is not None:
            return self.end
        return self.records[-1].sequence if self.records else max(self.start, self.trimmed_through)

    def description(self) -> dict[str, Any]:
        """The shard as DescribeStream lists it."""
        numbers = {"StartingSequenceNumber": str(self.start)}
        if self.end is not None:
            numbers["EndingSequenceNumber"] = str(self.end)
        out: dict[str, Any] = {"ShardId": self.id, "SequenceNumberRange": numbers}
        if self.parent is not None:
            out["ParentShardId"] = self.parent
        return out


def _iterator_token(arn: str, shard: str, after: int, issued: float) -> str:
    raw = json.dumps([arn, shard, after, issued], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decoded(token: object) -> tuple[str, str, int, float]:
    try:
        arn, shard, after, issued = json.loads(base64.urlsafe_b64decode(str(token)))
        return str(arn), str(shard), int(after), float(issued)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ServiceError("ValidationException", "Invalid ShardIterator.") from exc


def iterator_stream(token: object) -> str:
    """The stream ARN a shard iterator belongs to (``ValidationException`` if it is no token)."""
    return _decoded(token)[0]


def _number(value: object, what: str) -> int:
    try:
        return int(str(value))
    except ValueError as exc:
        raise ServiceError("ValidationException", f"Invalid {what}: {value!r}.") from exc


class VirtualStream:
    """The shards and records of one stream (see the module).

    Args:
        arn: The stream's ARN (the upstream engine's).
        description: The upstream ``StreamDescription`` (its fields other than the shards are
            answered as they are).
        partition_names: The table's partition key attribute (its records are placed by it).
        options: The shard counts, splits and limits.
        sequencer: The engine's sequence numbers.
        now: The time the stream is first seen (``split_at`` counts from it).
        time_scale: Multiplies the retention and the iterators' lifetime.
        stats: Counts ``records``, ``splits``, ``rollovers``, ``trimmed`` and refusals.
    """

    def __init__(
        self,
        arn: str,
        description: Mapping[str, Any],
        partition_names: tuple[str, ...],
        options: StreamShards,
        *,
        sequencer: Sequencer,
        now: float,
        time_scale: float = 1.0,
        stats: Tally | None = None,
    ) -> None:
        self.arn = arn
        self.description = {
            k: v for k, v in description.items() if k not in ("Shards", "LastEvaluatedShardId")
        }
        self.partition_names = partition_names
        self.options = options
        self.retention = RETENTION_HOURS * 3600 * time_scale
        self.iterator_life = ITERATOR_MINUTES * 60 * time_scale
        self.stats = stats if stats is not None else Tally()
        self.shards: dict[str, VirtualShard] = {}
        self._sequencer = sequencer
        self._lock = threading.RLock()
        self._created = now
        self._splits_done = 0
        count = options.shards
        for i in range(count):
            self._open(None, i * HASH_SPACE // count, (i + 1) * HASH_SPACE // count, now)

    # -- shards ----------------------------------------------------------------------------

    def _open(self, parent: str | None, low: int, high: int, now: float) -> VirtualShard:
        start = self._sequencer.next()
        tail = hashlib.md5(f"{self.arn}|{start}".encode()).hexdigest()[:8]
        shard = VirtualShard(
            f"shardId-{int(now * 1000):020d}-{tail}", parent, low, high, start, now
        )
        shard.trimmed_through = start - 1
        self.shards[shard.id] = shard
        return shard

    def _close(self, shard: VirtualShard, now: float) -> None:
        shard.end = shard.records[-1].sequence if shard.records else shard.start
        shard.closed_at = now

    def split(self, shard_id: str, now: float, *, children: int = 2) -> list[str]:
        """Close an open shard and open ``children`` (2: a split, 1: a rollover) in its place."""
        with self._lock:
            shard = self.shards[shard_id]
            if not shard.open:
                return []
            self._close(shard, now)
            if children == 1 or shard.high - shard.low < 2:
                self.stats.add("rollovers")
                return [self._open(shard.id, shard.low, shard.high, now).id]
            middle = (shard.low + shard.high) // 2
            self.stats.add("splits")
            return [
                self._open(shard.id, shard.low, middle, now).id,
                self._open(shard.id, middle, shard.high, now).id,
            ]

    def split_open(self, now: float, *, children: int = 2) -> list[str]:
        """Split (or roll over) every open shard; the new shards' ids."""
        with self._lock:
            opened: list[str] = []
            for shard in [s for s in self.shards.values() if s.open]:
                opened += self.split(shard.id, now, children=children)
            return opened

    def tick(self, now: float) -> None:
        """Do what is due by ``now``: splits at their times, rollovers, trimming."""
        with self._lock:
            due = self.options.split_at[self._splits_done :]
            for at in due:
                if self._created + at > now:
                    break
                self._splits_done += 1
                self.split_open(now)
            every = self.options.rollover_every
            if every is not None:
                for shard in [s for s in self.shards.values() if s.open]:
                    if now - shard.created >= every:
                        self.split(shard.id, now, children=1)
            self._trim(now)

    def _trim(self, now: float) -> None:
        horizon = now - self.retention
        for shard in self.shards.values():
            if shard.gone:
                continue
            cut = bisect.bisect_left(shard.records, horizon, key=lambda r: r.taken_in)
            if cut:
                shard.trimmed_through = shard.records[cut - 1].sequence
                del shard.records[:cut]
                self.stats.add("trimmed", cut)
            if shard.closed_at is not None and shard.closed_at <= horizon and not shard.records:
                shard.gone = True

    # -- records in ------------------------------------------------------------------------

    def ingest(self, record: Mapping[str, Any], now: float) -> str:
        """Take in one upstream record: place it by its partition key value; its shard's id."""
        body = copy.deepcopy(dict(record))
        data = body.setdefault("dynamodb", {})
        keys = data.get("Keys") or {}
        place = hash_of(partition_id(tuple(keys.get(name) for name in self.partition_names)))
        with self._lock:
            self.tick(now)
            shard = next(s for s in self.shards.values() if s.open and s.owns(place))
            sequence = self._sequencer.next()
            data["SequenceNumber"] = str(sequence)
            data["ApproximateCreationDateTime"] = math.floor(now)
            size = data.get("SizeBytes")
            if not isinstance(size, int):
                size = len(json.dumps(data))
            shard.records.append(_Record(sequence, now, size, body))
            shard.received += 1
            self.stats.add("records")
            every = self.options.split_every
            if every is not None and shard.received >= every:
                self.split(shard.id, now)
            return shard.id

    # -- the Streams API -------------------------------------------------------------------

    def describe(self, params: Mapping[str, Any], now: float) -> dict[str, Any]:
        """DescribeStream's ``StreamDescription``: one page of the shards."""
        limit = params.get("Limit", SHARDS_LIMIT)
        if not isinstance(limit, int) or not 1 <= limit <= SHARDS_LIMIT:
            raise ServiceError(
                "ValidationException",
                f"Limit must be between 1 and {SHARDS_LIMIT}, not {limit!r}.",
            )
        with self._lock:
            self.tick(now)
            listed = [s for s in self.shards.values() if not s.gone]
        after = params.get("ExclusiveStartShardId")
        if after is not None:
            ids = [s.id for s in listed]
            listed = listed[ids.index(after) + 1 :] if after in ids else []
        page = listed[:limit]
        out = dict(self.description)
        out["Shards"] = [s.description() for s in page]
        if len(listed) > limit:
            out["LastEvaluatedShardId"] = page[-1].id
        return out

    def _shard(self, shard_id: object) -> VirtualShard:
        shard = self.shards.get(str(shard_id))
        if shard is None or shard.gone:
            raise ServiceError(
                "ResourceNotFoundException",
                f"Requested resource not found: Shard does not exist: {shard_id}",
            )
        return shard

    def iterator(self, params: Mapping[str, Any], now: float) -> str:
        """GetShardIterator: a new iterator of the shard at the position asked for."""
        kind = params.get("ShardIteratorType")
        with self._lock:
            self.tick(now)
            shard = self._shard(params.get("ShardId"))
            if kind == "TRIM_HORIZON":
                after = shard.trimmed_through
            elif kind == "LATEST":
                after = shard.last_sequence()
            elif kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
                after = self._position(shard, kind, params.get("SequenceNumber"))
            else:
                raise ServiceError("ValidationException", f"Invalid ShardIteratorType: {kind!r}.")
        return _iterator_token(self.arn, shard.id, after, now)

    def _position(self, shard: VirtualShard, kind: str, raw: object) -> int:
        sequence = _number(raw, "SequenceNumber")
        highest = shard.last_sequence()
        if sequence < shard.start or sequence > highest:
            raise ServiceError(
                "ValidationException",
                f"Invalid SequenceNumber {raw} for shard {shard.id}: it holds "
                f"{shard.start} to {highest}.",
            )
        after = sequence - 1 if kind == "AT_SEQUENCE_NUMBER" else sequence
        if after < shard.trimmed_through:
            self.stats.add("trimmed_reads")
            raise ServiceError(
                "TrimmedDataAccessException",
                f"Sequence number {raw} of shard {shard.id} is older than the stream's trim "
                f"horizon: its record is gone (the stream keeps records for 24 hours).",
            )
        return after

    def records(self, params: Mapping[str, Any], now: float) -> dict[str, Any]:
        """GetRecords: the records after the iterator's position, and the next iterator."""
        limit = params.get("Limit", RECORDS_LIMIT)
        if not isinstance(limit, int) or not 1 <= limit <= RECORDS_LIMIT:
            raise ServiceError(
                "ValidationException",
                f"1 validation error detected: Value '{limit}' at 'limit' failed to satisfy "
                f"constraint: Member must have value less than or equal to {RECORDS_LIMIT}",
            )
        _, shard_id, after, issued = _decoded(params.get("ShardIterator"))
        with self._lock:
            self.tick(now)
            shard = self.shards.get(shard_id)
            if shard is None:
                raise ServiceError("ResourceNotFoundException", f"No shard {shard_id}.")
            if now > issued + self.iterator_life:
                self.stats.add("expired_iterators")
                raise ServiceError(
                    "ExpiredIteratorException",
                    "Iterator expired: it was handed out more than 15 minutes ago.",
                )
            self._admit_read(shard, now)
            if after < shard.trimmed_through:
                self.stats.add("trimmed_reads")
                raise ServiceError(
                    "TrimmedDataAccessException",
                    f"The iterator points before the trim horizon of shard {shard.id}: "
                    "records it would read are gone (the stream keeps records for 24 hours).",
                )
            page = self._page(shard, after, limit)
            position = page[-1].sequence if page else after
            done = not shard.open and self._remaining(shard, position) == 0
        answer: dict[str, Any] = {"Records": [copy.deepcopy(r.body) for r in page]}
        if not done:
            answer["NextShardIterator"] = _iterator_token(self.arn, shard.id, position, now)
        return answer

    def _admit_read(self, shard: VirtualShard, now: float) -> None:
        while shard.reads and shard.reads[0] <= now - 1.0:
            shard.reads.popleft()
        if len(shard.reads) >= self.options.get_records_per_second:
            self.stats.add("get_records_throttled")
            raise ServiceError(
                "LimitExceededException",
                f"Rate exceeded for shard {shard.id}: at most "
                f"{self.options.get_records_per_second} GetRecords calls a second.",
            )
        shard.reads.append(now)

    @staticmethod
    def _remaining(shard: VirtualShard, after: int) -> int:
        """How many of the shard's records come after sequence number ``after``."""
        return len(shard.records) - bisect.bisect_right(
            shard.records, after, key=lambda r: r.sequence
        )

    def _page(self, shard: VirtualShard, after: int, limit: int) -> list[_Record]:
        first = len(shard.records) - self._remaining(shard, after)
        page: list[_Record] = []
        size = 0
        for record in shard.records[first : first + limit]:
            if page and size + record.size > self.options.page_bytes:
                break
            page.append(record)
            size += record.size
        return page
