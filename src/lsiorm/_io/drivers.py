"""The two thin I/O drivers: one runs operations on boto3, the other awaits aioboto3.

Each driver does four things only: send a :class:`~lsiorm.steps.Call` with the client and type
any failure, sleep, run a :class:`~lsiorm.steps.Gather` (one by one, or concurrently), and pass
:class:`~lsiorm.steps.Emit` values out. Everything else lives in the shared operations.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any, TypeVar

from botocore import xform_name
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from lsiorm._io.overlap import gather_in_threads
from lsiorm._ops.service_errors import from_error_response, from_transport_failure
from lsiorm._ops.steps import Call, Emit, Gather, Operation, Sleep, Step
from lsiorm.errors import LsiormError

__all__ = ["AsyncDriver", "SyncDriver", "no_botocore_retries"]

T = TypeVar("T")

_TRANSPORT: tuple[type[BaseException], ...] = (HTTPClientError, BotocoreConnectionError)
try:  # aiohttp comes with aiobotocore; some of its errors reach us unwrapped.
    import aiohttp

    _ASYNC_TRANSPORT: tuple[type[BaseException], ...] = (
        *_TRANSPORT,
        aiohttp.ClientError,
        asyncio.TimeoutError,
    )
except ImportError:  # pragma: no cover - aiohttp is a dependency of aiobotocore
    _ASYNC_TRANSPORT = _TRANSPORT


def no_botocore_retries() -> dict[str, Any]:
    """Return botocore client config kwargs that leave retrying to lsiorm alone."""
    return {"retries": {"total_max_attempts": 1, "mode": "standard"}}


class SyncDriver:
    """Runs operations with a boto3 DynamoDB client."""

    def __init__(self, client: Any, lane: Any = None) -> None:
        self.client = client
        #: The lean request lane (lsiorm._io.lean), tried first; None sends all via botocore.
        self.lane = lane

    def send(self, call: Call) -> dict[str, Any]:
        """Send one request; raise a typed lsiorm error on failure."""
        method = getattr(self.client, xform_name(call.operation))
        lane = self.lane
        try:
            sent = lane.send(call.operation, call.params) if lane is not None else None
            response: dict[str, Any] = sent if sent is not None else method(**call.params)
        except ClientError as exc:
            raise from_error_response(
                exc.response, call.operation, call.params, call.tables
            ) from exc
        except _TRANSPORT as exc:
            raise from_transport_failure(exc, call.operation, call.params) from exc
        return response

    def _result(self, step: Step) -> Any:
        if isinstance(step, Call):
            return self.send(step)
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return None
        if isinstance(step, Gather):
            return gather_in_threads(self.run, step.operations, step.limit)
        raise TypeError(f"unknown step {step!r}")

    def _loop(self, op: Operation[T]) -> Generator[Any, None, T]:
        # StopIteration must not escape a generator (PEP 479): turn it into the return value.
        try:
            step = next(op)
            while True:
                if isinstance(step, Emit):
                    yield step.value
                    step = op.send(None)
                    continue
                try:
                    result = self._result(step)
                except LsiormError as exc:
                    step = op.throw(exc)
                    continue
                step = op.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value

    def run(self, op: Operation[T]) -> T:
        """Run an operation to its end and return its result."""
        loop = self._loop(op)
        while True:
            try:
                next(loop)
            except StopIteration as stop:
                value: T = stop.value
                return value

    def iterate(self, op: Operation[Any]) -> Iterator[Any]:
        """Run an operation, yielding each value it emits."""
        yield from self._loop(op)


class AsyncDriver:
    """Runs operations with an aioboto3 (aiobotocore) DynamoDB client."""

    def __init__(self, client: Any, lane: Any = None) -> None:
        self.client = client
        #: The lean request lane (lsiorm._io.lean), tried first; None sends all via aiobotocore.
        self.lane = lane

    async def send(self, call: Call) -> dict[str, Any]:
        """Send one request; raise a typed lsiorm error on failure."""
        method = getattr(self.client, xform_name(call.operation))
        lane = self.lane
        try:
            sent = await lane.send(call.operation, call.params) if lane is not None else None
            response: dict[str, Any] = sent if sent is not None else await method(**call.params)
        except ClientError as exc:
            raise from_error_response(
                exc.response, call.operation, call.params, call.tables
            ) from exc
        except _ASYNC_TRANSPORT as exc:
            raise from_transport_failure(exc, call.operation, call.params) from exc
        return response

    async def _result(self, step: Step) -> Any:
        if isinstance(step, Call):
            return await self.send(step)
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return None
        if isinstance(step, Gather):
            gate = asyncio.Semaphore(max(1, step.limit))

            async def one(op: Operation[Any]) -> Any:
                async with gate:
                    return await self.run(op)

            results = await asyncio.gather(
                *(one(op) for op in step.operations), return_exceptions=True
            )
            for r in results:
                if isinstance(r, BaseException):
                    raise r
            return results
        raise TypeError(f"unknown step {step!r}")

    async def _advance(self, op: Operation[Any], step: Step) -> Step | _Done:
        # Coroutines must not raise StopIteration either (PEP 479): report the end as _Done.
        if isinstance(step, Emit):
            return _resume(op.send, None)
        try:
            result = await self._result(step)
        except LsiormError as exc:
            return _resume(op.throw, exc)
        return _resume(op.send, result)

    async def run(self, op: Operation[T]) -> T:
        """Run an operation to its end and return its result."""
        step = _resume(lambda _: next(op), None)
        while not isinstance(step, _Done):
            step = await self._advance(op, step)
        value: T = step.value
        return value

    async def iterate(self, op: Operation[Any]) -> AsyncIterator[Any]:
        """Run an operation, yielding each value it emits."""
        step = _resume(lambda _: next(op), None)
        while not isinstance(step, _Done):
            if isinstance(step, Emit):
                yield step.value
            step = await self._advance(op, step)


class _Done:
    """The end of an operation, carrying its return value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _resume(fn: Callable[[Any], Step], arg: Any) -> Step | _Done:
    try:
        return fn(arg)
    except StopIteration as stop:
        return _Done(stop.value)
