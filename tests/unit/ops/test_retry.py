"""Retries: what is retried, how often, how long, through both drivers and real botocore clients."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import (
    AsyncSession,
    Entity,
    RetryPolicy,
    Session,
    Table,
)
from lsiorm._ops.retry import is_retryable, run_with_retries
from lsiorm._ops.service_errors import from_error_response
from lsiorm._ops.steps import Done, Operation, Sleep, advance
from lsiorm.errors import (
    ConditionFailedError,
    DynamoError,
    InternalServerError,
    ItemCollectionSizeLimitError,
    ResourceNotFoundError,
    ServiceValidationError,
    ThrottledError,
    TransactionCanceledError,
    TransactionConflictError,
    TransportError,
)
from support.fakes import AsyncScriptedClient, ScriptedClient
from support.faults import FaultProxy
from support.models import Thread

table = Table("retry_tests", "pk", "sk")


class Note(Entity, table=table, keys={"pk": "N#{name}", "sk": "N"}):
    name: str
    text: str = ""


FAST = RetryPolicy(max_attempts=5, max_delay=10.0, initial=0.001, maximum=0.004)

RETRIED = {
    "ProvisionedThroughputExceededException": (400, ThrottledError),
    "ThrottlingException": (400, ThrottledError),
    "RequestLimitExceeded": (400, ThrottledError),
    "InternalServerError": (500, InternalServerError),
    "InternalFailure": (500, InternalServerError),
    "ServiceUnavailable": (503, InternalServerError),
    "TransactionConflictException": (400, TransactionConflictError),
    "SomeFutureServerFault": (502, InternalServerError),
}
NEVER_RETRIED = {
    "ValidationException": (400, ServiceValidationError),
    "ConditionalCheckFailedException": (400, ConditionFailedError),
    "ItemCollectionSizeLimitExceededException": (400, ItemCollectionSizeLimitError),
    "TransactionCanceledException": (400, TransactionCanceledError),
    "ResourceNotFoundException": (400, ResourceNotFoundError),
    "ResourceNotFound": (400, ResourceNotFoundError),  # moto, on the time-to-live calls
    "AccessDeniedException": (400, DynamoError),
    "IdempotentParameterMismatchException": (400, DynamoError),
}


def client_error(code: str, status: int = 400, operation: str = "PutItem") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} (fake)"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


_real_sleep = asyncio.sleep  # the harness replaces asyncio.sleep to record the driver's sleeps


class Harness:
    """Runs one put through a session over a fake client, with its driver's sleeps recorded."""

    def __init__(self, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kind = kind
        self.sleeps: list[float] = []
        self.client: ScriptedClient | None = None
        if kind == "sync":
            monkeypatch.setattr(time, "sleep", self.sleeps.append)
        else:

            async def sleep(seconds: float, result: Any = None) -> Any:
                self.sleeps.append(seconds)
                return await _real_sleep(0, result)

            monkeypatch.setattr(asyncio, "sleep", sleep)

    async def put(
        self,
        script: list[Any],
        policy: RetryPolicy = FAST,
        then: Any = None,
        entity: Entity | None = None,
    ) -> Any:
        entity = entity if entity is not None else Note(name="a")
        if self.kind == "sync":
            self.client = ScriptedClient(script, {} if then is None else then)
            return Session(client=self.client, retry=policy).put(entity)
        self.client = AsyncScriptedClient(script, {} if then is None else then)
        return await AsyncSession(client=self.client, retry=policy).put(entity)

    @property
    def attempts(self) -> int:
        assert self.client is not None
        return len(self.client.calls)


@pytest.fixture(params=["sync", "async"])
def harness(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Harness:
    return Harness(request.param, monkeypatch)


# -- the mapping --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [*RETRIED, *NEVER_RETRIED])
def test_error_codes_map_to_typed_errors(code: str) -> None:
    status, expected = {**RETRIED, **NEVER_RETRIED}[code]
    error = from_error_response(client_error(code, status).response, "PutItem", {"TableName": "t"})
    assert type(error) is expected
    assert error.code == code
    assert is_retryable(error) is (code in RETRIED)


def test_unknown_client_errors_are_not_retried() -> None:
    error = from_error_response(client_error("BrandNewException", 400).response, "PutItem", {})
    assert type(error) is DynamoError
    assert not is_retryable(error)


# -- through both drivers -----------------------------------------------------------------------


@pytest.mark.parametrize("code", list(RETRIED))
async def test_retryable_errors_are_retried_then_succeed(harness: Harness, code: str) -> None:
    status, _ = RETRIED[code]
    stored = await harness.put([client_error(code, status), client_error(code, status), {}])
    assert stored == Note(name="a")
    assert harness.attempts == 3
    assert len(harness.sleeps) == 2
    # Full jitter: the n-th sleep is drawn below initial * 2**n, capped by maximum.
    for n, seconds in enumerate(harness.sleeps):
        assert 0 <= seconds <= min(FAST.initial * 2**n, FAST.maximum)


@pytest.mark.parametrize("code", list(NEVER_RETRIED))
async def test_other_errors_are_never_retried(harness: Harness, code: str) -> None:
    status, expected = NEVER_RETRIED[code]
    with pytest.raises(expected) as caught:
        await harness.put([client_error(code, status), {}])
    assert caught.value.code == code
    assert harness.attempts == 1
    assert harness.sleeps == []


def _transport_failures(kind: str) -> list[BaseException]:
    failures: list[BaseException] = [
        ConnectionClosedError(endpoint_url="http://127.0.0.1:1"),
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
        ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
    ]
    if kind == "async":
        failures += [aiohttp.ServerDisconnectedError(), asyncio.TimeoutError()]
    return failures


async def test_transport_failures_are_retried(harness: Harness) -> None:
    failures = _transport_failures(harness.kind)
    policy = RetryPolicy(max_attempts=len(failures) + 1, initial=0.001, maximum=0.001)
    await harness.put([*failures, {}], policy)
    assert harness.attempts == len(failures) + 1
    assert len(harness.sleeps) == len(failures)


async def test_a_full_item_collection_names_its_key_and_is_not_retried(harness: Harness) -> None:
    error = client_error("ItemCollectionSizeLimitExceededException")
    with pytest.raises(ItemCollectionSizeLimitError) as caught:  # the forum's table has an LSI
        await harness.put([error], entity=Thread(forum="g", subject="n"))
    assert caught.value.collection_key == {"ForumName": {"S": "g"}}
    assert caught.value.table == "Thread"
    assert harness.attempts == 1


async def test_attempts_are_bounded(harness: Harness) -> None:
    with pytest.raises(ThrottledError):
        await harness.put([], then=client_error("ThrottlingException"))
    assert harness.attempts == FAST.max_attempts
    assert len(harness.sleeps) == FAST.max_attempts - 1


async def test_a_transport_failure_ends_as_a_typed_error(harness: Harness) -> None:
    with pytest.raises(TransportError):
        await harness.put([], then=ConnectionClosedError(endpoint_url="http://127.0.0.1:1"))
    assert harness.attempts == FAST.max_attempts


@settings(max_examples=60, deadline=None)
@given(
    failures=st.integers(min_value=0, max_value=12),
    max_attempts=st.integers(min_value=1, max_value=8),
    initial=st.sampled_from([0.0, 0.001, 0.01]),
    maximum=st.sampled_from([0.002, 0.02]),
)
def test_attempts_and_sleeps_follow_the_policy(
    failures: int, max_attempts: int, initial: float, maximum: float
) -> None:
    policy = RetryPolicy(
        max_attempts=max_attempts, max_delay=60.0, initial=initial, maximum=maximum
    )
    script: list[Any] = [client_error("ProvisionedThroughputExceededException")] * failures
    client = ScriptedClient([*script, {}], {})
    sleeps: list[float] = []
    original = time.sleep
    time.sleep = sleeps.append  # type: ignore[assignment]
    try:
        session = Session(client=client, retry=policy)
        if failures < max_attempts:
            session.put(Note(name="p"))
        else:
            with pytest.raises(ThrottledError):
                session.put(Note(name="p"))
    finally:
        time.sleep = original  # type: ignore[assignment]
    assert len(client.calls) == min(failures + 1, max_attempts)
    assert len(sleeps) == len(client.calls) - 1
    assert all(0 <= s <= min(initial * 2**n, maximum) for n, s in enumerate(sleeps))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize("repeat", range(20))
def test_no_attempt_starts_after_max_delay(monkeypatch: pytest.MonkeyPatch, repeat: int) -> None:
    # Jitter is random: repeating makes a late attempt show up if the stop rule allows one.
    clock = FakeClock()
    monkeypatch.setattr(time, "monotonic", clock.monotonic)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    policy = RetryPolicy(max_attempts=10_000, max_delay=1.0, initial=0.05, maximum=0.3)
    client = ScriptedClient([], then=client_error("ThrottlingException"), clock=clock.monotonic)
    start = clock.now
    with pytest.raises(ThrottledError):
        Session(client=client, retry=policy).put(Note(name="t"))
    assert len(client.calls) > 3
    assert all(t - start < policy.max_delay for t in client.started)
    assert clock.now - start < policy.max_delay


# -- botocore's own retries stay off ------------------------------------------------------------


@pytest.fixture
def failing_proxy() -> Iterator[FaultProxy]:
    """A proxy that answers every request itself (nothing listens upstream)."""
    with FaultProxy("http://127.0.0.1:9", rate=1.0, kinds=("error500",)) as proxy:
        yield proxy


@pytest.mark.parametrize(
    ("kind", "code", "expected"),
    [
        ("error500", "", InternalServerError),
        ("throttle", "ProvisionedThroughputExceededException", ThrottledError),
        ("throttle", "ThrottlingException", ThrottledError),
        ("throttle", "RequestLimitExceeded", ThrottledError),
        ("drop", "", TransportError),
    ],
)
async def test_one_lsiorm_attempt_is_one_http_request(
    failing_proxy: FaultProxy, kind: str, code: str, expected: type[DynamoError]
) -> None:
    failing_proxy.kinds = (kind,)
    failing_proxy.throttle_code = code or failing_proxy.throttle_code
    policy = RetryPolicy(max_attempts=3, initial=0.001, maximum=0.001)
    url = failing_proxy.endpoint_url
    with (
        Session(endpoint_url=url, region_name="us-east-1", retry=policy) as session,
        pytest.raises(expected),
    ):
        session.put(Note(name="s"))
    assert failing_proxy.stats["requests"] == 3
    async with AsyncSession(endpoint_url=url, region_name="us-east-1", retry=policy) as asession:
        with pytest.raises(expected):
            await asession.put(Note(name="s"))
    assert failing_proxy.stats["requests"] == 6


def test_a_client_passed_in_keeps_its_own_retries(failing_proxy: FaultProxy) -> None:
    # Documented in lsiorm.retry: then the worst case is the product of both limits.
    client = boto3.client(
        "dynamodb",
        endpoint_url=failing_proxy.endpoint_url,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 2, "mode": "standard"}),
    )
    policy = RetryPolicy(max_attempts=3, initial=0.001, maximum=0.001)
    with pytest.raises(InternalServerError):
        Session(client=client, retry=policy).put(Note(name="c"))
    client.close()
    assert failing_proxy.stats["requests"] == 2 * 3


