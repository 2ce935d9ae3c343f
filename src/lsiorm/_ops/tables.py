"""Table-level operations: create a declared table, wait for it, check it for drift."""

from __future__ import annotations

from lsiorm._model.schema import Drift, DriftReport, Table
from lsiorm._ops.naming import renamed_table
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import DynamoError, LsiormError, ResourceNotFoundError

__all__ = ["check_table", "create_table", "delete_table"]

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

    With ``exists_ok`` a table that already exists is left as it is (and waited for). Returns
    whether this call created the table.
    """
    try:
        yield from call(ctx, "CreateTable", table.create_table_request(), (table,))
    except DynamoError as exc:
        if not (exists_ok and exc.code == "ResourceInUseException"):
            raise
        created = False
    else:
        created = True
    if wait:
        yield from _wait(ctx, table, gone=False)
    return created


def delete_table(ctx: Context, table: Table, *, wait: bool = True) -> Operation[None]:
    """Delete the table and (by default) wait until it is gone."""
    yield from call(ctx, "DeleteTable", {"TableName": table.name}, (table,))
    if wait:
        yield from _wait(ctx, table, gone=True)


def check_table(ctx: Context, table: Table) -> Operation[DriftReport]:
    """Compare the declaration with the live table; return the drift report.

    A table that does not exist is drift of kind ``"missing"``.
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
    return live.check(response)
