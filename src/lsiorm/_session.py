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
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import lsiorm._session_methods as methods
from lsiorm._io import fastjson
from lsiorm._io.drivers import AsyncDriver, SyncDriver, no_botocore_retries
from lsiorm._io.lifetime import Closing
from lsiorm._model.entity import Entity
from lsiorm._ops import reads
from lsiorm._ops.ledger import LedgerLocation
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.reads import Page
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._ops.units import Unit
from lsiorm._query.values import Query, Scan
from lsiorm._session_methods import SessionConfig, SessionCore
from lsiorm.errors import ConfigurationError, MissingDependencyError

__all__ = ["AsyncSession", "Session"]

E = TypeVar("E", bound=Entity)
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


def blocking(
    declared: Callable[Concatenate[SessionCore, P], Operation[R]],
) -> Callable[Concatenate[Session, P], R]:
    """Make a Session method of a declared one: it runs the operation to its end."""

    def method(self: Session, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.driver.run(declared(self, *args, **kwargs))

    return cast("Callable[Concatenate[Session, P], R]", _facade(method, declared, "Session"))


def awaiting(
    declared: Callable[Concatenate[SessionCore, P], Operation[R]],
) -> Callable[Concatenate[AsyncSession, P], Coroutine[Any, Any, R]]:
    """Make an AsyncSession method of a declared one: a coroutine that awaits the operation."""

    async def method(self: AsyncSession, *args: P.args, **kwargs: P.kwargs) -> R:
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


def _client(factory: Any, kwargs: Mapping[str, Any]) -> Any:
    """Build a botocore client, turning botocore's configuration errors into typed ones."""
    from botocore.exceptions import BotoCoreError

    try:
        return factory("dynamodb", **kwargs)
    except (BotoCoreError, ValueError) as exc:
        raise _client_error(exc) from exc


def lean_lane_for(client: Any) -> Any:
    """The lean request lane for a client, or None (imported on first use: it needs orjson)."""
    from lsiorm._io.lean import lean_lane_for as lane_for

    return lane_for(client)


def _install_fast_json(client: Any) -> None:
    """Give a botocore DynamoDB client the fast path; leave anything else (a test double) alone."""
    meta = getattr(client, "meta", None)
    service = getattr(meta, "service_model", None)
    if getattr(service, "service_name", None) == "dynamodb" and hasattr(meta, "events"):
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


def _client_kwargs(
    endpoint_url: str | None, region_name: str | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    from botocore.config import Config

    kwargs: dict[str, Any] = dict(extra)
    # lsiorm's retry policy must be the only retry loop, even over a config the caller passes.
    ours = Config(**no_botocore_retries())
    given = kwargs.get("config")
    kwargs["config"] = given.merge(ours) if given is not None else ours
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
    declared table stands for. `consumed_capacity=True` asks every read and write for its
    consumed capacity and meters it in `session.capacity`.
    lsiorm's own data-plane requests take the lean request lane (botocore's signer and HTTP
    pool, without its validation, serializer and events; see docs/performance.md) whenever
    nothing else watches the client's requests; `lean=False` keeps them all on botocore.
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
        table_prefix: str = "",
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
        lean: bool = True,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(
            retry, hooks, watch_collections, table_prefix, table_names, consumed_capacity
        )
        if client is None:
            import boto3

            factory = boto3_session or boto3.session.Session(profile_name=profile_name)
            client = _client(
                factory.client,
                _client_kwargs(endpoint_url, region_name, client_kwargs),
            )
            if boto3_session is None and table_names is None:
                self.config = SessionConfig(
                    endpoint_url,
                    region_name,
                    profile_name,
                    table_prefix,
                    retry,
                    watch_collections,
                    fast_json,
                    lean,
                )
                self.unit_worker = partial(run_unit_task, self.config)
        elif boto3_session is not None or profile_name is not None:
            raise TypeError("Give a client, or boto3_session/profile_name to build one; not both.")
        if fast_json:
            _install_fast_json(client)
        self.client = client
        self.driver = _MeteredSync(
            SyncDriver(client, lean_lane_for(client) if lean else None), self.capacity
        )

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return self.driver.run(op)

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
    backfill = blocking(methods.backfill)
    relieve_collection = blocking(methods.relieve_collection)
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
        return self.driver.iterate(reads.pages(self.ctx, source))

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
    first call; then `await session.close()` closes it.
    `lean=False` keeps every request on aiobotocore's own path (see `Session`).
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
        table_prefix: str = "",
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
        lean: bool = True,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(
            retry, hooks, watch_collections, table_prefix, table_names, consumed_capacity
        )
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
        self._stack: AsyncExitStack | None = None
        self.client = client
        if client is not None and fast_json:
            _install_fast_json(client)
        self.driver: _MeteredAsync | _OpeningDriver = (
            _MeteredAsync(
                AsyncDriver(client, lean_lane_for(client) if lean else None), self.capacity
            )
            if client is not None
            else _OpeningDriver(self)
        )

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
            except (BotoCoreError, ValueError) as exc:
                raise _client_error(exc) from exc
            self._stack = stack
            if self._fast_json:
                fastjson.install(self.client)
            lane = lean_lane_for(self.client) if self._lean else None
            self.driver = _MeteredAsync(AsyncDriver(self.client, lane), self.capacity)
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
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()
            self.client = None
            self.driver = _OpeningDriver(self)

    async def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return await self.driver.run(op)

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
    backfill = awaiting(methods.backfill)
    relieve_collection = awaiting(methods.relieve_collection)
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
        async for page in self.driver.iterate(reads.pages(self.ctx, source)):
            yield page

    async def iterate(self, source: Query[E] | Scan[E]) -> AsyncIterator[E]:
        """Yield the results one by one, lazily, a page at a time."""
        async for page in self.pages(source):
            for item in page.items:
                yield item


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


#: The sessions of this process's workers, one per configuration (a worker runs many units).
_WORKER_SESSIONS: dict[SessionConfig, Session] = {}


def run_unit_task(
    config: SessionConfig, location: LedgerLocation, lease_seconds: float, job_id: str, unit: Unit
) -> str:
    """Run one unit of a job in this process: what an executor's worker is handed.

    Module-level, so that pickle sends it by name; the worker builds (once) a session from
    ``config`` and runs the unit as the job's declaration in the ledger says.
    """
    from lsiorm._io.exports import open_export
    from lsiorm._ops.job_catalog import run_declared_unit

    session = _WORKER_SESSIONS.get(config)
    if session is None:
        session = _WORKER_SESSIONS[config] = Session(**config.kwargs())
    result: str = session.run(
        run_declared_unit(session.ctx, location, lease_seconds, job_id, unit, open_export)
    )
    return result
