"""Item collections as on AWS, locally: the proxy's metrics and limit, over HTTP on each engine.

The proxy counts ``BYTES_PER_GB`` bytes as one GB, so the 10 GB limit is 100 KB here. Every
expectation is worked out from the collection's size as lsiorm's audit measures it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import (
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    Put,
    RetryPolicy,
    Session,
    Table,
    Update,
)
from lsiorm.errors import DynamoError, ItemCollectionSizeLimitError, TransportError
from lsiorm.testing import ItemCollectionProxy

BYTES_PER_GB = 10_000  # 10 GB = 100 KB
LIMIT = 10 * BYTES_PER_GB
BODY = 2_000


def declare(name: str) -> tuple[Table, type[Entity]]:
    table = Table(
        name,
        "PK",
        "SK",
        local_indexes=[
            LocalIndex("ByRank", KeyAttribute("RankKey"), Projection.keys_only()),
            LocalIndex("ByTag", KeyAttribute("TagKey")),
        ],
        collection_warning_gb=8.0,
    )

    class Doc(
        Entity,
        table=table,
        keys={"PK": "BOX#{box}", "SK": "DOC#{n:05d}", "RankKey": "R#{rank:05d}"},
    ):
        box: str
        n: int
        rank: int | None = None
        body: str = ""

    return table, Doc


@pytest.fixture
def proxied(endpoint_url: str, table_name: str) -> Iterator[tuple[Session, Table, Any, Any]]:
    table, doc = declare(table_name)
    with (
        ItemCollectionProxy(endpoint_url, bytes_per_gb=BYTES_PER_GB, idle_timeout=120) as proxy,
        Session(
            endpoint_url=proxy.endpoint_url,
            region_name="us-east-1",
            retry=RetryPolicy(max_attempts=2, initial=0.0, maximum=0.0),
        ) as session,
    ):
        session.create_table(table)
        try:
            yield session, table, doc, proxy
        finally:
            session.delete_table(table)


def measured(session: Session, table: Table, box: str) -> int:
    return session.audit_collection(table, f"BOX#{box}").total_bytes


def test_writes_get_metrics_that_match_the_audit(proxied: Any) -> None:
    session, table, doc, proxy = proxied
    for n in range(5):
        session.put(doc(box="a", n=n, rank=n, body="x" * 300))
        estimate = session.collections.estimate(table, "BOX#a")
        assert estimate is not None
        size = measured(session, table, "a")
        assert estimate.high_gb == pytest.approx(size / BYTES_PER_GB)
    session.update(doc, box="a", n=0, set={"body": "y" * 900})
    after_update = session.collections.estimate(table, "BOX#a")
    assert after_update is not None
    assert after_update.high_gb == pytest.approx(measured(session, table, "a") / BYTES_PER_GB)
    session.delete(doc, box="a", n=1)
    after_delete = session.collections.estimate(table, "BOX#a")
    assert after_delete is not None
    assert after_delete.high_gb == pytest.approx(measured(session, table, "a") / BYTES_PER_GB)
    assert after_delete.high_gb < after_update.high_gb
    assert proxy.stats["metrics"] >= 7


def test_batch_and_transaction_metrics_name_every_collection(proxied: Any) -> None:
    session, table, doc, _ = proxied
    session.batch_write([doc(box=b, n=n, body="z" * 100) for b in "pq" for n in range(3)])
    for box in "pq":
        estimate = session.collections.estimate(table, f"BOX#{box}")
        assert estimate is not None
        assert estimate.high_gb == pytest.approx(measured(session, table, box) / BYTES_PER_GB)
    session.transact_write(
        [Put(doc(box="r", n=1)), Update(doc, {"box": "p", "n": 0}, set={"body": ""})]
    )
    for box in "pr":
        estimate = session.collections.estimate(table, f"BOX#{box}")
        assert estimate is not None
        assert estimate.high_gb == pytest.approx(measured(session, table, box) / BYTES_PER_GB)


def test_the_watcher_warns_once_the_collection_reaches_its_threshold(
    proxied: Any, caplog: pytest.LogCaptureFixture
) -> None:
    session, table, doc, _ = proxied
    threshold = table.collection_warning_gb * BYTES_PER_GB
    caplog.set_level(logging.WARNING, logger="lsiorm.collections")
    n = 0
    while True:
        caplog.clear()
        session.put(doc(box="w", n=n, rank=n, body="b" * BODY))
        n += 1
        size = measured(session, table, "w")
        warned = [r for r in caplog.records if r.name == "lsiorm.collections"]
        if size < threshold:
            assert not warned, f"warned at {size} bytes, below {threshold}"
            continue
        assert len(warned) == 1
        assert warned[0].collection_key == {"PK": {"S": "BOX#w"}}  # type: ignore[attr-defined]
        break
    assert size < LIMIT


def test_a_write_past_the_limit_raises_the_typed_error_and_leaves_nothing(proxied: Any) -> None:
    session, table, doc, proxy = proxied
    caught: ItemCollectionSizeLimitError | None = None
    n = 0
    while n < 200:
        try:
            session.put(doc(box="f", n=n, rank=n, body="c" * BODY))
        except ItemCollectionSizeLimitError as exc:
            caught = exc
            break
        n += 1
    assert caught is not None
    assert caught.collection_key == {"PK": {"S": "BOX#f"}}
    assert caught.table == table.name
    size = measured(session, table, "f")
    assert size <= LIMIT
    assert size + BODY > LIMIT - 3 * BODY  # refused near the limit, not long before
    assert session.get(doc, box="f", n=n) is None  # the refused put was undone
    assert proxy.collection_bytes(table.name, {"PK": {"S": "BOX#f"}}) == size
    # An update that grows the full collection is refused and undone too ...
    with pytest.raises(ItemCollectionSizeLimitError):
        session.update(doc, box="f", n=0, set={"body": "d" * (4 * BODY)})
    stored = session.get(doc, box="f", n=0)
    assert stored is not None
    assert stored.body == "c" * BODY
    # ... a transaction as well (typed through its cancellation reason) ...
    with pytest.raises(ItemCollectionSizeLimitError):
        session.transact_write([Put(doc(box="f", n=999, body="e" * BODY))])
    assert session.get(doc, box="f", n=999) is None
    # ... while deletes relieve it, and other collections are not affected.
    session.delete(doc, box="f", n=0)
    session.delete(doc, box="f", n=1)
    session.put(doc(box="f", n=n, rank=n, body="c" * BODY))
    session.put(doc(box="g", n=0, body="c" * BODY))
    assert measured(session, table, "f") <= LIMIT


def test_tables_without_local_indexes_pass_through(endpoint_url: str, table_name: str) -> None:
    plain = Table(table_name, "PK", "SK")

    class Row(Entity, table=plain, keys={"PK": "R#{r:03d}", "SK": "X"}):
        r: int
        body: str

    with (
        ItemCollectionProxy(endpoint_url, bytes_per_gb=10) as proxy,
        Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1") as session,
    ):
        session.create_table(plain)
        try:
            session.put(Row(r=1, body="x" * 5_000))  # far past the scaled limit: no LSI, no limit
            assert session.get(Row, r=1) is not None
            assert proxy.stats["metrics"] == 0
        finally:
            session.delete_table(plain)


def test_the_proxy_stops_by_itself_when_idle(endpoint_url: str) -> None:
    proxy = ItemCollectionProxy(endpoint_url, idle_timeout=0.3)
    proxy.start()
    import time

    deadline = time.monotonic() + 10
    while proxy.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not proxy.running
    proxy.stop()


def test_a_malformed_write_gets_the_engines_own_answer(proxied: Any) -> None:
    session, table, _, _ = proxied
    with pytest.raises(DynamoError) as caught:
        session.call("PutItem", {"TableName": table.name, "Item": {"PK": {"S": "x"}}})
    assert not isinstance(caught.value, TransportError)  # answered, not a dropped connection


def test_the_async_session_sees_the_same_metrics(endpoint_url: str, table_name: str) -> None:
    import asyncio

    from lsiorm import AsyncSession

    table, doc = declare(table_name)

    async def run(url: str) -> tuple[Any, int]:
        async with AsyncSession(endpoint_url=url, region_name="us-east-1") as session:
            await session.create_table(table)
            try:
                for n in range(3):
                    await session.put(doc(box="z", n=n, rank=n, body="a" * 500))
                size = await session.audit_collection(table, "BOX#z")
                return session.collections.estimate(table, "BOX#z"), size.total_bytes
            finally:
                await session.delete_table(table)

    with ItemCollectionProxy(endpoint_url, bytes_per_gb=BYTES_PER_GB) as proxy:
        estimate, size = asyncio.run(run(proxy.endpoint_url))
    assert estimate is not None
    assert estimate.high_gb == pytest.approx(size / BYTES_PER_GB)