# -- the first attempt, made before tenacity's loop -------------------------------------------

#: One attempt's outcome: ("ok", value), ("left", n) (a result to retry when n > 0),
#: ("throttle", _) (retryable), ("refused", _) (never retried), ("bug", _) (not a DynamoError).
outcomes = st.lists(
    st.tuples(st.sampled_from(["ok", "left", "throttle", "refused", "bug"]), st.integers(0, 3)),
    min_size=1,
    max_size=6,
)


class Script:
    """Attempts that play a script of outcomes (the last one again once it runs out)."""

    def __init__(self, script: list[tuple[str, int]]) -> None:
        self.script = script
        self.made = 0

    def attempt(self) -> Operation[Any]:
        kind, n = self.script[min(self.made, len(self.script) - 1)]
        self.made += 1
        if kind == "throttle":
            raise ThrottledError("slow down", code="ThrottlingException")
        if kind == "refused":
            raise ConditionFailedError("no", code="ConditionalCheckFailedException")
        if kind == "bug":
            raise KeyError(n)
        return [0] * n if kind == "left" else n
        yield  # a generator, as every attempt is


def outcome_of(run: Callable[[], Any]) -> Any:
    try:
        return ("result", run())
    except (DynamoError, KeyError) as exc:
        return ("error", type(exc), str(exc))


