"""Sending batches: unprocessed items and keys, chunks that fail, concurrency, with fake servers."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import AsyncSession, Entity, RetryPolicy, Session
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.wire import item_to_wire
from lsiorm._ops.batch import BatchWriteResult, batch_get, batch_write
from lsiorm._requests.batch import MAX_BATCH_GET, MAX_BATCH_WRITE, key_identity, primary_key_of
from lsiorm.errors import (
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    ServiceValidationError,
    ValidationError,
)
from support.models import POSTS, USERS, Post, Tag, User

NO_WAIT = RetryPolicy(max_attempts=4, max_delay=60.0, initial=0.0, maximum=0.0)


def ident_of(target: Any) -> Any:
    """The key identity a batch entry has, from an entity or a (class, key fields) pair."""
    if isinstance(target, Entity):
        meta = meta_of(target)
        return key_identity(meta.table.name, primary_key_of(meta.table, target.to_wire()))
    cls, key = target
    meta = meta_of(cls)
    return key_identity(meta.table.name, item_to_wire(meta.key(key)))


def throttled(operation: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        operation,
    )


def invalid(operation: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "ValidationException", "Message": "bad"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        operation,
    )


class FakeBatchServer:
    """A BatchWriteItem / BatchGetItem client that processes a random part of each request.

    ``process`` is the chance that one request in a batch is done, ``fail`` the chance that a
    whole call fails with throttling. ``done`` is what it applied; ``stored`` holds wire items.
    """

    def __init__(self, seed: int, process: float, fail: float) -> None:
        self.rng = random.Random(seed)
        self.process = process
        self.fail = fail
        self.done: set[Any] = set()
        self.stored: dict[Any, dict[str, Any]] = {}
        self.calls = 0
        self.sizes: list[int] = []
        self.tables = {t.name: t for t in (POSTS, USERS)}

    def batch_write_item(self, RequestItems: dict[str, list[Any]]) -> dict[str, Any]:
        self.calls += 1
        self.sizes.append(sum(len(v) for v in RequestItems.values()))
        if self.rng.random() < self.fail:
            raise throttled("BatchWriteItem")
        left: dict[str, list[Any]] = {}
        for name, requests in RequestItems.items():
            for request in requests:
                if self.rng.random() >= self.process:
                    left.setdefault(name, []).append(request)
                    continue
                if "PutRequest" in request:
                    item = request["PutRequest"]["Item"]
                    ident = key_identity(name, primary_key_of(self.tables[name], item))
                    self.stored[ident] = item
                else:
                    ident = key_identity(name, request["DeleteRequest"]["Key"])
                    self.stored.pop(ident, None)
                self.done.add(ident)
        return {"UnprocessedItems": left}

    def batch_get_item(self, RequestItems: dict[str, dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        self.sizes.append(sum(len(v["Keys"]) for v in RequestItems.values()))
        if self.rng.random() < self.fail:
            raise throttled("BatchGetItem")
        found: dict[str, list[Any]] = {}
        left: dict[str, dict[str, Any]] = {}
        for name, spec in RequestItems.items():
            for key in spec["Keys"]:
                if self.rng.random() >= self.process:
                    left.setdefault(name, {"Keys": []})["Keys"].append(key)
                    continue
                ident = key_identity(name, key)
                self.done.add(ident)
                if ident in self.stored:
                    found.setdefault(name, []).append(self.stored[ident])
        return {"Responses": found, "UnprocessedKeys": left}


@pytest.mark.parametrize(
    ("puts", "deletes"),
    [
        ([Post(forum="a", n=1), Post(forum="a", n=1, body="other")], []),
        ([Post(forum="a", n=1)], [(Post, {"forum": "a", "n": 1})]),
        ([], [User(name="u"), (User, {"name": "u"})]),
        ([User(name="u", age=1)], [User(name="u")]),
    ],
)
def test_the_same_key_twice_is_refused_before_sending(
    puts: list[Entity], deletes: list[Any]
) -> None:
    server = FakeBatchServer(0, 1.0, 0.0)
    session = Session(client=server)
    with pytest.raises(ValidationError) as caught:
        session.run(batch_write(session.ctx, puts, deletes))
    assert caught.value.rule == "batch.duplicate-key"
    assert server.calls == 0


def mixed_batch(count: int) -> tuple[list[Entity], list[Any]]:
    puts: list[Entity] = [Post(forum=f"f{i % 3}", n=i) for i in range(count)]
    puts += [User(name=f"u{i}") for i in range(count // 3)]
    deletes: list[Any] = [(Tag, {"forum": "f0", "tag": f"t{i}"}) for i in range(count // 4)]
    deletes += [User(name=f"gone{i}") for i in range(count // 5)]
    return puts, deletes


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    count=st.integers(min_value=0, max_value=90),
    process=st.sampled_from([0.0, 0.3, 0.8, 1.0]),
    fail=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_unprocessed_writes_are_exactly_the_ones_not_done(
    seed: int, count: int, process: float, fail: float
) -> None:
    puts, deletes = mixed_batch(count)
    server = FakeBatchServer(seed, process, fail)
    session = Session(client=server, retry=NO_WAIT)
    everything = [*puts, *deletes]
    error: BatchWriteIncompleteError | None = None
    try:
        result = session.run(batch_write(session.ctx, puts, deletes))
    except BatchWriteIncompleteError as exc:
        error = exc
    left = error.unprocessed if error is not None else []
    if error is None:
        assert result == BatchWriteResult(len(everything), server.calls)
    else:
        assert left, "an incomplete batch names what is left"
        assert error.cause_code in ("UnprocessedItems", "ProvisionedThroughputExceededException")
    # Exactly the caller's own objects, in the caller's order, and exactly those not done.
    assert [id(x) for x in left] == [id(x) for x in everything if ident_of(x) not in server.done]
    assert all(size <= MAX_BATCH_WRITE for size in server.sizes)
    chunks = -(-len(everything) // MAX_BATCH_WRITE)
    assert server.calls <= chunks * NO_WAIT.max_attempts


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    count=st.integers(min_value=0, max_value=230),
    process=st.sampled_from([0.2, 0.7, 1.0]),
    fail=st.sampled_from([0.0, 0.3]),
)
def test_unprocessed_keys_are_exactly_the_ones_not_read(
    seed: int, count: int, process: float, fail: float
) -> None:
    server = FakeBatchServer(seed, 1.0, 0.0)
    stored = [Post(forum="f", n=i, body=str(i)) for i in range(0, count, 2)]
    session = Session(client=server, retry=NO_WAIT)
    session.run(batch_write(session.ctx, stored))
    server.process, server.fail, server.done = process, fail, set()
    keys = [{"forum": "f", "n": i} for i in range(count)]
    found: list[Post] = []
    left: list[Any] = []
    try:
        found = session.run(batch_get(session.ctx, Post, keys))
    except BatchGetIncompleteError as exc:
        found, left = exc.found, exc.unprocessed
    read = [k for k in keys if ident_of((Post, k)) in server.done]
    assert [id(k) for k in left] == [id(k) for k in keys if k not in read]
    assert found == [Post(forum="f", n=k["n"], body=str(k["n"])) for k in read if k["n"] % 2 == 0]
    assert all(size <= MAX_BATCH_GET for size in server.sizes)


def test_a_chunk_that_fails_for_good_reports_its_items() -> None:
    class Server(FakeBatchServer):
        def batch_write_item(self, RequestItems: dict[str, list[Any]]) -> dict[str, Any]:
            if self.calls == 1:  # the second chunk is refused outright
                self.calls += 1
                raise invalid("BatchWriteItem")
            return super().batch_write_item(RequestItems)

    server = Server(0, 1.0, 0.0)
    puts = [Post(forum="f", n=i) for i in range(60)]
    session = Session(client=server, retry=NO_WAIT)
    with pytest.raises(BatchWriteIncompleteError) as caught:
        session.run(batch_write(session.ctx, puts))
    assert caught.value.unprocessed == puts[25:50]
    assert caught.value.cause_code == "ValidationException"
    assert isinstance(caught.value.__cause__, ServiceValidationError)
    assert server.calls == 3


class SlowAsyncServer(FakeBatchServer):
    """An async fake that records how many calls are in flight at once."""

    def __init__(self) -> None:
        super().__init__(0, 1.0, 0.0)
        self.in_flight = 0
        self.peak = 0

    def __getattribute__(self, name: str) -> Any:
        if name in ("batch_write_item", "batch_get_item"):
            sync = super().__getattribute__(name)

            async def call(**params: Any) -> Any:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                try:
                    await asyncio.sleep(0.005)
                    return sync(**params)
                finally:
                    self.in_flight -= 1

            return call
        return super().__getattribute__(name)


@pytest.mark.parametrize("concurrency", [1, 3, 8])
async def test_async_chunks_run_concurrently_within_the_bound(concurrency: int) -> None:
    server = SlowAsyncServer()
    session = AsyncSession(client=server, retry=NO_WAIT)
    puts = [Post(forum="f", n=i) for i in range(25 * 12)]
    result = await session.run(batch_write(session.ctx, puts, concurrency=concurrency))
    assert result.written == len(puts)
    assert server.peak == concurrency
    keys = [{"forum": "f", "n": i} for i in range(len(puts))]
    assert await session.run(batch_get(session.ctx, Post, keys, concurrency=concurrency)) == puts
    assert server.peak == concurrency


def test_concurrency_must_be_positive() -> None:
    session = Session(client=FakeBatchServer(0, 1.0, 0.0))
    with pytest.raises(ValidationError) as caught:
        session.run(batch_write(session.ctx, [Post(forum="f", n=1)], concurrency=0))
    assert caught.value.rule == "batch.concurrency"
