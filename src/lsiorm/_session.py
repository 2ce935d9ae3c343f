"""Sessions: the public sync (boto3) and async (aioboto3) entry points, one thin facade each.

Every method that sends requests is declared once, in `_session_methods`: its signature, its
docstring and how its arguments become an operation generator. Each facade turns a declaration
into a method with one line, `update = blocking(methods.update)` in Session and
`update = awaiting(methods.update)` in AsyncSession, which hands the operation to its driver.
Type checkers, IDEs and `inspect.signature` see the declared parameters (forwarded with a
`ParamSpec`), so users' code is checked against the same keywords in both sessions. What is
written per facade is what really differs: building or opening the client, closing it, and
the iterators (`pages`, `iterate`).

The sync session is not generated from the async one (as psycopg does, with a rewrite script
and a `--check` in CI). With every operation written once as a generator and every method
declared once, a facade is a list of one-line methods plus its client handling, and the client
handling differs between boto3 and aioboto3 anyway. A generator would add a script, a
generated file and a CI step to save a few dozen one-line methods; it does not pay.
"""

from __future__ import annotations

import importlib.util
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

import lsiorm._session_methods as methods
from lsiorm._io import environment, fastjson, integrity
from lsiorm._io.drivers import AsyncDriver, SyncDriver
from lsiorm._io.lifetime import Closing, LoopHeld
from lsiorm._io.telemetry import (
    ClientTelemetry,
    Telemetry,
    start_operation,
    traced_async_pages,
    traced_pages,
)
from lsiorm._model.entity import Entity
from lsiorm._model.schema import Table
from lsiorm._ops import reads
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.reads import Page
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._query.values import Query, Scan
from lsiorm._session_methods import SessionConfig, SessionCore
from lsiorm.errors import ConfigurationError, MissingDependencyError

if TYPE_CHECKING:
    from lsiorm._jobs.ledger import LedgerLocation
    from lsiorm._jobs.units import Unit
    from lsiorm._migration.dual_writes import DualFallback

__all__ = ["AsyncSession", "Session"]

E = TypeVar("E", bound=Entity)
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


def blocking(
    declared: Callable[Concatenate[SessionCore, P], Operation[R]],
) -> Callable[Concatenate[Session, P], R]:
    """Make a Session method of a declared one: it runs the operation to its end."""
    name = f"Session.{declared.__name__}"

    def method(self: Session, *args: P.args, **kwargs: P.kwargs) -> R:
        telemetry = self.telemetry
        trace = start_operation(telemetry, name, (*args, *kwargs.values())) if telemetry else None
        if trace is None:
            return self.driver.run(declared(self, *args, **kwargs))
        with trace:
            return self.driver.run(declared(self, *args, **kwargs))

    return cast("Callable[Concatenate[Session, P], R]", _facade(method, declared, "Session"))


def awaiting(
    declared: Callable[Concatenate[SessionCore, P], Operation[R]],
) -> Callable[Concatenate[AsyncSession, P], Coroutine[Any, Any, R]]:
    """Make an AsyncSession method of a declared one: a coroutine that awaits the operation."""
    name = f"AsyncSession.{declared.__name__}"

    async def method(self: AsyncSession, *args: P.args, **kwargs: P.kwargs) -> R:
        telemetry = self.telemetry
        trace = start_operation(telemetry, name, (*args, *kwargs.values())) if telemetry else None
        if trace is None:
            return await self.driver.run(declared(self, *args, **kwargs))
        with trace:
            return await self.driver.run(declared(self, *args, **kwargs))

    return cast(
        "Callable[Concatenate[AsyncSession, P], Coroutine[Any, Any, R]]",
        _facade(method, declared, "AsyncSession"),
    )