def by_run_with_retries(
    policy: RetryPolicy, script: list[tuple[str, int]], retry_result: Any
) -> tuple[Any, int, int]:
    """Run `run_with_retries` to its end; return (outcome, attempts made, sleeps yielded)."""
    attempts, sleeps = Script(script), 0

    def run() -> Any:
        nonlocal sleeps
        op = run_with_retries(policy, attempts.attempt, retry_result=retry_result)
        step = advance(op)
        while not isinstance(step, Done):
            assert isinstance(step, Sleep)
            sleeps += 1
            step = advance(op)
        return step.value

    return outcome_of(run), attempts.made, sleeps


def by_tenacity(
    policy: RetryPolicy, script: list[tuple[str, int]], retry_result: Any
) -> tuple[Any, int, int]:
    """Run the same attempts in tenacity's own loop, as the policy configures it."""
    attempts, sleeps = Script(script), 0

    def sleep(seconds: float) -> None:
        nonlocal sleeps
        sleeps += 1

    retrying = policy.retrying(retry_result=retry_result).copy(sleep=sleep)
    return (
        outcome_of(lambda: retrying(lambda: run_to_end(attempts.attempt()))),
        attempts.made,
        sleeps,
    )


def run_to_end(op: Operation[Any]) -> Any:
    step = advance(op)
    assert isinstance(step, Done)
    return step.value


