"""A threaded HTTP server on 127.0.0.1 that answers a bounded number of requests at once, and
the service around it.

`LoopbackServer` serves a handler with at most so many requests answered at once (an idle
keep-alive connection holds no place, so clients with big connection pools never wait on one);
`LoopbackHandler` answers as DynamoDB does (its headers and checksum) or cuts the connection;
`LoopbackService` runs a server in daemon threads, started and stopped as a ``with`` block, and
stops it by itself after a while without requests. The local proxies (`ItemCollectionProxy`,
`AwsLikeEngine`) are built on these three, and send what they forward over `KeptConnections`.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import threading
import time
import zlib
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lsiorm._io.lifetime import Running

__all__ = [
    "KeptConnections",
    "LoopbackHandler",
    "LoopbackServer",
    "LoopbackService",
    "binary_decoded",
]

#: A kept connection is reused only if it was last used this many seconds ago or less (well
#: within the idle timeout of the engines behind the proxies, so that none is closed under a
#: request).
REUSE_WITHIN = 2.0


class LoopbackServer(ThreadingHTTPServer):
    """Serve ``handler`` on a free loopback port, a thread per connection, with at most
    ``max_connections`` of them answering a request at a time (a `LoopbackHandler` takes its
    place when a request has arrived, and gives it back with the answer).

    An idle keep-alive connection holds no place: clients keep pools of idle connections
    (botocore's holds ten per client), and a place held by each would leave a new connection
    unanswered, in the accept queue, until an idle one timed out.
    """

    daemon_threads = True
    #: Connections the kernel queues before they are accepted (the default, 5, drops
    #: connection attempts when many clients connect at once).
    request_queue_size = 128

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        max_connections: int,
        service: Any = None,
    ) -> None:
        #: One place per request being answered.
        self.places = threading.BoundedSemaphore(max_connections)
        #: What the handlers serve (a `LoopbackService` gives itself).
        self.service = service
        super().__init__(("127.0.0.1", 0), handler)


class LoopbackHandler(BaseHTTPRequestHandler):
    """A keep-alive request handler for a loopback proxy: quiet, no Nagle delay.

    `reply` answers as DynamoDB does; `drop` closes the connection unanswered.
    """

    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection frees its slot after this
    request_id = "lsiorm-loopback"
    """The ``x-amzn-RequestId`` of every answer (says which proxy answered)."""

    def reply(
        self,
        status: int,
        payload: bytes,
        content_type: str = "application/x-amz-json-1.0",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send one answer with DynamoDB's headers, its CRC32 checksum among them.

        ``headers`` are sent too, in place of those of the same name.
        """
        sent = {
            "Content-Type": content_type,
            "Content-Length": str(len(payload)),
            "x-amz-crc32": str(zlib.crc32(payload) & 0xFFFFFFFF),
            "x-amzn-RequestId": self.request_id,
        }
        sent.update(headers or {})
        self.send_response(status)
        for name, value in sent.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def handle_one_request(self) -> None:
        self._place: threading.BoundedSemaphore | None = None
        try:
            super().handle_one_request()
        finally:
            place, self._place = self._place, None
            if place is not None:
                place.release()

    def parse_request(self) -> bool:
        # Called once a request's first line has arrived: the request now takes a place.
        parsed = super().parse_request()
        if parsed and isinstance(self.server, LoopbackServer):
            self.server.places.acquire()
            self._place = self.server.places
        return parsed

    def drop(self) -> None:
        """Close the connection without answering (the client sees it cut)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class LoopbackService(Running):
    """A `LoopbackServer` run in daemon threads until `stop`, or until it has been idle too long.

    Subclasses give the handler class (``handler``) and a ``name`` for messages; handlers reach
    the service as ``self.server.service`` and call `touch` on each request, so the service
    stops by itself after ``idle_timeout`` seconds without one (a test that forgot to stop it
    leaves no server behind).
    """

    handler: type[BaseHTTPRequestHandler]
    name = "loopback service"

    def __init__(self, *, idle_timeout: float, max_connections: int) -> None:
        self.idle_timeout = idle_timeout
        self._max_connections = max_connections
        self._last_request = time.monotonic()
        self._server: LoopbackServer | None = None
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def running(self) -> bool:
        """Whether the service is serving."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def endpoint_url(self) -> str:
        """The ``http://127.0.0.1:<port>`` URL clients should use."""
        if self._server is None:
            raise RuntimeError(f"The {self.name} is not running; call start() first.")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def touch(self) -> None:
        """Note a request (the idle timeout counts from the last one)."""
        self._last_request = time.monotonic()

    def start(self) -> str:
        """Start serving in daemon threads and return the endpoint URL."""
        if self._server is None:
            self._stopping.clear()
            self.touch()
            self._server = LoopbackServer(self.handler, self._max_connections, self)
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
            self._watchdog = threading.Thread(target=self._stop_when_idle, daemon=True)
            self._watchdog.start()
        return self.endpoint_url

    def stop(self) -> None:
        """Stop serving and close the listening socket (safe to call twice)."""
        self._stopping.set()
        server, thread = self._server, self._thread
        if server is not None:
            if thread is not None and thread is not threading.current_thread():
                server.shutdown()
                thread.join(timeout=5)
            server.server_close()
        self._server = self._thread = None
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog is not threading.current_thread():
            watchdog.join(timeout=5)

    def _stop_when_idle(self) -> None:
        while not self._stopping.wait(min(1.0, self.idle_timeout)):
            if time.monotonic() - self._last_request > self.idle_timeout:
                self.stop()  # a subclass's stop too (an engine stops its own threads)
                return


def binary_decoded(av: Mapping[str, Any]) -> dict[str, Any]:
    """An AttributeValue as read from a request's JSON, with the base64 text of its B and BS
    values (at any depth) turned into bytes, as a proxy needs it to size an item."""
    ((tag, raw),) = av.items()
    if tag == "B":
        return {"B": base64.b64decode(raw)}
    if tag == "BS":
        return {"BS": [base64.b64decode(b) for b in raw]}
    if tag == "M":
        return {"M": {k: binary_decoded(v) for k, v in raw.items()}}
    if tag == "L":
        return {"L": [binary_decoded(v) for v in raw]}
    return {tag: raw}


class KeptConnections:
    """HTTP/1.1 requests to ``host:port`` over keep-alive connections, reused while fresh.

    A connection per request would leave a closed socket in TIME_WAIT for each one (for a
    minute), and a proxy forwarding a few thousand requests a second runs out of local ports.
    A request that fails on the way (the connection cut, a timeout) is not sent again: it may
    have been applied, so the proxy's client sees its answer lost, as it would from AWS.
    """

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._lock = threading.Lock()
        #: Idle connections and when each was last used, the oldest first.
        self._idle: list[tuple[float, http.client.HTTPConnection]] = []
        self._closed = False

    def send(
        self, method: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, str | None]:
        """Send one request to ``/``; its answer's status, body and ``Server`` header."""
        connection = self._take()
        try:
            out = dict(headers)
            out["Content-Length"] = str(len(body))
            connection.request(method, "/", body=body or None, headers=out)
            response = connection.getresponse()
            payload = response.read()
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            self._give(connection)
        return response.status, payload, response.getheader("Server")

    def open(self) -> None:
        """Keep idle connections again (after `close`)."""
        with self._lock:
            self._closed = False

    def close(self) -> None:
        """Close the idle connections; one in use is closed when its request ends, and no
        connection is kept after this (a later request opens and closes its own)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for _, connection in idle:
            connection.close()

    def _take(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        stale = []
        with self._lock:
            while self._idle:
                used, connection = self._idle.pop()
                if now - used <= REUSE_WITHIN:
                    break
                stale.append(connection)
            else:
                connection = None
        for old in stale:
            old.close()
        if connection is None:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return connection

    def _give(self, connection: http.client.HTTPConnection) -> None:
        now = time.monotonic()
        with self._lock:
            # The oldest are first; those past reuse are closed now, not kept.
            stale = 0
            while stale < len(self._idle) and now - self._idle[stale][0] > REUSE_WITHIN:
                stale += 1
            expired, self._idle = self._idle[:stale], self._idle[stale:]
            if self._closed:
                expired.append((now, connection))
            else:
                self._idle.append((now, connection))
        for _, old in expired:
            old.close()
