"""The two thin I/O drivers: one runs operations on boto3, the other awaits aioboto3.

Each driver does four things only: send a `Call` with the client and
type any failure, sleep, run a `Gather` (one by one, or concurrently),
and pass `Emit` values out. A call of the DynamoDB Streams API
(`STREAM_OPERATIONS`) goes to the session's streams client instead, built
when first needed. Resuming the operation after each step is `advance`,
shared by both. Everything else lives in the operations.

Sending has one hook for what watches requests: ``telemetry``, the session's
OpenTelemetry spans and metrics and the request log (`lsiorm._io.telemetry`), wraps each
request whichever lane sends it, at the cost of one attribute check when it is off. Tests
may step in between the driver and the lanes (`lsiorm._io.interception`: fault injection).

A `Call` with a ``deadline`` (a call's ``timeout=``, `lsiorm._ops.deadline`) is not waited for
past it: the async driver stops awaiting the answer then, the sync driver gives the lean lane's
direct send the time left as its socket timeout (a request botocore sends itself is bounded by
the client's own ``read_timeout``). Either way the failure is a `CallTimeoutError`.

An async call that is cancelled reports what it had sent (`AsyncDriver.run`): a plain
``CancelledError`` when no request that may change data was sent (or each was refused), an
`OutcomeUnknownError` once one was answered or was in flight.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from botocore import xform_name
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from lsiorm._io import interception
from lsiorm._io.overlap import Stopped, gather_in_threads
from lsiorm._io.telemetry import ClientTelemetry
from lsiorm._ops.items import is_ambiguous
from lsiorm._ops.service_errors import (
    from_botocore_failure,
    from_error_response,
    from_transport_failure,
)
from lsiorm._ops.steps import (
    STREAM_OPERATIONS,
    Call,
    Done,
    Emit,
    Gather,
    Operation,
    Sleep,
    Step,
    advance,
    changes_data,
)
from lsiorm.errors import (
    CallTimeoutError,
    ConfigurationError,
    LsiormError,
    OutcomeUnknownError,
    TransportError,
)

__all__ = ["AsyncDriver", "SyncDriver"]

T = TypeVar("T")

_TRANSPORT: tuple[type[BaseException], ...] = (HTTPClientError, BotocoreConnectionError)


@functools.cache
def _async_transport() -> tuple[type[BaseException], ...]:
    """The transport errors of the async client, resolved on first use.

    aiohttp comes with aiobotocore and some of its errors reach us unwrapped. It is imported
    here, not at module level, so that ``import lsiorm`` stays free of aiohttp for sync users.
    """
    import asyncio

    try:
        import aiohttp
    except ImportError:  # pragma: no cover - aiohttp is a dependency of aiobotocore
        return (*_TRANSPORT, asyncio.TimeoutError)
    return (*_TRANSPORT, aiohttp.ClientError, asyncio.TimeoutError)


def _typed(
    exc: BaseException, call: Call, transport: tuple[type[BaseException], ...]
) -> LsiormError:
    """The typed error for ``call`` failing in botocore: an error response, a failure of the
    connection (one of ``transport``), or any other botocore failure (one function for both
    drivers, so that they type every failure alike)."""
    if isinstance(exc, ClientError):
        return from_error_response(exc.response, call.operation, call.params, call.tables)
    if isinstance(exc, transport):
        return from_transport_failure(exc, call.operation, call.params)
    return from_botocore_failure(exc, call.operation, call.params)


def _left(call: Call) -> float | None:
    """The seconds left before ``call``'s deadline (None without one); a call whose deadline
    has passed is not sent (`CallTimeoutError`)."""
    if call.deadline is None:
        return None
    left = call.deadline - time.monotonic()
    if left <= 0:
        raise CallTimeoutError(
            f"the call ran out of its timeout before sending {call.operation}",
            timeout=0.0,
            operation=call.operation,
        )
    return left


def _late(call: Call, error: LsiormError) -> LsiormError:
    """``error`` of a request past its deadline, as the `CallTimeoutError` it is; others as
    they are (an answer DynamoDB gave, even late, stands)."""
    if call.deadline is None or not isinstance(error, TransportError):
        return error
    if time.monotonic() < call.deadline:
        return error
    late = CallTimeoutError(
        f"the call ran out of its timeout while waiting for the answer to {call.operation}",
        timeout=0.0,
        operation=call.operation,
        in_flight=is_ambiguous(error),
    )
    late.__cause__ = error
    return late


def _required_streams(build: Callable[[], Any] | None) -> Any:
    """The streams client ``build`` gives, or the typed error that there is none."""
    client = build() if build is not None else None
    if client is None:
        raise ConfigurationError(
            "config.no-streams-client",
            "This session has no DynamoDB Streams client (a table migration reads the source "
            "table's stream): build the session from parameters, or pass streams_client=.",
        )
    return client


class _Driver(ABC):
    """What both drivers hold, and which client (and lane) a request goes to."""

    def __init__(
        self,
        client: Any,
        lane: Any,
        telemetry: ClientTelemetry | None,
        services: Callable[[str], Any] | None = None,
    ) -> None:
        self.client = client
        #: The lean request lane (lsiorm._io.lean), tried first; None sends all via botocore.
        self.lane = lane
        #: The session's spans and metrics of each request; None when off.
        self.telemetry = telemetry
        #: The clients of other services by name (KMS and S3 for protected fields), or None.
        self.services = services

    def _target(self, call: Call) -> tuple[Any, Any]:
        """The client to send ``call`` with, and the lean lane to try first (or None)."""
        if call.service != "dynamodb":
            if self.services is None:
                raise ConfigurationError(
                    "config.no-service-client",
                    f"This session has no {call.service} client; give it a keyring.",
                )
            return self.services(call.service), None
        if call.operation not in STREAM_OPERATIONS:
            return self.client, self.lane if call.built else None
        return self._streams_client(), None

    @abstractmethod
    def _streams_client(self) -> Any:
        """The session's DynamoDB Streams client (built when first needed by the sync driver)."""


