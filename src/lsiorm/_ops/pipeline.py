"""The shared request path: middleware, retries and error typing around one API call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsiorm._ops.hooks import HookRequest, apply_after, apply_before, apply_error
from lsiorm._ops.retry import RetryPolicy, run_with_retries
from lsiorm._ops.steps import Call, Operation
from lsiorm._requests.limits import check_request
from lsiorm.errors import DynamoError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = ["Context", "call"]


@dataclass(frozen=True)
class Context:
    """What every operation of one session shares: retry policy and middleware hooks."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    hooks: tuple[object, ...] = ()

    def with_hooks(self, hooks: Sequence[object]) -> Context:
        """Return a context with these hooks in place of the current ones."""
        return Context(self.retry, tuple(hooks))


def call(
    ctx: Context,
    operation: str,
    params: dict[str, Any],
    tables: tuple[Table, ...] = (),
    *,
    on_error: Callable[[DynamoError], None] | None = None,
) -> Operation[dict[str, Any]]:
    """Send one API request with middleware and retries; return the response.

    DynamoDB's request limits are checked first (:mod:`lsiorm._requests.limits`), so a request
    that would be refused is never sent. ``on_error`` sees each failed attempt after the hooks
    do; it may raise an error of its own (one that is not retryable ends the retries).
    """
    check_request(operation, params)

    def attempt() -> Operation[dict[str, Any]]:
        request = HookRequest(operation, dict(params), tables)
        apply_before(ctx.hooks, request)
        try:
            response: dict[str, Any] = yield Call(operation, request.params, tables)
        except Exception as exc:
            apply_error(ctx.hooks, request, exc)
            if on_error is not None and isinstance(exc, DynamoError):
                on_error(exc)
            raise
        apply_after(ctx.hooks, request, response)
        return response

    return (yield from run_with_retries(ctx.retry, attempt))
