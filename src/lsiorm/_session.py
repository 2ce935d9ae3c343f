"""Sessions: the public sync (boto3) and async (aioboto3) entry points, one thin facade each.

Both facades turn their arguments into the same operation generators (see ``_Operations``) and
hand them to their driver. No operation logic lives here.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar

from lsiorm._conditions import Condition
from lsiorm._io import fastjson
from lsiorm._io.checkpoint import FileCheckpoint
from lsiorm._io.drivers import AsyncDriver, SyncDriver, no_botocore_retries
from lsiorm._io.jsonlines import JsonLinesFile
from lsiorm._model.drift import DriftReport
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._ops import (
    audit,
    backfill,
    batch,
    items,
    key_audit,
    reads,
    relief,
    tables,
    transactions,
)
from lsiorm._ops.audit import CollectionSize
from lsiorm._ops.backfill import BackfillReport
from lsiorm._ops.batch import BatchWriteResult
from lsiorm._ops.collection_guard import CollectionWatcher
from lsiorm._ops.items import DeleteResult, Idempotency
from lsiorm._ops.key_audit import JobProgress, KeyAuditReport
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.naming import NameResolver, prefixed
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reads import Page
from lsiorm._ops.relief import ReliefReport
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._ops.transactions import TransactWriteResult
from lsiorm._query.values import Query, Scan
from lsiorm._requests.batch import DeleteTarget, GetKey
from lsiorm._requests.items import key_values
from lsiorm._requests.transactions import Get, TransactAction
from lsiorm._requests.update_plan import UpdateSpec, update_spec
from lsiorm.errors import ConfigurationError, MissingDependencyError

__all__ = ["AsyncSession", "Session"]


def _progress(
    progress: Callable[[JobProgress], object] | bool | None, label: str
) -> tuple[Callable[[JobProgress], object] | None, Any]:
    """A job's progress callback: the caller's, or a progress bar on stderr for True."""
    if progress is True:
        from lsiorm._io.progress_bar import ProgressBar

        bar = ProgressBar(label)
        return bar, bar
    return (progress or None), None


def _closing(op: Operation[T], bar: Any) -> Operation[T]:
    """Run ``op``; close its progress bar (if any) when it ends, however it ends."""
    try:
        return (yield from op)
    finally:
        if bar is not None:
            bar.close()


def _checkpoint(path: str | os.PathLike[str] | None) -> FileCheckpoint | None:
    return None if path is None else FileCheckpoint(path)


E = TypeVar("E", bound=Entity)
T = TypeVar("T")


class _Operations:
    """Builds operations from public arguments; shared by both facades."""

    ctx: Context

    def __init__(
        self,
        retry: RetryPolicy | None,
        hooks: Sequence[object],
        watch_collections: bool,
        table_prefix: str = "",
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
    ) -> None:
        #: The item-collection watcher (on by default; see docs/collections.md), or None.
        self.collections = CollectionWatcher() if watch_collections else None
        #: The consumed-capacity meter (asks DynamoDB only when enabled; docs/capacity.md).
        self.capacity = CapacityMeter(consumed_capacity)
        watcher = (self.collections,) if self.collections is not None else ()
        self.ctx = Context(
            retry or RetryPolicy(), (*watcher, *hooks), _resolver(table_prefix, table_names)
        )

    def table_name(self, table: Table) -> str:
        """The name of the live table that ``table`` stands for in this session."""
        return self.ctx.live_name(table)

    def add_hook(self, hook: object) -> None:
        """Attach a middleware hook to every later request of this session."""
        self.ctx = self.ctx.with_hooks((*self.ctx.hooks, hook))

    def _put(self, entity: E, create_only: bool, condition: Condition | None) -> Operation[E]:
        return items.put(self.ctx, entity, create_only=create_only, condition=condition)

    def _get(
        self,
        cls: type[E],
        key: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        consistent: bool,
        required: bool,
    ) -> Operation[E | None]:
        values = key_values(meta_of(cls), key, fields)
        return items.get(self.ctx, cls, values, consistent=consistent, required=required)

    def _update(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        spec: UpdateSpec,
        condition: Condition | None,
        idempotency: Idempotency = "none",
    ) -> Operation[E]:
        cls: type[E] = target if isinstance(target, type) else type(target)
        instance = None if isinstance(target, type) else target
        meta = meta_of(cls)
        values = key_values(meta, instance if instance is not None else key, fields)
        return items.update(
            self.ctx,
            cls,
            values,
            spec,
            condition=condition,
            instance=instance,
            idempotency=idempotency,
        )

    def _delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        condition: Condition | None,
    ) -> Operation[DeleteResult[E]]:
        cls: type[E] = target if isinstance(target, type) else type(target)
        meta = meta_of(cls)
        instance = None if isinstance(target, type) else target
        values = key_values(meta, instance if instance is not None else key, fields)
        expected = (
            getattr(instance, meta.version_field)
            if instance is not None and meta.version_field is not None
            else None
        )
        return items.delete_result(
            self.ctx, cls, values, condition=condition, expected_version=expected
        )

    def _delete_item(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        condition: Condition | None,
    ) -> Operation[E | None]:
        result = yield from self._delete(target, key, fields, condition)
        return items.deleted_item(result, target)


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


def _resolver(prefix: str, names: Callable[[str], str] | None) -> NameResolver | None:
    if prefix and names is not None:
        raise TypeError("Give table_prefix or table_names, not both.")
    if prefix:
        return prefixed(prefix)
    return names


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


class Session(_Operations):
    """Synchronous access to DynamoDB over a boto3 client.

    Without ``client``, one is built from ``boto3_session`` (or a new ``boto3.Session`` for
    ``profile_name``) with botocore's own retries turned off, so that the ``retry`` policy alone
    decides. ``hooks`` are middleware. The item-collection watcher is installed unless
    ``watch_collections=False``; it is ``session.collections``. The client, built here or passed
    in, parses responses with the fast JSON path unless ``fast_json=False``. ``table_prefix``
    (``"dev-"``) or ``table_names`` (a function of the declared name) choose the live table each
    declared table stands for. ``consumed_capacity=True`` asks every read and write for its
    consumed capacity and meters it in ``session.capacity``.
    lsiorm's own data-plane requests take the lean request lane (botocore's signer and HTTP
    pool, without its validation, serializer and events; see docs/performance.md) whenever
    nothing else watches the client's requests; ``lean=False`` keeps them all on botocore.
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
        elif boto3_session is not None or profile_name is not None:
            raise TypeError("Give a client, or boto3_session/profile_name to build one; not both.")
        if fast_json:
            _install_fast_json(client)
        self.client = client
        self.driver = _MeteredSync(
            SyncDriver(client, lean_lane_for(client) if lean else None), self.capacity
        )

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def run(self, op: Operation[Any]) -> Any:
        """Run any lsiorm operation generator with this session's driver."""
        return self.driver.run(op)

    def call(
        self, operation: str, params: dict[str, Any], *, tables: Sequence[Table] = ()
    ) -> dict[str, Any]:
        """Send one raw DynamoDB request through this session's hooks, retries and typed errors.

        ``tables`` names the declared tables the request touches, for hooks such as the
        item-collection watcher. Returns the response as botocore gives it.
        """
        response: dict[str, Any] = self.driver.run(
            call(self.ctx, operation, params, tuple(tables), built=False)
        )
        return response

    def create_table(self, table: Table, *, wait: bool = True, exists_ok: bool = False) -> bool:
        """Create the declared table (and wait until it is ACTIVE); return whether it was created.

        ``exists_ok=True`` leaves an existing table as it is instead of raising. A table with a
        ``ttl_attribute`` is always waited for and gets time to live enabled on it, an existing
        one too when TTL is disabled there.
        """
        created: bool = self.driver.run(
            tables.create_table(self.ctx, table, wait=wait, exists_ok=exists_ok)
        )
        return created

    def delete_table(self, table: Table, *, wait: bool = True) -> None:
        """Delete the table (and wait until it is gone)."""
        self.driver.run(tables.delete_table(self.ctx, table, wait=wait))

    def check_table(self, table: Table) -> DriftReport:
        """Compare the declaration and TTL with the live table; report drift in plain words."""
        return self.driver.run(tables.check_table(self.ctx, table))

    def put(self, entity: E, *, create_only: bool = False, condition: Condition | None = None) -> E:
        """Write an entity and return it as stored; ``create_only`` refuses to overwrite."""
        return self.driver.run(self._put(entity, create_only, condition))

    def get(
        self,
        cls: type[E],
        key: Mapping[str, Any] | None = None,
        *,
        consistent: bool = False,
        required: bool = False,
        **fields: Any,
    ) -> E | None:
        """Read one item by its key fields, given as ``key=`` and/or keywords."""
        return self.driver.run(self._get(cls, key, fields, consistent, required))

    def update(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        set: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        add: Mapping[str, Any] | None = None,
        condition: Condition | None = None,
        idempotency: Idempotency = "none",
        delete: Mapping[str, Any] | None = None,
        append: Mapping[str, Any] | None = None,
        prepend: Mapping[str, Any] | None = None,
        if_not_exists: Mapping[str, Any] | None = None,
        upsert: bool = False,
        **fields: Any,
    ) -> E:
        """Update an item and return it as stored; rewrites affected key attributes.

        Each change is keyed by a field name or a path into it (``"address.city"``,
        ``"lines[0].qty"``): ``set`` writes values (None removes a field), ``remove`` drops
        paths, ``add`` adds to a number or a set, ``delete`` takes elements out of a set,
        ``append``/``prepend`` extend a list, ``if_not_exists`` writes only where there is no
        value. The item must exist, unless ``upsert`` is True: then a missing item is created
        with its derived keys, from these changes over the model's defaults.

        ``idempotency`` decides how an update that adds to a number or extends a list is kept
        from being applied twice when an answer is lost (see docs/reliability.md): ``"none"``
        (no resend after an ambiguous failure: OutcomeUnknownError) or ``"transaction"``
        (applied once as a transaction with a request token: twice the write units, plus one
        consistent read).
        """
        spec = update_spec(set, remove, add, delete, append, prepend, if_not_exists, upsert)
        return self.driver.run(self._update(target, key, fields, spec, condition, idempotency))

    def delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> E | None:
        """Delete one item; return what was deleted, or None.

        Raises OutcomeUnknownError if an attempt whose answer was lost may have deleted it;
        :meth:`delete_result` reports that case as ``deleted=None`` instead.
        """
        return self.driver.run(self._delete_item(target, key, fields, condition))

    def delete_result(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> DeleteResult[E]:
        """Delete one item; say whether this call deleted it (True, False, None: unknown)."""
        return self.driver.run(self._delete(target, key, fields, condition))

    def audit_collection(self, table: Table, partition_value: Any) -> CollectionSize:
        """Read one item collection (consistently) and return its size by the size model."""
        return self.driver.run(audit.audit_collection(self.ctx, table, partition_value))

    def largest_collections(
        self, table: Table, threshold_gb: float | None = None, *, limit: int | None = None
    ) -> list[CollectionSize]:
        """Scan the table; return collections at or above the threshold, largest first."""
        return self.driver.run(
            audit.largest_collections(self.ctx, table, threshold_gb, limit=limit)
        )

    def audit_keys(
        self,
        target: Table | type[Entity],
        *,
        partition: Any = None,
        segments: int = 4,
        dry_run: bool = False,
        page_size: int | None = None,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> KeyAuditReport:
        """Check every item's stored keys against its declaration (read-only; priced first).

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "audit-keys")
        return self.driver.run(
            _closing(
                key_audit.audit_keys(
                    self.ctx,
                    target,
                    partition=partition,
                    segments=segments,
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    def backfill(
        self,
        entity: type[Entity],
        *,
        partition: Any = None,
        segments: int = 4,
        write_budget: float | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        page_size: int | None = None,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> BackfillReport:
        """Rewrite the stale derived keys of an entity's items, each only if unchanged.

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "backfill")
        return self.driver.run(
            _closing(
                backfill.backfill(
                    self.ctx,
                    entity,
                    partition=partition,
                    segments=segments,
                    write_budget=write_budget,
                    checkpoint=_checkpoint(checkpoint),
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    def relieve_collection(
        self,
        table: Table,
        partition: Any,
        *,
        entity: type[Entity] | None = None,
        match: Callable[[Entity], bool] | None = None,
        to_table: Table | None = None,
        to_file: str | os.PathLike[str] | None = None,
        write_budget: float | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        page_size: int | None = 100,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> ReliefReport:
        """Move a collection's matching items to a table or file: copy, verify, then delete.

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "relief")
        return self.driver.run(
            _closing(
                relief.relieve_collection(
                    self.ctx,
                    table,
                    partition,
                    entity=entity,
                    match=match,
                    to_table=to_table,
                    to_file=None if to_file is None else JsonLinesFile(to_file),
                    write_budget=write_budget,
                    checkpoint=_checkpoint(checkpoint),
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    def batch_write(
        self,
        puts: Sequence[Entity] = (),
        deletes: Sequence[DeleteTarget] = (),
        *,
        concurrency: int = 8,
    ) -> BatchWriteResult:
        """Write and delete in chunks of 25; unprocessed items are retried, never dropped."""
        return self.driver.run(batch.batch_write(self.ctx, puts, deletes, concurrency=concurrency))

    def batch_get(
        self,
        cls_or_classes: type[E] | Sequence[type[E]],
        keys: Sequence[GetKey[E]],
        *,
        consistent: bool = False,
        concurrency: int = 8,
    ) -> list[E]:
        """Read many items in chunks of 100; unprocessed keys are retried, never dropped."""
        return self.driver.run(
            batch.batch_get(
                self.ctx, cls_or_classes, keys, consistent=consistent, concurrency=concurrency
            )
        )

    def transact_write(
        self, actions: Sequence[TransactAction], *, token: str | None = None
    ) -> TransactWriteResult:
        """Run put/update/delete/condition-check actions as one transaction."""
        return self.driver.run(transactions.transact_write(self.ctx, actions, token))

    def transact_get(self, gets: Sequence[Get]) -> list[Entity | None]:
        """Read items in one transaction; None where an item does not exist."""
        return self.driver.run(transactions.transact_get(self.ctx, gets))

    def all(self, source: Query[E] | Scan[E]) -> list[E]:
        """Run a query or scan and return every result (up to its limit)."""
        return self.driver.run(reads.all(self.ctx, source))

    def first(self, source: Query[E] | Scan[E]) -> E | None:
        """Return the first result of a query or scan, or None."""
        return self.driver.run(reads.first(self.ctx, source))

    def count(self, source: Query[Any] | Scan[Any]) -> int:
        """Return how many items match (Select=COUNT; no item is transferred)."""
        return self.driver.run(reads.count(self.ctx, source))

    def page(self, source: Query[E] | Scan[E]) -> Page[E]:
        """Return the results with the cursor that resumes after them (``source.after(...)``)."""
        return self.driver.run(reads.page(self.ctx, source))

    def pages(self, source: Query[E] | Scan[E]) -> Iterator[Page[E]]:
        """Yield the results page by page; only one page is held in memory."""
        return self.driver.iterate(reads.pages(self.ctx, source))

    def iterate(self, source: Query[E] | Scan[E]) -> Iterator[E]:
        """Yield the results one by one, lazily, a page at a time."""
        for page in self.pages(source):
            yield from page.items


class AsyncSession(_Operations):
    """Asynchronous access to DynamoDB over aioboto3, with the same methods as Session.

    Use it as ``async with AsyncSession(...) as session:``, or pass an entered aiobotocore
    client as ``client``. Building a client needs the ``async`` extra
    (``pip install "lsiorm[async]"``); without it the constructor raises
    :class:`~lsiorm.errors.MissingDependencyError`. ``aioboto3_session``, ``profile_name``,
    ``table_prefix`` and ``table_names`` work as for :class:`Session`. Used without
    ``async with``, it opens its client on the first call; then ``await session.close()``
    closes it.
    ``lean=False`` keeps every request on aiobotocore's own path (see :class:`Session`).
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
        """Open the client (``async with`` does this; so does the first call)."""
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

    async def call(
        self, operation: str, params: dict[str, Any], *, tables: Sequence[Table] = ()
    ) -> dict[str, Any]:
        """Send one raw DynamoDB request through this session's hooks, retries and typed errors.

        ``tables`` names the declared tables the request touches, for hooks such as the
        item-collection watcher. Returns the response as botocore gives it.
        """
        response: dict[str, Any] = await self.driver.run(
            call(self.ctx, operation, params, tuple(tables), built=False)
        )
        return response

    async def create_table(
        self, table: Table, *, wait: bool = True, exists_ok: bool = False
    ) -> bool:
        """Create the declared table (and wait until it is ACTIVE); return whether it was created.

        ``exists_ok=True`` leaves an existing table as it is instead of raising. A table with a
        ``ttl_attribute`` is always waited for and gets time to live enabled on it, an existing
        one too when TTL is disabled there.
        """
        created: bool = await self.driver.run(
            tables.create_table(self.ctx, table, wait=wait, exists_ok=exists_ok)
        )
        return created

    async def delete_table(self, table: Table, *, wait: bool = True) -> None:
        """Delete the table (and wait until it is gone)."""
        await self.driver.run(tables.delete_table(self.ctx, table, wait=wait))

    async def check_table(self, table: Table) -> DriftReport:
        """Compare the declaration and TTL with the live table; report drift in plain words."""
        return await self.driver.run(tables.check_table(self.ctx, table))

    async def put(
        self, entity: E, *, create_only: bool = False, condition: Condition | None = None
    ) -> E:
        """Write an entity and return it as stored; ``create_only`` refuses to overwrite."""
        return await self.driver.run(self._put(entity, create_only, condition))

    async def get(
        self,
        cls: type[E],
        key: Mapping[str, Any] | None = None,
        *,
        consistent: bool = False,
        required: bool = False,
        **fields: Any,
    ) -> E | None:
        """Read one item by its key fields, given as ``key=`` and/or keywords."""
        return await self.driver.run(self._get(cls, key, fields, consistent, required))

    async def update(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        set: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        add: Mapping[str, Any] | None = None,
        condition: Condition | None = None,
        idempotency: Idempotency = "none",
        delete: Mapping[str, Any] | None = None,
        append: Mapping[str, Any] | None = None,
        prepend: Mapping[str, Any] | None = None,
        if_not_exists: Mapping[str, Any] | None = None,
        upsert: bool = False,
        **fields: Any,
    ) -> E:
        """Update an item and return it as stored; see :meth:`Session.update`."""
        spec = update_spec(set, remove, add, delete, append, prepend, if_not_exists, upsert)
        return await self.driver.run(
            self._update(target, key, fields, spec, condition, idempotency)
        )

    async def delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> E | None:
        """Delete one item; return what was deleted, or None (see :meth:`Session.delete`)."""
        return await self.driver.run(self._delete_item(target, key, fields, condition))

    async def delete_result(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> DeleteResult[E]:
        """Delete one item; say whether this call deleted it (True, False, None: unknown)."""
        return await self.driver.run(self._delete(target, key, fields, condition))

    async def audit_collection(self, table: Table, partition_value: Any) -> CollectionSize:
        """Read one item collection (consistently) and return its size by the size model."""
        return await self.driver.run(audit.audit_collection(self.ctx, table, partition_value))

    async def largest_collections(
        self, table: Table, threshold_gb: float | None = None, *, limit: int | None = None
    ) -> list[CollectionSize]:
        """Scan the table; return collections at or above the threshold, largest first."""
        return await self.driver.run(
            audit.largest_collections(self.ctx, table, threshold_gb, limit=limit)
        )

    async def audit_keys(
        self,
        target: Table | type[Entity],
        *,
        partition: Any = None,
        segments: int = 4,
        dry_run: bool = False,
        page_size: int | None = None,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> KeyAuditReport:
        """Check every item's stored keys against its declaration (read-only; priced first).

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "audit-keys")
        return await self.driver.run(
            _closing(
                key_audit.audit_keys(
                    self.ctx,
                    target,
                    partition=partition,
                    segments=segments,
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    async def backfill(
        self,
        entity: type[Entity],
        *,
        partition: Any = None,
        segments: int = 4,
        write_budget: float | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        page_size: int | None = None,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> BackfillReport:
        """Rewrite the stale derived keys of an entity's items, each only if unchanged.

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "backfill")
        return await self.driver.run(
            _closing(
                backfill.backfill(
                    self.ctx,
                    entity,
                    partition=partition,
                    segments=segments,
                    write_budget=write_budget,
                    checkpoint=_checkpoint(checkpoint),
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    async def relieve_collection(
        self,
        table: Table,
        partition: Any,
        *,
        entity: type[Entity] | None = None,
        match: Callable[[Entity], bool] | None = None,
        to_table: Table | None = None,
        to_file: str | os.PathLike[str] | None = None,
        write_budget: float | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        page_size: int | None = 100,
        progress: Callable[[JobProgress], object] | bool | None = None,
    ) -> ReliefReport:
        """Move a collection's matching items to a table or file: copy, verify, then delete.

        ``progress`` is called with a JobProgress after each page; True draws a progress bar
        (items, rate, ETA from an estimated total) on stderr.
        """
        on_progress, bar = _progress(progress, "relief")
        return await self.driver.run(
            _closing(
                relief.relieve_collection(
                    self.ctx,
                    table,
                    partition,
                    entity=entity,
                    match=match,
                    to_table=to_table,
                    to_file=None if to_file is None else JsonLinesFile(to_file),
                    write_budget=write_budget,
                    checkpoint=_checkpoint(checkpoint),
                    dry_run=dry_run,
                    page_size=page_size,
                    progress=on_progress,
                ),
                bar,
            )
        )

    async def batch_write(
        self,
        puts: Sequence[Entity] = (),
        deletes: Sequence[DeleteTarget] = (),
        *,
        concurrency: int = 8,
    ) -> BatchWriteResult:
        """Write and delete in chunks of 25 (concurrently); unprocessed items are retried."""
        return await self.driver.run(
            batch.batch_write(self.ctx, puts, deletes, concurrency=concurrency)
        )

    async def batch_get(
        self,
        cls_or_classes: type[E] | Sequence[type[E]],
        keys: Sequence[GetKey[E]],
        *,
        consistent: bool = False,
        concurrency: int = 8,
    ) -> list[E]:
        """Read many items in chunks of 100 (concurrently); unprocessed keys are retried."""
        return await self.driver.run(
            batch.batch_get(
                self.ctx, cls_or_classes, keys, consistent=consistent, concurrency=concurrency
            )
        )

    async def transact_write(
        self, actions: Sequence[TransactAction], *, token: str | None = None
    ) -> TransactWriteResult:
        """Run put/update/delete/condition-check actions as one transaction."""
        return await self.driver.run(transactions.transact_write(self.ctx, actions, token))

    async def transact_get(self, gets: Sequence[Get]) -> list[Entity | None]:
        """Read items in one transaction; None where an item does not exist."""
        return await self.driver.run(transactions.transact_get(self.ctx, gets))

    async def all(self, source: Query[E] | Scan[E]) -> list[E]:
        """Run a query or scan and return every result (up to its limit)."""
        return await self.driver.run(reads.all(self.ctx, source))

    async def first(self, source: Query[E] | Scan[E]) -> E | None:
        """Return the first result of a query or scan, or None."""
        return await self.driver.run(reads.first(self.ctx, source))

    async def count(self, source: Query[Any] | Scan[Any]) -> int:
        """Return how many items match (Select=COUNT; no item is transferred)."""
        return await self.driver.run(reads.count(self.ctx, source))

    async def page(self, source: Query[E] | Scan[E]) -> Page[E]:
        """Return the results with the cursor that resumes after them (``source.after(...)``)."""
        return await self.driver.run(reads.page(self.ctx, source))

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
