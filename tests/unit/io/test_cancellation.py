"""An async call cancelled at every await point of a write reports what is known: a clean
``CancelledError`` before its request was handed to the client, `OutcomeUnknownError` after.

The client below stands in for aiobotocore: each request awaits ``before`` times on its way to
the engine (where it is applied), then ``after`` times on the answer's way back. The test
cancels the call after 0, 1, 2, ... turns of the event loop, until one call completes, so every
await point of the driver and of the client is met once.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from botocore.exceptions import ConnectionClosedError

from lsiorm import AsyncSession, Entity, RetryPolicy, Table
from lsiorm.errors import OutcomeUnknownError
from support.fakes import client_error

table = Table(f"Cancel{uuid.uuid4().hex[:6]}", "PK", "SK")


class Note(Entity, table=table, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str


class Engine:
    """A client whose requests take turns of the event loop, applied halfway."""

    def __init__(self, before: int = 3, after: int = 3, fail: list[Any] | None = None) -> None:
        self.before = before
        self.after = after
        self.fail = list(fail or [])
        self.received: list[str] = []
        self.refused: list[str] = []
        self.applied: list[str] = []

    async def _request(self, operation: str) -> dict[str, Any]:
        self.received.append(operation)
        for _ in range(self.before):
            await asyncio.sleep(0)
        failure = self.fail.pop(0) if self.fail else None
        if failure == "throttle":
            self.refused.append(operation)
            raise client_error("ThrottlingException", operation=operation)
        self.applied.append(operation)
        for _ in range(self.after):
            await asyncio.sleep(0)
        if failure == "lost":
            raise ConnectionClosedError(endpoint_url="http://engine.invalid")
        return {}

    async def put_item(self, **params: Any) -> dict[str, Any]:
        return await self._request("PutItem")

    async def get_item(self, **params: Any) -> dict[str, Any]:
        return await self._request("GetItem")


async def _cancelled_at_every_turn(make: Any, call: Any) -> list[tuple[int, str, Engine]]:
    """Run ``call(session)`` cancelled after 0, 1, 2... turns; (turn, outcome, engine) each."""
    outcomes: list[tuple[int, str, Engine]] = []
    for turn in range(200):
        engine = make()
        session = AsyncSession(
            engine, retry=RetryPolicy(initial=0.001, maximum=0.001), telemetry=False
        )
        task = asyncio.ensure_future(call(session))
        for _ in range(turn):
            await asyncio.sleep(0)
        if task.done():
            task.result()
            outcomes.append((turn, "done", engine))
            return outcomes
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            outcomes.append((turn, "cancelled", engine))
        except OutcomeUnknownError as exc:
            cause = exc.__cause__
            outcomes.append((turn, "unknown", engine))
            if not isinstance(cause, asyncio.CancelledError):
                raise AssertionError(f"turn {turn}: caused by {cause!r}") from exc
        else:
            outcomes.append((turn, "done", engine))
            return outcomes
    raise AssertionError("the call never completed")


def _truthful(outcomes: list[tuple[int, str, Engine]], write: str = "PutItem") -> None:
    seen = {outcome for _, outcome, _ in outcomes}
    assert seen == {"cancelled", "unknown", "done"}, outcomes
    for turn, outcome, engine in outcomes:
        # Handed over and not refused by the engine: applied, or may be.
        sent = engine.received.count(write) > engine.refused.count(write)
        if outcome == "cancelled":
            assert not sent, f"turn {turn}: a clean cancel after the write was handed over"
            assert write not in engine.applied
        elif outcome == "unknown":
            assert sent, f"turn {turn}: unknown, though nothing was sent or all was refused"
        else:
            assert write in engine.applied


async def test_a_put_cancelled_at_each_await_point() -> None:
    outcomes = await _cancelled_at_every_turn(Engine, lambda s: s.put(Note(name="a")))
    _truthful(outcomes)
    # Turns before the request reached the client cancel cleanly; once it did, never again.
    kinds = [outcome for _, outcome, _ in outcomes]
    first_unknown = kinds.index("unknown")
    assert all(k == "cancelled" for k in kinds[:first_unknown])
    assert all(k in ("unknown", "done") for k in kinds[first_unknown:])


async def test_a_throttled_put_cancelled_in_its_backoff_applied_nothing() -> None:
    def make() -> Engine:
        return Engine(fail=["throttle"])

    outcomes = await _cancelled_at_every_turn(make, lambda s: s.put(Note(name="a")))
    _truthful(outcomes)
    refused = [
        outcome
        for _, outcome, engine in outcomes
        if engine.received == ["PutItem"] and not engine.applied and outcome != "done"
    ]
    # While the first attempt is refused and the retry not yet sent: in flight (unknown) only
    # until DynamoDB's refusal arrives; after it, in the backoff sleep, a clean cancel.
    assert "cancelled" in refused


async def test_a_put_whose_answer_was_lost_stays_unknown_through_its_backoff() -> None:
    def make() -> Engine:
        return Engine(fail=["lost"])

    outcomes = await _cancelled_at_every_turn(make, lambda s: s.put(Note(name="a")))
    _truthful(outcomes)
    for _, outcome, engine in outcomes:
        if engine.applied:
            assert outcome in ("unknown", "done"), "an applied write never cancels cleanly"


async def test_a_cancelled_read_is_a_plain_cancel() -> None:
    def make() -> Engine:
        return Engine()

    outcomes = await _cancelled_at_every_turn(make, lambda s: s.get(Note, name="a", required=False))
    kinds = {outcome for _, outcome, _ in outcomes[:-1]}
    assert kinds == {"cancelled"}


def test_the_engine_double_counts_as_sent_when_its_method_is_called() -> None:
    engine = Engine(before=0, after=0)
    asyncio.run(engine.put_item())
    assert engine.received == engine.applied == ["PutItem"]


@pytest.fixture(autouse=True)
def _quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("CRITICAL")
