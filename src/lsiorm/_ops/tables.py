"""Table-level operations: create a declared table, wait for it, enable its time to live, check
it for drift."""

from __future__ import annotations

from lsiorm._model.drift import Drift, DriftReport
from lsiorm._model.schema import Table, renamed_table
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.service_errors import restated
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import DynamoError, LsiormError, ResourceNotFoundError, ServiceValidationError

__all__ = ["check_table", "create_table", "delete_table", "enable_ttl"]

_POLL_SECONDS = 0.2
_MAX_POLLS = 300


def _wait(ctx: Context, table: Table, *, gone: bool) -> Operation[None]:
    for _ in range(_MAX_POLLS):
        try:
            response = yield from call(ctx, "DescribeTable", {"TableName": table.name}, (table,))
        except ResourceNotFoundError:
            if gone:
                return None
            response = {}
        status = (response.get("Table") or {}).get("TableStatus")
        if not gone and status == "ACTIVE":
            return None
        yield Sleep(_POLL_SECONDS)
    raise LsiormError(
        f"Table {ctx.live_name(table)!r} did not become {'deleted' if gone else 'ACTIVE'} in time."
    )


def create_table(
    ctx: Context, table: Table, *, wait: bool = True, exists_ok: bool = False
) -> Operation[bool]:
    """Create the table as declared and (by default) wait until it is ACTIVE.

    With ``exists_ok`` a table that already exists is left as it is (and waited for). A table
    that declares a ``ttl_attribute`` is always waited for, then has its time to live enabled
    on that attribute (DynamoDB enables TTL only on an ACTIVE table); on an existing table only
    when TTL is disabled there. Returns whether this call created the table.
    """
    try:
        yield from call(ctx, "CreateTable", table.create_table_request(), (table,))
    except DynamoError as exc:
        if exc.code != "ResourceInUseException":
            raise
        if not exists_ok:
            raise restated(
                exc,
                type(exc),
                f"Table {table.name!r} already exists (or is being created or deleted); "
                "create_table(..., exists_ok=True) leaves an existing table as it is.",
            ) from exc
        created = False
    else:
        created = True
    if wait or table.ttl_attribute is not None:
        yield from _wait(ctx, table, gone=False)
    if table.ttl_attribute is not None:
        yield from enable_ttl(ctx, table)
    return created


def enable_ttl(ctx: Context, table: Table) -> Operation[bool]:
    """Enable time to live on the table's ``ttl_attribute`` when it is disabled.

    Described first, so that running it again changes nothing (DynamoDB refuses to enable TTL
    that is already enabled). TTL that is on, or being switched, is left as it is: ``check``
    reports it when it is not what the declaration says. Returns whether TTL was enabled now.
    """
    if table.ttl_attribute is None:
        return False
    described = yield from call(ctx, "DescribeTimeToLive", {"TableName": table.name}, (table,))
    if not table.ttl_needs_enabling(described):
        return False
    try:
        yield from call(ctx, "UpdateTimeToLive", table.update_ttl_request(), (table,))
    except ServiceValidationError as exc:
        # Another writer enabled it between the two calls.
        if "already enabled" in str(exc).lower():
            return False
        raise
    return True


def delete_table(ctx: Context, table: Table, *, wait: bool = True) -> Operation[None]:
    """Delete the table and (by default) wait until it is gone."""
    yield from call(ctx, "DeleteTable", {"TableName": table.name}, (table,))
    if wait:
        yield from _wait(ctx, table, gone=True)


def check_table(ctx: Context, table: Table) -> Operation[DriftReport]:
    """Compare the declaration with the live table; return the drift report.

    A table that does not exist is drift of kind ``"missing"``. The time to live setting
    (DescribeTimeToLive) is compared with ``ttl_attribute`` too.
    """
    live = renamed_table(table, ctx.live_name(table))
    try:
        response = yield from call(ctx, "DescribeTable", {"TableName": table.name}, (table,))
    except ResourceNotFoundError:
        missing = Drift(
            "missing",
            None,
            f"Table {live.name!r} does not exist; create it with Session.create_table or "
            "`lsiorm create-table`.",
        )
        return DriftReport(live.name, (missing,))
    ttl = yield from call(ctx, "DescribeTimeToLive", {"TableName": table.name}, (table,))
    return live.check(response, ttl)
