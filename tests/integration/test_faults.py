"""Faults, proven: batch writes, batch gets and transactions through a fault-injecting proxy.

The proxy (tests/support/faults.py) sits on loopback in front of the engine and answers a share of
requests with throttling, a 500, a dropped connection, a response lost after the write was
applied, or a partial UnprocessedItems / UnprocessedKeys answer. Afterwards the table is read
directly from the engine, not through the proxy. A single lost answer is lsiorm's public fault
injection (lsiorm.testing.FaultInjector).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lsiorm import AsyncSession, RetryPolicy, Session, Table
from lsiorm._ops.batch import batch_get, batch_write
from lsiorm._ops.transactions import transact_write
from lsiorm._requests.transactions import Put, Update
from lsiorm.errors import BatchWriteIncompleteError
from lsiorm.testing import FaultInjector
from support.faults import ErrorLog, FaultProxy
from support.models import declare_grouped
from support.tables import created

# Enough attempts that 30% faults never exhaust them (0.3**25 per chunk), small sleeps.
PATIENT = RetryPolicy(max_attempts=25, max_delay=60.0, initial=0.01, maximum=0.25)
# Gives up quickly: for the 100% runs.
IMPATIENT = RetryPolicy(max_attempts=4, max_delay=5.0, initial=0.001, maximum=0.005)
ALL_KINDS = ("throttle", "error500", "drop", "lost-response", "partial")
# No lost-response here: a write applied before its connection dropped cannot be known as done,
# so "exactly the items not written" is only provable without it.
KNOWABLE_KINDS = ("throttle", "error500", "drop", "partial")
MAX_PAGES = 1000
TIME_LIMIT = 120.0


def make_items(cls: type[Any], count: int) -> list[Any]:
    return [cls(group=str(i % 97), n=i, body=f"body-{i}") for i in range(count)]


def stored_keys(client: Any, table: Table) -> list[tuple[str, str, int, str]]:
    """Every item in the table as (pk, sk, n, body), read straight from the engine."""
    out: list[tuple[str, str, int, str]] = []
    kwargs: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    for _ in range(MAX_PAGES):
        page = client.scan(**kwargs)
        out += [
            (i["pk"]["S"], i["sk"]["S"], int(i["n"]["N"]), i["body"]["S"]) for i in page["Items"]
        ]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    raise AssertionError(f"scan did not finish within {MAX_PAGES} pages")


def expected_keys(items: list[Any]) -> list[tuple[str, str, int, str]]:
    return sorted((i.to_wire()["pk"]["S"], i.to_wire()["sk"]["S"], i.n, i.body) for i in items)


@dataclass(frozen=True)
class Fresh:
    """A table created for one test, its entity, and the engine's own client to read it back."""

    table: Table
    cls: type[Any]
    client: Any

    def stored(self) -> list[tuple[str, str, int, str]]:
        """Every item in the table as (pk, sk, n, body), read straight from the engine."""
        return stored_keys(self.client, self.table)


@pytest.fixture
def fresh(endpoint_url: str, dynamodb_client: Any) -> Iterator[Fresh]:
    table, cls = declare_grouped("faults")  # a fresh table per test: runs never meet
    with created(dynamodb_client, table):
        yield Fresh(table, cls, dynamodb_client)


def proxy_for(endpoint_url: str, rate: float, kinds: tuple[str, ...]) -> FaultProxy:
    return FaultProxy(endpoint_url, rate=rate, kinds=kinds, seed=7)


