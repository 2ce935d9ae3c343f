"""A threaded HTTP server on 127.0.0.1 whose connection count is bounded (local proxies)."""

from __future__ import annotations

import contextlib
import socket
import threading
import zlib
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackHandler", "LoopbackServer"]


class LoopbackServer(ThreadingHTTPServer):
    """Serve ``handler`` on a free loopback port, at most ``max_connections`` at a time."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], max_connections: int) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
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