def _send_sync(client: Any, lane: Any, call: Call) -> dict[str, Any]:
    """Send one request with a botocore client (or its lean lane); type any failure."""
    try:
        plan = interception.plan_for(call, client) if interception.active else None
        params = call.params if plan is None else plan.before()
        response: dict[str, Any] = {}  # what a request a plan answers itself gets
        if params is not None:
            sent = lane.send(call.operation, params) if lane is not None else None
            if sent is None:
                sent = getattr(client, xform_name(call.operation))(**params)
            response = sent
            if call.service != "dynamodb":
                response = _read_body(response)
        if plan is not None:
            response = plan.after(response)
    except (ClientError, BotoCoreError) as exc:  # the transport's errors are botocore's
        raise _typed(exc, call, _TRANSPORT) from exc
    return response


def _read_body(response: dict[str, Any]) -> dict[str, Any]:
    """An S3 answer with its streamed body read, so that operations get bytes, not a stream."""
    body = response.get("Body")
    read = getattr(body, "read", None)
    if read is None:
        return response
    try:
        data = read()
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    return {**response, "Body": data}


class SyncDriver(_Driver):
    """Runs operations with a boto3 DynamoDB client."""

    def __init__(
        self,
        client: Any,
        lane: Any = None,
        telemetry: ClientTelemetry | None = None,
        streams: Callable[[], Any] | None = None,
        services: Callable[[str], Any] | None = None,
    ) -> None:
        super().__init__(client, lane, telemetry, services)
        #: Builds the DynamoDB Streams client on first use; None when this session has none.
        self.streams = streams
        self._streams: Any = None
        self._streams_lock = threading.Lock()

    def _streams_client(self) -> Any:
        with self._streams_lock:
            if self._streams is None:
                self._streams = _required_streams(self.streams)
        return self._streams

    def send(self, call: Call) -> dict[str, Any]:
        """Send one request; raise a typed lsiorm error on failure."""
        trace = self.telemetry.request(call) if self.telemetry is not None else None
        if trace is None:
            return self._send(call)
        with trace:
            return trace.done(self._send(call))

    def _send(self, call: Call) -> dict[str, Any]:
        client, lane = self._target(call)
        if call.service != "dynamodb":
            return _send_sync(client, None, call)
        left = _left(call)
        try:
            plan = interception.plan_for(call, client) if interception.active else None
            params = call.params if plan is None else plan.before()
            response: dict[str, Any] = {}  # what a request a plan answers itself gets
            if params is not None:
                sent = None
                if lane is not None and left is None:
                    sent = lane.send(call.operation, params)
                elif lane is not None:
                    sent = lane.send(call.operation, params, timeout=left)
                # The method is looked up only now: a session's client may not be built yet
                # (lsiorm._io.lazy_client), and is not built for a request the lane sent.
                if sent is None:
                    sent = getattr(client, xform_name(call.operation))(**params)
                response = sent
            if plan is not None:
                response = plan.after(response)
        except (ClientError, BotoCoreError) as exc:  # the transport's errors are botocore's
            raise _late(call, _typed(exc, call, _TRANSPORT)) from exc
        return response

    def _result(self, step: Step) -> Any:
        if isinstance(step, Call):
            return self.send(step)
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return None
        if isinstance(step, Gather):
            if step.threads:
                return gather_in_threads(self._run, step.operations, step.limit)
            return [self.run(op) for op in step.operations]
        raise TypeError(f"unknown step {step!r}")

    def _next(self, op: Operation[Any], step: Step) -> Step | Done:
        try:
            result = self._result(step)
        except GeneratorExit:
            raise
        except BaseException as exc:
            # An interrupt (Ctrl-C, SIGTERM turned into one, a kill from a hook) goes into the
            # operation too, so that a key job can release its leases before it ends.
            return advance(op, error=exc)
        return advance(op, result)

    def run(self, op: Operation[T]) -> T:
        """Run an operation to its end and return its result (emitted values are dropped)."""
        return self._run(op, None)

    def _run(self, op: Operation[T], stop: threading.Event | None) -> T:
        """Run ``op``; once ``stop`` is set (a sibling in a thread was interrupted), close it."""
        step = advance(op)
        while not isinstance(step, Done):
            if stop is not None and stop.is_set():
                op.close()
                raise Stopped
            step = advance(op) if isinstance(step, Emit) else self._next(op, step)
        value: T = step.value
        return value

    def iterate(self, op: Operation[Any]) -> Iterator[Any]:
        """Run an operation, yielding each value it emits."""
        step = advance(op)
        while not isinstance(step, Done):
            if isinstance(step, Emit):
                yield step.value
                step = advance(op)
            else:
                step = self._next(op, step)


