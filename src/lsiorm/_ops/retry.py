"""Retry policy: tenacity strategies, run inside the shared core so sync and async agree.

The core never calls tenacity's own sleeping loop. It drives tenacity's decision function
(``Retrying.iter``) step by step and turns each ``DoSleep`` into a `Sleep`
step, so one implementation serves both drivers.

Each request is retried by exactly one loop. `lsiorm._ops.pipeline.call` runs one around a
single request; an operation that re-sends a changing request (a batch chunk with its unprocessed
remainder) runs its own loop around `lsiorm._ops.pipeline.send_once`, which never retries.

botocore has a retry loop of its own. Sessions built by lsiorm turn it off
(``max_attempts=1``), so the attempts of one request are exactly those of this policy. A client
you pass in keeps its own configuration: then each lsiorm attempt may itself be retried by
botocore, and the worst case is the product of both limits.

What is retried is one rule, `is_retryable`, for every request the library sends (its own
transactions, the key jobs' ledger and moves, the migration's replays, a user's raw request):
throttling, 5xx answers, dropped connections, transaction conflicts, a transaction still in
progress under the same token, and a cancelled transaction whose every failing reason is a
throttle or a conflict (`TRANSIENT_CANCELLATIONS`): a cancelled transaction changed nothing, and
its resend carries the same ``ClientRequestToken`` (`lsiorm._ops.pipeline.call` gives one to a
TransactWriteItems sent without), so it cannot apply twice.

Each retry is told twice: one INFO line on the ``lsiorm.retry`` logger (the operation, the
error code and the wait; never the request's values), and a `RetryNote` on the requests the
retried attempt sends, which the drivers put on the request's span and count as a metric.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from lsiorm._ops.steps import Call, Operation, RetryNote, Sleep, relayed
from lsiorm.errors import DynamoError, TransactionCanceledError

if TYPE_CHECKING:
    import tenacity

__all__ = ["TRANSIENT_CANCELLATIONS", "RetryPolicy", "is_retryable", "run_with_retries"]

log = logging.getLogger("lsiorm.retry")

T = TypeVar("T")

#: The reason of a retry that re-sends what a batch got back unprocessed.
UNPROCESSED = "unprocessed"


#: The reasons of a cancelled transaction's actions that a resend may clear: a conflict with
#: another transaction, and throttling (a table's provisioned throughput, or a partition's).
TRANSIENT_CANCELLATIONS = frozenset(
    {"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError"}
)


def is_retryable(exc: BaseException) -> bool:
    """Return True for what is worth sending again (see the module doc): throttling, 5xx,
    dropped connections and transaction conflicts; a transaction cancelled only by throttles
    and conflicts (`TRANSIENT_CANCELLATIONS`); a transaction still in progress."""
    if not isinstance(exc, DynamoError):
        return False
    if exc.retryable:
        return True
    if isinstance(exc, TransactionCanceledError):
        failed = {r.code for r in exc.failed}
        return bool(failed) and failed <= TRANSIENT_CANCELLATIONS
    return exc.code == "TransactionInProgressException"


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, bounded by attempts and by total time.

    ``max_attempts`` counts the first try. ``max_delay`` bounds the time from the first attempt
    after which no new attempt starts. Sleeps grow as ``initial * 2**n`` up to ``maximum``, each
    drawn at random below that bound.
    """

    max_attempts: int = 10
    max_delay: float = 30.0
    initial: float = 0.05
    maximum: float = 2.0

    def retrying(
        self,
        *,
        retry_exception: Callable[[BaseException], bool] = is_retryable,
        retry_result: Callable[[Any], bool] | None = None,
    ) -> tenacity.Retrying:
        """Return a tenacity ``Retrying`` configured by this policy."""
        import tenacity  # on first use: keeps ``import lsiorm`` light

        retry: tenacity.retry_base = tenacity.retry_if_exception(retry_exception)
        if retry_result is not None:
            retry = retry | tenacity.retry_if_result(retry_result)
        return tenacity.Retrying(
            # stop_before_delay, not stop_after_delay: the latter still sleeps and starts one
            # more attempt after max_delay has passed, breaking the bound promised above.
            stop=tenacity.stop_after_attempt(self.max_attempts)
            | tenacity.stop_before_delay(self.max_delay),
            wait=tenacity.wait_random_exponential(multiplier=self.initial, max=self.maximum),
            retry=retry,
            reraise=True,
            # Giving up on a result (not an exception) returns that last result to the caller.
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )


