"""A threaded HTTP server on 127.0.0.1 whose connection count is bounded, and the service around it.

`LoopbackServer` serves a handler with at most so many connections at once; `LoopbackHandler`
answers as DynamoDB does (its headers and checksum) or cuts the connection; `LoopbackService`
runs a server in daemon threads, started and stopped as a ``with`` block, and stops it by
itself after a while without requests. The local proxies (`ItemCollectionProxy`,
`AwsLikeEngine`) are built on these three.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lsiorm._io.lifetime import Running

__all__ = ["LoopbackHandler", "LoopbackServer", "LoopbackService"]


class LoopbackServer(ThreadingHTTPServer):
    """Serve ``handler`` on a free loopback port, at most ``max_connections`` at a time."""

    daemon_threads = True

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        max_connections: int,
        service: Any = None,
    ) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        #: What the handlers serve (a `LoopbackService` gives itself).
        self.service = service
        super().__init__(("127.0.0.1", 0), handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Blocks the accept loop while every slot is busy: the thread count stays bounded.
        self._slots.acquire()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


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
