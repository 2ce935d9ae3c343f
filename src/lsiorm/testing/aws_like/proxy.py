"""`AwsLikeEngine`: the loopback server in front of the upstream engine, and how it routes.

Every request a client sends to ``engine.endpoint_url`` is read here and goes one way:

* a **Streams call** (``DynamoDBStreams_20120810.*``) is answered from the virtual streams
  (`stream_feed`), when streams are on; ListStreams goes upstream (the ARNs are the same);
* a **table change** (CreateTable, UpdateTable, DeleteTable) goes upstream, then the engine
  forgets what it knew of the table (and drops its shadow, learns its stream);
* **ListTables** goes upstream and comes back without the shadow tables;
* an **item read or write** goes through the behaviours that are on, in this order: transaction
  conflicts (`conflicts`: may refuse it), the items' locks and images (`images`), partition
  limits and on-demand maxima (`throughput`: may refuse it, or part of a batch), the request
  itself (a global index read sent to its shadow table by `gsi_lag`), the images after it, the
  units it consumed charged, and its answer as the caller asked for it;
* anything else goes upstream as it came.

A request the engine cannot read (malformed JSON, a table the upstream engine does not have)
goes upstream as it came, so the upstream engine says what is wrong with it; one of the
engine's own requests that the upstream engine refuses (an item's image, say, of a table
deleted behind the engine's back) is answered with the upstream engine's refusal.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from lsiorm.errors import ValidationError
from lsiorm.testing.aws_like.conflicts import Conflicts
from lsiorm.testing.aws_like.gsi_lag import GsiLagging, is_shadow
from lsiorm.testing.aws_like.images import ItemLocks, read_image
from lsiorm.testing.aws_like.options import (
    GsiLag,
    OnDemandMaximum,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)
from lsiorm.testing.aws_like.protocol import (
    STREAMS_TARGET,
    ServiceError,
    cancelled,
    operation_of,
    restore_consumed,
)
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.stream_feed import StreamFeeds
from lsiorm.testing.aws_like.tables import Catalog, TableShape
from lsiorm.testing.aws_like.throughput import (
    Access,
    Refusal,
    Throughput,
    estimated_units,
    reported_units,
    throttled,
)
from lsiorm.testing.aws_like.touches import Touch, query_partition, touches
from lsiorm.testing.aws_like.upstream import DROPPED_HEADERS, Upstream, UpstreamError
from lsiorm.testing.loopback import LoopbackHandler, LoopbackServer, LoopbackService

__all__ = ["AwsLikeEngine"]

_ITEMS: Final = frozenset(
    {
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "GetItem",
        "BatchWriteItem",
        "BatchGetItem",
        "TransactWriteItems",
        "TransactGetItems",
    }
)
_READS: Final = frozenset({"Query", "Scan"})
_SCHEMA: Final = frozenset({"CreateTable", "UpdateTable", "DeleteTable"})
_BATCHES: Final = {"BatchWriteItem": "UnprocessedItems", "BatchGetItem": "UnprocessedKeys"}
_THROTTLED: Final = "Throughput exceeds what one partition key value (or table) may consume."

Answer = tuple[int, bytes]


class _Handler(LoopbackHandler):
    server: LoopbackServer
    request_id = "lsiorm-aws-like-engine"

    @property
    def engine(self) -> AwsLikeEngine:
        engine: AwsLikeEngine = self.server.service
        return engine

    def do_GET(self) -> None:
        status, payload = self.engine.upstream.send("GET", dict(self.headers), b"")
        self.reply(status, payload)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in DROPPED_HEADERS}
        travel = self.engine.latency / 2
        if travel:
            time.sleep(travel)  # the request on its way to AWS
        try:
            status, payload = self.engine.handle(headers, body)
        except OSError:
            self.drop()
            return
        if travel:
            time.sleep(travel)  # the answer on its way back
        self.reply(status, payload)


class _Request:
    """One item read or write on its way through the engine."""

    def __init__(
        self,
        operation: str,
        params: dict[str, Any],
        touched: list[Touch],
        shape: TableShape | None,
    ) -> None:
        self.operation = operation
        self.params = params
        self.touched = touched
        #: The table of a Query or Scan.
        self.shape = shape
        #: What is sent upstream (the params, changed by the behaviours).
        self.sent: dict[str, Any] = params
        #: Positions refused by the partition limits (a batch's entries).
        self.refused: list[Refusal] = []


class AwsLikeEngine(LoopbackService):
    """Serve DynamoDB and DynamoDB Streams on 127.0.0.1 as AWS does at scale, in front of a
    local engine.

    Each behaviour is off unless its option is given (see the options' classes)::

        from lsiorm.testing import AwsLikeEngine, GsiLag, PartitionLimits, StreamShards

        with AwsLikeEngine(
            upstream_url,                                         # DynamoDB Local or moto
            streams=StreamShards(shards=8, split_every=400),
            partition_limits=PartitionLimits(write_units=10, read_units=30),
            gsi_lag=GsiLag(seconds=0.5),
            time_scale=0.001,            # 24 h retention -> 86.4 s, 15 min iterators -> 0.9 s
        ) as engine:
            session = Session(endpoint_url=engine.endpoint_url, region_name="us-east-1")

    Every request must go through the engine for what it keeps (streams, images, buckets,
    holds) to be right.

    Args:
        upstream: The endpoint URL of DynamoDB Local or of a moto server.
        streams: Streams of many shards that split (`StreamShards`); None: the upstream
            engine's own stream.
        partition_limits: Units per second per partition key value (`PartitionLimits`).
        on_demand: Maximum units per second of on-demand tables and indexes
            (`OnDemandMaximum`).
        gsi_lag: Global indexes behind their table (`GsiLag`).
        conflicts: Transactions that conflict (`TransactionConflicts`).
        latency: Seconds of network between a client and AWS, added to every answer (half on
            the request's way, half on the answer's): a few milliseconds within a region. A
            loopback engine answers in well under one, so a client that waits on its answers
            (a worker with a few requests in flight) would look faster than it is on AWS.
        time_scale: Multiplies AWS's fixed durations: the stream's 24-hour retention and the
            iterators' 15 minutes (``0.001``: 86.4 and 0.9 seconds).
        clock: The time in seconds since the epoch (``time.time`` by default); a test can
            give a clock it moves itself, to make the timing rules exact.
        idle_timeout: The engine stops by itself after this many seconds without a request.
        max_connections: At most this many requests are answered at once (an idle connection
            holds no place; more requests wait for one).
        upstream_timeout: Seconds to wait for the upstream engine's answer.

    ``stats`` counts what happened: ``requests``, ``throttled`` (and each reason),
    ``conflicts``, ``records``, ``splits``, ``rollovers``, ``trimmed``,
    ``expired_iterators``, ``trimmed_reads``, ``get_records_throttled``, ``gsi_reads``, ...
    """

    handler = _Handler
    name = "AWS-like engine"

    def __init__(
        self,
        upstream: str,
        *,
        streams: StreamShards | None = None,
        partition_limits: PartitionLimits | None = None,
        on_demand: OnDemandMaximum | None = None,
        gsi_lag: GsiLag | None = None,
        conflicts: TransactionConflicts | None = None,
        latency: float = 0.0,
        time_scale: float = 1.0,
        clock: Callable[[], float] | None = None,
        idle_timeout: float = 600.0,
        max_connections: int = 32,
        upstream_timeout: float = 30.0,
    ) -> None:
        if time_scale <= 0:
            raise ValidationError(
                "aws_like.time-scale", f"time_scale must be more than 0, not {time_scale!r}"
            )
        if not 0 <= latency < upstream_timeout:
            raise ValidationError(
                "aws_like.latency",
                f"latency must be at least 0 and less than upstream_timeout, not {latency!r}",
            )
        self.latency = latency
        super().__init__(idle_timeout=idle_timeout, max_connections=max_connections)
        self.clock: Callable[[], float] = clock or time.time
        self.time_scale = time_scale
        self.stats = Tally()
        self.upstream = Upstream(upstream, upstream_timeout)
        self.catalog = Catalog(self.upstream)
        self.partition_limits = partition_limits
        self._streams = (
            StreamFeeds(
                self.upstream, streams, clock=self.clock, time_scale=time_scale, stats=self.stats
            )
            if streams is not None
            else None
        )
        self._throughput = (
            Throughput(partition_limits, on_demand, self.stats)
            if partition_limits is not None or on_demand is not None
            else None
        )
        self._lag = GsiLagging(gsi_lag, self.upstream, self.stats) if gsi_lag else None
        self._conflicts = Conflicts(conflicts, self.stats) if conflicts else None
        self._locks = ItemLocks()
        self._estimated: bool | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> str:
        """Start serving (and reading the upstream streams); return the endpoint URL."""
        self.upstream.open()
        url = super().start()
        if self._streams is not None:
            self._streams.start()
        return url

    def stop(self) -> None:
        """Stop serving; delete the shadow tables of the GSI lag (safe to call twice)."""
        if self._streams is not None:
            self._streams.stop()
        if self._lag is not None:
            self._lag.close()
        super().stop()
        self.upstream.close()

    # -- what tests call -------------------------------------------------------------------

    @property
    def reading_streams(self) -> bool:
        """Whether the background reader of the upstream streams is running."""
        name = self._streams.thread_name if self._streams is not None else None
        return any(t.name == name and t.is_alive() for t in threading.enumerate())

    def _stream_of(self, table: str) -> str:
        if self._streams is None:
            raise ValidationError(
                "aws_like.no-streams", "This engine serves no streams: give it streams=."
            )
        self.catalog.forget(table)
        shape = self.catalog.shape(table)
        if shape is None or shape.stream_arn is None:
            raise ValidationError(
                "aws_like.no-stream", f"Table {table!r} has no stream enabled.", table=table
            )
        return shape.stream_arn

    def split(self, table: str) -> list[str]:
        """Split every open shard of the stream of ``table`` (its name as the upstream engine
        knows it) now; the ids of the shards opened."""
        arn = self._stream_of(table)
        assert self._streams is not None
        return self._streams.drain(arn).split_open(self.clock())

    def rollover(self, table: str) -> list[str]:
        """Close every open shard of the stream of ``table`` and continue each in one child."""
        arn = self._stream_of(table)
        assert self._streams is not None
        return self._streams.drain(arn).split_open(self.clock(), children=1)

    # -- routing ---------------------------------------------------------------------------

    def handle(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Answer one request (see the module)."""
        self.touch()
        self.stats.add("requests")
        self.upstream.remember(headers)
        prefix, operation = operation_of(headers)
        try:
            if prefix == STREAMS_TARGET:
                return self._streams_call(operation, headers, body)
            if operation in _SCHEMA:
                return self._schema(operation, headers, body)
            if operation == "ListTables" and self._lag is not None:
                return self._list_tables(headers, body)
            if operation == "DescribeTable" and self._streams is not None:
                return self._describe_table(headers, body)
            if operation in _ITEMS or operation in _READS:
                return self._item_request(operation, headers, body)
        except ServiceError as exc:
            self.stats.add(f"refused:{exc.code}")
            return exc.status, exc.body()
        except UpstreamError as exc:  # one of the engine's own requests was refused: say why
            self.stats.add(f"upstream:{exc.code}")
            return exc.status, json.dumps(exc.answer).encode()
        return self.upstream.forward(headers, body)

    def _streams_call(self, operation: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if self._streams is None:
            return self.upstream.forward(headers, body)
        try:
            params = json.loads(body)
        except ValueError:
            return self.upstream.forward(headers, body)
        answer = self._streams.answer(operation, params)
        if answer is None:
            return self.upstream.forward(headers, body)
        return 200, json.dumps(answer).encode()

    def _notice(self, description: Mapping[str, Any] | None) -> None:
        """Learn a table's stream from a TableDescription (its stream is read from now on)."""
        if self._streams is None or not description:
            return
        spec = description.get("StreamSpecification") or {}
        arn = description.get("LatestStreamArn")
        if spec.get("StreamEnabled") and isinstance(arn, str):
            self._streams.watch(arn)

    def _schema(self, operation: str, headers: Mapping[str, str], body: bytes) -> Answer:
        status, payload = self.upstream.forward(headers, body)
        try:
            name = json.loads(body).get("TableName")
        except (ValueError, AttributeError):
            return status, payload
        if status != 200 or not isinstance(name, str):
            return status, payload
        self.catalog.forget(name)
        if self._throughput is not None:
            self._throughput.forget(name)
        if self._lag is not None and operation != "CreateTable":
            self._lag.drop(name)
        if operation != "DeleteTable":
            self._notice(json.loads(payload).get("TableDescription"))
        return status, payload

    def _list_tables(self, headers: Mapping[str, str], body: bytes) -> Answer:
        status, payload = self.upstream.forward(headers, body)
        if status != 200:
            return status, payload
        answer = json.loads(payload)
        answer["TableNames"] = [n for n in answer.get("TableNames") or () if not is_shadow(n)]
        return status, json.dumps(answer).encode()

    def _describe_table(self, headers: Mapping[str, str], body: bytes) -> Answer:
        status, payload = self.upstream.forward(headers, body)
        if status == 200:
            self._notice(json.loads(payload).get("Table"))
        return status, payload

    # -- item reads and writes -------------------------------------------------------------

    def _read(self, operation: str, params: Mapping[str, Any]) -> _Request | None:
        """The request as the engine sees it; None when it cannot read it."""
        if operation in _READS:
            name = params.get("TableName")
            shape = self.catalog.shape(name) if isinstance(name, str) else None
            return None if shape is None else _Request(operation, dict(params), [], shape)
        touched = touches(operation, params, self.catalog.shape)
        return None if touched is None else _Request(operation, dict(params), touched, None)

    def _item_request(self, operation: str, headers: Mapping[str, str], body: bytes) -> Answer:
        try:
            params = json.loads(body)
            request = self._read(operation, params) if isinstance(params, dict) else None
        except ValueError:
            request = None
        if request is None:
            return self.upstream.forward(headers, body)
        for touch in request.touched:
            self._notice(touch.table.description)
            if self._lag is not None and touch.changes:
                self._lag.ensure(touch.table)
        ticket = None
        if self._conflicts is not None:
            token = params.get("ClientRequestToken")
            ticket = self._conflicts.take(operation, request.touched, token, self.clock())
        status = 0
        try:
            status, payload = self._locked(request, headers, body)
        finally:
            if self._conflicts is not None:
                self._conflicts.release(ticket, self.clock(), applied=status == 200)
        return status, payload

    @property
    def estimated(self) -> bool:
        """Whether units are estimated by the size model (moto), not taken as reported."""
        if self._estimated is None:
            mode = self.partition_limits.units if self.partition_limits else "auto"
            self._estimated = mode == "estimated" or (mode == "auto" and self.upstream.is_moto)
        return self._estimated

    def _imaged(self, touch: Touch) -> tuple[bool, bool]:
        """Whether to read a touched item's image before the write, and after it."""
        if not touch.changes:
            return False, False
        indexed = bool(touch.table.global_indexes)
        limits = self._throughput is not None and (indexed or self.estimated)
        lagging = self._lag is not None and indexed
        return limits, limits or lagging

    def _locked(self, request: _Request, headers: Mapping[str, str], body: bytes) -> Answer:
        plans = [(touch, *self._imaged(touch)) for touch in request.touched]
        held = [touch.identity for touch, before, after in plans if before or after]
        with self._locks.holding(held):
            for touch, before, _ in plans:
                if before:
                    touch.before = read_image(self.upstream, touch)
            self._admit(request)
            status, payload = self._send(request, headers, body)
            if status == 200:
                for touch, _, after in plans:
                    if after:
                        touch.after = read_image(self.upstream, touch)
                        if self._lag is not None and touch.table.global_indexes:
                            self._lag.capture(touch.table, touch.key, touch.after, self.clock())
        return self._answer(request, status, payload)

    def _send(self, request: _Request, headers: Mapping[str, str], body: bytes) -> Answer:
        if self._lag is not None and request.shape is not None:
            shadowed = self._lag.redirected(request.sent, request.shape, self.clock())
            if shadowed is not None:
                request.sent = shadowed
        if self._throughput is not None and not self.estimated:
            request.sent = {**request.sent, "ReturnConsumedCapacity": "INDEXES"}
        if request.sent is request.params:
            return self.upstream.forward(headers, body)
        status, payload = self.upstream.forward(headers, json.dumps(request.sent).encode())
        if request.shape is not None and request.sent.get("TableName") != request.shape.name:
            payload = GsiLagging.renamed(payload, request.shape.name)
        return status, payload

    # -- partition limits ------------------------------------------------------------------

    def _accesses(self, request: _Request) -> list[Access]:
        shape = request.shape
        if shape is not None:
            if request.operation == "Query":
                index, partition = query_partition(request.params, shape)
            else:
                named = request.params.get("IndexName")
                index, partition = (named if named in shape.global_indexes else None), None
            return [Access(0, shape, index, False, partition)]
        found: list[Access] = []
        for touch in request.touched:
            table = touch.table
            found.append(
                Access(touch.position, table, None, touch.writes, table.partition_of(touch.key))
            )
            if not touch.changes:
                continue
            for gsi in table.global_indexes.values():
                parts = {gsi.partition_of(touch.before), gsi.partition_of(touch.new_image)}
                for partition in sorted(p for p in parts if p is not None):
                    found.append(Access(touch.position, table, gsi.name, True, partition))
        return found

    def _admit(self, request: _Request) -> None:
        """Refuse the request (or a batch's entries) whose buckets are empty."""
        if self._throughput is None:
            return
        refusals = self._throughput.refusals(self._accesses(request), self.clock())
        if not refusals:
            return
        operation = request.operation
        if operation in ("TransactWriteItems", "TransactGetItems"):
            refused = {r.position for r in refusals}
            raise cancelled(
                [
                    ("ThrottlingError", _THROTTLED) if i in refused else None
                    for i in range(len(request.touched))
                ]
            )
        if operation not in _BATCHES or len(refusals) == len(request.touched):
            raise throttled(refusals)
        request.refused = refusals
        request.sent = _without(request.params, operation, {r.position for r in refusals})

    def _charge(self, request: _Request, answer: Mapping[str, Any]) -> None:
        assert self._throughput is not None
        refused = {r.position for r in request.refused}
        if refused:
            request.touched = [t for t in request.touched if t.position not in refused]
        if self.estimated:
            units = estimated_units(
                request.operation, request.params, answer, request.touched, request.shape
            )
        else:
            units = reported_units(answer.get("ConsumedCapacity"))
        self._throughput.charge(self._accesses(request), units, self.clock())

    def _answer(self, request: _Request, status: int, payload: bytes) -> Answer:
        if status != 200 or (request.sent is request.params and self._throughput is None):
            return status, payload
        answer = json.loads(payload) if payload else {}
        if self._throughput is not None:
            self._charge(request, answer)
        if request.refused:
            _give_back(answer, request.params, request.operation, request.refused)
        restore_consumed(answer, request.params.get("ReturnConsumedCapacity"))
        return status, json.dumps(answer).encode()


def _entries(params: Mapping[str, Any], operation: str) -> list[tuple[str, Any]]:
    """A batch's entries in position order: (table, write request or key)."""
    found: list[tuple[str, Any]] = []
    for table, spec in (params.get("RequestItems") or {}).items():
        listed = spec if operation == "BatchWriteItem" else spec.get("Keys") or ()
        found += [(table, entry) for entry in listed]
    return found


def _regrouped(
    params: Mapping[str, Any], operation: str, entries: Sequence[tuple[str, Any]]
) -> dict[str, Any]:
    grouped: dict[str, Any] = {}
    for table, entry in entries:
        if operation == "BatchWriteItem":
            grouped.setdefault(table, []).append(entry)
        else:
            spec = grouped.setdefault(table, {**params["RequestItems"][table], "Keys": []})
            spec["Keys"].append(entry)
    return grouped


def _without(params: Mapping[str, Any], operation: str, refused: set[int]) -> dict[str, Any]:
    """A batch's params without the entries at ``refused`` positions."""
    kept = [e for i, e in enumerate(_entries(params, operation)) if i not in refused]
    return {**params, "RequestItems": _regrouped(params, operation, kept)}


def _give_back(
    answer: dict[str, Any], params: Mapping[str, Any], operation: str, refused: Sequence[Refusal]
) -> None:
    """Add a batch's refused entries to its unprocessed ones."""
    positions = {r.position for r in refused}
    back = [e for i, e in enumerate(_entries(params, operation)) if i in positions]
    field = _BATCHES[operation]
    unprocessed = dict(answer.get(field) or {})
    for table, spec in _regrouped(params, operation, back).items():
        if operation == "BatchWriteItem":
            unprocessed[table] = list(unprocessed.get(table) or ()) + spec
        else:
            earlier = (unprocessed.get(table) or {}).get("Keys") or []
            unprocessed[table] = {**spec, "Keys": list(earlier) + spec["Keys"]}
    answer[field] = unprocessed
