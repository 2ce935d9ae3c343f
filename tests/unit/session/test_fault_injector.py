"""The fault injector without an engine: which requests a rule takes, what each fault raises or
hands back, the record, and the slot the drivers consult."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from lsiorm import AsyncSession, Put, RetryPolicy, Session, Table
from lsiorm._io import interception
from lsiorm._ops.steps import Call
from lsiorm.errors import (
    InternalServerError,
    ThrottledError,
    TransactionCanceledError,
    TransportError,
)
from lsiorm.testing import FaultInjector
from support.fakes import AsyncScriptedClient, ScriptedClient
from support.models import declare_ledger

FAST = RetryPolicy(max_attempts=5, initial=0.0, maximum=0.0)
ONE = RetryPolicy(max_attempts=1)
Account, Entry = declare_ledger(Table("faulty", "pk", "sk"))


def _session(script: list[Any], retry: RetryPolicy = FAST) -> tuple[Session, ScriptedClient]:
    client = ScriptedClient(script, {})
    return Session(client=client, retry=retry, watch_collections=False), client


def test_no_injector_no_interception() -> None:
    assert interception.active is None
    with FaultInjector() as outer:
        assert interception.active is outer
        with FaultInjector() as inner:
            assert interception.active is inner
        assert interception.active is outer
    assert interception.active is None


def test_the_next_n_requests_of_an_operation_are_faulted_then_none() -> None:
    session, client = _session([{}])
    with FaultInjector() as faults:
        rule = faults.throttle("PutItem", times=2)
        session.put(Account(owner="a"))
    assert rule.injected == 2
    assert rule.spent
    assert [(r.operation, r.fault) for r in faults.requests] == [
        ("PutItem", "throttle"),
        ("PutItem", "throttle"),
        ("PutItem", None),
    ]
    assert len(client.calls) == 1  # throttled requests never reach the client
    assert faults.stats["forwarded"] == 1


def test_a_rule_takes_only_its_operations_and_what_when_accepts() -> None:
    session, _client = _session([{}, {}, {"Item": None}])
    with FaultInjector() as faults:
        faults.inject("error500", "GetItem", times=None, when=lambda op, params: False)
        faults.server_error("DeleteItem")
        session.put(Account(owner="a"))
        assert session.get(Account, owner="a") is None
    assert [r.fault for r in faults.requests] == [None, None]


@pytest.mark.parametrize(
    ("method", "options", "error", "code"),
    [
        ("throttle", {}, ThrottledError, "ProvisionedThroughputExceededException"),
        ("throttle", {"code": "ThrottlingException"}, ThrottledError, "ThrottlingException"),
        ("server_error", {}, InternalServerError, "InternalServerError"),
        ("server_error", {"status": 503}, InternalServerError, "ServiceUnavailable"),
        ("drop", {}, TransportError, "ConnectionClosedError"),
    ],
)
def test_each_failure_before_sending_is_typed_as_the_real_one(
    method: str, options: dict[str, Any], error: type[Exception], code: str
) -> None:
    session, client = _session([], retry=ONE)
    with FaultInjector() as faults:
        getattr(faults, method)("GetItem", **options)
        with pytest.raises(error) as caught:
            session.get(Account, owner="a")
    assert caught.value.code == code  # type: ignore[attr-defined]
    assert client.calls == []


@pytest.mark.parametrize(
    ("method", "code"),
    [("lose_answer", "ConnectionClosedError"), ("fail_after_apply", "InternalServerError")],
)
def test_a_failure_after_applying_sends_the_request(method: str, code: str) -> None:
    session, client = _session([{}], retry=ONE)
    with FaultInjector() as faults:
        getattr(faults, method)("DeleteItem")
        with pytest.raises((TransportError, InternalServerError)) as caught:
            session.delete_result(Account, owner="a")
    assert caught.value.code == code
    assert [op for op, _ in client.calls] == ["DeleteItem"]  # really sent


def test_a_cancelled_transaction_names_a_reason_per_action() -> None:
    session, client = _session([], retry=ONE)
    with FaultInjector() as faults:
        faults.cancel_transaction(["None", "TransactionConflict"])
        actions = [Put(Account(owner="a")), Put(Entry(owner="a", n=1))]
        with pytest.raises(TransactionCanceledError) as caught:
            session.transact_write(actions)
    assert [(r.index, r.code) for r in caught.value.reasons] == [
        (0, "None"),
        (1, "TransactionConflict"),
    ]
    assert client.calls == []


def test_a_partial_batch_sends_half_and_hands_the_rest_back() -> None:
    session, client = _session([{"UnprocessedItems": {}}, {"UnprocessedItems": {}}])
    entries = [Entry(owner="a", n=n) for n in range(5)]
    with FaultInjector() as faults:
        faults.partial("BatchWriteItem")
        assert session.batch_write(puts=entries).written == 5
    sent = [len(p["RequestItems"]["faulty"]) for _, p in client.calls]
    assert sent == [2, 3]  # half, then the three handed back
    assert faults.count("BatchWriteItem", fault="partial") == 1


def test_a_partial_batch_of_one_sends_nothing_the_first_time() -> None:
    session, client = _session([{"UnprocessedItems": {}}])
    with FaultInjector() as faults:
        faults.partial()
        session.batch_write(puts=[Entry(owner="a", n=1)])
    assert len(client.calls) == 1
    assert faults.stats["forwarded"] == 1
    assert faults.count() == 2


def test_rates_are_repeatable_with_a_seed() -> None:
    def draw(seed: int) -> list[str | None]:
        session, _client = _session([], retry=ONE)
        with FaultInjector() as faults:
            faults.server_error(rate=0.5, seed=seed)
            for n in range(40):
                with contextlib.suppress(InternalServerError):
                    session.put(Entry(owner="a", n=n))
        return [r.fault for r in faults.requests]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    assert 5 < draw(7).count("error500") < 35


def test_rules_are_checked_when_made() -> None:
    faults = FaultInjector()
    with pytest.raises(ValueError, match="cannot apply"):
        faults.partial("PutItem")
    with pytest.raises(ValueError, match="cannot apply"):
        faults.cancel_transaction(operation="BatchWriteItem")
    with pytest.raises(ValueError, match="rate"):
        faults.throttle(rate=1.5)


def test_a_session_scoped_injector_records_only_its_session() -> None:
    mine, _ = _session([{}])
    other, _ = _session([{}])
    with FaultInjector(session=mine) as faults:
        faults.throttle(times=None)
        other.put(Account(owner="b"))
    assert faults.requests == []
    assert faults.plan(Call("PutItem", {}), object()) is None


async def test_the_async_driver_takes_the_same_faults() -> None:
    client = AsyncScriptedClient([{}], {})
    session = AsyncSession(client=client, retry=FAST, watch_collections=False)
    with FaultInjector() as faults:
        faults.throttle("PutItem")
        faults.lose_answer("PutItem")
        await session.put(Account(owner="a"))
    assert [r.fault for r in faults.requests] == ["throttle", "lost-answer", None]
    assert len(client.calls) == 2  # the lost answer's request and the last one
    faults.clear()
    assert (faults.requests, faults.faults, faults.count()) == ([], [], 0)