class AsyncDriver(_Driver):
    """Runs operations with an aioboto3 (aiobotocore) DynamoDB client."""

    def __init__(
        self,
        client: Any,
        lane: Any = None,
        telemetry: ClientTelemetry | None = None,
        streams: Any = None,
        services: Callable[[str], Any] | None = None,
    ) -> None:
        super().__init__(client, lane, telemetry, services)
        #: The entered DynamoDB Streams client; None when this session has none.
        self.streams = streams

    def _streams_client(self) -> Any:
        return _required_streams(lambda: self.streams)

    async def send(self, call: Call) -> dict[str, Any]:
        """Send one request; raise a typed lsiorm error on failure."""
        sent = _SENT.get() if changes_data(call.operation) else None
        if sent is not None:
            sent.sending(call)
        try:
            response = await self._timed(call)
        except LsiormError as exc:
            if sent is not None:
                sent.failed(call, exc)
            raise
        if sent is not None:
            sent.answered(call)
        return response

    async def _timed(self, call: Call) -> dict[str, Any]:
        """Send ``call``, no longer than its deadline allows."""
        left = _left(call)
        if left is None:
            return await self._traced(call)
        import asyncio

        try:
            return await asyncio.wait_for(self._traced(call), left)
        except asyncio.TimeoutError as exc:
            raise CallTimeoutError(
                f"the call ran out of its timeout while waiting for the answer to {call.operation}",
                timeout=0.0,
                operation=call.operation,
                in_flight=True,
            ) from exc

    async def _traced(self, call: Call) -> dict[str, Any]:
        trace = self.telemetry.request(call) if self.telemetry is not None else None
        if trace is None:
            return await self._send(call)
        with trace:
            return trace.done(await self._send(call))

    async def _send(self, call: Call) -> dict[str, Any]:
        client, lane = self._target(call)
        if call.service != "dynamodb":
            # KMS and S3 go through botocore clients in a worker thread: their calls are few
            # (data keys are cached) and the event loop keeps running meanwhile.
            import asyncio

            return await asyncio.to_thread(_send_sync, client, None, call)
        method = getattr(client, xform_name(call.operation))
        try:
            plan = interception.plan_for(call, client) if interception.active else None
            params = call.params if plan is None else plan.before()
            response: dict[str, Any] = {}  # what a request a plan answers itself gets
            if params is not None:
                sent = await lane.send(call.operation, params) if lane is not None else None
                response = sent if sent is not None else await method(**params)
            if plan is not None:
                response = plan.after(response)
        except (ClientError, BotoCoreError, *_async_transport()) as exc:
            raise _typed(exc, call, _async_transport()) from exc
        return response

    async def _result(self, step: Step) -> Any:
        import asyncio  # here, not at the top: sync users never load it

        if isinstance(step, Call):
            return await self.send(step)
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return None
        if isinstance(step, Gather):
            gate = asyncio.Semaphore(max(1, step.limit))

            async def one(op: Operation[Any]) -> Any:
                async with gate:
                    return await self._run(op)

            results = await asyncio.gather(
                *(one(op) for op in step.operations), return_exceptions=True
            )
            for r in results:
                if isinstance(r, BaseException):
                    raise r
            return results
        raise TypeError(f"unknown step {step!r}")

    async def _next(self, op: Operation[Any], step: Step) -> Step | Done:
        try:
            result = await self._result(step)
        except LsiormError as exc:
            return advance(op, error=exc)
        return advance(op, result)

    async def run(self, op: Operation[T]) -> T:
        """Run an operation to its end and return its result (emitted values are dropped).

        Cancelled, it raises ``CancelledError`` when it had sent no request that may change
        data (or each was refused), and `OutcomeUnknownError` (from the ``CancelledError``)
        once one was answered, or was in flight, saying which.
        """
        import asyncio

        sent = _Sent()
        token = _SENT.set(sent)
        try:
            return await self._run(op)
        except asyncio.CancelledError as cancel:
            unknown = sent.outcome()
            if unknown is None:
                raise
            raise unknown from cancel
        finally:
            _SENT.reset(token)

    async def _run(self, op: Operation[T]) -> T:
        step = advance(op)
        while not isinstance(step, Done):
            step = advance(op) if isinstance(step, Emit) else await self._next(op, step)
        value: T = step.value
        return value

    async def iterate(self, op: Operation[Any]) -> AsyncIterator[Any]:
        """Run an operation, yielding each value it emits."""
        step = advance(op)
        while not isinstance(step, Done):
            if isinstance(step, Emit):
                yield step.value
                step = advance(op)
            else:
                step = await self._next(op, step)


