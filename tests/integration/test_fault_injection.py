"""lsiorm.testing's fault injection, used on lsiorm itself: on both engines, both request lanes,
sync and async. A lost answer is a real write; each fault reaches lsiorm as the real failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from lsiorm import (
    AsyncSession,
    ConditionCheck,
    Put,
    RetryPolicy,
    Session,
    Table,
    cond,
    query,
)
from lsiorm.errors import OutcomeUnknownError, TransactionCanceledError
from lsiorm.testing import FaultInjector
from support.models import declare_grouped
from support.otel import Recording, otel

__all__ = ["otel"]  # the fixture

QUICK = RetryPolicy(max_attempts=10, max_delay=30.0, initial=0.001, maximum=0.01)
LANES = [pytest.param(True, id="lean"), pytest.param(False, id="botocore")]


@pytest.fixture
def fresh(session: Session) -> Iterator[tuple[Table, type[Any]]]:
    table, item = declare_grouped("inject")
    session.create_table(table)
    try:
        yield table, item
    finally:
        session.delete_table(table, wait=False)


@pytest.mark.parametrize("lean", LANES)
def test_a_lost_answer_on_a_create_only_put_reports_success(
    endpoint_url: str, session: Session, fresh: tuple[Table, type[Any]], lean: bool
) -> None:
    _table, item = fresh
    with (
        Session(endpoint_url=endpoint_url, retry=QUICK, lean=lean) as mine,
        FaultInjector(session=mine) as faults,
    ):
        faults.lose_answer("PutItem")
        stored = mine.put(item(group="a", n=1, body="once"), create_only=True)
        assert (mine.driver.inner.lane is not None and mine.driver.inner.lane.sent > 0) is lean
    assert [r.fault for r in faults.requests if r.operation == "PutItem"] == ["lost-answer", None]
    assert faults.stats["forwarded"] == faults.count()  # the lost answer was a real write too
    assert session.get(item, group="a", n=1, consistent=True) == stored


@pytest.mark.parametrize("lean", LANES)
async def test_a_lost_answer_on_an_async_create_only_put_reports_success(
    endpoint_url: str, session: Session, fresh: tuple[Table, type[Any]], lean: bool
) -> None:
    _table, item = fresh
    async with AsyncSession(endpoint_url=endpoint_url, retry=QUICK, lean=lean) as mine:
        with FaultInjector(session=mine) as faults:
            faults.lose_answer("PutItem")
            stored = await mine.put(item(group="a", n=2, body="once"), create_only=True)
    assert faults.count("PutItem", fault="lost-answer") == 1
    assert session.get(item, group="a", n=2, consistent=True) == stored


def test_a_lost_answer_of_an_add_is_applied_once_and_reported(
    session: Session, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh
    session.put(item(group="a", n=3))
    with FaultInjector() as faults:
        faults.lose_answer("UpdateItem")
        with pytest.raises(OutcomeUnknownError):
            session.update(item, group="a", n=3, add={"hits": 1})
    assert faults.count("UpdateItem") == 1  # never sent again
    assert session.get(item, group="a", n=3, consistent=True).hits == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_throttling_the_next_two_batch_writes_costs_two_more_requests(
    endpoint_url: str, session: Session, fresh: tuple[Table, type[Any]], mode: str
) -> None:
    _table, item = fresh
    items = [item(group="b", n=n) for n in range(20)]  # one chunk
    with FaultInjector() as faults:
        faults.throttle("BatchWriteItem", times=2)
        if mode == "sync":
            with Session(endpoint_url=endpoint_url, retry=QUICK) as mine:
                result = mine.batch_write(puts=items)
        else:
            async with AsyncSession(endpoint_url=endpoint_url, retry=QUICK) as theirs:
                result = await theirs.batch_write(puts=items)
    assert result.written == 20
    assert [r.fault for r in faults.requests] == ["throttle", "throttle", None]
    assert len(session.all(query(item).where(group="b"))) == 20


def test_partial_batches_are_finished_by_the_retries(
    session: Session, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh
    session.batch_write(puts=[item(group="c", n=n) for n in range(30)])
    keys = [{"group": "c", "n": n} for n in range(30)]
    with FaultInjector() as faults:
        faults.partial("BatchGetItem", times=3)  # three attempts read half of what they ask
        found = session.batch_get(item, keys)
    assert sorted(i.n for i in found) == list(range(30))
    assert [r.fault for r in faults.requests] == ["partial", "partial", "partial", None]
    asked = [
        sum(len(t["Keys"]) for t in r.params["RequestItems"].values()) for r in faults.requests
    ]
    assert asked == [30, 15, 8, 4]


def test_unavailable_on_a_share_of_requests_is_repeatable_with_a_seed(
    endpoint_url: str, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh

    def run(group: str) -> list[str | None]:
        with (
            Session(endpoint_url=endpoint_url, retry=QUICK) as mine,
            FaultInjector(session=mine) as faults,
        ):
            faults.server_error(status=503, rate=0.3, seed=7)
            for n in range(12):
                mine.put(item(group=group, n=n))
            assert len(mine.all(query(item).where(group=group))) == 12
        return [r.fault for r in faults.requests]

    first, second = run("d"), run("e")
    assert first == second
    assert 0 < first.count("error503") < len(first)


def test_a_cancelled_transaction_applies_nothing_and_says_why(
    session: Session, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh
    session.put(item(group="f", n=1))
    actions = [
        ConditionCheck(item(group="f", n=1), condition=cond("n") == 1),
        Put(item(group="f", n=2)),
    ]
    with FaultInjector() as faults:
        faults.cancel_transaction("ConditionalCheckFailed", at=1)
        with pytest.raises(TransactionCanceledError) as cancelled:
            session.transact_write(actions)
    assert [r.code for r in cancelled.value.reasons] == ["None", "ConditionalCheckFailed"]
    assert faults.count("TransactWriteItems", fault="cancel") == 1
    assert session.get(item, group="f", n=2, consistent=True) is None


def test_the_record_says_what_a_code_path_sent(
    session: Session, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh
    with FaultInjector(session=session) as faults:
        session.all(query(item).where(group="g"))
    assert faults.operations == ["Query"]
    (sent,) = faults.requests
    assert sent.tables == (_table.name,)
    assert sent.fault is None


def test_a_session_scoped_injector_leaves_other_sessions_alone(
    endpoint_url: str, session: Session, fresh: tuple[Table, type[Any]]
) -> None:
    _table, item = fresh
    with (
        Session(endpoint_url=endpoint_url, retry=QUICK) as mine,
        FaultInjector(session=mine) as faults,
    ):
        faults.throttle(times=None)
        session.put(item(group="h", n=1))  # another session: untouched, unrecorded
    assert faults.requests == []


@pytest.mark.parametrize("lean", LANES)
def test_spans_of_a_retried_request_show_its_retries(
    endpoint_url: str, fresh: tuple[Table, type[Any]], otel: Recording, lean: bool
) -> None:
    _table, item = fresh
    with (
        Session(endpoint_url=endpoint_url, retry=QUICK, lean=lean, telemetry=otel.telemetry) as s,
        FaultInjector(session=s) as faults,
    ):
        faults.throttle("PutItem", times=2)
        s.put(item(group="i", n=1))
    spans = otel.requests()
    assert [span.status.status_code == StatusCode.ERROR for span in spans] == [True, True, False]
    assert [span.attributes.get("lsiorm.attempt") for span in spans] == [None, 2, 3]
    assert all(
        span.attributes["error.type"] == "ProvisionedThroughputExceededException"
        for span in spans[:2]
    )
    assert [e.name for e in spans[2].events] == ["retry"]
    (operation,) = otel.operations()
    assert operation.attributes["lsiorm.retry_count"] == 2
    assert otel.total("lsiorm.throttles") == 2
