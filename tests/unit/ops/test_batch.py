"""Batch writes and gets: exact requests, chunking, duplicate keys, unprocessed items, engines."""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import AsyncSession, Entity, RetryPolicy, Session, Table
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.wire import item_to_wire
from lsiorm._ops.batch import BatchWriteResult, batch_get, batch_write
from lsiorm._requests.batch import (
    MAX_BATCH_GET,
    MAX_BATCH_WRITE,
    batch_get_requests,
    batch_write_requests,
    chunked,
    key_identity,
    primary_key_of,
)
from lsiorm.errors import (
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    ServiceValidationError,
    ValidationError,
)
from support.tables import session_with


def declare(posts: Table, users: Table) -> tuple[type[Entity], type[Entity], type[Entity]]:
    """A forum's posts and tags in one table, and its users in another."""

    class Post(Entity, table=posts, keys={"pk": "F#{forum}", "sk": "P#{n:04d}"}):
        forum: str
        n: int
        body: str = ""

    class Tag(Entity, table=posts, keys={"pk": "F#{forum}", "sk": "T#{tag}"}):
        forum: str
        tag: str

    class User(Entity, table=users, keys={"id": "{name}"}):
        name: str
        age: int = 0

    return Post, Tag, User


posts = Table("batch_posts", "pk", "sk")
users = Table("batch_users", "id")
Post, Tag, User = declare(posts, users)


class Doc(Entity, table=users, keys={"id": "DOC#{name}"}, version="v"):
    name: str
    v: int = 0


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
        self.tables = {t.name: t for t in (posts, users)}

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


# -- pure parts ---------------------------------------------------------------------------------


@settings(max_examples=200)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=50), max_size=120),
    max_count=st.integers(min_value=1, max_value=30),
    max_bytes=st.integers(min_value=1, max_value=200),
)
def test_chunks_keep_order_and_limits(sizes: list[int], max_count: int, max_bytes: int) -> None:
    entries = list(enumerate(sizes))
    chunks = chunked(entries, max_count, max_bytes, lambda e: e[1])
    assert [e for c in chunks for e in c] == entries
    for c in chunks:
        assert 1 <= len(c) <= max_count
        assert len(c) == 1 or sum(s for _, s in c) <= max_bytes
    # Greedy: a chunk was closed only because the next entry did not fit.
    for c, nxt in itertools.pairwise(chunks):
        assert len(c) == max_count or sum(s for _, s in c) + nxt[0][1] > max_bytes


def test_write_requests_are_exact() -> None:
    requests = batch_write_requests(
        puts=[Post(forum="a", n=1, body="x"), User(name="ann", age=3)],
        deletes=[(Tag, {"forum": "a", "tag": "t"}), User(name="bob")],
    )
    assert requests == [
        {
            "RequestItems": {
                "batch_posts": [
                    {
                        "PutRequest": {
                            "Item": {
                                "forum": {"S": "a"},
                                "n": {"N": "1"},
                                "body": {"S": "x"},
                                "pk": {"S": "F#a"},
                                "sk": {"S": "P#0001"},
                                "_type": {"S": "Post"},
                            }
                        }
                    },
                    {"DeleteRequest": {"Key": {"pk": {"S": "F#a"}, "sk": {"S": "T#t"}}}},
                ],
                "batch_users": [
                    {
                        "PutRequest": {
                            "Item": {
                                "name": {"S": "ann"},
                                "age": {"N": "3"},
                                "id": {"S": "ann"},
                                "_type": {"S": "User"},
                            }
                        }
                    },
                    {"DeleteRequest": {"Key": {"id": {"S": "bob"}}}},
                ],
            }
        }
    ]


