"""The loopback server under the local proxies: a place per request answered, not per open
connection; and the kept connections the proxies forward over."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from lsiorm.testing import loopback
from lsiorm.testing.loopback import KeptConnections, LoopbackHandler, LoopbackServer


class _Server(LoopbackServer):
    def __init__(self, max_connections: int) -> None:
        self.inside = 0
        self.most = 0
        self.ports: list[int] = []
        self.go = threading.Event()
        self.go.set()
        self.count = threading.Lock()
        super().__init__(_Handler, max_connections)


class _Handler(LoopbackHandler):
    server: _Server
    timeout = 120  # an idle connection stays open far longer than any test waits

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.count:
            self.server.inside += 1
            self.server.most = max(self.server.most, self.server.inside)
            self.server.ports.append(self.client_address[1])
        self.server.go.wait(30)
        with self.server.count:
            self.server.inside -= 1
        self.reply(200, b"{}")


@contextmanager
def _serving(max_connections: int) -> Iterator[_Server]:
    server = _Server(max_connections)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.go.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _post(connection: http.client.HTTPConnection) -> int:
    connection.request("POST", "/", body=b"{}", headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def test_an_idle_keep_alive_connection_holds_no_place() -> None:
    # One place; a first client keeps its connection open and idle (as botocore's pool does).
    # A second connection is answered at once, not after the idle one times out.
    with _serving(max_connections=1) as server:
        port = server.server_address[1]
        idle = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        fresh = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            assert _post(idle) == 200
            assert _post(fresh) == 200  # a place per connection: the accept loop waits, timeout
            assert _post(idle) == 200  # the kept connection still answers
        finally:
            idle.close()
            fresh.close()


def test_no_more_requests_than_places_are_answered_at_once() -> None:
    with _serving(max_connections=2) as server:
        port = server.server_address[1]
        server.go.clear()
        connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(4)]
        try:
            with ThreadPoolExecutor(4) as pool:
                answers = [pool.submit(_post, c) for c in connections]
                deadline = time.monotonic() + 10
                while server.inside < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.3)  # time enough for a third request to get in, were it let in
                assert server.inside == 2
                server.go.set()
                assert [a.result() for a in answers] == [200] * 4
        finally:
            for connection in connections:
                connection.close()
        assert server.most == 2


def test_kept_connections_reuse_a_fresh_connection_and_keep_none_after_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _serving(max_connections=4) as server:
        kept = KeptConnections("127.0.0.1", server.server_address[1], timeout=10)
        for _ in range(3):
            assert kept.send("POST", {}, b"{}")[0] == 200
        assert len(set(server.ports)) == 1  # one connection for the three
        monkeypatch.setattr(loopback, "REUSE_WITHIN", -1.0)  # none is fresh enough
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert len(set(server.ports)) == 3
        monkeypatch.setattr(loopback, "REUSE_WITHIN", 60.0)
        kept.close()
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert len(set(server.ports)) == 5  # after close, each request has its own
        kept.open()
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert kept.send("POST", {}, b"{}")[0] == 200
        assert len(set(server.ports)) == 6
        kept.close()


def test_a_request_cut_on_the_way_is_not_sent_again() -> None:
    # The proxy's client must see the answer lost (it may have been applied): the kept
    # connection raises and is dropped, and the next request opens another.
    with _serving(max_connections=4) as server:
        kept = KeptConnections("127.0.0.1", server.server_address[1], timeout=0.5)
        server.go.clear()
        with pytest.raises(TimeoutError):
            kept.send("POST", {}, b"{}")
        server.go.set()
        assert kept.send("POST", {}, b"{}")[0] == 200
        deadline = time.monotonic() + 10
        while server.inside and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(server.ports) == 2
        assert len(set(server.ports)) == 2
        kept.close()
