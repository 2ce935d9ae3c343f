"""Routing per call: another client, endpoint or region for one call or a block; every call's
timeout=; an async write cancelled mid-flight, on the engines."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator

import boto3
import pytest

from lsiorm import AsyncSession, Entity, RetryPolicy, Session, Table
from lsiorm.errors import CallTimeoutError, OutcomeUnknownError, ResourceNotFoundError
from lsiorm.testing import created_tables
from support.faults import FaultProxy

table = Table(f"routing_{uuid.uuid4().hex[:8]}", "PK", "SK")


class Note(Entity, table=table, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str
    text: str = ""


@pytest.fixture(scope="module")
def created(endpoint_url: str) -> Iterator[str]:
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1") as session,
        created_tables(session, table),
    ):
        yield endpoint_url


def _other(backend: str) -> str:
    return "dynamodb-local" if backend == "moto" else "moto"


def test_a_call_goes_to_another_endpoint_and_back(
    created: str, backend: str, lsiorm_endpoints: Callable[[str], str]
) -> None:
    other_url = lsiorm_endpoints(_other(backend))
    sent: list[str] = []

    class Seen:
        def before(self, request: object) -> None:
            sent.append(getattr(request, "operation", ""))

    with Session(endpoint_url=created, region_name="us-east-1", hooks=[Seen()]) as session:
        other = session.using(endpoint_url=other_url)
        assert session.using(endpoint_url=other_url) is other, "one client per endpoint"
        with created_tables(other, table):
            other.put(Note(name="there", text="on the other engine"))
            assert session.get(Note, name="there") is None
            assert other.get(Note, name="there") == Note(name="there", text="on the other engine")
            session.put(Note(name="here"))
            assert other.get(Note, name="here") is None
        assert "PutItem" in sent, "the routed session shares this one's hooks"
    assert other.client is not session.client


def test_a_block_uses_a_client_of_its_own_and_leaves_it_open(
    created: str, backend: str, lsiorm_endpoints: Callable[[str], str]
) -> None:
    other_url = lsiorm_endpoints(_other(backend))
    client = boto3.client("dynamodb", endpoint_url=other_url, region_name="us-east-1")
    with Session(endpoint_url=created, region_name="us-east-1") as session:
        with session.using(client) as other, created_tables(other, table):
            other.put(Note(name="block"))
            assert other.get(Note, name="block") is not None
        assert session.get(Note, name="block") is None
    client.describe_limits()  # the client given is still open


def test_a_call_goes_to_another_region(created: str, backend: str) -> None:
    with Session(endpoint_url=created, region_name="us-east-1") as session:
        replica = session.using(region_name="eu-west-1")
        assert replica.client.meta.region_name == "eu-west-1"
        assert session.client.meta.region_name == "us-east-1"
        if backend == "moto":  # moto keeps each region apart (DynamoDB Local runs -sharedDb)
            with pytest.raises(ResourceNotFoundError):
                replica.get(Note, name="x")
            with created_tables(replica, table):
                replica.put(Note(name="eu"))
                assert replica.get(Note, name="eu") is not None
                assert session.get(Note, name="eu") is None


async def test_an_async_call_goes_to_another_endpoint(
    created: str, backend: str, lsiorm_endpoints: Callable[[str], str]
) -> None:
    other_url = lsiorm_endpoints(_other(backend))
    async with AsyncSession(endpoint_url=created, region_name="us-east-1") as session:
        other = session.using(endpoint_url=other_url)
        await other.create_table(table)
        try:
            await other.put(Note(name="async-there"))
            assert await session.get(Note, name="async-there") is None
            assert await other.get(Note, name="async-there") is not None
        finally:
            await other.delete_table(table)
    assert other.client is None, "closing the session closed the client it opened"


# -- timeout= -----------------------------------------------------------------------------------


@pytest.fixture
def slow(created: str) -> Iterator[FaultProxy]:
    """The engine behind a proxy that holds each answer back for a second (applied before)."""
    with FaultProxy(created, answer_latency=1.0) as proxy:
        yield proxy


def test_a_read_past_its_timeout_raises_a_timeout_error(slow: FaultProxy) -> None:
    with Session(endpoint_url=slow.endpoint_url, region_name="us-east-1") as session:
        started = time.monotonic()
        with pytest.raises(CallTimeoutError) as caught:
            session.get(Note, name="x", timeout=0.3)
        assert time.monotonic() - started < 0.9, "the lean lane stopped waiting at the deadline"
        assert caught.value.operation == "GetItem"


def test_a_write_past_its_timeout_is_unknown_and_was_applied(
    slow: FaultProxy, created: str
) -> None:
    name = uuid.uuid4().hex[:8]
    with Session(endpoint_url=slow.endpoint_url, region_name="us-east-1") as session:
        with pytest.raises(OutcomeUnknownError) as caught:
            session.put(Note(name=name), timeout=0.3)
        assert "was sent and its answer not received" in str(caught.value)
    with Session(endpoint_url=created, region_name="us-east-1") as direct:
        assert direct.get(Note, name=name, consistent=True) == Note(name=name)


async def test_an_async_call_past_its_timeout(slow: FaultProxy, created: str) -> None:
    name = uuid.uuid4().hex[:8]
    async with AsyncSession(endpoint_url=slow.endpoint_url, region_name="us-east-1") as session:
        started = time.monotonic()
        with pytest.raises(CallTimeoutError):
            await session.get(Note, name=name, timeout=0.3)
        assert time.monotonic() - started < 0.9
        with pytest.raises(OutcomeUnknownError):
            await session.put(Note(name=name), timeout=0.3)
    await asyncio.sleep(1.0)  # the proxy still holds the late answer
    async with AsyncSession(endpoint_url=created, region_name="us-east-1") as direct:
        assert await direct.get(Note, name=name, consistent=True) is not None


def test_a_call_within_its_timeout_is_untouched(created: str) -> None:
    with Session(endpoint_url=created, region_name="us-east-1") as session:
        note = session.put(Note(name="quick"), timeout=10)
        assert session.get(Note, name="quick", timeout=10) == note


# -- cancellation ---------------------------------------------------------------------------------


async def test_an_async_put_cancelled_at_each_point_reports_what_the_engine_holds(
    created: str,
) -> None:
    outcomes: set[str] = set()
    async with (
        AsyncSession(
            endpoint_url=created, region_name="us-east-1", retry=RetryPolicy(max_attempts=1)
        ) as session,
        AsyncSession(endpoint_url=created, region_name="us-east-1") as direct,
    ):
        for turn in range(0, 400, 3):
            name = uuid.uuid4().hex[:10]
            task = asyncio.ensure_future(session.put(Note(name=name)))
            for _ in range(turn):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
                outcome = "done"
            except asyncio.CancelledError:
                outcome = "cancelled"
            except OutcomeUnknownError:
                outcome = "unknown"
            outcomes.add(outcome)
            await asyncio.sleep(0.05)  # a write cut in flight lands (or not) by now
            stored = await direct.get(Note, name=name, consistent=True)
            if outcome == "cancelled":
                assert stored is None, f"turn {turn}: a clean cancel, yet the item was written"
            if outcome == "done":
                assert stored is not None
                break
    assert "cancelled" in outcomes
    assert "unknown" in outcomes or "done" in outcomes
