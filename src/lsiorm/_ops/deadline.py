"""A call's ``timeout=``: an operation run against a deadline, and what it reports when it passes.

`within` runs an operation so that it is done by a deadline: each request it sends carries the
deadline (`Call.deadline`), which a driver keeps by no longer waiting for the answer then (the
async driver always; the sync one for the lean lane's requests); no request is sent, and no
backoff sleep started, once it has passed; a sleep is cut short to it. When it passes, the
operation is closed and the call raises what is known:

* `CallTimeoutError` when no request that may change data was sent, or each one sent was
  refused by DynamoDB (so nothing changed);
* `OutcomeUnknownError` once such a request was answered (it was applied) or is in doubt (it
  was in flight, or failed in a way that may still have applied it): its message says which,
  and its ``request`` names the last of them.

Sub-operations of a `Gather` run against the same deadline.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, TypeVar

from lsiorm._ops.items import is_ambiguous
from lsiorm._ops.steps import (
    Call,
    Done,
    Gather,
    Operation,
    Sleep,
    Step,
    advance,
    changes_data,
    relayed,
)
from lsiorm.errors import CallTimeoutError, LsiormError, OutcomeUnknownError, ValidationError

__all__ = ["bounded", "within"]

T = TypeVar("T")


class _Writes:
    """What a call's requests that may change data came to: applied, in doubt, or refused."""

    def __init__(self) -> None:
        self.applied: Call | None = None
        self.in_doubt: Call | None = None

    def answered(self, step: Step, result: Any) -> None:
        if isinstance(step, Call) and changes_data(step.operation):
            self.applied = step
            self.in_doubt = None

    def failed(self, step: Step, error: BaseException) -> None:
        if isinstance(step, Call) and changes_data(step.operation):
            sent = is_ambiguous(error) or (isinstance(error, CallTimeoutError) and error.in_flight)
            self.in_doubt = step if sent else self.in_doubt


def bounded(op: Operation[T], timeout: float | None) -> Operation[T]:
    """A call's operation bounded by its ``timeout=`` (seconds; None: as it is). A timeout that
    is not a positive number is refused (rule ``call.timeout``) before anything is sent."""
    if timeout is None:
        return op
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        op.close()
        raise ValidationError(
            "call.timeout", f"timeout= is a positive number of seconds, not {timeout!r}."
        )
    return within(op, float(timeout))


def within(
    op: Operation[T], seconds: float, *, clock: Callable[[], float] = time.monotonic
) -> Operation[T]:
    """Run ``op`` so that it is done ``seconds`` from now (see the module doc)."""
    return _bounded(op, clock() + seconds, seconds, clock, _Writes())


def _bounded(
    op: Operation[T],
    deadline: float,
    seconds: float,
    clock: Callable[[], float],
    writes: _Writes,
) -> Operation[T]:
    """``op`` against ``deadline``; ``writes`` is shared with the sub-operations it gathers."""
    last: list[Step] = []

    def rewrite(step: Step) -> Step:
        left = deadline - clock()
        what = step.operation if isinstance(step, Call) else ""
        if left <= 0:
            raise CallTimeoutError(
                f"the call ran out of its timeout of {seconds:g} s"
                + (f" before sending {what}" if what else ""),
                timeout=seconds,
                operation=what,
            )
        last[:] = [step]
        if isinstance(step, Call):
            return dataclasses.replace(step, deadline=deadline)
        if isinstance(step, Sleep):
            return Sleep(min(step.seconds, left))
        if isinstance(step, Gather):
            bounded = tuple(_bounded(o, deadline, seconds, clock, writes) for o in step.operations)
            return dataclasses.replace(step, operations=bounded)
        return step

    try:
        return (yield from _watched(relayed(op, rewrite, writes.answered), writes, last))
    except CallTimeoutError as exc:
        raise _outcome(exc, writes) from exc


def _watched(op: Operation[T], writes: _Writes, last: list[Step]) -> Operation[T]:
    """Run ``op``, noting in ``writes`` each failure of a request that may change data."""
    try:
        step = advance(op)
        while not isinstance(step, Done):
            try:
                result = yield step
            except LsiormError as exc:
                if last:
                    writes.failed(last[0], exc)
                step = advance(op, error=exc)
                continue
            step = advance(op, result)
        value: T = step.value
        return value
    finally:
        op.close()


def _outcome(exc: CallTimeoutError, writes: _Writes) -> LsiormError:
    """The error a call that ran out of time raises: see the module doc."""
    doubt, applied = writes.in_doubt, writes.applied
    sent = doubt or applied
    if sent is None:
        return exc
    if doubt is not None:
        why = f"its {doubt.operation} was sent and its answer not received in time"
    else:
        assert applied is not None
        why = f"its {applied.operation} was applied (DynamoDB answered) before the time ran out"
    return OutcomeUnknownError(
        f"the outcome is unknown: the call ran out of its timeout of {exc.timeout:g} s, and "
        f"{why}. Read the item to see what happened before writing again.",
        request={"operation": sent.operation, "params": sent.params},
        operation=sent.operation,
        table=sent.params.get("TableName") if isinstance(sent.params, dict) else None,
    )
