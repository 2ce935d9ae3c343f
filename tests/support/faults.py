"""A fault-injecting HTTP proxy on loopback, in front of a DynamoDB engine, and its hooks.

It forwards each request to the engine, except that for a share of them (``rate``) it answers
in one of these ways instead, chosen at random among ``kinds``:

* ``"throttle"``: HTTP 400 with DynamoDB's error body for ``throttle_code``
  (ProvisionedThroughputExceededException by default), with ``throttle_reasons`` in the body as
  AWS sends them (``ThrottlingReasons``, or ``throttlingReasons`` for a ThrottlingException;
  each resource the ARN of the request's table) when given;
* ``"error500"``: HTTP 500 with an InternalServerError body;
* ``"error503"``: HTTP 503 with a ServiceUnavailable JSON body;
* ``"html503"``: HTTP 503 with an HTML body, as a load balancer in front would answer;
* ``"drop"``: the connection is closed without any response, the request never forwarded;
* ``"lost-response"``: the request is forwarded and applied, then the connection is closed
  before the response (the case that makes idempotency matter). Single writes (PutItem,
  UpdateItem, DeleteItem) get it like every other operation: applied, then dropped;
* ``"applied-500"``: the request is forwarded and applied, then answered with a 500, so the
  client believes it failed;
* ``"partial"``: for BatchWriteItem / BatchGetItem only, part of the batch is forwarded and the
  rest comes back as UnprocessedItems / UnprocessedKeys in the real response shape. (The
  shortened body no longer matches its SigV4 signature; local engines do not check it.)
* ``"bad-crc32"``: the request is forwarded and applied, and the answer comes back with an
  ``x-amz-crc32`` that does not match its body (damaged on the way);
* ``"gzip"``: the request is forwarded and applied, and the answer comes back gzip-compressed
  (``Content-Encoding: gzip``, the checksum of the compressed body), as a proxy may send it.

``latency`` (seconds) delays every request before it is forwarded or answered, as a network
between client and engine would: a job of a few hundred items then lasts long enough to be
watched (and interfered with) by a test. ``answer_latency`` delays each answer after the engine
gave it (the request is applied, the answer late): what a call's timeout meets.

Bounded: at most ``max_connections`` requests are answered at once, idle connections
time out, and every upstream request has a timeout. Counters in ``stats`` let tests check that
faults really happened. The proxy puts real HTTP answers on the wire, so it also tests how each
lane reads them; a test of what lsiorm does after a failure (one lost answer) uses lsiorm's
public fault injection instead (`session_losing_first_answer`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit
from zlib import crc32

from lsiorm import Session
from lsiorm.testing import FaultInjector
from lsiorm.testing.loopback import KeptConnections, LoopbackHandler, LoopbackServer

__all__ = [
    "KINDS",
    "WRITE_KINDS",
    "ErrorLog",
    "FaultProxy",
    "session_losing_first_answer",
]

KINDS = (
    "throttle",
    "error500",
    "error503",
    "html503",
    "drop",
    "lost-response",
    "applied-500",
    "partial",
    "bad-crc32",
    "gzip",
)
#: The kinds a single write can meet ("partial" is for batches only).
WRITE_KINDS = tuple(kind for kind in KINDS if kind != "partial")
_BATCH_OPERATIONS = frozenset({"BatchWriteItem", "BatchGetItem"})
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


class _Server(LoopbackServer):
    proxy: FaultProxy

    def __init__(self, proxy: FaultProxy, max_connections: int) -> None:
        self.proxy = proxy
        super().__init__(_Handler, max_connections)


class _Handler(LoopbackHandler):
    server: _Server
    request_id = "faultproxy"

    def do_POST(self) -> None:
        proxy = self.server.proxy
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operation = (self.headers.get("X-Amz-Target") or "").rpartition(".")[2]
        if proxy.latency:
            time.sleep(proxy.latency)
        kind = proxy.choose(operation)
        if kind == "drop":
            self.drop()
            return
        if kind == "throttle":
            extra = proxy.reasons_for(body)
            self._error(400, proxy.throttle_code, "Injected throttling: rate exceeded.", **extra)
            return
        if kind == "error500":
            self._error(500, "InternalServerError", "Injected internal server error.")
            return
        if kind == "error503":
            self._error(503, "ServiceUnavailable", "Injected: service unavailable.")
            return
        if kind == "html503":
            page = b"<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"
            self.reply(503, page, content_type="text/html")
            return
        if kind == "partial":
            self._partial(operation, body)
            return
        forwarded = proxy.forward(self.headers, body)
        if forwarded is None or kind == "lost-response":
            self.drop()
            return
        if kind == "applied-500":
            self._error(500, "InternalServerError", "Injected: applied, then answered 500.")
            return
        status, payload = forwarded
        if proxy.answer_latency:
            time.sleep(proxy.answer_latency)
        if kind == "bad-crc32":
            self.reply(status, payload, headers={"x-amz-crc32": str(crc32(payload) ^ 1)})
            return
        if kind == "gzip":
            self.reply(status, gzip.compress(payload), headers={"Content-Encoding": "gzip"})
            return
        self.reply(status, payload)

    def _error(self, status: int, code: str, message: str, **extra: Any) -> None:
        payload = {"__type": _ERROR_PREFIX + code, "message": message, **extra}
        self.reply(status, json.dumps(payload).encode())

    def _partial(self, operation: str, body: bytes) -> None:
        proxy = self.server.proxy
        request = json.loads(body)
        if operation == "BatchWriteItem":
            kept, deferred = proxy.split_writes(request["RequestItems"])
            left_key = "UnprocessedItems"
        else:
            kept, deferred = proxy.split_gets(request["RequestItems"])
            left_key = "UnprocessedKeys"
        if kept:
            request["RequestItems"] = kept
            forwarded = proxy.forward(self.headers, json.dumps(request).encode())
            if forwarded is None:
                self.drop()
                return
            if forwarded[0] != 200:
                self.reply(*forwarded)
                return
            answer = json.loads(forwarded[1])
        else:
            answer = {"Responses": {}} if operation == "BatchGetItem" else {}
        left = answer.setdefault(left_key, {})
        for table, part in deferred.items():
            if operation == "BatchWriteItem":
                left.setdefault(table, []).extend(part)
            else:
                left.setdefault(table, {**part, "Keys": []})["Keys"].extend(part["Keys"])
        self.reply(200, json.dumps(answer).encode())


class FaultProxy:
    """Serve ``endpoint_url`` on 127.0.0.1 and forward to ``upstream``, injecting faults.

    ``rate``, ``kinds`` and ``operations`` (which API operations may be faulted; None means
    all) may be changed while it runs. ``seed`` makes the fault sequence repeatable for a
    single-threaded client.
    """

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.0,
        kinds: Sequence[str] = KINDS,
        operations: Sequence[str] | None = None,
        throttle_code: str = "ProvisionedThroughputExceededException",
        throttle_reasons: Sequence[str] = (),
        seed: int | None = 0,
        max_connections: int = 32,
        upstream_timeout: float = 30.0,
        latency: float = 0.0,
        answer_latency: float = 0.0,
    ) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {KINDS}")
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.rate = rate
        self.kinds = tuple(kinds)
        self.operations = frozenset(operations) if operations is not None else None
        self.throttle_code = throttle_code
        self.throttle_reasons = tuple(throttle_reasons)
        self.upstream_timeout = upstream_timeout
        self.latency = latency
        self.answer_latency = answer_latency
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._server = _Server(self, max_connections)
        self._thread: threading.Thread | None = None
        self._upstream = KeptConnections(self.upstream_host, self.upstream_port, upstream_timeout)

    @property
    def endpoint_url(self) -> str:
        """The ``http://127.0.0.1:<port>`` URL clients should use."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        """Start serving in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()
        self._upstream.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- decisions (thread-safe) ---------------------------------------------------------------

    def choose(self, operation: str) -> str | None:
        """Return the fault kind for the next request of this operation, or None to forward."""
        with self._lock:
            self.stats["requests"] += 1
            self.stats[f"requests:{operation}"] += 1
            if self.operations is not None and operation not in self.operations:
                return None
            kinds = [k for k in self.kinds if k != "partial" or operation in _BATCH_OPERATIONS]
            if not kinds or self._random.random() >= self.rate:
                return None
            kind = self._random.choice(kinds)
            self.stats[kind] += 1
            self.stats["faults"] += 1
            return kind

    def reasons_for(self, body: bytes) -> dict[str, Any]:
        """The throttling reasons of a throttle of this request body, as AWS names them."""
        if not self.throttle_reasons:
            return {}
        try:
            table = str(json.loads(body).get("TableName") or "unknown")
        except ValueError:
            table = "unknown"
        arn = f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}"
        listed = [{"reason": r, "resource": arn} for r in self.throttle_reasons]
        lowercase = self.throttle_code == "ThrottlingException"
        return {"throttlingReasons" if lowercase else "ThrottlingReasons": listed}

    def _keep(self, count: int) -> list[bool]:
        """Pick which of ``count`` requests go through: about half, never all."""
        with self._lock:
            keep = [self._random.random() < 0.5 for _ in range(count)]
            if count and all(keep):
                keep[self._random.randrange(count)] = False
            self.stats["deferred"] += keep.count(False)
            return keep

    def split_writes(
        self, items: dict[str, list[Any]]
    ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        """Split BatchWriteItem RequestItems into the part to forward and the part deferred."""
        flat = [(table, request) for table, requests in items.items() for request in requests]
        kept: dict[str, list[Any]] = {}
        deferred: dict[str, list[Any]] = {}
        for (table, request), keep in zip(flat, self._keep(len(flat)), strict=True):
            (kept if keep else deferred).setdefault(table, []).append(request)
        return kept, deferred

    def split_gets(
        self, items: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """Split BatchGetItem RequestItems into the part to forward and the part deferred."""
        flat = [(table, key) for table, spec in items.items() for key in spec["Keys"]]
        kept: dict[str, dict[str, Any]] = {}
        deferred: dict[str, dict[str, Any]] = {}
        for (table, key), keep in zip(flat, self._keep(len(flat)), strict=True):
            side = kept if keep else deferred
            side.setdefault(table, {**items[table], "Keys": []})["Keys"].append(key)
        return kept, deferred

    # -- forwarding ----------------------------------------------------------------------------

    def forward(self, headers: Any, body: bytes) -> tuple[int, bytes] | None:
        """Send one request to the engine; return its status and body, None if it failed."""
        out = {
            k: v
            for k, v in headers.items()
            if k.lower() not in ("host", "content-length", "connection", "accept-encoding")
        }
        try:
            status, payload, _ = self._upstream.send("POST", out, body)
        except OSError:
            with self._lock:
                self.stats["upstream-errors"] += 1
            return None
        with self._lock:
            self.stats["forwarded"] += 1
        return status, payload


class ErrorLog:
    """Session hook: every failed attempt's error, in order."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def error(self, request: Any, error: BaseException) -> None:
        self.errors.append(error)


@contextlib.contextmanager
def session_losing_first_answer(
    endpoint_url: str,
) -> Iterator[tuple[Session, FaultInjector, ErrorLog]]:
    """A Session whose first request is applied and its answer lost, none after.

    The loss is lsiorm's public fault injection (``FaultInjector.lose_answer``), limited to
    this session; the hook logs each failed attempt.
    """
    hook = ErrorLog()
    with (
        Session(endpoint_url=endpoint_url, hooks=[hook]) as session,
        FaultInjector(session=session) as faults,
    ):
        faults.lose_answer()
        yield session, faults, hook
