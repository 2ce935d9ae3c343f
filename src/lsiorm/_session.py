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

import copy
import dataclasses
import importlib.util
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

import lsiorm._session_methods as methods
from lsiorm._io import clients
from lsiorm._io.drivers import AsyncDriver, SyncDriver
from lsiorm._io.lazy_client import LazyClient, real_client
from lsiorm._io.lifetime import Closing, LoopHeld
from lsiorm._io.services import ServiceClients
from lsiorm._io.telemetry import (
    ClientTelemetry,
    Telemetry,
    start_operation,
    traced_async_pages,
    traced_pages,
)
from lsiorm._model.beacons import BeaconKeys, beacon_scope
from lsiorm._model.entity import Entity
from lsiorm._model.keyring import Keyring
from lsiorm._model.schema import Table
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.pipeline import reading
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._session_core import SessionSettings
from lsiorm._session_methods import SessionConfig, SessionCore
from lsiorm.errors import MissingDependencyError

if TYPE_CHECKING:
    from lsiorm._jobs.ledger import LedgerLocation
    from lsiorm._jobs.units import Unit
    from lsiorm._migration.dual_writes import DualFallback
    from lsiorm._ops.reads import Page
    from lsiorm._query.values import Query, Scan

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


def _services(
    keyring: Keyring | None,
    client: Any,
    region_name: str | None,
    profile_name: str | None,
    boto3_session: Any,
) -> ServiceClients | None:
    """The KMS and S3 clients of a session with a keyring, in its region (None without)."""
    if keyring is None:
        return None
    if region_name is None and isinstance(client, LazyClient):
        region_name = client.region_name
    elif region_name is None and client is not None:
        region_name = getattr(getattr(client, "meta", None), "region_name", None)
    return ServiceClients(
        keyring, region_name=region_name, profile_name=profile_name, factory=boto3_session
    )


def _unit_worker(config: SessionConfig | None) -> Callable[..., Any] | None:
    """What an executor's worker runs per unit of a session with ``config`` (None without one):
    it builds a `Session` like it (the async one's workers too: a unit runs its requests in
    its worker's thread either way)."""
    return None if config is None else partial(run_unit_task, config)


def lean_lane_for(client: Any) -> Any:
    """The lean request lane for a client, or None (imported on first use: it needs orjson)."""
    from lsiorm._io.lean import lean_lane_for as lane_for

    return lane_for(client)


def _driver_parts(
    session: SessionCore, client: Any, fast_json: bool, lean: bool, lane: Any = None
) -> tuple[Any, Any, ClientTelemetry]:
    """Give a client lsiorm's handlers; return what a driver for it is built with, besides the
    streams client: the client, its lean lane (None with `lean=False`) and the session's
    telemetry of its requests. A client not built yet (`LazyClient`) comes with its clientless
    ``lane``, and gets the handlers when it is built."""
    if not isinstance(client, LazyClient):
        clients.install_handlers(client, fast_json)
        lane = lean_lane_for(client) if lean else None
    return client, lane, ClientTelemetry(session.telemetry, client)


class _MeteredSync:
    """The sync driver, with each operation passed through the session's capacity meter, and
    run with the session's beacon keys in force (see `lsiorm._model.beacons`)."""

    def __init__(self, driver: SyncDriver, meter: CapacityMeter, keys: BeaconKeys | None) -> None:
        self.inner = driver
        self.meter = meter
        self.keys = keys

    def run(self, op: Operation[T]) -> T:
        with beacon_scope(self.keys):
            return self.inner.run(self.meter.wrap(op))

    def iterate(self, op: Operation[Any]) -> Iterator[Any]:
        values = self.inner.iterate(self.meter.wrap(op))
        return values if self.keys is None else _scoped(self.keys, values)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _scoped(keys: BeaconKeys, values: Iterator[Any]) -> Iterator[Any]:
    """``values``, each one computed with ``keys`` in force."""
    while True:
        with beacon_scope(keys):
            try:
                value = next(values)
            except StopIteration:
                return
        yield value