def run_with_retries(
    policy: RetryPolicy,
    attempt: Callable[[], Operation[T]],
    *,
    retry_if: Callable[[BaseException], bool] = is_retryable,
    retry_result: Callable[[T], bool] | None = None,
    what: str = "request",
) -> Operation[T]:
    """Run ``attempt()`` until it succeeds, or the policy stops; yields the backoff sleeps.

    Each attempt is a fresh sub-operation. A failed attempt is retried when ``retry_if`` says
    so (by default `is_retryable`); the error itself is never changed. With
    ``retry_result``, a result for which it returns True is retried too, and the last such
    result is returned when the policy stops. ``what`` names the request in the log line of
    each retry (the API operation).

    Most requests succeed at once, and setting up tenacity's loop costs more than sending a
    request through the lean lane takes of CPU; so the first attempt runs before it. Only when
    that attempt fails with an error ``retry_if`` accepts, or gives a result ``retry_result``
    wants retried, does the loop start: from that outcome (no request is sent again), with its
    time bound shortened by the time the first attempt took. So attempts, sleeps, errors and
    results are those of tenacity's loop alone.
    """
    started = time.monotonic()
    first: tuple[DynamoError | None, Any]
    try:
        result = yield from attempt()
    except DynamoError as exc:
        if not retry_if(exc):
            raise
        first = (exc, None)
    else:
        if retry_result is None or not retry_result(result):
            return result
        first = (None, result)
    bounded = dataclasses.replace(policy, max_delay=policy.max_delay - (time.monotonic() - started))
    retrying = bounded.retrying(retry_exception=retry_if, retry_result=retry_result)
    return (yield from _loop(retrying, attempt, first, what, policy.max_attempts))


def _loop(
    retrying: tenacity.Retrying,
    attempt: Callable[[], Operation[T]],
    first: tuple[DynamoError | None, Any],
    what: str,
    max_attempts: int,
) -> Operation[T]:
    """Drive tenacity's decisions from the outcome ``first`` of the attempt made already."""
    from tenacity import DoAttempt, DoSleep, RetryCallState

    retrying.begin()
    state = RetryCallState(retrying, fn=None, args=(), kwargs={})
    note: RetryNote | None = None
    made: tuple[DynamoError | None, Any] | None = first
    while True:
        action = retrying.iter(state)
        if isinstance(action, DoAttempt):
            try:
                if made is not None:
                    error, result = made
                    made = None
                    if error is not None:
                        raise error
                else:
                    sent = attempt() if note is None else noted(attempt(), note)
                    result = yield from sent
            except DynamoError as exc:
                state.set_exception((type(exc), exc, exc.__traceback__))
            else:
                state.set_result(result)
        elif isinstance(action, DoSleep):
            note = _note(state.outcome, state.attempt_number + 1, float(action))
            _log_retry(what, note, max_attempts)
            state.prepare_for_next_attempt()
            yield Sleep(note.delay)
        else:
            final: T = action
            return final


def _note(outcome: Any, attempt: int, delay: float) -> RetryNote:
    """The note of the attempt about to be made, from the outcome of the one that failed."""
    error = outcome.exception() if outcome is not None and outcome.failed else None
    if error is None:
        return RetryNote(attempt, UNPROCESSED, delay)
    reason = getattr(error, "code", "") or type(error).__name__
    return RetryNote(attempt, reason, delay)


def _log_retry(what: str, note: RetryNote, max_attempts: int) -> None:
    log.info(
        "%s: attempt %d failed (%s); attempt %d of at most %d in %.3f s",
        what,
        note.attempt - 1,
        note.reason,
        note.attempt,
        max_attempts,
        note.delay,
    )


def noted(op: Operation[T], note: RetryNote) -> Operation[T]:
    """Run ``op`` with each request it sends marked as the retry ``note`` describes."""
    return relayed(
        op, lambda step: dataclasses.replace(step, retry=note) if isinstance(step, Call) else step
    )
