"""Tailing the upstream engine's streams into virtual streams, and serving the Streams API.

DynamoDB Local keeps a table's stream in one shard that never splits; moto's is one shard
too. `StreamFeed` reads one such stream (DescribeStream, GetShardIterator, GetRecords on the
upstream engine, every upstream shard in lineage order, parents first; each request and answer
as `lsiorm._requests.stream_pages` describes them, sent on the engine's own thread) and hands
each record to its `VirtualStream`, in the upstream order. An upstream iterator expires like any
other, so none is kept past an error: the feed asks for a new one after the last sequence number
it read.

`StreamFeeds` holds the feeds of an engine: a background thread reads every stream it knows
every ``poll_interval`` (records are taken in, and stamped, soon after their writes), and every
Streams call reads its stream once more before it is answered, so a reader never misses a
record the upstream engine already holds. The engine learns a stream when a table with one is
created, changed, described or written through it, or when a Streams call names it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

from lsiorm._requests.stream_pages import (
    ShardRead,
    record_page_of,
    sequence_of,
    shard_listing_of,
    shard_listing_request,
)
from lsiorm.testing.aws_like.options import StreamShards
from lsiorm.testing.aws_like.protocol import ServiceError
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.streams import Sequencer, VirtualStream, iterator_stream
from lsiorm.testing.aws_like.upstream import Upstream, UpstreamError

__all__ = ["StreamFeed", "StreamFeeds", "ticket"]

#: Seconds between two upstream DescribeStream calls while the upstream shard stays open.
_DESCRIBE_EVERY = 1.0
_TICKETS = itertools.count()


def ticket() -> int:
    """A number greater than every one handed out before (orders asks and pulls)."""
    return next(_TICKETS)


@dataclass
class _UpstreamShard:
    id: str
    parent: str | None
    closed: bool
    position: str | None = None  # the last sequence number read
    iterator: str | None = None
    done: bool = False


def _lineage_order(shards: list[_UpstreamShard]) -> list[_UpstreamShard]:
    by_id = {s.id: s for s in shards}
    order: list[_UpstreamShard] = []
    placed: set[str] = set()

    def place(shard: _UpstreamShard, seen: frozenset[str]) -> None:
        if shard.id in placed:
            return
        parent = by_id.get(shard.parent or "")
        if parent is not None and parent.id not in seen:
            place(parent, seen | {shard.id})
        placed.add(shard.id)
        order.append(shard)

    for shard in shards:
        place(shard, frozenset({shard.id}))
    return order


class StreamFeed:
    """Reads one upstream stream into its `VirtualStream`."""

    def __init__(
        self, upstream: Upstream, stream: VirtualStream, clock: Callable[[], float]
    ) -> None:
        self.upstream = upstream
        self.stream = stream
        self._clock = clock
        self._shards: dict[str, _UpstreamShard] = {}
        self._described = 0.0
        self._started = -1
        self._lock = threading.Lock()
        #: Whether the upstream engine no longer has the stream (its table was deleted): its
        #: records stay readable here, and nothing more is asked upstream.
        self.ended = False

    def pull(self, asked: int | None = None) -> int:
        """Take in every record the upstream stream holds now; how many were new.

        ``asked`` is a `ticket` taken when a reader asked: a pull that started after it read
        everything the upstream engine held then, so readers waiting together share one pull.
        """
        with self._lock:
            if self.ended or (asked is not None and self._started > asked):
                return 0
            self._started = ticket()
            try:
                if self._needs_describe():
                    self._describe()
            except UpstreamError as exc:
                if exc.code != "ResourceNotFoundException":
                    raise
                self.ended = True
                return 0
            taken = 0
            for shard in _lineage_order(list(self._shards.values())):
                if not shard.done:
                    taken += self._read(shard)
            return taken

    def _needs_describe(self) -> bool:
        if not self._shards or all(s.done for s in self._shards.values()):
            return True
        return time.monotonic() - self._described >= _DESCRIBE_EVERY

    def _describe(self) -> None:
        self._described = time.monotonic()
        after: str | None = None
        while True:
            params = shard_listing_request(self.stream.arn, after)
            listing = shard_listing_of(self.upstream.call("DescribeStream", params, streams=True))
            for shard in listing.shards:
                known = self._shards.get(shard.id)
                if known is None:
                    self._shards[shard.id] = _UpstreamShard(shard.id, shard.parent, shard.closed)
                else:
                    known.closed = shard.closed
            if listing.next is None:
                return
            after = listing.next

    def _new_iterator(self, shard: _UpstreamShard) -> str | None:
        params = ShardRead(self.stream.arn, shard.id).iterator_request(shard.position)
        try:
            answer = self.upstream.call("GetShardIterator", params, streams=True)
        except UpstreamError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
            shard.done = True  # the upstream engine no longer holds the shard
            return None
        found: str | None = answer.get("ShardIterator")
        return found

    def _read(self, shard: _UpstreamShard) -> int:
        read = ShardRead(self.stream.arn, shard.id)
        taken = 0
        while True:
            if shard.iterator is None:
                shard.iterator = self._new_iterator(shard)
                if shard.iterator is None:
                    return taken
            try:
                params = read.request(shard.iterator)
                answer = self.upstream.call("GetRecords", params, streams=True)
            except UpstreamError:
                shard.iterator = None  # expired or refused: a new one after the position
                return taken
            page = record_page_of(answer, shard.position)
            for record in page.records:
                self.stream.ingest(record, self._clock())
                shard.position = sequence_of(record)
            taken += len(page.records)
            shard.iterator = page.next
            if page.last:
                shard.done = True
                return taken
            if not page.records:
                return taken


class StreamFeeds:
    """The virtual streams of an engine, their feeds, the thread that reads them, and the
    Streams API they answer."""

    def __init__(
        self,
        upstream: Upstream,
        options: StreamShards,
        *,
        clock: Callable[[], float],
        time_scale: float,
        stats: Tally,
    ) -> None:
        self.upstream = upstream
        self.options = options
        self.clock = clock
        self.time_scale = time_scale
        self.stats = stats
        self._sequencer = Sequencer()
        self._feeds: dict[str, StreamFeed] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: The last failure of the background reader (None: none); a test can assert on it.
        self.error: BaseException | None = None
        #: The name of the background reader's thread.
        self.thread_name = f"lsiorm-aws-like-streams-{id(self):x}"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background reader."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the background reader."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.options.poll_interval):
            with self._lock:
                feeds = list(self._feeds.values())
            for feed in feeds:
                try:
                    feed.pull()
                    feed.stream.tick(self.clock())
                except (OSError, HTTPException, UpstreamError, KeyError, ValueError) as exc:
                    self.error = exc  # the upstream engine is going away, or the table is

    # -- streams ---------------------------------------------------------------------------

    def watch(self, arn: str) -> VirtualStream:
        """The virtual stream of upstream stream ``arn``, created (and read) when first seen."""
        with self._lock:
            feed = self._feeds.get(arn)
        if feed is not None:
            return feed.stream
        try:
            answer = self.upstream.call("DescribeStream", {"StreamArn": arn}, streams=True)
        except UpstreamError as exc:
            raise ServiceError(exc.code or "ResourceNotFoundException", str(exc)) from exc
        description = answer.get("StreamDescription") or {}
        names = tuple(
            str(k["AttributeName"])
            for k in description.get("KeySchema") or ()
            if k.get("KeyType") == "HASH"
        )
        stream = VirtualStream(
            arn,
            description,
            names,
            self.options,
            sequencer=self._sequencer,
            now=self.clock(),
            time_scale=self.time_scale,
            stats=self.stats,
        )
        with self._lock:
            feed = self._feeds.setdefault(arn, StreamFeed(self.upstream, stream, self.clock))
        return feed.stream

    def drain(self, arn: str) -> VirtualStream:
        """The virtual stream of ``arn`` with every record the upstream engine holds taken in."""
        asked = ticket()
        stream = self.watch(arn)
        with self._lock:
            feed = self._feeds[arn]
        feed.pull(asked)
        stream.tick(self.clock())
        return stream

    def answer(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """Answer a Streams call from the virtual streams; None for one passed upstream."""
        now = self.clock
        if operation == "DescribeStream":
            stream = self.drain(str(params.get("StreamArn")))
            return {"StreamDescription": stream.describe(params, now())}
        if operation == "GetShardIterator":
            stream = self.drain(str(params.get("StreamArn")))
            return {"ShardIterator": stream.iterator(params, now())}
        if operation == "GetRecords":
            stream = self.drain(iterator_stream(params.get("ShardIterator")))
            return stream.records(params, now())
        return None  # ListStreams: the upstream engine's own list (the ARNs are the same)