def _facade(method: Any, declared: Callable[..., Any], owner: str) -> Any:
    """Give a facade method the declaration's name, docstring and public signature.

    The signature is the declared one with `self` for the session and, as return annotation,
    the operation's result (`Operation[E]` becomes `E`); `__wrapped__` is the declaration.
    """
    annotation = declared.__annotations__["return"]
    result = annotation.removeprefix("Operation[")
    if result == annotation or not result.endswith("]"):
        raise TypeError(f"{declared.__qualname__} must be annotated -> Operation[...]")
    result = result[:-1]
    signature = inspect.signature(declared)
    _, *parameters = signature.parameters.values()
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(
        parameters=[this, *parameters], return_annotation=result
    )
    method.__name__ = declared.__name__
    method.__qualname__ = f"{owner}.{declared.__name__}"
    method.__doc__ = declared.__doc__
    method.__annotations__ = {
        **{k: v for k, v in declared.__annotations__.items() if k != "session"},
        "return": result,
    }
    method.__wrapped__ = declared
    return method


def _client_error(exc: Exception) -> ConfigurationError:
    """Return the typed error for a botocore failure while building a client."""
    from botocore.exceptions import NoRegionError

    if isinstance(exc, NoRegionError):
        return ConfigurationError(
            "config.no-region",
            "No AWS region is configured: pass region_name=..., or set AWS_DEFAULT_REGION.",
        )
    return ConfigurationError("config.client", f"Cannot build the DynamoDB client: {exc}")


def _client(factory: Any, kwargs: Mapping[str, Any], service: str = "dynamodb") -> Any:
    """Build a botocore client, turning botocore's configuration errors into typed ones."""
    from botocore.exceptions import BotoCoreError

    try:
        return factory(service, **kwargs)
    except (BotoCoreError, ValueError) as exc:
        raise _client_error(exc) from exc


def _given(client: Any) -> Any:
    return client


def _unit_worker(config: SessionConfig | None) -> Callable[..., Any] | None:
    """What an executor's worker runs per unit of a session with ``config`` (None without one):
    it builds a `Session` like it (the async one's workers too: a unit runs its requests in
    its worker's thread either way)."""
    return None if config is None else partial(run_unit_task, config)


def _streams_beside(factory: Any, kwargs: Mapping[str, Any], dynamodb: Any) -> Any:
    """The DynamoDB Streams client built with ``kwargs`` like the DynamoDB client ``dynamodb``,
    on its endpoint where that is a local engine's (see `environment.streams_endpoint`)."""
    if "endpoint_url" not in kwargs:
        endpoint = environment.streams_endpoint(dynamodb.meta.endpoint_url)
        if endpoint is not None:
            kwargs = {**kwargs, "endpoint_url": endpoint}
    return _client(factory, kwargs, "dynamodbstreams")


def _streams_like(client: Any) -> Any:
    """A DynamoDB Streams client for the endpoint and region of a boto3 DynamoDB client
    (credentials from boto3's default chain; pass ``streams_client=`` for others)."""
    import boto3

    kwargs = {"region_name": client.meta.region_name}
    return _streams_beside(boto3.session.Session().client, kwargs, client)


def lean_lane_for(client: Any) -> Any:
    """The lean request lane for a client, or None (imported on first use: it needs orjson)."""
    from lsiorm._io.lean import lean_lane_for as lane_for

    return lane_for(client)


def _driver_parts(
    session: SessionCore, client: Any, fast_json: bool, lean: bool
) -> tuple[Any, Any, ClientTelemetry]:
    """Give a client lsiorm's handlers; return what a driver for it is built with, besides the
    streams client: the client, its lean lane (None with `lean=False`) and the session's
    telemetry of its requests."""
    _install_handlers(client, fast_json)
    lane = lean_lane_for(client) if lean else None
    return client, lane, ClientTelemetry(session.telemetry, client)


def _install_handlers(client: Any, fast_json: bool) -> None:
    """Give a botocore DynamoDB client lsiorm's answer checks, and the fast path when asked.

    Anything else (a test double) is left alone.
    """
    meta = getattr(client, "meta", None)
    service = getattr(meta, "service_model", None)
    if getattr(service, "service_name", None) == "dynamodb" and hasattr(meta, "events"):
        integrity.install(client)
        if fast_json:
            fastjson.install(client)