@pytest.mark.parametrize("count", [0, 1, 25, 26, 60, 251])
def test_writes_are_chunked_by_25(count: int) -> None:
    requests = batch_write_requests([Post(forum="f", n=i) for i in range(count)])
    sizes = [len(r["RequestItems"]["batch_posts"]) for r in requests]
    assert sum(sizes) == count
    assert all(s <= MAX_BATCH_WRITE for s in sizes)
    assert len(sizes) == -(-count // MAX_BATCH_WRITE)


@pytest.mark.parametrize("consistent", [False, True])
def test_gets_are_chunked_by_100(consistent: bool) -> None:
    keys = [{"forum": "f", "n": i} for i in range(250)]
    requests = batch_get_requests(Post, keys, consistent=consistent)
    assert [len(r["RequestItems"]["batch_posts"]["Keys"]) for r in requests] == [100, 100, 50]
    assert all(
        r["RequestItems"]["batch_posts"].get("ConsistentRead", False) is consistent
        for r in requests
    )
    assert requests[0]["RequestItems"]["batch_posts"]["Keys"][3] == {
        "pk": {"S": "F#f"},
        "sk": {"S": "P#0003"},
    }
    assert MAX_BATCH_GET == 100


def test_big_items_are_chunked_within_16_mb() -> None:
    # 25 items of 390 KB stay under 16 MB, so only the count limit applies to writes; the
    # size limit is exercised by chunked() above. Here: the sizes are DynamoDB's item sizes.
    big = [Post(forum="f", n=i, body="x" * 390_000) for i in range(30)]
    requests = batch_write_requests(big)
    assert [len(r["RequestItems"]["batch_posts"]) for r in requests] == [25, 5]


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


def test_the_same_key_twice_in_a_get_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        batch_get_requests([Post, Tag], [(Post, {"forum": "a", "n": 1}), Post(forum="a", n=1)])
    assert caught.value.rule == "batch.duplicate-key"


def test_same_key_in_different_tables_is_fine() -> None:
    requests = batch_write_requests([User(name="F#a")], [(Tag, {"forum": "a", "tag": "t"})])
    assert len(requests) == 1


def test_key_identity_treats_equal_numbers_as_equal() -> None:
    assert key_identity("t", {"n": {"N": "1"}}) == key_identity("t", {"n": {"N": "1.0"}})
    assert key_identity("t", {"n": {"N": "1"}}) != key_identity("u", {"n": {"N": "1"}})
    assert key_identity("t", {"b": {"B": b"x"}}) == key_identity("t", {"b": {"B": bytearray(b"x")}})


@pytest.mark.parametrize(("puts", "deletes"), [([Doc(name="d")], []), ([], [Doc(name="d", v=3)])])
def test_versioned_entities_are_refused(puts: list[Entity], deletes: list[Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        batch_write_requests(puts, deletes)
    assert caught.value.rule == "batch.versioned-entity"


def test_keys_need_a_class_when_several_are_asked_for() -> None:
    with pytest.raises(ValidationError) as caught:
        batch_get_requests([Post, Tag], [{"forum": "a", "n": 1}])
    assert caught.value.rule == "batch.key-class"
    with pytest.raises(ValidationError) as caught:
        batch_get_requests(Post, [(User, {"name": "x"})])
    assert caught.value.rule == "batch.key-class"


# -- unprocessed items, with a fake server ------------------------------------------------------


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


# -- on the engines -----------------------------------------------------------------------------

live_posts = Table(f"batch_live_{uuid.uuid4().hex[:8]}", "pk", "sk")
live_users = Table(f"batch_live_users_{uuid.uuid4().hex[:8]}", "id")
LivePost, LiveTag, LiveUser = declare(live_posts, live_users)


@pytest.fixture(scope="module")
def live(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, live_posts, live_users, wait=False) as session:
        yield session


def test_batch_write_and_get_on_the_engine(live: Session) -> None:
    forum = uuid.uuid4().hex[:6]
    posts_ = [LivePost(forum=forum, n=i, body=f"b{i}") for i in range(70)]
    tags = [LiveTag(forum=forum, tag=f"t{i}") for i in range(20)]
    users_ = [LiveUser(name=f"{forum}-{i}") for i in range(15)]
    result = live.run(batch_write(live.ctx, [*posts_, *tags, *users_]))
    assert result == BatchWriteResult(105, 5)

    keys: list[Any] = [(LivePost, {"forum": forum, "n": i}) for i in range(75)]  # 70..74 absent
    keys += [LiveTag(forum=forum, tag="t3"), LiveUser(name=f"{forum}-9")]
    keys.append((LiveTag, {"forum": forum, "tag": "P#0001"}))  # a key whose item is not a tag
    found = live.run(batch_get(live.ctx, [LivePost, LiveTag, LiveUser], keys, consistent=True))
    assert found == [*posts_, tags[3], users_[9]]

    deleted = live.run(
        batch_write(
            live.ctx,
            deletes=[*posts_[:30], *[(LiveTag, {"forum": forum, "tag": t.tag}) for t in tags]],
        )
    )
    assert deleted.written == 50
    left = live.run(batch_get(live.ctx, LivePost, [p for p in posts_], consistent=True))
    assert left == posts_[30:]
    tags_left = live.run(
        batch_get(live.ctx, LiveTag, [{"forum": forum, "tag": t.tag} for t in tags])
    )
    assert tags_left == []


def test_a_chunk_refused_by_the_engine_is_reported_item_by_item(live: Session) -> None:
    forum = uuid.uuid4().hex[:6]
    posts_ = [LivePost(forum=forum, n=i) for i in range(30)]
    ghosts = [Ghost(name=f"g{i}") for i in range(5)]
    # Chunk 1: posts 0..24. Chunk 2: posts 25..29 and the ghosts, whose table does not exist,
    # so the engine refuses that whole request.
    with pytest.raises(BatchWriteIncompleteError) as caught:
        live.run(batch_write(live.ctx, [*posts_, *ghosts], concurrency=1))
    assert caught.value.unprocessed == [*posts_[25:], *ghosts]
    assert caught.value.cause_code == "ResourceNotFoundException"
    stored = live.run(batch_get(live.ctx, LivePost, posts_, consistent=True))
    assert stored == posts_[:25]


ghost_table = Table(f"batch_ghost_{uuid.uuid4().hex[:8]}", "id")


class Ghost(Entity, table=ghost_table, keys={"id": "{name}"}):
    name: str
