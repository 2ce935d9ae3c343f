"""retried(): the first attempt before the retry loop changes nothing the loop would do."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._ops.pipeline import retried
from lsiorm._ops.retry import RetryPolicy, run_with_retries
from lsiorm._ops.steps import Done, Operation, Sleep, advance
from lsiorm.errors import ConditionFailedError, DynamoError, ThrottledError

#: One attempt's outcome: ("ok", value), ("left", n) (a result to retry when n > 0),
#: ("throttle", _) (retryable), ("refused", _) (never retried), ("bug", _) (not a DynamoError).
outcomes = st.lists(
    st.tuples(st.sampled_from(["ok", "left", "throttle", "refused", "bug"]), st.integers(0, 3)),
    min_size=1,
    max_size=6,
)


def drive(
    runner: Any, script: list[tuple[str, int]], attempts: int, with_result: bool
) -> tuple[Any, int, int]:
    """Run an operation to its end; return (outcome, attempts made, sleeps yielded)."""
    made = 0

    def attempt() -> Operation[Any]:
        nonlocal made
        kind, n = script[min(made, len(script) - 1)]
        made += 1
        if kind == "throttle":
            raise ThrottledError("slow down", code="ThrottlingException")
        if kind == "refused":
            raise ConditionFailedError("no", code="ConditionalCheckFailedException")
        if kind == "bug":
            raise KeyError(n)
        return [0] * n if kind == "left" else n
        yield  # a generator, as every attempt is

    policy = RetryPolicy(max_attempts=attempts, initial=0.0, maximum=0.0)
    kwargs: dict[str, Any] = {"retry_result": bool} if with_result else {}
    op = runner(policy, attempt, **kwargs)
    sleeps = 0
    try:
        step = advance(op)
        while not isinstance(step, Done):
            assert isinstance(step, Sleep)
            sleeps += 1
            step = advance(op)
        outcome: Any = ("result", step.value)
    except (DynamoError, KeyError) as exc:
        outcome = ("error", type(exc), str(exc))
    return outcome, made, sleeps


@given(outcomes, st.integers(1, 5), st.booleans())
def test_same_attempts_sleeps_and_outcome_as_the_loop_alone(
    script: list[tuple[str, int]], attempts: int, with_result: bool
) -> None:
    if not with_result:
        script = [(k if k != "left" else "ok", n) for k, n in script]
    assert drive(retried, script, attempts, with_result) == drive(
        run_with_retries, script, attempts, with_result
    )


def test_the_time_bound_counts_the_first_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    import lsiorm._ops.pipeline as pipeline

    readings = [100.0]  # the first attempt takes 7 of the 10 seconds allowed

    def clock() -> float:
        now = readings[-1]
        readings.append(107.0)
        return now

    monkeypatch.setattr(pipeline.time, "monotonic", clock)
    seen: list[RetryPolicy] = []

    def loop(policy: RetryPolicy, attempt: Any, **kwargs: Any) -> Operation[Any]:
        seen.append(policy)
        return (yield from run_with_retries(policy, attempt, **kwargs))

    monkeypatch.setattr(pipeline, "run_with_retries", loop)

    def attempt() -> Operation[Any]:
        raise ThrottledError("slow down", code="ThrottlingException")
        yield

    op = retried(RetryPolicy(max_attempts=1, max_delay=10.0), attempt)
    with pytest.raises(ThrottledError):
        advance(op)
    assert [p.max_delay for p in seen] == [3.0]