class _Sent:
    """What one async call's requests that may change data came to, for a cancellation."""

    def __init__(self) -> None:
        self.applied: Call | None = None
        self.in_flight: Call | None = None

    def sending(self, call: Call) -> None:
        self.in_flight = call

    def answered(self, call: Call) -> None:
        self.applied = call
        if self.in_flight is call:
            self.in_flight = None

    def failed(self, call: Call, error: LsiormError) -> None:
        ambiguous = is_ambiguous(error) or (isinstance(error, CallTimeoutError) and error.in_flight)
        if self.in_flight is call and not ambiguous:
            self.in_flight = None  # refused: DynamoDB said it did not apply it

    def outcome(self) -> OutcomeUnknownError | None:
        """The error a cancellation raises now, or None for a clean cancel."""
        call = self.in_flight or self.applied
        if call is None:
            return None
        if self.in_flight is not None:
            why = f"its {call.operation} was in flight (sent, or failed in a way that may "
            why += "still have applied it)"
        else:
            why = f"its {call.operation} was applied (DynamoDB answered)"
        table = call.params.get("TableName")
        return OutcomeUnknownError(
            f"the outcome is unknown: the call was cancelled after {why}. Read the item to see "
            "what happened before writing again.",
            request={"operation": call.operation, "params": call.params},
            operation=call.operation,
            table=table if isinstance(table, str) else None,
        )


#: What the async call running in this context has sent (set by `AsyncDriver.run`; the
#: sub-operations of a Gather, in tasks of their own, share it).
_SENT: contextvars.ContextVar[_Sent | None] = contextvars.ContextVar("lsiorm_sent", default=None)