class _MeteredSync:
    """The sync driver, with each operation passed through the session's capacity meter."""

    def __init__(self, driver: SyncDriver, meter: CapacityMeter) -> None:
        self.inner = driver
        self.meter = meter

    def run(self, op: Operation[T]) -> T:
        return self.inner.run(self.meter.wrap(op))

    def iterate(self, op: Operation[Any]) -> Iterator[Any]:
        return self.inner.iterate(self.meter.wrap(op))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _MeteredAsync:
    """The async driver, with each operation passed through the session's capacity meter."""

    def __init__(self, driver: AsyncDriver, meter: CapacityMeter) -> None:
        self.inner = driver
        self.meter = meter

    async def run(self, op: Operation[T]) -> T:
        return await self.inner.run(self.meter.wrap(op))

    def iterate(self, op: Operation[Any]) -> AsyncIterator[Any]:
        return self.inner.iterate(self.meter.wrap(op))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _one_attempt(given: Any) -> Any:
    """Return the client Config: the caller's, with botocore making one attempt per call.

    lsiorm's retry policy must be the only retry loop: botocore retrying inside an attempt
    could apply an ADD twice. The rest of the caller's ``retries`` is kept (``mode``: adaptive
    keeps its client-side rate limiter); asking botocore for more attempts is refused.
    """
    from botocore.config import Config

    retries = dict(getattr(given, "retries", None) or {})
    attempts = retries.pop("total_max_attempts", None)
    more = retries.pop("max_attempts", None)
    if attempts is None and more is not None:
        attempts = more + 1
    if attempts not in (None, 1):
        raise ConfigurationError(
            "config.botocore-retries",
            f"The client config asks botocore for {attempts} attempts per request; lsiorm "
            "retries requests itself (an ADD must not be sent twice by a retry it does not "
            "see). Set the attempts with Session(retry=RetryPolicy(max_attempts=...)), and "
            "leave them out of Config(retries=...) (its mode is kept).",
        )
    ours = Config(retries={**retries, "total_max_attempts": 1})
    return given.merge(ours) if given is not None else ours


