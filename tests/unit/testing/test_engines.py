"""The moto server's lock: its application answers one request at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsiorm.testing.engines import OneRequestAtATime


class SlowApp:
    """A WSGI app that takes a while per request and records how many ran at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.closed = 0
        self._count = threading.Lock()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        with self._count:
            self.inside += 1
            self.most = max(self.most, self.inside)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return self._body(environ["n"])

    def _body(self, n: int) -> Iterator[bytes]:
        # The answer is produced while the request is still inside: the lock must cover it.
        try:
            time.sleep(0.01)
            yield f"answer {n}".encode()
            yield b"."
        finally:
            with self._count:
                self.inside -= 1
                self.closed += 1


def call(app: Callable[..., Iterable[bytes]], n: int) -> tuple[str, bytes]:
    status: list[str] = []
    body = b"".join(app({"n": n}, lambda s, headers: status.append(s)))
    return status[0], body


def test_requests_from_many_threads_are_answered_one_at_a_time() -> None:
    slow = SlowApp()
    app = OneRequestAtATime(slow)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: call(app, n), range(40)))
    assert answers == [("200 OK", f"answer {n}.".encode()) for n in range(40)]
    assert slow.most == 1
    assert slow.closed == 40  # every answer closed, inside the lock


def test_without_the_lock_the_same_requests_overlap() -> None:
    # The check above can fail: the same load on the bare app runs requests at once.
    slow = SlowApp()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: call(slow, n), range(40)))
    assert slow.most > 1