@given(outcomes, st.integers(1, 5), st.booleans())
def test_same_attempts_sleeps_and_outcome_as_tenacitys_loop(
    script: list[tuple[str, int]], attempts: int, with_result: bool
) -> None:
    if not with_result:
        script = [(k if k != "left" else "ok", n) for k, n in script]
    policy = RetryPolicy(max_attempts=attempts, initial=0.0, maximum=0.0)
    retry_result = bool if with_result else None
    assert by_run_with_retries(policy, script, retry_result) == by_tenacity(
        policy, script, retry_result
    )


def test_the_time_bound_counts_the_first_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    import lsiorm._ops.retry as retry

    readings = [100.0]  # the first attempt takes 7 of the 10 seconds allowed

    def clock() -> float:
        now = readings[-1]
        readings.append(107.0)
        return now

    monkeypatch.setattr(retry.time, "monotonic", clock)
    seen: list[RetryPolicy] = []
    configure = RetryPolicy.retrying

    def retrying(policy: RetryPolicy, **options: Any) -> Any:
        seen.append(policy)
        return configure(policy, **options)

    monkeypatch.setattr(RetryPolicy, "retrying", retrying)

    def attempt() -> Operation[Any]:
        raise ThrottledError("slow down", code="ThrottlingException")
        yield

    op = run_with_retries(RetryPolicy(max_attempts=1, max_delay=10.0), attempt)
    with pytest.raises(ThrottledError):
        advance(op)
    assert [p.max_delay for p in seen] == [3.0]
