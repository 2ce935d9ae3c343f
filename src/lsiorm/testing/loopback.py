"""A threaded HTTP server on 127.0.0.1 whose connection count is bounded (local proxies)."""

from __future__ import annotations

import socket
import threading
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
    """A keep-alive request handler for a loopback proxy: quiet, no Nagle delay."""

    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection frees its slot after this

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