def _client_kwargs(
    endpoint_url: str | None, region_name: str | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(extra)
    kwargs["config"] = _one_attempt(kwargs.get("config"))
    if endpoint_url is None and "endpoint_url" not in kwargs:
        endpoint_url = environment.endpoint_alias()
    if endpoint_url is not None:
        kwargs["endpoint_url"] = endpoint_url
    if region_name is not None:
        kwargs["region_name"] = region_name
    return kwargs


class Session(SessionCore, Closing):
    """Synchronous access to DynamoDB over a boto3 client.

    Without `client`, one is built from `boto3_session` (or a new `boto3.Session` for
    `profile_name`) with botocore's own retries turned off, so that the `retry` policy alone
    decides. `hooks` are middleware. The item-collection watcher is installed unless
    `watch_collections=False`; it is `session.collections`. The client, built here or passed
    in, parses responses with the fast JSON path unless `fast_json=False`. `table_prefix`
    (`"dev-"`) or `table_names` (a function of the declared name) choose the live table each
    declared table stands for; with neither, `LSIORM_TABLE_PREFIX` gives the prefix. Without
    `endpoint_url`, botocore's `AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL` gives it,
    else `LSIORM_ENDPOINT_URL` (the `lsiorm` command reads the same variables).
    `consumed_capacity=True` asks every read and write for its consumed capacity and meters it
    in `session.capacity`.
    lsiorm's own data-plane requests take the lean request lane (botocore's signer and HTTP
    pool, without its validation, serializer and events; see docs/performance.md) whenever
    nothing else watches the client's requests (a wrapped `_make_api_call` included);
    `lean=False` keeps them all on botocore. Spans and metrics of every request and operation
    go to OpenTelemetry's global providers when `opentelemetry-api` is installed (see
    docs/observability.md); `telemetry=False` turns them off, and a `Telemetry` names other
    providers. Cursors are signed with a random key of this session, so only it reads them
    back; give `cursor_secret` (or set `LSIORM_CURSOR_SECRET`) to read them in other sessions
    and processes that have the same secret. A table migration reads the source table's stream
    with a DynamoDB Streams client built like the DynamoDB one (for a `client` passed in: for
    its region, with boto3's default credentials), on the DynamoDB endpoint where that is a
    local engine's (see docs/deployment.md); `streams_client` gives another.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        retry: RetryPolicy | None = None,
        hooks: Sequence[object] = (),
        watch_collections: bool = True,
        fast_json: bool = True,
        boto3_session: Any = None,
        profile_name: str | None = None,
        table_prefix: str | None = None,
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
        lean: bool = True,
        cursor_secret: str | bytes | None = None,
        telemetry: bool | Telemetry = True,
        streams_client: Any = None,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(
            retry,
            hooks,
            watch_collections,
            table_prefix,
            table_names,
            consumed_capacity,
            cursor_secret,
            telemetry,
            shareable=client is None and boto3_session is None and table_names is None,
            endpoint_url=endpoint_url,
            region_name=region_name,
            profile_name=profile_name,
            fast_json=fast_json,
            lean=lean,
        )
        self.unit_worker = _unit_worker(self.config)
        streams: Callable[[], Any]
        if client is None:
            import boto3

            factory = boto3_session or boto3.session.Session(profile_name=profile_name)
            kwargs = _client_kwargs(endpoint_url, region_name, client_kwargs)
            client = _client(factory.client, kwargs)
            streams = partial(_streams_beside, factory.client, kwargs, client)
        elif boto3_session is not None or profile_name is not None:
            raise TypeError("Give a client, or boto3_session/profile_name to build one; not both.")
        else:
            streams = partial(_streams_like, client)
        if streams_client is not None:
            streams = partial(_given, streams_client)
        self.client = client
        driver = SyncDriver(*_driver_parts(self, client, fast_json, lean), streams)
        self.driver = _MeteredSync(driver, self.capacity)

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return self.driver.run(op)

    def dual_writes(
        self,
        table: Table,
        source: str,
        *,
        reads: str = "source",
        ledger: str | None = None,
        on_fallback: Callable[[DualFallback], object] | None = None,
    ) -> Session:
        """A session that writes the live table `source` and, in the same transaction, the
        table `table` declares, during the migration of one into the other
        (docs/migrations.md, "Dual writes").

        The migration's copy must be done and both tables must have the same primary key;
        otherwise a typed error is raised before any write. Reads go to `reads`: ``"source"``
        or ``"destination"``. A write that cannot be mirrored exactly is sent to the source
        alone (the catch-up carries it): the returned session's ``dual`` counts them, by
        reason, and `on_fallback` is called with each. It shares this session's client.
        """
        route = self.run(
            methods.dual_writes(
                self, table, source, reads=reads, ledger=ledger, on_fallback=on_fallback
            )
        )
        return methods.with_route(self, route)

    call = blocking(methods.call)
    create_table = blocking(methods.create_table)
    delete_table = blocking(methods.delete_table)
    check_table = blocking(methods.check_table)
    put = blocking(methods.put)
    get = blocking(methods.get)
    update = blocking(methods.update)
    delete = blocking(methods.delete)
    delete_result = blocking(methods.delete_result)
    audit_collection = blocking(methods.audit_collection)
    largest_collections = blocking(methods.largest_collections)
    audit_keys = blocking(methods.audit_keys)
    adopt = blocking(methods.adopt)
    backfill = blocking(methods.backfill)
    relieve_collection = blocking(methods.relieve_collection)
    migrate_table = blocking(methods.migrate_table)
    jobs = blocking(methods.jobs)
    job = blocking(methods.job)
    cancel_job = blocking(methods.cancel_job)
    run_unit = blocking(methods.run_unit)
    batch_write = blocking(methods.batch_write)
    batch_get = blocking(methods.batch_get)
    transact_write = blocking(methods.transact_write)
    transact_get = blocking(methods.transact_get)
    all = blocking(methods.all)
    first = blocking(methods.first)
    count = blocking(methods.count)
    page = blocking(methods.page)

    def pages(self, source: Query[E] | Scan[E]) -> Iterator[Page[E]]:
        """Yield the results page by page; only one page is held in memory."""
        pages = self.driver.iterate(reads.pages(self.ctx, source))
        if self.telemetry is None:
            return pages
        return traced_pages(self.telemetry, "Session.pages", (source,), pages)

    def iterate(self, source: Query[E] | Scan[E]) -> Iterator[E]:
        """Yield the results one by one, lazily, a page at a time."""
        for page in self.pages(source):
            yield from page.items


class AsyncSession(SessionCore):
    """Asynchronous access to DynamoDB over aioboto3, with the same methods as Session.

    Use it as `async with AsyncSession(...) as session:`, or pass an entered aiobotocore
    client as `client`. Building a client needs the `async` extra
    (`pip install "lsiorm[async]"`); without it the constructor raises
    `MissingDependencyError`. `aioboto3_session`, `profile_name`, `table_prefix` and
    `table_names` work as for `Session`. Used without `async with`, it opens its client on the
    first call; then `await session.close()` closes it (one never closed is closed on its
    event loop when it is garbage collected or the loop ends).
    `lean=False` keeps every request on aiobotocore's own path, and `cursor_secret` and
    `telemetry` work as for `Session`. A table migration reads the source table's stream with a
    DynamoDB Streams client opened with the DynamoDB one; with a `client` passed in, pass an
    entered streams client as `streams_client` too.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        retry: RetryPolicy | None = None,
        hooks: Sequence[object] = (),
        watch_collections: bool = True,
        fast_json: bool = True,
        aioboto3_session: Any = None,
        profile_name: str | None = None,
        table_prefix: str | None = None,
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
        lean: bool = True,
        cursor_secret: str | bytes | None = None,
        telemetry: bool | Telemetry = True,
        streams_client: Any = None,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(
            retry,
            hooks,
            watch_collections,
            table_prefix,
            table_names,
            consumed_capacity,
            cursor_secret,
            telemetry,
            shareable=client is None and aioboto3_session is None and table_names is None,
            endpoint_url=endpoint_url,
            region_name=region_name,
            profile_name=profile_name,
            fast_json=fast_json,
            lean=lean,
        )
        self.unit_worker = _unit_worker(self.config)
        self._streams = streams_client
        self._given_streams = streams_client is not None
        if client is None and aioboto3_session is None:
            if importlib.util.find_spec("aioboto3") is None:
                raise MissingDependencyError("AsyncSession", "aioboto3", "async")
        elif client is not None and (aioboto3_session is not None or profile_name is not None):
            raise TypeError(
                "Give a client, or aioboto3_session/profile_name to build one; not both."
            )
        self._fast_json = fast_json
        self._lean = lean
        self._client_kwargs = _client_kwargs(endpoint_url, region_name, client_kwargs)
        self._factory = aioboto3_session
        self._profile_name = profile_name
        self._held = LoopHeld()
        self.client = client
        self.driver: _MeteredAsync | _OpeningDriver = _OpeningDriver(self)
        if client is not None:
            driver = AsyncDriver(*_driver_parts(self, client, fast_json, lean), streams_client)
            self.driver = _MeteredAsync(driver, self.capacity)

    async def _open(self) -> AsyncSession:
        """Open the client (`async with` does this; so does the first call)."""
        if self.client is None:
            from botocore.exceptions import BotoCoreError

            factory = self._factory
            if factory is None:
                import aioboto3

                factory = aioboto3.Session(profile_name=self._profile_name)
            stack = AsyncExitStack()
            client = _client(factory.client, self._client_kwargs)
            try:
                self.client = await stack.enter_async_context(client)
                if self._streams is None:
                    streams = _streams_beside(factory.client, self._client_kwargs, self.client)
                    self._streams = await stack.enter_async_context(streams)
            except (BotoCoreError, ValueError) as exc:
                raise _client_error(exc) from exc
            await self._held.hold(stack, _forgets_client(weakref.ref(self)))
            parts = _driver_parts(self, self.client, self._fast_json, self._lean)
            self.driver = _MeteredAsync(AsyncDriver(*parts, self._streams), self.capacity)
        return self

    async def __aenter__(self) -> AsyncSession:
        return await self._open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the client this session opened (a client passed in is left open)."""
        await self._held.close()

    def _forget_client(self) -> None:
        """The client this session opened is closed: the next call opens another."""
        self.client = None
        if not self._given_streams:
            self._streams = None
        self.driver = _OpeningDriver(self)

    async def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return await self.driver.run(op)

    async def dual_writes(
        self,
        table: Table,
        source: str,
        *,
        reads: str = "source",
        ledger: str | None = None,
        on_fallback: Callable[[DualFallback], object] | None = None,
    ) -> AsyncSession:
        """A session that writes the live table `source` and, in the same transaction, the
        table `table` declares, as `Session.dual_writes` does."""
        route = await self.run(
            methods.dual_writes(
                self, table, source, reads=reads, ledger=ledger, on_fallback=on_fallback
            )
        )
        return methods.with_route(self, route)

    call = awaiting(methods.call)
    create_table = awaiting(methods.create_table)
    delete_table = awaiting(methods.delete_table)
    check_table = awaiting(methods.check_table)
    put = awaiting(methods.put)
    get = awaiting(methods.get)
    update = awaiting(methods.update)
    delete = awaiting(methods.delete)
    delete_result = awaiting(methods.delete_result)
    audit_collection = awaiting(methods.audit_collection)
    largest_collections = awaiting(methods.largest_collections)
    audit_keys = awaiting(methods.audit_keys)
    adopt = awaiting(methods.adopt)
    backfill = awaiting(methods.backfill)
    relieve_collection = awaiting(methods.relieve_collection)
    migrate_table = awaiting(methods.migrate_table)
    jobs = awaiting(methods.jobs)
    job = awaiting(methods.job)
    cancel_job = awaiting(methods.cancel_job)
    run_unit = awaiting(methods.run_unit)
    batch_write = awaiting(methods.batch_write)
    batch_get = awaiting(methods.batch_get)
    transact_write = awaiting(methods.transact_write)
    transact_get = awaiting(methods.transact_get)
    all = awaiting(methods.all)
    first = awaiting(methods.first)
    count = awaiting(methods.count)
    page = awaiting(methods.page)

    async def pages(self, source: Query[E] | Scan[E]) -> AsyncIterator[Page[E]]:
        """Yield the results page by page; only one page is held in memory."""
        pages = self.driver.iterate(reads.pages(self.ctx, source))
        if self.telemetry is not None:
            pages = traced_async_pages(self.telemetry, "AsyncSession.pages", (source,), pages)
        async for page in pages:
            yield page

    async def iterate(self, source: Query[E] | Scan[E]) -> AsyncIterator[E]:
        """Yield the results one by one, lazily, a page at a time."""
        async for page in self.pages(source):
            for item in page.items:
                yield item


def _forgets_client(session: weakref.ref[AsyncSession]) -> Callable[[], None]:
    """What closing a session's client does to the session, if it is still alive.

    A weak reference: the held client must not keep the session alive (see `LoopHeld`).
    """

    def forget() -> None:
        alive = session()
        if alive is not None:
            alive._forget_client()

    return forget


class _OpeningDriver:
    """The driver of an AsyncSession not yet opened: opens it on the first call."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def run(self, op: Operation[T]) -> T:
        await self._session._open()
        return await self._session.driver.run(op)

    async def iterate(self, op: Operation[Any]) -> AsyncIterator[Any]:
        await self._session._open()
        async for value in self._session.driver.iterate(op):
            yield value


#: The sessions of this process's workers, one per configuration (a worker runs many units,
#: several at once in an executor's threads: the lock makes them share one).
_WORKER_SESSIONS: dict[SessionConfig, Session] = {}
_WORKER_SESSIONS_LOCK = threading.Lock()


def run_unit_task(
    config: SessionConfig,
    location: LedgerLocation,
    lease_seconds: float,
    job_id: str,
    unit: Unit,
    owner: str | None = None,
) -> str:
    """Run one unit of a job in this process: what an executor's worker is handed.

    Module-level, so that pickle sends it by name; the worker builds (once) a session from
    ``config`` and runs the unit as the job's declaration in the ledger says, claiming it
    with the token ``owner`` (the submission's own).
    """
    from lsiorm._io import dask_profiler

    with _WORKER_SESSIONS_LOCK:
        session = _WORKER_SESSIONS.get(config)
        if session is None:
            dask_profiler.warn_once()
            session = _WORKER_SESSIONS[config] = Session(**config.kwargs())
    result: str = session.run(
        methods.declared_unit(session.ctx, location, lease_seconds, job_id, unit, owner)
    )
    return result
