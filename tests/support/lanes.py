"""Records of what a session's requests got back, to compare request lanes with each other."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from lsiorm import Session
from lsiorm._ops.steps import Call
from lsiorm.errors import LsiormError

__all__ = ["Notes", "comparable", "normal", "recorded"]


def comparable(response: Any) -> Any:
    """A response without its ResponseMetadata (request ids, dates: they differ run to run)."""
    if isinstance(response, dict):
        return {k: v for k, v in response.items() if k != "ResponseMetadata"}
    return response


class Notes:
    """Each request a driver sent and what came back: a response, or an error's type and text."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @contextmanager
    def of(self, call: Call) -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
        """Note ``call``'s error if one is raised; yield what notes and returns its response."""

        def answered(response: dict[str, Any]) -> dict[str, Any]:
            self.seen.append((call.operation, call.params, comparable(response)))
            return response

        try:
            yield answered
        except LsiormError as exc:
            self.seen.append((call.operation, call.params, type(exc).__name__, exc.code, str(exc)))
            raise


@contextmanager
def recorded(session: Session) -> Iterator[Notes]:
    """Note every request ``session``'s driver sends while inside, and what it got back."""
    notes = Notes()
    driver = getattr(session.driver, "inner", session.driver)  # under the capacity meter
    send = driver.send

    def recording(call: Call) -> dict[str, Any]:
        with notes.of(call) as answered:
            return answered(send(call))

    driver.send = recording
    try:
        yield notes
    finally:
        driver.send = send


def normal(seen: list[Any], table_name: str) -> list[str]:
    """Notes as sorted JSON with the table's name replaced: concurrent chunks of one batch are
    recorded in any order, and each run has a table of its own."""
    texts = (json.dumps(x, default=repr, sort_keys=True) for x in seen)
    return sorted(text.replace(table_name, "T") for text in texts)
