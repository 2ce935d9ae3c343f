"""The shared request path: middleware and retries around one API call.

:func:`call` sends a request with the session's retry policy. :func:`send_once` sends it once,
with the hooks but without any retry, for an operation that runs its own retry loop (a batch
chunk re-sends its unprocessed remainder, so each attempt is a different request). Either way a
request is retried by exactly one loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsiorm._ops.hooks import HookRequest, apply_after, apply_before, apply_error
from lsiorm._ops.retry import RetryPolicy, is_retryable, run_with_retries
from lsiorm._ops.steps import Call, Operation

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = ["Context", "call", "send_once"]


@dataclass(frozen=True)
class Context:
    """What every operation of one session shares: retry policy and middleware hooks."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    hooks: tuple[object, ...] = ()

    def with_hooks(self, hooks: Sequence[object]) -> Context:
        """Return a context with these hooks in place of the current ones."""
        return Context(self.retry, tuple(hooks))


def send_once(
    ctx: Context,
    operation: str,
    params: dict[str, Any],
    tables: tuple[Table, ...] = (),
) -> Operation[dict[str, Any]]:
    """Send one API request through the hooks, without retrying; return the response."""
    request = HookRequest(operation, dict(params), tables)
    apply_before(ctx.hooks, request)
    try:
        response: dict[str, Any] = yield Call(operation, request.params, tables)
    except Exception as exc:
        apply_error(ctx.hooks, request, exc)
        raise
    apply_after(ctx.hooks, request, response)
    return response


def call(
    ctx: Context,
    operation: str,
    params: dict[str, Any],
    tables: tuple[Table, ...] = (),
    *,
    retry_if: Callable[[BaseException], bool] = is_retryable,
) -> Operation[dict[str, Any]]:
    """Send one API request with the hooks and the session's retries; return the response.

    ``retry_if`` decides which failures are retried (by default the transient ones).
    """
    return (
        yield from run_with_retries(
            ctx.retry, lambda: send_once(ctx, operation, params, tables), retry_if=retry_if
        )
    )
