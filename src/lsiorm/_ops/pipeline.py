"""The shared request path: middleware and retries around one API call.

`call` sends a request with the session's retry policy. `send_once` sends it once,
with the hooks but without any retry, for an operation that runs its own retry loop (a batch
chunk re-sends its unprocessed remainder, so each attempt is a different request). Either way a
request is retried by exactly one loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from lsiorm._model.schema import Table, renamed_table
from lsiorm._ops.hooks import HookRequest, apply_after, apply_before, apply_error
from lsiorm._ops.naming import NameResolver, from_wire, to_wire
from lsiorm._ops.protection import Protection, open_response
from lsiorm._ops.request_sealing import seal_request
from lsiorm._ops.retry import RetryPolicy, is_retryable, run_with_retries
from lsiorm._ops.steps import Call, Operation
from lsiorm._query.cursor import cursor_key
from lsiorm._requests.limits import check_request
from lsiorm.errors import DynamoError

__all__ = ["Context", "Route", "RoutedRequest", "call", "reading", "send_once"]

T = TypeVar("T")


class Route(Protocol):
    """What sends a session's requests instead of sending them as given (the dual writes of a
    table migration, `lsiorm._migration.dual_writes`): it is handed each request, with the context
    without itself, and sends what it decides through `send_once`."""

    def __call__(self, sent: RoutedRequest) -> Operation[dict[str, Any]]: ...


@dataclass(frozen=True)
class RoutedRequest:
    """One request handed to a route, as `send_once` was given it (the context without the
    route)."""

    ctx: Context
    operation: str
    params: dict[str, Any]
    tables: tuple[Table, ...]
    on_error: Callable[[DynamoError], None] | None
    built: bool
    effect: tuple[Any, ...] | None

    def as_given(self) -> Operation[dict[str, Any]]:
        """Send the request as it is."""
        return send_once(
            self.ctx,
            self.operation,
            self.params,
            self.tables,
            on_error=self.on_error,
            built=self.built,
        )


@dataclass(frozen=True)
class Context:
    """What every operation of one session shares: retry policy, middleware hooks, the
    resolver from declared table names to live ones (None: the declared name is the live one),
    the key its cursors are signed with (random unless a secret is given), and the route its
    requests take (None: each is sent as given).
    """

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    hooks: tuple[object, ...] = ()
    table_name: NameResolver | None = None
    cursor_key: bytes = field(default_factory=cursor_key, repr=False)
    route: Route | None = None
    #: The session's keyring at work (None: no protected field is sealed or opened).
    protection: Protection | None = None
    #: Whether what is read becomes entities, whose lazy offloaded fields are not fetched
    #: (`lsiorm._ops.protection.open_value`); off for writes, the key jobs and the migration,
    #: which work with whole values.
    lazy_reads: bool = False

    def with_hooks(self, hooks: Sequence[object]) -> Context:
        """Return a context with these hooks in place of the current ones."""
        return replace(self, hooks=tuple(hooks))

    def live_name(self, table: Table) -> str:
        """The name of the live table a declaration stands for in this session."""
        return table.name if self.table_name is None else self.table_name(table.name)


def reading(ctx: Context) -> Context:
    """The context of reads that return entities: lazy offloaded fields stay unfetched
    (``Offloaded(eager=False)``); writes, the key jobs and the migration use ``ctx`` itself."""
    return ctx if ctx.protection is None else replace(ctx, lazy_reads=True)


def send_once(
    ctx: Context,
    operation: str,
    params: dict[str, Any],
    tables: tuple[Table, ...] = (),
    *,
    on_error: Callable[[DynamoError], None] | None = None,
    built: bool = True,
    effect: tuple[Any, ...] | None = None,
) -> Operation[dict[str, Any]]:
    """Send one API request through the hooks, without retrying; return the response.

    DynamoDB's request limits are checked first (`lsiorm._requests.limits`), so a request
    that would be refused is never sent. Hooks see the declared table names; the request on the
    wire carries the live ones. ``on_error`` sees a failure after the hooks do. ``built=False``
    marks a raw request a user wrote: it keeps every botocore check. ``effect`` is what an
    UpdateItem does to the item (its plan's actions), for a route that must know it.
    """
    if ctx.route is not None:
        unrouted = replace(ctx, route=None)
        sent = RoutedRequest(unrouted, operation, params, tables, on_error, built, effect)
        return (yield from ctx.route(sent))
    protection = ctx.protection
    if protection is not None:
        params = yield from seal_request(
            ctx.retry, protection, operation, params, tables, ctx.table_name
        )
    check_request(operation, params)
    request = HookRequest(operation, dict(params), tables)
    apply_before(ctx.hooks, request)
    wire_params: dict[str, Any] = request.params
    names: dict[str, str] = {}
    wire_tables = tables
    if ctx.table_name is not None:
        wire_params, names = to_wire(request.params, ctx.table_name)
        wire_tables = tuple(renamed_table(t, ctx.live_name(t)) for t in tables)
    try:
        response: dict[str, Any] = yield Call(operation, wire_params, wire_tables, built)
    except Exception as exc:
        apply_error(ctx.hooks, request, exc)
        if on_error is not None and isinstance(exc, DynamoError):
            on_error(exc)
        raise
    response = from_wire(operation, response, names)
    if protection is not None:
        response = yield from open_response(
            ctx.retry, protection, operation, params, response, tables, lazy=ctx.lazy_reads
        )
    apply_after(ctx.hooks, request, response)
    return response


def call(
    ctx: Context,
    operation: str,
    params: dict[str, Any],
    tables: tuple[Table, ...] = (),
    *,
    retry_if: Callable[[BaseException], bool] = is_retryable,
    on_error: Callable[[DynamoError], None] | None = None,
    built: bool = True,
    effect: tuple[Any, ...] | None = None,
) -> Operation[dict[str, Any]]:
    """Send one API request with the hooks and the session's retries; return the response.

    A TransactWriteItems sent without a ``ClientRequestToken`` is given one (the same on every
    attempt), so that a resend after a lost answer is not applied twice. ``retry_if`` decides
    which failures are retried (by default the library's one rule, `is_retryable`).
    ``on_error`` sees each failed attempt after the hooks do; it may raise an error of its own
    (one that is not retryable ends the retries). ``effect``: see `send_once`.
    """
    if operation == "TransactWriteItems" and "ClientRequestToken" not in params:
        params = {**params, "ClientRequestToken": uuid.uuid4().hex}
    return (
        yield from run_with_retries(
            ctx.retry,
            lambda: send_once(
                ctx, operation, params, tables, on_error=on_error, built=built, effect=effect
            ),
            retry_if=retry_if,
            what=operation,
        )
    )
