"""Every request is retried by exactly one loop: ``max_attempts`` requests per chunk, not more.

An engine that never gets anywhere (it throttles every request, or hands every item back as
unprocessed, or cancels every transaction for a transient reason) is counted request by request,
for batch_get, query hydration, batch_write, transact_write and transact_get, under both drivers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import (
    AsyncSession,
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    Entity,
    Get,
    GlobalIndex,
    KeyAttribute,
    Projection,
    Put,
    RetryPolicy,
    Session,
    Table,
    ThrottledError,
    TransactionCanceledError,
    query,
)
from lsiorm._requests.batch import MAX_BATCH_GET, MAX_BATCH_WRITE

table = Table(
    "RetryCounts",
    partition_key="pk",
    sort_key="sk",
    global_indexes=[
        GlobalIndex("ByOwner", KeyAttribute("owner_key"), projection=Projection.keys_only())
    ],
)


class Doc(Entity, table=table, keys={"pk": "D#{name}", "sk": "DOC", "owner_key": "O#{owner}"}):
    name: str
    owner: str
    body: str = ""


MODES = ("throttled", "unprocessed")


class StuckEngine:
    """A DynamoDB client that never completes a batch or a transaction.

    ``throttled``: every batch and transaction request fails with throttling. ``unprocessed``:
    every batch request hands all its items back unprocessed, and every transaction is cancelled
    because of a conflict (both are retried). A Query answers with ``index_rows``.
    """

    def __init__(self, mode: str, index_rows: list[dict[str, Any]] | None = None) -> None:
        self.mode = mode
        self.index_rows = index_rows or []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def answer(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((operation, params))
        if operation == "Query":
            n = len(self.index_rows)
            return {"Items": self.index_rows, "Count": n, "ScannedCount": n}
        if self.mode == "throttled":
            raise ClientError(
                {
                    "Error": {"Code": "ThrottlingException", "Message": "slow down (fake)"},
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                operation,
            )
        if operation == "BatchGetItem":
            return {"Responses": {}, "UnprocessedKeys": params["RequestItems"]}
        if operation == "BatchWriteItem":
            return {"UnprocessedItems": params["RequestItems"]}
        reasons = [{"Code": "TransactionConflict"} for _ in params["TransactItems"]]
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "conflict (fake)"},
                "CancellationReasons": reasons,
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            operation,
        )

    def count(self, operation: str) -> int:
        return sum(op == operation for op, _ in self.calls)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        operation = "".join(part.title() for part in method.split("_"))

        def call(**params: Any) -> Any:
            return self.answer(operation, params)

        return call


class AsyncStuckEngine(StuckEngine):
    def __getattr__(self, method: str) -> Callable[..., Any]:
        sync = super().__getattr__(method)

        async def call(**params: Any) -> Any:
            return sync(**params)

        return call


class Runner:
    """Runs one session method under the sync or the async driver, with no real sleeping."""

    def __init__(self, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kind = kind
        self.sleeps: list[float] = []
        if kind == "sync":
            monkeypatch.setattr(time, "sleep", self.sleeps.append)
        else:
            real_sleep = asyncio.sleep

            async def sleep(seconds: float, result: Any = None) -> Any:
                self.sleeps.append(seconds)
                return await real_sleep(0, result)

            monkeypatch.setattr(asyncio, "sleep", sleep)

    def engine(self, mode: str, index_rows: list[dict[str, Any]] | None = None) -> StuckEngine:
        cls = StuckEngine if self.kind == "sync" else AsyncStuckEngine
        return cls(mode, index_rows)

    def run(self, engine: StuckEngine, policy: RetryPolicy, method: str, *args: Any) -> Any:
        if self.kind == "sync":
            return getattr(Session(client=engine, retry=policy), method)(*args)

        async def go() -> Any:
            return await getattr(AsyncSession(client=engine, retry=policy), method)(*args)

        return asyncio.run(go())


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Runner:
    return Runner(request.param, monkeypatch)


def policy(attempts: int) -> RetryPolicy:
    return RetryPolicy(max_attempts=attempts, max_delay=1000.0, initial=0.001, maximum=0.002)


def docs(n: int) -> list[Doc]:
    return [Doc(name=f"d{i:04d}", owner="ann") for i in range(n)]


def chunks(n: int, size: int) -> int:
    return -(-n // size)


#: (attempts, keys) of the reads by key: a small chunk, two full chunks and a part, 100 + 1.
READS_BY_KEY = pytest.mark.parametrize(("attempts", "count"), [(1, 3), (3, 3), (3, 250), (5, 101)])


def keys_per_request(engine: StuckEngine, operation: str) -> list[int]:
    sizes = []
    for op, params in engine.calls:
        if op == operation:
            spec = params["RequestItems"][table.name]
            sizes.append(len(spec["Keys"] if isinstance(spec, dict) else spec))
    return sizes


@pytest.mark.parametrize("mode", MODES)
@READS_BY_KEY
def test_batch_get_sends_max_attempts_per_chunk(
    runner: Runner, mode: str, attempts: int, count: int
) -> None:
    engine = runner.engine(mode)
    keys = [{"name": d.name} for d in docs(count)]
    with pytest.raises(BatchGetIncompleteError) as caught:
        runner.run(engine, policy(attempts), "batch_get", Doc, keys)
    assert engine.count("BatchGetItem") == attempts * chunks(count, MAX_BATCH_GET)
    assert [id(k) for k in caught.value.unprocessed] == [id(k) for k in keys]
    if mode == "throttled":
        assert isinstance(caught.value.__cause__, ThrottledError)
    assert len(runner.sleeps) == (attempts - 1) * chunks(count, MAX_BATCH_GET)


@pytest.mark.parametrize("mode", MODES)
@READS_BY_KEY
def test_hydration_sends_max_attempts_per_chunk(
    runner: Runner, mode: str, attempts: int, count: int
) -> None:
    rows = []
    for d in docs(count):
        wire = d.to_wire()
        rows.append({k: wire[k] for k in ("pk", "sk", "owner_key")})
    engine = runner.engine(mode, rows)
    with pytest.raises(BatchGetIncompleteError) as caught:
        runner.run(engine, policy(attempts), "all", query(Doc).where(owner="ann").hydrate())
    assert engine.count("Query") == 1
    assert engine.count("BatchGetItem") == attempts * chunks(count, MAX_BATCH_GET)
    # Chunks of at most 100 keys, each key sent once per attempt of its chunk.
    sizes = keys_per_request(engine, "BatchGetItem")
    assert max(sizes) <= MAX_BATCH_GET
    assert sum(sizes) == attempts * count
    assert caught.value.unprocessed == [{"pk": r["pk"], "sk": r["sk"]} for r in rows]
    if mode == "throttled":
        assert isinstance(caught.value.__cause__, ThrottledError)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("attempts", "count"), [(1, 3), (3, 3), (3, 60), (4, 26)])
def test_batch_write_sends_max_attempts_per_chunk(
    runner: Runner, mode: str, attempts: int, count: int
) -> None:
    engine = runner.engine(mode)
    puts = docs(count)
    with pytest.raises(BatchWriteIncompleteError) as caught:
        runner.run(engine, policy(attempts), "batch_write", puts)
    assert engine.count("BatchWriteItem") == attempts * chunks(count, MAX_BATCH_WRITE)
    assert caught.value.unprocessed == puts
    assert max(keys_per_request(engine, "BatchWriteItem")) <= MAX_BATCH_WRITE


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("attempts", [1, 3, 6])
def test_transactions_send_max_attempts(runner: Runner, mode: str, attempts: int) -> None:
    expected: type[Exception] = ThrottledError if mode == "throttled" else TransactionCanceledError
    engine = runner.engine(mode)
    with pytest.raises(expected):
        runner.run(engine, policy(attempts), "transact_write", [Put(d) for d in docs(3)])
    assert engine.count("TransactWriteItems") == attempts
    tokens = {p["ClientRequestToken"] for op, p in engine.calls if op == "TransactWriteItems"}
    assert len(tokens) == 1
    engine = runner.engine(mode)
    with pytest.raises(expected):
        runner.run(engine, policy(attempts), "transact_get", [Get(d) for d in docs(2)])
    assert engine.count("TransactGetItems") == attempts


@settings(max_examples=25)
@given(
    attempts=st.integers(min_value=1, max_value=6),
    count=st.integers(min_value=1, max_value=320),
    mode=st.sampled_from(MODES),
)
def test_batch_get_and_hydration_agree_on_requests(attempts: int, count: int, mode: str) -> None:
    """The two ways of reading by key send the same number of requests, of the same sizes."""
    items = docs(count)
    direct = StuckEngine(mode)
    with pytest.raises(BatchGetIncompleteError):
        Session(client=direct, retry=policy(attempts)).batch_get(
            Doc, [{"name": d.name} for d in items]
        )
    rows = [{k: v for k, v in d.to_wire().items() if k in ("pk", "sk", "owner_key")} for d in items]
    hydrating = StuckEngine(mode, rows)
    with pytest.raises(BatchGetIncompleteError):
        Session(client=hydrating, retry=policy(attempts)).all(
            query(Doc).where(owner="ann").hydrate()
        )
    # Chunks run concurrently (threads under Session), so compare the sizes as multisets.
    assert sorted(keys_per_request(hydrating, "BatchGetItem")) == sorted(
        keys_per_request(direct, "BatchGetItem")
    )