async def _scoped_async(keys: BeaconKeys, values: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``values``, each one computed with ``keys`` in force."""
    while True:
        with beacon_scope(keys):
            try:
                value = await values.__anext__()
            except StopAsyncIteration:
                return
        yield value


class _MeteredAsync:
    """The async driver, with each operation passed through the session's capacity meter, and
    run with the session's beacon keys in force (see `lsiorm._model.beacons`)."""

    def __init__(self, driver: AsyncDriver, meter: CapacityMeter, keys: BeaconKeys | None) -> None:
        self.inner = driver
        self.meter = meter
        self.keys = keys

    async def run(self, op: Operation[T]) -> T:
        with beacon_scope(self.keys):
            return await self.inner.run(self.meter.wrap(op))

    def iterate(self, op: Operation[Any]) -> AsyncIterator[Any]:
        values = self.inner.iterate(self.meter.wrap(op))
        return values if self.keys is None else _scoped_async(self.keys, values)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Session(SessionCore, Closing):
    """Synchronous access to DynamoDB over a boto3 client.

    Without `client`, one is built from `boto3_session` (or a new `boto3.Session` for
    `profile_name`) with botocore's own retries turned off, so that the `retry` policy alone
    decides; a session made from parameters alone may send its first requests before that client is
    built (docs/performance.md, "A first request without botocore's client"), and builds it when
    first needed (`session.client` builds it). `hooks` are middleware. The item-collection watcher
    is installed unless `watch_collections=False`; it is `session.collections`. The client, built
    here or passed in, parses responses with the fast JSON path unless `fast_json=False`.
    `table_prefix` (`"dev-"`) or `table_names` (a function of the declared name) choose the live
    table each declared table stands for; with neither, `LSIORM_TABLE_PREFIX` gives the prefix.
    Without `endpoint_url`, botocore's `AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL` gives it,
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
    Every method that sends requests takes `timeout=` (seconds, for the whole call):
    `CallTimeoutError` when it runs out having changed nothing, `OutcomeUnknownError` once a
    write was sent. `using` gives the same session on another client, region or endpoint.
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
        keyring: Keyring | None = None,
        **client_kwargs: Any,
    ) -> None:
        self._set_up(
            SessionSettings.given(locals()),
            shareable=client is None and boto3_session is None and table_names is None,
        )
        self.unit_worker = _unit_worker(self.config)
        streams: Callable[[], Any]
        factory: Any = None
        kwargs: dict[str, Any] = {}
        lane: Any = None
        if client is None:
            kwargs = clients.client_kwargs(endpoint_url, region_name, client_kwargs)
            start = (
                clients.clientless(kwargs, fast_json)
                if lean and boto3_session is None and profile_name is None and not client_kwargs
                else None
            )
            if start is not None:
                factory, client, lane = start
            else:
                import boto3

                factory = boto3_session or boto3.session.Session(profile_name=profile_name)
                client = clients.build_client(factory.client, kwargs)
            streams = partial(clients.streams_beside, factory.client, kwargs, client)
        elif boto3_session is not None or profile_name is not None:
            raise TypeError("Give a client, or boto3_session/profile_name to build one; not both.")
        else:
            streams = partial(clients.streams_like, client)
        if streams_client is not None:
            streams = partial(clients.given, streams_client)
        self.client = client
        #: How this session builds a client for another region or endpoint (`using`).
        self._build = clients.ClientBuild(factory, kwargs, fast_json, lean)
        #: The sessions `using` built, by (region, endpoint); closed with this one.
        self._routes: dict[tuple[str | None, str | None], Session] = {}
        #: Whether `close` closes the client (not for a client given to `using`).
        self._owns_client = True
        #: Where a session `using` built is kept, and under which key (None: not built so).
        self._route_of: tuple[dict[Any, Any], Any] | None = None
        #: The KMS and S3 clients of protected fields (None without a keyring).
        self.services = _services(keyring, client, region_name, profile_name, boto3_session)
        driver = SyncDriver(
            *_driver_parts(self, client, fast_json, lean, lane), streams, services=self.services
        )
        self.driver = _MeteredSync(driver, self.capacity, self.ctx.protection)

    @property
    def client(self) -> Any:
        """The boto3 DynamoDB client (built now if the session has not needed it yet: a
        session's first requests may be sent without one, see docs/performance.md)."""
        return real_client(self._client)

    @client.setter
    def client(self, value: Any) -> None:
        self._client = value

    def close(self) -> None:
        """Close the underlying HTTP connections (and those of the sessions `using` built)."""
        routes, self._routes = list(self._routes.values()), {}
        for routed in routes:
            routed.close()
        if self._route_of is not None:
            kept, key = self._route_of
            kept.pop(key, None)
            self._route_of = None
        close = getattr(self._client, "close", None)
        if close is not None and self._owns_client:
            close()
        if self.services is not None:
            self.services.close()

    def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return self.driver.run(op)

    def using(
        self,
        client: Any = None,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        streams_client: Any = None,
    ) -> Session:
        """This session, with its requests sent to another DynamoDB client.

        Give a `client` (another account's credentials, say), or a `region_name` and/or an
        `endpoint_url`: a client is then built as this session's was, for that region or
        endpoint, once, and kept for later calls with the same arguments. The session returned
        shares everything else with this one (hooks, retry policy, table names, the capacity
        meter and the collection watcher, telemetry). Use it for one call
        (`session.using(region_name="eu-west-1").get(...)`: a global table's replica) or for a
        block (`with session.using(client=other) as s:`). Closing it closes a client it built
        (this session's `close` does too), never one you gave.
        """
        if client is not None and (region_name is not None or endpoint_url is not None):
            raise TypeError("Give a client, or region_name/endpoint_url to build one; not both.")
        if client is None and region_name is None and endpoint_url is None:
            raise TypeError("Give a client, a region_name or an endpoint_url.")
        if client is not None:
            beside = (
                partial(clients.given, streams_client)
                if streams_client is not None
                else partial(clients.streams_like, client)
            )
            return self._routed(client, beside, owns=False, config=None)
        key = (region_name, endpoint_url)
        found = self._routes.get(key)
        if found is not None:
            return found
        build = self._build
        kwargs = build.kwargs_for(self._client, region_name, endpoint_url)
        factory = build.factory_or_default()
        built = clients.build_client(factory.client, kwargs)
        streams = (
            partial(clients.given, streams_client)
            if streams_client is not None
            else partial(clients.streams_beside, factory.client, kwargs, built)
        )
        config = (
            None
            if self.config is None
            else dataclasses.replace(
                self.config,
                region_name=region_name or self.config.region_name,
                endpoint_url=endpoint_url or self.config.endpoint_url,
            )
        )
        routed = self._routed(built, streams, owns=True, config=config)
        routed._route_of = (self._routes, key)
        self._routes[key] = routed
        return routed

    def _routed(
        self,
        client: Any,
        streams: Callable[[], Any],
        *,
        owns: bool,
        config: SessionConfig | None,
    ) -> Session:
        """A twin of this session on ``client`` (its streams client from ``streams``)."""
        twin = copy.copy(self)
        twin.client = client
        twin._owns_client = owns
        twin._routes = {}
        twin._route_of = None
        twin.config = config
        twin.unit_worker = _unit_worker(config)
        parts = _driver_parts(twin, client, self._build.fast_json, self._build.lean)
        driver = SyncDriver(*parts, streams, services=self.services)
        twin.driver = _MeteredSync(driver, self.capacity, self.ctx.protection)
        return twin

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
    apply_table = blocking(methods.apply_table)
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
    collect_orphans = blocking(methods.collect_orphans)
    migrate_table = blocking(methods.migrate_table)
    jobs = blocking(methods.jobs)
    job = blocking(methods.job)
    cancel_job = blocking(methods.cancel_job)
    run_unit = blocking(methods.run_unit)
    batch_write = blocking(methods.batch_write)
    batch_get = blocking(methods.batch_get)
    transact_write = blocking(methods.transact_write)
    transact_get = blocking(methods.transact_get)
    load = blocking(methods.load)
    all = blocking(methods.all)
    first = blocking(methods.first)
    count = blocking(methods.count)
    page = blocking(methods.page)

    def pages(self, source: Query[E] | Scan[E]) -> Iterator[Page[E]]:
        """Yield the results page by page; only one page is held in memory."""
        from lsiorm._ops import reads

        pages = self.driver.iterate(reads.pages(reading(self.ctx), source))
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
        keyring: Keyring | None = None,
        **client_kwargs: Any,
    ) -> None:
        self._set_up(
            SessionSettings.given(locals()),
            shareable=client is None and aioboto3_session is None and table_names is None,
        )
        #: The KMS and S3 clients of protected fields (boto3's, used from a worker thread;
        #: None without a keyring).
        self.services = _services(keyring, client, region_name, profile_name, None)
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
        self._client_kwargs = clients.client_kwargs(endpoint_url, region_name, client_kwargs)
        self._factory = aioboto3_session
        self._profile_name = profile_name
        self._held = LoopHeld()
        #: The sessions `using` built, by (region, endpoint); closed with this one.
        self._routes: dict[tuple[str | None, str | None], AsyncSession] = {}
        self._route_of: tuple[dict[Any, Any], Any] | None = None
        self.client = client
        self.driver: _MeteredAsync | _OpeningDriver = _OpeningDriver(self)
        if client is not None:
            driver = AsyncDriver(
                *_driver_parts(self, client, fast_json, lean),
                streams_client,
                services=self.services,
            )
            self.driver = _MeteredAsync(driver, self.capacity, self.ctx.protection)

    async def _open(self) -> AsyncSession:
        """Open the client (`async with` does this; so does the first call)."""
        if self.client is None:
            from botocore.exceptions import BotoCoreError

            factory = self._factory
            if factory is None:
                import aioboto3

                factory = aioboto3.Session(profile_name=self._profile_name)
            stack = AsyncExitStack()
            client = clients.build_client(factory.client, self._client_kwargs)
            try:
                self.client = await stack.enter_async_context(client)
                if self._streams is None:
                    streams = clients.streams_beside(
                        factory.client, self._client_kwargs, self.client
                    )
                    self._streams = await stack.enter_async_context(streams)
            except (BotoCoreError, ValueError) as exc:
                raise clients.client_error(exc) from exc
            await self._held.hold(stack, _forgets_client(weakref.ref(self)))
            parts = _driver_parts(self, self.client, self._fast_json, self._lean)
            driver = AsyncDriver(*parts, self._streams, services=self.services)
            self.driver = _MeteredAsync(driver, self.capacity, self.ctx.protection)
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
        """Close the client this session opened (a client passed in is left open), and those
        of the sessions `using` built."""
        routes, self._routes = list(self._routes.values()), {}
        for routed in routes:
            await routed.close()
        if self._route_of is not None:
            kept, key = self._route_of
            kept.pop(key, None)
            self._route_of = None
        await self._held.close()

    def using(
        self,
        client: Any = None,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        streams_client: Any = None,
    ) -> AsyncSession:
        """This session, with its requests sent to another DynamoDB client, as
        `Session.using` does: an entered aiobotocore `client`, or one opened as this session's
        was, for `region_name` and/or `endpoint_url` (on its first call, kept for later calls
        with the same arguments, closed by this session's `close`, or by the returned
        session's own `close` or `async with`)."""
        if client is not None and (region_name is not None or endpoint_url is not None):
            raise TypeError("Give a client, or region_name/endpoint_url to build one; not both.")
        if client is None and region_name is None and endpoint_url is None:
            raise TypeError("Give a client, a region_name or an endpoint_url.")
        if client is not None:
            return self._routed(client, streams_client, self._client_kwargs, None)
        key = (region_name, endpoint_url)
        found = self._routes.get(key)
        if found is not None:
            return found
        kwargs = dict(self._client_kwargs)
        if region_name is not None:
            kwargs["region_name"] = region_name
        if endpoint_url is not None:
            kwargs["endpoint_url"] = endpoint_url
        config = (
            None
            if self.config is None
            else dataclasses.replace(
                self.config,
                region_name=region_name or self.config.region_name,
                endpoint_url=endpoint_url or self.config.endpoint_url,
            )
        )
        routed = self._routed(None, streams_client, kwargs, config)
        routed._route_of = (self._routes, key)
        self._routes[key] = routed
        return routed

    def _routed(
        self,
        client: Any,
        streams_client: Any,
        kwargs: dict[str, Any],
        config: SessionConfig | None,
    ) -> AsyncSession:
        """A twin of this session on ``client``, or on one it opens with ``kwargs``."""
        twin = copy.copy(self)
        twin.client = client
        twin._client_kwargs = kwargs
        twin._held = LoopHeld()
        twin._streams = streams_client
        twin._given_streams = streams_client is not None
        twin._routes = {}
        twin._route_of = None
        twin.config = config
        twin.unit_worker = _unit_worker(config)
        twin.driver = _OpeningDriver(twin)
        if client is not None:
            parts = _driver_parts(twin, client, self._fast_json, self._lean)
            driver = AsyncDriver(*parts, streams_client, services=self.services)
            twin.driver = _MeteredAsync(driver, self.capacity, self.ctx.protection)
        return twin

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
    apply_table = awaiting(methods.apply_table)
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
    collect_orphans = awaiting(methods.collect_orphans)
    migrate_table = awaiting(methods.migrate_table)
    jobs = awaiting(methods.jobs)
    job = awaiting(methods.job)
    cancel_job = awaiting(methods.cancel_job)
    run_unit = awaiting(methods.run_unit)
    batch_write = awaiting(methods.batch_write)
    batch_get = awaiting(methods.batch_get)
    transact_write = awaiting(methods.transact_write)
    transact_get = awaiting(methods.transact_get)
    load = awaiting(methods.load)
    all = awaiting(methods.all)
    first = awaiting(methods.first)
    count = awaiting(methods.count)
    page = awaiting(methods.page)

    async def pages(self, source: Query[E] | Scan[E]) -> AsyncIterator[Page[E]]:
        """Yield the results page by page; only one page is held in memory."""
        from lsiorm._ops import reads

        pages = self.driver.iterate(reads.pages(reading(self.ctx), source))
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
