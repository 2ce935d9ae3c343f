"""A call's timeout= (lsiorm._ops.deadline): requests carry the deadline, nothing is sent or
slept past it, and what the call raises says what it had applied."""

from __future__ import annotations

import uuid
from typing import Any

from botocore.exceptions import ConnectionClosedError

from lsiorm import Entity, Table
from lsiorm._ops import batch, deadline, items
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.service_errors import from_error_response, from_transport_failure
from lsiorm._ops.steps import Call, Done, Gather, Sleep, advance
from lsiorm._requests.update_plan import update_spec
from lsiorm.errors import CallTimeoutError, OutcomeUnknownError
from support.fakes import Clock

table = Table(f"Deadline{uuid.uuid4().hex[:6]}", "PK", "SK")


class Note(Entity, table=table, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str
    hits: int = 0


CTX = Context(retry=RetryPolicy(max_attempts=5, initial=1.0, maximum=1.0))
THROTTLED = from_error_response(
    {
        "Error": {"Code": "ThrottlingException", "Message": "slow down"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    },
    "PutItem",
    {"TableName": table.name},
)
DROPPED = from_transport_failure(
    ConnectionClosedError(endpoint_url="http://x"), "PutItem", {"TableName": table.name}
)


woke: list[float] = []  # when each sleep of the last `_drive` ended, by its clock


def _drive(op: Any, clock: Clock, answers: list[Any], spend: float = 0.0) -> tuple[Any, list[Any]]:
    """Run ``op`` as a driver would, answering calls in turn; each call takes ``spend``
    seconds of ``clock``, each sleep its seconds. Return its result (or error) and its steps."""
    woke.clear()
    steps: list[Any] = []
    try:
        step = advance(op)
        while not isinstance(step, Done):
            steps.append(step)
            if isinstance(step, Call):
                clock.now += spend
                answer = answers.pop(0)
                step = (
                    advance(op, error=answer)
                    if isinstance(answer, BaseException)
                    else advance(op, answer)
                )
            elif isinstance(step, Sleep):
                clock.now += step.seconds
                woke.append(clock.now)
                step = advance(op)
            else:
                raise AssertionError(f"unexpected step {step!r}")
    except Exception as exc:
        return exc, steps
    return step.value, steps


def test_each_request_carries_the_calls_deadline() -> None:
    clock = Clock()
    op = deadline.within(items.put(CTX, Note(name="a")), 2.5, clock=clock)
    result, (call,) = _drive(op, clock, [{}])
    assert result == Note(name="a")
    assert call.deadline == 1002.5


def test_nothing_is_sent_once_the_time_is_out() -> None:
    clock = Clock()
    op = deadline.within(items.put(CTX, Note(name="a")), 1.0, clock=clock)
    clock.now += 1.0
    error, steps = _drive(op, clock, [])
    assert isinstance(error, CallTimeoutError)
    assert steps == []
    assert (error.timeout, error.operation, error.rule) == (1.0, "PutItem", "call.timeout")
    assert isinstance(error, TimeoutError)


def test_a_refused_write_then_the_time_running_out_applied_nothing() -> None:
    # Throttled (nothing applied), then the backoff sleep is cut to the time left.
    clock = Clock()
    op = deadline.within(items.put(CTX, Note(name="a")), 0.5, clock=clock)
    error, steps = _drive(op, clock, [THROTTLED] * 10, spend=0.1)
    assert isinstance(error, CallTimeoutError)
    assert any(isinstance(s, Sleep) for s in steps)
    assert woke
    assert max(woke) <= 1000.5 + 1e-9, "no sleep went past the deadline"


def test_a_write_in_doubt_then_the_time_running_out_is_unknown() -> None:
    clock = Clock()
    op = deadline.within(items.put(CTX, Note(name="a")), 0.5, clock=clock)
    error, _ = _drive(op, clock, [DROPPED] * 10, spend=0.1)
    assert isinstance(error, OutcomeUnknownError)
    assert "PutItem was sent and its answer not received" in str(error)
    assert error.request["operation"] == "PutItem"
    assert isinstance(error.__cause__, CallTimeoutError)


def test_an_applied_write_then_the_time_running_out_is_unknown() -> None:
    # An ADD applied once as a transaction, then the read of its result runs out of time.
    clock = Clock()
    spec = update_spec(None, (), {"hits": 1}, None, None, None, None, False)
    update = items.update(CTX, Note, {"name": "a"}, spec, idempotency="transaction")
    op = deadline.within(update, 1.0, clock=clock)
    error, steps = _drive(op, clock, [{}], spend=1.0)
    assert [s.operation for s in steps] == ["TransactWriteItems"]
    assert isinstance(error, OutcomeUnknownError)
    assert "TransactWriteItems was applied" in str(error)


def test_a_read_that_runs_out_of_time_is_a_timeout_error() -> None:
    clock = Clock()
    read = items.get(CTX, Note, {"name": "a"})
    late = CallTimeoutError("late", timeout=0.0, operation="GetItem", in_flight=True)
    error, _ = _drive(deadline.within(read, 1.0, clock=clock), clock, [late])
    assert isinstance(error, CallTimeoutError)


def test_gathered_operations_run_against_the_same_deadline() -> None:
    clock = Clock()
    notes = [Note(name=str(n)) for n in range(30)]  # two chunks of a batch
    op = deadline.within(batch.batch_write(CTX, notes), 3.0, clock=clock)
    step = advance(op)
    assert isinstance(step, Gather)
    firsts = [advance(sub) for sub in step.operations]
    assert all(isinstance(s, Call) and s.deadline == 1003.0 for s in firsts)
    for sub in step.operations:
        sub.close()
    op.close()
