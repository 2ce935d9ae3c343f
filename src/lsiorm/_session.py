"""Sessions: the public sync (boto3) and async (aioboto3) entry points, one thin facade each.

Both facades turn their arguments into the same operation generators (see ``_Operations``) and
hand them to their driver. No operation logic lives here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar

from lsiorm._conditions import Condition
from lsiorm._io import fastjson
from lsiorm._io.drivers import AsyncDriver, SyncDriver, no_botocore_retries
from lsiorm._io.lean import lean_lane_for
from lsiorm._model.entity import Entity, meta_of
from lsiorm._model.schema import DriftReport, Table
from lsiorm._ops import audit, batch, items, reads, tables, transactions
from lsiorm._ops.audit import CollectionSize
from lsiorm._ops.batch import BatchWriteResult, DeleteTarget, GetKey
from lsiorm._ops.collection_guard import CollectionWatcher
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reads import Page
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._ops.transactions import Get, TransactAction, TransactWriteResult
from lsiorm._query.values import Query, Scan
from lsiorm._requests.items import UpdateSpec, key_values

__all__ = ["AsyncSession", "Session"]

E = TypeVar("E", bound=Entity)


class _Operations:
    """Builds operations from public arguments; shared by both facades."""

    ctx: Context

    def __init__(
        self, retry: RetryPolicy | None, hooks: Sequence[object], watch_collections: bool
    ) -> None:
        #: The item-collection watcher (on by default; see docs/collections.md), or None.
        self.collections = CollectionWatcher() if watch_collections else None
        watcher = (self.collections,) if self.collections is not None else ()
        self.ctx = Context(retry or RetryPolicy(), (*watcher, *hooks))

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
        set: Mapping[str, Any] | None,
        remove: Sequence[str],
        add: Mapping[str, Any] | None,
        condition: Condition | None,
    ) -> Operation[E]:
        cls: type[E] = target if isinstance(target, type) else type(target)
        instance = None if isinstance(target, type) else target
        meta = meta_of(cls)
        values = key_values(meta, instance if instance is not None else key, fields)
        spec = UpdateSpec(dict(set or {}), tuple(remove), dict(add or {}))
        return items.update(self.ctx, cls, values, spec, condition=condition, instance=instance)

    def _delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        condition: Condition | None,
    ) -> Operation[E | None]:
        cls: type[E] = target if isinstance(target, type) else type(target)
        meta = meta_of(cls)
        instance = None if isinstance(target, type) else target
        values = key_values(meta, instance if instance is not None else key, fields)
        expected = (
            getattr(instance, meta.version_field)
            if instance is not None and meta.version_field is not None
            else None
        )
        return items.delete(self.ctx, cls, values, condition=condition, expected_version=expected)


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

    Without ``client``, one is built with botocore's own retries turned off, so that the
    ``retry`` policy alone decides (see :mod:`lsiorm.retry`). ``hooks`` are middleware. The
    item-collection watcher is installed unless ``watch_collections=False``; it is
    ``session.collections``. A client built here parses responses with the fast JSON path
    (:mod:`lsiorm.fastjson`) unless ``fast_json=False``; a client passed in is left as it is.
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
        lean: bool = True,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(retry, hooks, watch_collections)
        if client is None:
            import boto3

            client = boto3.session.Session().client(
                "dynamodb", **_client_kwargs(endpoint_url, region_name, client_kwargs)
            )
            if fast_json:
                fastjson.install(client)
        self.client = client
        self.driver = SyncDriver(client, lean_lane_for(client) if lean else None)

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
        response: dict[str, Any] = self.driver.run(call(self.ctx, operation, params, tuple(tables)))
        return response

    def create_table(self, table: Table, *, wait: bool = True) -> None:
        """Create the declared table (and wait until it is ACTIVE)."""
        self.driver.run(tables.create_table(self.ctx, table, wait=wait))

    def delete_table(self, table: Table, *, wait: bool = True) -> None:
        """Delete the table (and wait until it is gone)."""
        self.driver.run(tables.delete_table(self.ctx, table, wait=wait))

    def check_table(self, table: Table) -> DriftReport:
        """Compare the declaration with the live table and report drift in plain words."""
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
        **fields: Any,
    ) -> E:
        """Update an existing item and return it as stored; rewrites affected key attributes."""
        return self.driver.run(self._update(target, key, fields, set, remove, add, condition))

    def delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> E | None:
        """Delete one item; return what was deleted, or None."""
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
    client as ``client``. ``lean=False`` keeps every request on aiobotocore's own path (see
    :class:`Session`).
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
        lean: bool = True,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(retry, hooks, watch_collections)
        self._fast_json = fast_json
        self._lean = lean
        self._client_kwargs = _client_kwargs(endpoint_url, region_name, client_kwargs)
        self._stack: AsyncExitStack | None = None
        self.client = client
        self.driver = AsyncDriver(
            client, lean_lane_for(client) if lean and client is not None else None
        )

    async def __aenter__(self) -> AsyncSession:
        if self.client is None:
            import aioboto3

            self._stack = AsyncExitStack()
            self.client = await self._stack.enter_async_context(
                aioboto3.Session().client("dynamodb", **self._client_kwargs)
            )
            if self._fast_json:
                fastjson.install(self.client)
            lane = lean_lane_for(self.client) if self._lean else None
            self.driver = AsyncDriver(self.client, lane)
        return self

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
            call(self.ctx, operation, params, tuple(tables))
        )
        return response

    async def create_table(self, table: Table, *, wait: bool = True) -> None:
        """Create the declared table (and wait until it is ACTIVE)."""
        await self.driver.run(tables.create_table(self.ctx, table, wait=wait))

    async def delete_table(self, table: Table, *, wait: bool = True) -> None:
        """Delete the table (and wait until it is gone)."""
        await self.driver.run(tables.delete_table(self.ctx, table, wait=wait))

    async def check_table(self, table: Table) -> DriftReport:
        """Compare the declaration with the live table and report drift in plain words."""
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
        **fields: Any,
    ) -> E:
        """Update an existing item and return it as stored; rewrites affected key attributes."""
        return await self.driver.run(self._update(target, key, fields, set, remove, add, condition))

    async def delete(
        self,
        target: type[E] | E,
        key: Mapping[str, Any] | None = None,
        *,
        condition: Condition | None = None,
        **fields: Any,
    ) -> E | None:
        """Delete one item; return what was deleted, or None."""
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
