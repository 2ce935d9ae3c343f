"""Sync and async parity: one suite of behaviours, run on Session and AsyncSession, both engines.

Each test takes ``api``, a small adapter that runs an operation with ``session.run`` or
``await asession.run`` and calls a facade method with or without ``await``. The assertions are
the same for both, so any drift between the two paths fails here.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, KeyAttribute, LocalIndex, Projection, Session, Table, cond
from lsiorm._ops import tables as table_ops
from lsiorm._ops.batch import batch_get, batch_write
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._ops.transactions import transact_get, transact_write
from lsiorm._requests.transactions import ConditionCheck, Delete, Get, Put, Update
from lsiorm.errors import (
    ConditionFailedError,
    DynamoError,
    NotFoundError,
    ResourceNotFoundError,
    StaleVersionError,
    TransactionCanceledError,
    ValidationError,
)
from support.tables import session_with

forum = Table(
    f"parity_{uuid.uuid4().hex[:8]}",
    "pk",
    "sk",
    local_indexes=[LocalIndex("ByScore", KeyAttribute("lsi1"), Projection.all())],
)


class Thread(
    Entity,
    table=forum,
    keys={"pk": "F#{forum}", "sk": "T#{subject}", "lsi1": "S#{score:04d}"},
):
    forum: str
    subject: str
    score: int | None = None
    body: str = ""


class Page(Entity, table=forum, keys={"pk": "F#{forum}", "sk": "P#{name}"}, version="v"):
    forum: str
    name: str
    text: str = ""
    v: int = 0


class Api:
    """Runs operations and facade methods on one session, sync or async, awaited either way."""

    def __init__(self, kind: str, session: Session | AsyncSession) -> None:
        self.kind = kind
        self.session = session

    @property
    def ctx(self) -> Any:
        return self.session.ctx

    async def run(self, op: Operation[Any]) -> Any:
        result = self.session.run(op)
        return await result if inspect.isawaitable(result) else result

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.session, method)(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result


@pytest.fixture(scope="module")
def live_table(endpoint_url: str) -> Iterator[Table]:
    with session_with(endpoint_url, forum, wait=False):
        yield forum


@pytest.fixture(params=["sync", "async"])
async def api(
    request: pytest.FixtureRequest, endpoint_url: str, live_table: Table
) -> AsyncIterator[Api]:
    if request.param == "sync":
        with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
            yield Api("sync", session)
    else:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as asession:
            yield Api("async", asession)


def fresh_forum() -> str:
    return uuid.uuid4().hex[:8]


# -- CRUD ---------------------------------------------------------------------------------------


async def test_put_then_get(api: Api) -> None:
    f = fresh_forum()
    stored = await api.call("put", Thread(forum=f, subject="a", score=3, body="hi"))
    assert stored == Thread(forum=f, subject="a", score=3, body="hi")
    assert await api.call("get", Thread, forum=f, subject="a", consistent=True) == stored
    assert await api.call("get", Thread, {"forum": f, "subject": "zz"}) is None
    with pytest.raises(NotFoundError):
        await api.call("get", Thread, forum=f, subject="zz", required=True)


async def test_create_only_refuses_to_overwrite(api: Api) -> None:
    f = fresh_forum()
    await api.call("put", Thread(forum=f, subject="a"))
    with pytest.raises(ConditionFailedError):
        await api.call("put", Thread(forum=f, subject="a"), create_only=True)
    with pytest.raises(ConditionFailedError):
        await api.call("put", Thread(forum=f, subject="a"), condition=cond("score") > 1)


def raw_thread(ctx: Context, f: str, subject: str) -> Operation[dict[str, Any]]:
    """The stored wire item of a thread, to see its derived LSI key."""
    key = {"pk": {"S": f"F#{f}"}, "sk": {"S": f"T#{subject}"}}
    params = {"TableName": forum.name, "Key": key, "ConsistentRead": True}
    response = yield from call(ctx, "GetItem", params)
    item: dict[str, Any] = response["Item"]
    return item


async def test_update_and_delete(api: Api) -> None:
    f = fresh_forum()
    thread = await api.call("put", Thread(forum=f, subject="a", score=1))
    moved = await api.call("update", thread, set={"score": 7, "body": "new"})
    assert moved == Thread(forum=f, subject="a", score=7, body="new")
    raw = await api.run(raw_thread(api.ctx, f, "a"))
    assert raw["lsi1"] == {"S": "S#0007"}
    with pytest.raises(NotFoundError):
        await api.call("update", Thread, forum=f, subject="missing", set={"body": "x"})
    assert await api.call("delete", Thread, forum=f, subject="a") == moved
    assert await api.call("delete", Thread, forum=f, subject="a") is None


async def test_optimistic_locking(api: Api) -> None:
    f = fresh_forum()
    page = await api.call("put", Page(forum=f, name="home", text="v1"))
    assert page.v == 1
    newer = await api.call("put", page.model_copy(update={"text": "v2"}))
    assert newer.v == 2
    with pytest.raises(StaleVersionError):
        await api.call("put", page.model_copy(update={"text": "stale"}))
    with pytest.raises(StaleVersionError):
        await api.call("delete", page)


# -- batches ------------------------------------------------------------------------------------


async def test_batch_write_and_get(api: Api) -> None:
    f = fresh_forum()
    threads = [Thread(forum=f, subject=f"s{i:03d}", score=i) for i in range(60)]
    result = await api.run(batch_write(api.ctx, threads))
    assert (result.written, result.calls) == (60, 3)
    keys = [{"forum": f, "subject": f"s{i:03d}"} for i in range(0, 70, 3)]
    found = await api.run(batch_get(api.ctx, Thread, keys, consistent=True))
    assert found == threads[0:60:3]
    gone = await api.run(batch_write(api.ctx, deletes=[(Thread, k) for k in keys[:5]]))
    assert gone.written == 5
    left = await api.run(batch_get(api.ctx, Thread, keys, consistent=True))
    assert left == threads[15:60:3]


async def test_batch_refuses_duplicates_and_versioned_entities(api: Api) -> None:
    f = fresh_forum()
    twice = [Thread(forum=f, subject="a"), Thread(forum=f, subject="a", body="b")]
    with pytest.raises(ValidationError) as caught:
        await api.run(batch_write(api.ctx, twice))
    assert caught.value.rule == "batch.duplicate-key"
    with pytest.raises(ValidationError) as caught:
        await api.run(batch_write(api.ctx, [Page(forum=f, name="p")]))
    assert caught.value.rule == "batch.versioned-entity"
    assert await api.call("get", Thread, forum=f, subject="a", consistent=True) is None


# -- transactions -------------------------------------------------------------------------------


async def test_transaction_commits(api: Api) -> None:
    f = fresh_forum()
    page = await api.call("put", Page(forum=f, name="home"))
    await api.call("put", Thread(forum=f, subject="old"))
    result = await api.run(
        transact_write(
            api.ctx,
            [
                Put(Thread(forum=f, subject="new", score=2), create_only=True),
                Update(page, set={"text": "edited"}),
                Delete(Thread, {"forum": f, "subject": "old"}),
            ],
        )
    )
    assert result.stored[0] == Thread(forum=f, subject="new", score=2)
    got = await api.run(
        transact_get(
            api.ctx,
            [
                Get(Thread, {"forum": f, "subject": "new"}),
                Get(Page, {"forum": f, "name": "home"}),
                Get(Thread, {"forum": f, "subject": "old"}),
            ],
        )
    )
    assert got == [
        Thread(forum=f, subject="new", score=2),
        Page(forum=f, name="home", text="edited", v=2),
        None,
    ]


async def test_transaction_cancellation_names_the_entity(api: Api) -> None:
    f = fresh_forum()
    page = await api.call("put", Page(forum=f, name="home"))
    stale = page.model_copy(update={"v": 0})
    with pytest.raises(TransactionCanceledError) as caught:
        await api.run(
            transact_write(api.ctx, [Put(Thread(forum=f, subject="x")), ConditionCheck(stale)])
        )
    assert [r.code for r in caught.value.reasons] == ["None", "ConditionalCheckFailed"]
    assert caught.value.failed[0].entity is stale
    assert caught.value.failed[0].item == page
    assert await api.call("get", Thread, forum=f, subject="x", consistent=True) is None


# -- tables and middleware ----------------------------------------------------------------------


async def test_table_create_check_delete(api: Api) -> None:
    table = Table(f"parity_t_{uuid.uuid4().hex[:8]}", "pk", "sk")
    assert await api.call("create_table", table) is True
    report = await api.call("check_table", table)
    assert report.ok, str(report)
    # Idempotent creation: an existing table is left alone and reported as not created.
    assert await api.call("create_table", table, exists_ok=True) is False
    with pytest.raises(DynamoError) as excinfo:
        await api.call("create_table", table)
    assert excinfo.value.code == "ResourceInUseException"
    assert "exists_ok=True" in str(excinfo.value)
    await api.call("delete_table", table)
    # A missing table is drift, not an exception.
    missing = await api.run(table_ops.check_table(api.ctx, table))
    assert not missing.ok
    assert [d.kind for d in missing.drifts] == ["missing"]
    assert table.name in str(missing)
    with pytest.raises(ResourceNotFoundError):
        await api.call("delete_table", table)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def before(self, request: Any) -> None:
        self.seen.append(f"before {request.operation}")

    def after(self, request: Any, response: Any) -> None:
        self.seen.append(f"after {request.operation}")

    def error(self, request: Any, error: BaseException) -> None:
        self.seen.append(f"error {request.operation} {type(error).__name__}")


async def test_middleware_sees_the_same_requests(api: Api) -> None:
    f = fresh_forum()
    recorder = Recorder()
    api.session.add_hook(recorder)
    await api.call("put", Thread(forum=f, subject="a"))
    threads = [Thread(forum=f, subject=f"b{i}") for i in range(30)]
    # One chunk at a time, so the async order is fixed too.
    await api.run(batch_write(api.ctx, threads, concurrency=1))
    with pytest.raises(ConditionFailedError):
        await api.call("put", Thread(forum=f, subject="a"), create_only=True)
    await api.run(transact_get(api.ctx, [Get(Thread, {"forum": f, "subject": "a"})]))
    assert recorder.seen == [
        "before PutItem",
        "after PutItem",
        "before BatchWriteItem",
        "after BatchWriteItem",
        "before BatchWriteItem",
        "after BatchWriteItem",
        "before PutItem",
        "error PutItem ConditionFailedError",
        "before TransactGetItems",
        "after TransactGetItems",
    ]
