"""Stand-ins for botocore's DynamoDB client: answers from a script, every call recorded.

The drivers call a client's methods by botocore's names (``put_item``, ``batch_write_item``);
these fakes answer any of them, recording the operation by its API name (``PutItem``). `Clock`
stands in for a time source.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AsyncScriptedClient",
    "Clock",
    "ScriptedClient",
    "answering",
    "client_error",
    "operation_name",
]

# Captured at import: a test may replace asyncio.sleep to record the driver's own sleeps.
_REAL_SLEEP = asyncio.sleep
_UNSCRIPTED = object()


@dataclass
class Clock:
    """Seconds that move only when a test (or a fake sleep) moves them."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def client_error(code: str, status: int = 400, operation: str = "PutItem") -> Any:
    """The ``ClientError`` botocore raises for DynamoDB's error ``code`` with HTTP ``status``."""
    from botocore.exceptions import ClientError

    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} (fake)"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


def operation_name(method: str) -> str:
    """The API name of one of botocore's client methods (``put_item`` -> ``PutItem``)."""
    return "".join(part.capitalize() for part in method.split("_"))


class ScriptedClient:
    """A DynamoDB client that answers from a script; each answer is raised or returned.

    ``script`` is a list, answered in order whatever the operation, or a dict from an
    operation's name to its own answers. An exception is raised; any other answer is returned
    as a copy. Once the answers run out, ``then`` answers every call; without it, such a call
    fails the test. ``calls`` holds the (operation, params) of each call and ``started`` when
    each began, read from ``clock``.
    """

    def __init__(
        self,
        script: list[Any] | dict[str, list[Any]] | None = None,
        then: Any = _UNSCRIPTED,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._in_order = list(script) if isinstance(script, list) else []
        self._by_operation = (
            {operation: list(answers) for operation, answers in script.items()}
            if isinstance(script, dict)
            else {}
        )
        self.then = then
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.started: list[float] = []
        self._clock = clock

    @property
    def params(self) -> list[dict[str, Any]]:
        """The params of each call, in order."""
        return [params for _, params in self.calls]

    def answer(self, operation: str, params: dict[str, Any]) -> Any:
        self.calls.append((operation, copy.deepcopy(params)))
        self.started.append(self._clock())
        answers = self._by_operation.get(operation) or self._in_order
        if answers:
            outcome = answers.pop(0)
        elif self.then is not _UNSCRIPTED:
            outcome = self.then
        else:
            raise AssertionError(f"{operation} was sent, and the script has no answer for it")
        if isinstance(outcome, BaseException):
            raise outcome
        return copy.deepcopy(outcome)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        operation = operation_name(method)

        def call(**params: Any) -> Any:
            return self.answer(operation, params)

        return call


class AsyncScriptedClient(ScriptedClient):
    """The same client with aiobotocore's awaitable methods."""

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        if method.startswith("_"):
            raise AttributeError(method)
        operation = operation_name(method)

        async def call(**params: Any) -> Any:
            await _REAL_SLEEP(0)
            return self.answer(operation, params)

        return call


def answering(op: Any, answers: list[Any]) -> tuple[Any, list[Any]]:
    """Run an operation generator, answering its calls in turn (an exception is thrown in);
    return its result and the calls it made. A sleep between attempts takes no time."""
    from lsiorm._ops.steps import Call, Done, advance

    calls: list[Call] = []
    step = advance(op)
    while not isinstance(step, Done):
        if isinstance(step, Call):
            calls.append(step)
            answer = answers.pop(0)
            step = (
                advance(op, error=answer) if isinstance(answer, Exception) else advance(op, answer)
            )
        else:
            step = advance(op)
    return step.value, calls


class MarksClient:
    """An in-memory table for a stream handler's marks: BatchGetItem and conditional PutItem.

    ``lose_puts`` makes that many PutItem calls fail with a lost answer (after storing the
    item when ``stored_anyway``), as a dropped connection after sending does.
    """

    def __init__(self, lose_puts: int = 0, *, stored_anyway: bool = False) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.lose_puts = lose_puts
        self.stored_anyway = stored_anyway
        self.calls: list[str] = []

    @staticmethod
    def _key(key: dict[str, Any]) -> str:
        return repr(sorted(key.items()))

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("BatchGetItem")
        ((name, request),) = RequestItems.items()
        found = [self.items[k] for k in map(self._key, request["Keys"]) if k in self.items]
        return {"Responses": {name: found}, "UnprocessedKeys": {}}

    def put_item(self, **params: Any) -> dict[str, Any]:
        self.calls.append("PutItem")
        item = params["Item"]
        key = self._key({k: v for k, v in item.items() if k in ("PK", "SK")})
        if self.lose_puts:
            self.lose_puts -= 1
            if self.stored_anyway:
                self.items[key] = item
            from botocore.exceptions import ConnectionClosedError

            raise ConnectionClosedError(endpoint_url="http://marks.invalid")
        if key in self.items:
            raise client_error("ConditionalCheckFailedException")
        self.items[key] = item
        return {}