async def run_batch_write(mode: str, url: str, policy: RetryPolicy, items: list[Any]) -> Any:
    """Run one batch write through a sync or an async session, bounded in time."""
    if mode == "sync":
        with Session(endpoint_url=url, region_name="us-east-1", retry=policy) as session:
            return session.run(batch_write(session.ctx, items))
    async with AsyncSession(endpoint_url=url, region_name="us-east-1", retry=policy) as session:
        return await asyncio.wait_for(session.run(batch_write(session.ctx, items)), TIME_LIMIT)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_ten_thousand_items_survive_30_percent_faults(
    mode: str, backend: str, endpoint_url: str, fresh: Fresh
) -> None:
    cls = fresh.cls
    # moto serves from a thread of this process, so it competes with the client for the GIL and
    # slows down as other tests fill it; it proves the same thing with fewer items.
    count = 2_000 if backend == "moto" else 10_000
    items = make_items(cls, count)
    started = time.monotonic()
    with proxy_for(endpoint_url, 0.3, ALL_KINDS) as proxy:
        result = await run_batch_write(mode, proxy.endpoint_url, PATIENT, items)
        stats = dict(proxy.stats)
    elapsed = time.monotonic() - started
    assert elapsed < TIME_LIMIT
    assert result.written == count
    stored = fresh.stored()
    assert len(stored) == count
    assert sorted(stored) == expected_keys(items)
    # The faults really happened, every kind of them, at about the share asked for.
    assert all(stats.get(kind, 0) > 0 for kind in ALL_KINDS), stats
    assert 0.2 < stats["faults"] / stats["requests"] < 0.4, stats
    assert stats["deferred"] > 0
    assert stats.get("upstream-errors", 0) == 0
    assert result.calls == stats["requests"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_at_100_percent_faults_the_error_lists_exactly_what_is_missing(
    mode: str, endpoint_url: str, fresh: Fresh
) -> None:
    items = make_items(fresh.cls, 300)
    with proxy_for(endpoint_url, 1.0, KNOWABLE_KINDS) as proxy:
        with pytest.raises(BatchWriteIncompleteError) as caught:
            await run_batch_write(mode, proxy.endpoint_url, IMPATIENT, items)
        stats = dict(proxy.stats)
    missing = caught.value.unprocessed
    stored = fresh.stored()
    written = {(pk, sk) for pk, sk, _, _ in stored}
    assert all(any(m is i for i in items) for m in missing), "the caller's own objects"
    assert {(m.to_wire()["pk"]["S"], m.to_wire()["sk"]["S"]) for m in missing} == {
        (i.to_wire()["pk"]["S"], i.to_wire()["sk"]["S"]) for i in items
    } - written
    assert len(missing) + len(stored) == len(items)
    assert missing, "the rest is reported"
    assert stored, "partial answers wrote some items"
    assert caught.value.cause_code
    # Every chunk stopped at the policy's bound.
    chunks = -(-len(items) // 25)
    assert stats["requests"] <= chunks * IMPATIENT.max_attempts
    assert stats["faults"] == stats["requests"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_batch_get_survives_faults(
    direct: Session, mode: str, endpoint_url: str, fresh: Fresh
) -> None:
    cls = fresh.cls
    items = make_items(cls, 450)
    direct.run(batch_write(direct.ctx, items))
    keys = [{"group": str(n % 97), "n": n} for n in range(500)]  # 450..499 are absent
    with proxy_for(endpoint_url, 0.3, ALL_KINDS) as proxy:
        url = proxy.endpoint_url
        if mode == "sync":
            with Session(endpoint_url=url, region_name="us-east-1", retry=PATIENT) as session:
                found = session.run(batch_get(session.ctx, cls, keys, consistent=True))
        else:
            async with AsyncSession(endpoint_url=url, region_name="us-east-1", retry=PATIENT) as s:
                found = await asyncio.wait_for(
                    s.run(batch_get(s.ctx, cls, keys, consistent=True)), TIME_LIMIT
                )
        stats = dict(proxy.stats)
    assert found == items
    assert stats["faults"] > 0
    assert stats["partial"] > 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_transaction_whose_answer_was_lost_applies_once(
    direct: Session, mode: str, backend: str, endpoint_url: str, fresh: Fresh
) -> None:
    if backend == "moto":
        pytest.skip("moto ignores ClientRequestToken, so a re-sent transaction applies twice")
    cls = fresh.cls
    direct.put(cls(group="1", n=1, body="x"))
    actions = [
        Update(cls, {"group": "1", "n": 1}, add={"hits": 1}),
        Put(cls(group="1", n=2, body="new"), create_only=True),
    ]
    hook = ErrorLog()
    with FaultInjector() as faults:  # lsiorm's public fault injection: applied, answer lost
        faults.lose_answer("TransactWriteItems")
        if mode == "sync":
            with Session(endpoint_url=endpoint_url, hooks=[hook]) as session:
                session.run(transact_write(session.ctx, actions))
        else:
            async with AsyncSession(endpoint_url=endpoint_url, hooks=[hook]) as s:
                await s.run(transact_write(s.ctx, actions))
        stats = dict(faults.stats)
    assert stats["lost-answer"] == 1
    assert stats["forwarded"] == 2  # applied, answer lost; re-sent with the same token
    assert len(hook.errors) == 1
    assert direct.get(cls, group="1", n=1, consistent=True) == cls(group="1", n=1, body="x", hits=1)
    assert direct.get(cls, group="1", n=2, consistent=True) == cls(group="1", n=2, body="new")
