"""Transport details, on both request lanes (lean and botocore's), sync and async.

Each case goes through the fault proxy (tests/support/faults.py) in front of the engine:

* an answer whose ``x-amz-crc32`` does not match its body is a transport failure on both
  lanes, which lsiorm's retry policy sends again (and `TransportError` once it gives up);
* a gzip-encoded answer is decoded, on both lanes;
* ``account_id_endpoint_mode="required"`` without an account id is refused before anything is
  sent, on both lanes (botocore refuses it; the lean lane leaves such a client to botocore);
* a ``Config(retries=...)`` keeps its mode, botocore makes one attempt per lsiorm attempt,
  and asking botocore for more attempts is refused;
* an `AsyncSession` used without ``async with`` and never closed leaves no open connection
  pool behind (pytest turns the "Unclosed client session" warning into an error).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.config import Config

from lsiorm import AsyncSession, Entity, RetryPolicy, Session, Table, query
from lsiorm._io.lean import lean_lane_for
from lsiorm.errors import (
    ConditionFailedError,
    ConfigurationError,
    InternalServerError,
    TransportError,
)
from support.faults import FaultProxy
from support.models import declare_grouped
from support.tables import created

QUICK = RetryPolicy(max_attempts=3, initial=0.001, maximum=0.002)
LANES = ("lean", "botocore")


@pytest.fixture
def world(dynamodb_client: Any) -> Iterator[tuple[Table, type[Entity]]]:
    table, note = declare_grouped("transport")
    with created(dynamodb_client, table):
        yield table, note


@pytest.fixture
def proxy(endpoint_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(endpoint_url, rate=0.0) as running:
        yield running


def _session(url: str, lane: str, **options: Any) -> Session:
    return Session(endpoint_url=url, region_name="us-east-1", lean=lane == "lean", **options)


def _async_session(url: str, lane: str, **options: Any) -> AsyncSession:
    return AsyncSession(endpoint_url=url, region_name="us-east-1", lean=lane == "lean", **options)


def _lane_used(session: Session | AsyncSession, lane: str) -> None:
    """The requests took the lane the test is about."""
    driver = session.driver.inner  # type: ignore[union-attr]
    if lane == "lean":
        assert driver.lane is not None
        assert driver.lane.sent > 0
    else:
        assert driver.lane is None


class _Errors:
    """Session hook: the errors of failed attempts; stops the faults after the first one."""

    def __init__(self, proxy: FaultProxy | None = None) -> None:
        self.proxy = proxy
        self.errors: list[BaseException] = []

    def error(self, request: Any, error: BaseException) -> None:
        self.errors.append(error)
        if self.proxy is not None:
            self.proxy.rate = 0.0


# -- x-amz-crc32 --------------------------------------------------------------------------------


@pytest.mark.parametrize("lane", LANES)
def test_a_wrong_crc32_is_a_transport_failure_and_is_sent_again(
    proxy: FaultProxy, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    hook = _Errors(proxy)
    with _session(proxy.endpoint_url, lane, hooks=[hook], retry=QUICK) as session:
        session.put(note(group="g", n=1, body="a"))
        proxy.kinds, proxy.rate = ("bad-crc32",), 1.0
        before = proxy.stats["requests"]
        assert session.get(note, group="g", n=1) == note(group="g", n=1, body="a")
        assert proxy.stats["requests"] - before == 2  # the damaged answer, then the resend
        assert [type(e) for e in hook.errors] == [TransportError]
        assert "x-amz-crc32" in str(hook.errors[0])
        # Every answer damaged: the policy gives up with a TransportError.
        proxy.rate, hook.proxy = 1.0, None
        with pytest.raises(TransportError):
            session.all(query(note).where(group="g"))
        _lane_used(session, lane)


@pytest.mark.parametrize("lane", LANES)
async def test_a_wrong_crc32_is_sent_again_by_the_async_session(
    proxy: FaultProxy, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    hook = _Errors(proxy)
    async with _async_session(proxy.endpoint_url, lane, hooks=[hook], retry=QUICK) as session:
        await session.put(note(group="g", n=1, body="a"))
        proxy.kinds, proxy.rate = ("bad-crc32",), 1.0
        assert await session.get(note, group="g", n=1) == note(group="g", n=1, body="a")
        assert [type(e) for e in hook.errors] == [TransportError]
        _lane_used(session, lane)


# -- gzip ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("lane", LANES)
def test_a_gzip_answer_is_decoded(
    proxy: FaultProxy, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    proxy.kinds, proxy.rate = ("gzip",), 1.0
    with _session(proxy.endpoint_url, lane, retry=QUICK) as session:
        notes = [note(group="g", n=n, body="é" * n) for n in range(5)]
        session.batch_write(notes)
        assert session.all(query(note).where(group="g")) == notes
        assert session.get(note, group="g", n=3) == notes[3]
        # An error answer is decoded too, and typed as usual.
        with pytest.raises(ConditionFailedError):
            session.put(notes[0], create_only=True)
        _lane_used(session, lane)
    assert proxy.stats["gzip"] >= 4


@pytest.mark.parametrize("lane", LANES)
async def test_a_gzip_answer_is_decoded_by_the_async_session(
    proxy: FaultProxy, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    proxy.kinds, proxy.rate = ("gzip",), 1.0
    async with _async_session(proxy.endpoint_url, lane, retry=QUICK) as session:
        await session.put(note(group="g", n=1, body="b"))
        assert await session.all(query(note).where(group="g")) == [note(group="g", n=1, body="b")]
        _lane_used(session, lane)


# -- account_id_endpoint_mode -------------------------------------------------------------------


@pytest.mark.parametrize("lane", LANES)
def test_a_required_account_id_that_is_missing_is_refused_before_sending(lane: str) -> None:
    _, note = declare_grouped("transport")
    config = Config(account_id_endpoint_mode="required")
    # DynamoDB's own endpoint: botocore refuses to resolve it without an account id.
    with Session(region_name="us-east-1", lean=lane == "lean", config=config) as session:
        assert lean_lane_for(session.client) is None
        with pytest.raises(ConfigurationError) as refused:
            session.get(note, group="g", n=1)
        assert refused.value.rule == "config.endpoint"
        assert session.driver.inner.lane is None  # type: ignore[attr-defined]


async def test_a_required_account_id_is_refused_by_the_async_session() -> None:
    _, note = declare_grouped("transport")
    config = Config(account_id_endpoint_mode="required")
    async with AsyncSession(region_name="us-east-1", config=config) as session:
        with pytest.raises(ConfigurationError) as refused:
            await session.get(note, group="g", n=1)
        assert refused.value.rule == "config.endpoint"


# -- Config(retries=...) ------------------------------------------------------------------------


@pytest.mark.parametrize("lane", LANES)
def test_a_retries_config_keeps_its_mode_with_one_botocore_attempt(
    proxy: FaultProxy, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    for mode in ("standard", "adaptive", "legacy"):
        config = Config(retries={"mode": mode}, connect_timeout=5)
        with _session(proxy.endpoint_url, lane, retry=QUICK, config=config) as session:
            assert session.client.meta.config.retries == {"mode": mode, "total_max_attempts": 1}
            assert session.client.meta.config.connect_timeout == 5
            proxy.kinds, proxy.rate = ("error500",), 1.0
            before = proxy.stats["requests"]
            with pytest.raises(InternalServerError):
                session.get(note, group="g", n=1)
            # lsiorm's three attempts, one request each: botocore retried none of them.
            assert proxy.stats["requests"] - before == QUICK.max_attempts
            proxy.rate = 0.0
            session.put(note(group="g", n=1))
            if mode == "adaptive" or lane == "botocore":
                assert session.driver.inner.lane is None  # type: ignore[attr-defined]
            else:
                _lane_used(session, lane)


@pytest.mark.parametrize(
    "retries", [{"total_max_attempts": 3}, {"max_attempts": 2, "mode": "adaptive"}]
)
def test_asking_botocore_for_more_attempts_is_refused(retries: dict[str, Any]) -> None:
    for factory in (Session, AsyncSession):
        with pytest.raises(ConfigurationError) as refused:
            factory(endpoint_url="http://127.0.0.1:9", config=Config(retries=retries))
        assert refused.value.rule == "config.botocore-retries"
        assert "RetryPolicy" in str(refused.value)


# -- AsyncSession without async with ------------------------------------------------------------


@pytest.mark.parametrize("lane", LANES)
async def test_an_async_session_never_closed_leaves_no_open_pool(
    endpoint_url: str, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world
    session = _async_session(endpoint_url, lane)
    await session.put(note(group="g", n=1))
    assert await session.get(note, group="g", n=1) == note(group="g", n=1)
    _lane_used(session, lane)
    del session
    gc.collect()  # its client is closed on the loop, not left to warn
    await asyncio.sleep(0.05)


@pytest.mark.parametrize("lane", LANES)
def test_an_async_session_alive_when_its_loop_ends_is_closed_with_it(
    endpoint_url: str, world: tuple[Table, type[Any]], lane: str
) -> None:
    _, note = world

    async def main() -> AsyncSession:
        session = _async_session(endpoint_url, lane)
        await session.put(note(group="g", n=2))
        return session

    kept = asyncio.run(main())
    assert kept.client is None  # closed by the loop's shutdown; the next call opens another
    assert asyncio.run(kept.get(note, group="g", n=2)) == note(group="g", n=2)
    assert kept.client is None
    gc.collect()
