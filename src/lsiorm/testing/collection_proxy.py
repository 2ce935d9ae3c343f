"""A loopback HTTP proxy that gives a local engine DynamoDB's item-collection behaviour.

Neither DynamoDB Local nor moto returns ``ItemCollectionMetrics`` or refuses a write that grows
an item collection past 10 GB. `ItemCollectionProxy` sits in front of either engine and
adds both, for tables with local secondary indexes:

* it keeps the size of every collection it has seen written, measured with lsiorm's size
  model (each item plus 100 bytes, each LSI entry plus 100 bytes), starting from a consistent
  query of the collection the first time a write touches it;
* a write that asks for ``ReturnItemCollectionMetrics=SIZE`` gets ``ItemCollectionMetrics``
  back, in the response shape of the operation;
* a write that leaves a collection larger than the limit and larger than before is undone and
  answered with ``ItemCollectionSizeLimitExceededException`` (a transaction with
  ``TransactionCanceledException`` and an ``ItemCollectionSizeLimitExceeded`` reason).

``bytes_per_gb`` scales the gigabyte down, so the 10 GB limit and a table's
``collection_warning_gb`` can be reached with a few megabytes. Writes to tables with LSIs go one
at a time; every write must go through the proxy for the sizes to stay right.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lsiorm._model.wire import item_size
from lsiorm._requests.pages import PagedRead, Position, read_page_of
from lsiorm._requests.reads import partition_query
from lsiorm.testing.loopback import (
    KeptConnections,
    LoopbackHandler,
    LoopbackServer,
    LoopbackService,
    binary_decoded,
)

__all__ = ["ItemCollectionProxy"]

_GB = 1024**3
_ITEM_OVERHEAD = 100
_ENTRY_OVERHEAD = 100
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_TARGET = "DynamoDB_20120810."
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_SCHEMA_CHANGES = frozenset({"CreateTable", "DeleteTable", "UpdateTable"})
_DROPPED_HEADERS = ("host", "content-length", "connection", "accept-encoding")


@dataclass(frozen=True)
class _Shape:
    """What the proxy needs of a table: its keys and its local indexes."""

    partition: str
    sort: str | None
    # (LSI sort key attribute, projected attribute names or None for ALL)
    local_indexes: tuple[tuple[str, frozenset[str] | None], ...]

    @classmethod
    def of(cls, description: Mapping[str, Any]) -> _Shape:
        keys = {k["KeyType"]: k["AttributeName"] for k in description["KeySchema"]}
        partition, sort = keys["HASH"], keys.get("RANGE")
        lsis: list[tuple[str, frozenset[str] | None]] = []
        for lsi in description.get("LocalSecondaryIndexes") or ():
            lsi_sort = next(k["AttributeName"] for k in lsi["KeySchema"] if k["KeyType"] == "RANGE")
            projection = lsi.get("Projection") or {}
            kind = projection.get("ProjectionType", "ALL")
            if kind == "ALL":
                lsis.append((lsi_sort, None))
                continue
            kept = {partition, lsi_sort, *([sort] if sort else [])}
            if kind == "INCLUDE":
                kept |= set(projection.get("NonKeyAttributes") or ())
            lsis.append((lsi_sort, frozenset(kept)))
        return cls(partition, sort, tuple(lsis))

    def footprint(self, item: Mapping[str, Any] | None) -> int:
        """Bytes an item (JSON wire form) takes in its collection: table item and LSI entries."""
        if item is None:
            return 0
        decoded = {name: binary_decoded(av) for name, av in item.items()}
        total = item_size(decoded) + _ITEM_OVERHEAD
        for lsi_sort, kept in self.local_indexes:
            if lsi_sort not in decoded:
                continue
            entry = decoded if kept is None else {k: v for k, v in decoded.items() if k in kept}
            total += item_size(entry) + _ENTRY_OVERHEAD
        return total

    def key_of(self, item: Mapping[str, Any]) -> dict[str, Any]:
        names = (self.partition, *([self.sort] if self.sort else []))
        return {name: item[name] for name in names}


@dataclass
class _Touch:
    """One item a write may change: where it is and what it was before."""

    table: str
    key: dict[str, Any]
    adds: bool  # a put or update (may grow the collection); False for a delete or check
    action: int  # its position in a transaction or batch
    before: dict[str, Any] | None = None


def _collection_id(table: str, partition: str, value: Mapping[str, Any]) -> tuple[str, str]:
    return table, json.dumps({partition: value}, sort_keys=True)


class _Handler(LoopbackHandler):
    server: LoopbackServer
    request_id = "lsiorm-collection-proxy"

    @property
    def proxy(self) -> ItemCollectionProxy:
        proxy: ItemCollectionProxy = self.server.service
        return proxy

    def do_GET(self) -> None:
        status, payload = self.proxy.forward_raw("GET", dict(self.headers), b"")
        self.reply(status, payload)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _DROPPED_HEADERS}
        try:
            status, payload = self.proxy.handle(headers, body)
        except OSError:
            self.drop()
            return
        self.reply(status, payload)


class ItemCollectionProxy(LoopbackService):
    """Serve DynamoDB on 127.0.0.1 in front of ``upstream``, with AWS's item-collection rules.

    Args:
        upstream: The endpoint URL of the engine (DynamoDB Local or a moto server).
        bytes_per_gb: How many bytes count as one GB, both in the ``SizeEstimateRangeGB`` it
            reports and for the limit; ``2**30`` (the default) is AWS's scale, and for example
            ``100_000`` makes the 10 GB limit one megabyte.
        limit_gb: The collection size limit, 10 GB on AWS.
        idle_timeout: The proxy stops by itself after this many seconds without a request.
        max_connections: At most this many requests are answered at once (an idle connection
            holds no place; more requests wait for one).

    Use it as a context manager, or call `start` and `stop`. ``stats`` counts the
    requests, the metrics added and the writes refused.
    """

    handler = _Handler
    name = "item collection proxy"

    def __init__(
        self,
        upstream: str,
        *,
        bytes_per_gb: int = _GB,
        limit_gb: float = 10.0,
        idle_timeout: float = 600.0,
        max_connections: int = 32,
        upstream_timeout: float = 30.0,
    ) -> None:
        if bytes_per_gb < 1:
            raise ValueError(f"bytes_per_gb must be positive, not {bytes_per_gb}")
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.bytes_per_gb = bytes_per_gb
        self.limit_gb = limit_gb
        self.upstream_timeout = upstream_timeout
        self.stats: Counter[str] = Counter()
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._shapes: dict[str, _Shape | None] = {}
        self._sizes: dict[tuple[str, str], int] = {}
        self._upstream = KeptConnections(self.upstream_host, self.upstream_port, upstream_timeout)
        super().__init__(idle_timeout=idle_timeout, max_connections=max_connections)

    # -- lifecycle (endpoint_url, running: LoopbackService) ----------------------------------

    def start(self) -> str:
        """Start serving in daemon threads and return the endpoint URL."""
        self._upstream.open()
        return super().start()

    def stop(self) -> None:
        """Stop serving and close the listening socket and the kept connections."""
        super().stop()
        self._upstream.close()

    @property
    def limit_bytes(self) -> int:
        """The collection size limit in bytes (``limit_gb`` scaled by ``bytes_per_gb``)."""
        return int(self.limit_gb * self.bytes_per_gb)

    # -- what tests read -----------------------------------------------------------------------

    def collection_bytes(self, table: str, partition: Mapping[str, Any]) -> int | None:
        """The size the proxy holds for one collection (``{attribute: AttributeValue}``)."""
        ((name, value),) = partition.items()
        with self._state_lock:
            return self._sizes.get(_collection_id(table, name, value))

    def forget(self) -> None:
        """Drop every remembered size and table shape (after writes that bypassed the proxy)."""
        with self._write_lock, self._state_lock:
            self._sizes.clear()
            self._shapes.clear()

    # -- forwarding ----------------------------------------------------------------------------

    def forward_raw(
        self, method: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes]:
        """Send one HTTP request to the engine; return its status and body."""
        status, payload, _ = self._upstream.send(method, headers, body)
        return status, payload

    def _send(
        self, headers: Mapping[str, str], operation: str, params: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        out = {k: v for k, v in headers.items() if k.lower() != "x-amz-target"}
        out["X-Amz-Target"] = _TARGET + operation
        status, payload = self.forward_raw("POST", out, json.dumps(params).encode())
        answer: dict[str, Any] = json.loads(payload) if payload else {}
        if status != 200:
            raise OSError(f"the engine answered {operation} with {status}: {answer}")
        return status, answer

    def handle(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Answer one API request."""
        self.touch()
        target = next((v for k, v in headers.items() if k.lower() == "x-amz-target"), "")
        operation = target.rpartition(".")[2]
        with self._state_lock:
            self.stats["requests"] += 1
        if operation in _SCHEMA_CHANGES:
            return self._schema_change(headers, body)
        if operation not in _WRITES:
            return self.forward_raw("POST", headers, body)
        try:
            params = json.loads(body)
            touches = list(_touches(operation, params))
        except (ValueError, KeyError, TypeError, AttributeError):
            return self.forward_raw("POST", headers, body)  # malformed: the engine says why
        shapes = {t.table: self._shape(headers, t.table) for t in touches}
        if not any(shapes.values()):
            return self.forward_raw("POST", headers, body)
        try:
            for touch in touches:
                shape = shapes[touch.table]
                if shape is not None:
                    touch.key = shape.key_of(touch.key)
        except KeyError:
            return self.forward_raw("POST", headers, body)  # a key is missing: the engine says so
        with self._write_lock:
            return self._write(headers, body, operation, params, touches, shapes)

    def _schema_change(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        name = json.loads(body).get("TableName")
        with self._write_lock:
            answer = self.forward_raw("POST", headers, body)
            with self._state_lock:
                self._shapes.pop(name, None)
                for key in [k for k in self._sizes if k[0] == name]:
                    del self._sizes[key]
        return answer

    def _shape(self, headers: Mapping[str, str], table: str) -> _Shape | None:
        with self._state_lock:
            if table in self._shapes:
                return self._shapes[table]
        try:
            _, described = self._send(headers, "DescribeTable", {"TableName": table})
        except OSError:
            return None  # no such table: the write itself will say so
        shape = _Shape.of(described["Table"])
        found = shape if shape.local_indexes else None
        with self._state_lock:
            self._shapes[table] = found
        return found

    def _measure(self, headers: Mapping[str, str], table: str, shape: _Shape, value: Any) -> int:
        # The proxy sends its own requests (it is no session): the read is described as
        # lsiorm's reads are, page by page.
        read = PagedRead("Query", partition_query(table, shape.partition, value, consistent=True))
        position: Position = None
        total = 0
        while True:
            params = read.request(position)
            _, answer = self._send(headers, "Query", params)
            page = read_page_of(answer, params)
            total += sum(shape.footprint(item) for item in page.items)
            if page.last:
                return total
            position = page.next

    def _read(self, headers: Mapping[str, str], touch: _Touch) -> dict[str, Any] | None:
        _, answer = self._send(
            headers,
            "GetItem",
            {"TableName": touch.table, "Key": touch.key, "ConsistentRead": True},
        )
        item: dict[str, Any] | None = answer.get("Item")
        return item

    def _write(
        self,
        headers: Mapping[str, str],
        body: bytes,
        operation: str,
        params: dict[str, Any],
        touches: list[_Touch],
        shapes: Mapping[str, _Shape | None],
    ) -> tuple[int, bytes]:
        watched = [t for t in touches if shapes[t.table] is not None]
        collections: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        for touch in watched:
            shape = shapes[touch.table]
            assert shape is not None
            value = touch.key[shape.partition]
            cid = _collection_id(touch.table, shape.partition, value)
            collections[cid] = (touch.table, {shape.partition: value})
            with self._state_lock:
                known = cid in self._sizes
            if not known:
                size = self._measure(headers, touch.table, shape, value)
                with self._state_lock:
                    self._sizes[cid] = size
            touch.before = self._read(headers, touch)
        status, payload = self.forward_raw("POST", headers, body)
        if status != 200:
            return status, payload
        grown: dict[tuple[str, str], int] = {}
        afters: list[dict[str, Any] | None] = []
        for touch in watched:
            shape = shapes[touch.table]
            assert shape is not None
            after = self._read(headers, touch)
            afters.append(after)
            cid = _collection_id(touch.table, shape.partition, touch.key[shape.partition])
            delta = shape.footprint(after) - shape.footprint(touch.before)
            grown[cid] = grown.get(cid, 0) + delta
        over = [
            cid
            for cid, delta in grown.items()
            if delta > 0 and self._sizes[cid] + delta > self.limit_bytes
        ]
        if over:
            self._undo(headers, watched, afters)
            with self._state_lock:
                self.stats["refused"] += 1
            return self._refusal(operation, params, watched, over, shapes)
        with self._state_lock:
            for cid, delta in grown.items():
                self._sizes[cid] += delta
        if params.get("ReturnItemCollectionMetrics") != "SIZE":
            return status, payload
        answer = json.loads(payload) if payload else {}
        answer["ItemCollectionMetrics"] = self._metrics(operation, collections)
        with self._state_lock:
            self.stats["metrics"] += 1
        return status, json.dumps(answer).encode()

    def _undo(
        self,
        headers: Mapping[str, str],
        watched: list[_Touch],
        afters: list[dict[str, Any] | None],
    ) -> None:
        # Restore in reverse order, so an item touched twice ends as it was first.
        for touch, after in reversed(list(zip(watched, afters, strict=True))):
            if touch.before == after:
                continue
            if touch.before is None:
                self._send(headers, "DeleteItem", {"TableName": touch.table, "Key": touch.key})
            else:
                self._send(headers, "PutItem", {"TableName": touch.table, "Item": touch.before})

    def _metric(self, cid: tuple[str, str], key: dict[str, Any]) -> dict[str, Any]:
        with self._state_lock:
            gb = self._sizes[cid] / self.bytes_per_gb
        return {"ItemCollectionKey": key, "SizeEstimateRangeGB": [gb, gb]}

    def _metrics(
        self, operation: str, collections: Mapping[tuple[str, str], tuple[str, dict[str, Any]]]
    ) -> dict[str, Any]:
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            ((cid, (_, key)),) = collections.items()
            return self._metric(cid, key)
        out: dict[str, list[dict[str, Any]]] = {}
        for cid, (table, key) in collections.items():
            out.setdefault(table, []).append(self._metric(cid, key))
        return out

    def _refusal(
        self,
        operation: str,
        params: Mapping[str, Any],
        watched: list[_Touch],
        over: list[tuple[str, str]],
        shapes: Mapping[str, _Shape | None],
    ) -> tuple[int, bytes]:
        message = (
            f"Item collection size limit exceeded: the write would grow a collection past "
            f"{self.limit_gb:g} GB (the proxy counts {self.bytes_per_gb} bytes as 1 GB)."
        )
        if operation != "TransactWriteItems":
            code = "ItemCollectionSizeLimitExceededException"
            error = {"__type": _ERROR_PREFIX + code, "message": message}
            return 400, json.dumps(error).encode()
        reasons: list[dict[str, str]] = [
            {"Code": "None"} for _ in params.get("TransactItems") or ()
        ]
        for touch in watched:
            shape = shapes[touch.table]
            assert shape is not None
            cid = _collection_id(touch.table, shape.partition, touch.key[shape.partition])
            if cid in over and touch.adds:
                reasons[touch.action] = {
                    "Code": "ItemCollectionSizeLimitExceeded",
                    "Message": message,
                }
        codes = ", ".join(r["Code"] for r in reasons)
        cancelled: dict[str, Any] = {
            "__type": _ERROR_PREFIX + "TransactionCanceledException",
            "message": f"Transaction cancelled, please refer cancellation reasons for specific "
            f"reasons [{codes}]",
            "CancellationReasons": reasons,
        }
        return 400, json.dumps(cancelled).encode()


def _touches(operation: str, params: Mapping[str, Any]) -> Iterator[_Touch]:
    """Yield the items a write touches, with their keys (the key of a put is read later)."""
    if operation == "PutItem":
        yield _Touch(params["TableName"], dict(params["Item"]), True, 0)
    elif operation in ("UpdateItem", "DeleteItem"):
        yield _Touch(params["TableName"], dict(params["Key"]), operation == "UpdateItem", 0)
    elif operation == "BatchWriteItem":
        position = 0
        for table, writes in (params.get("RequestItems") or {}).items():
            for write in writes:
                if "PutRequest" in write:
                    yield _Touch(table, dict(write["PutRequest"]["Item"]), True, position)
                else:
                    yield _Touch(table, dict(write["DeleteRequest"]["Key"]), False, position)
                position += 1
    elif operation == "TransactWriteItems":
        for position, action in enumerate(params.get("TransactItems") or ()):
            for kind in ("Put", "Update", "Delete"):
                spec = action.get(kind)
                if spec is not None:
                    source = spec["Item"] if kind == "Put" else spec["Key"]
                    yield _Touch(spec["TableName"], dict(source), kind != "Delete", position)
