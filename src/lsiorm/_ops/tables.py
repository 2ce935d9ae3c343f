"""Table-level operations: create a declared table, wait for it, enable its time to live and
point-in-time recovery, check it for drift, apply its declared settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from lsiorm._model.apply_plan import ApplyPlan, ApplyStep, plan_apply
from lsiorm._model.drift import Drift, DriftReport
from lsiorm._model.schema import Table, renamed_table
from lsiorm._model.table_settings import LiveSettings
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.service_errors import restated
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import DynamoError, LsiormError, ResourceNotFoundError, ServiceValidationError

__all__ = [
    "ApplyReport",
    "apply_table",
    "check_table",
    "create_table",
    "delete_table",
    "enable_ttl",
    "read_settings",
]

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


#: How long `apply_table` waits for an UpdateTable to finish (AWS takes minutes for some).
_SETTLE_SECONDS = 1800.0


def _settled(ctx: Context, table: Table) -> Operation[None]:
    """Wait until the table, each of its indexes and its warm throughput are ACTIVE again
    after an UpdateTable (polling every 0.2 s at first, then less often, up to 5 s)."""
    waited, pause = 0.0, _POLL_SECONDS
    while waited < _SETTLE_SECONDS:
        response = yield from call(ctx, "DescribeTable", {"TableName": table.name}, (table,))
        described = response.get("Table") or {}
        statuses = [
            described.get("TableStatus"),
            *(g.get("IndexStatus") for g in described.get("GlobalSecondaryIndexes") or ()),
            (described.get("WarmThroughput") or {}).get("Status", "ACTIVE"),
        ]
        if all(status == "ACTIVE" for status in statuses):
            return None
        yield Sleep(pause)
        waited += pause
        pause = min(pause * 1.5, 5.0)
    raise LsiormError(
        f"Table {ctx.live_name(table)!r} is still updating after {_SETTLE_SECONDS:g} s; run "
        "apply again once it is ACTIVE to send the rest of the plan."
    )


def create_table(
    ctx: Context, table: Table, *, wait: bool = True, exists_ok: bool = False
) -> Operation[bool]:
    """Create the table as declared and (by default) wait until it is ACTIVE.

    With ``exists_ok`` a table that already exists is left as it is (and waited for). A table
    that declares a ``ttl_attribute`` is always waited for, then has its time to live enabled
    on that attribute (DynamoDB enables TTL only on an ACTIVE table); on an existing table only
    when TTL is disabled there. A table created with ``point_in_time_recovery=True`` is waited
    for, then has it turned on. Returns whether this call created the table.
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
    pitr = table.settings.point_in_time_recovery
    if wait or table.ttl_attribute is not None or pitr:
        yield from _wait(ctx, table, gone=False)
    if table.ttl_attribute is not None:
        yield from enable_ttl(ctx, table)
    if pitr and created:
        yield from _enable_pitr(ctx, table)
    return created


def _enable_pitr(ctx: Context, table: Table) -> Operation[None]:
    """Turn on point-in-time recovery of a table just created (with its declared period).

    An endpoint that does not know the operation (DynamoDB Local) is left without it; `check`
    then lists point-in-time recovery as not checked.
    """
    spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": True}
    if table.settings.recovery_period_days is not None:
        spec["RecoveryPeriodInDays"] = table.settings.recovery_period_days
    params = {"TableName": table.name, "PointInTimeRecoverySpecification": spec}
    yield from _read_or_unknown(ctx, table, "UpdateContinuousBackups", params)


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
    settings = yield from read_settings(ctx, table, response)
    return live.check(response, ttl, settings)


#: The error code of an engine that does not know an operation (DynamoDB Local and the
#: continuous backups, tagging and resource policy APIs).
_UNKNOWN_OPERATION = "UnknownOperationException"


def _read_or_unknown(
    ctx: Context, table: Table, operation: str, params: dict[str, Any]
) -> Operation[dict[str, Any] | None]:
    """A read's answer, or None when the endpoint does not know the operation."""
    try:
        return (yield from call(ctx, operation, params, (table,)))
    except DynamoError as exc:
        if exc.code == _UNKNOWN_OPERATION:
            return None
        raise


def read_settings(ctx: Context, table: Table, described: dict[str, Any]) -> Operation[LiveSettings]:
    """Read the declared settings DescribeTable does not give (continuous backups, tags, the
    resource policy); only the declared ones are read. A read the endpoint does not know
    leaves its setting unchecked."""
    settings = table.settings
    arn = str((described.get("Table") or {}).get("TableArn") or "")
    unchecked: list[str] = []
    backups = None
    if settings.point_in_time_recovery is not None:
        params = {"TableName": table.name}
        backups = yield from _read_or_unknown(ctx, table, "DescribeContinuousBackups", params)
        if backups is None:
            unchecked.append("point-in-time recovery")
    tags: dict[str, str] | None = None
    if settings.tags is not None:
        tags = yield from _read_tags(ctx, table, arn)
        if tags is None:
            unchecked.append("tags")
    policy: str | None = None
    if settings.resource_policy is not None:
        policy = yield from _read_policy(ctx, table, arn)
        if policy is None:
            unchecked.append("resource policy")
    return LiveSettings(backups, tags, policy, tuple(unchecked))


def _read_tags(ctx: Context, table: Table, arn: str) -> Operation[dict[str, str] | None]:
    tags: dict[str, str] = {}
    params: dict[str, Any] = {"ResourceArn": arn}
    while True:
        page = yield from _read_or_unknown(ctx, table, "ListTagsOfResource", params)
        if page is None:
            return None
        tags.update({t["Key"]: t["Value"] for t in page.get("Tags") or ()})
        token = page.get("NextToken")
        if not token:
            return tags
        params = {"ResourceArn": arn, "NextToken": token}


def _read_policy(ctx: Context, table: Table, arn: str) -> Operation[str | None]:
    """The live policy's text, "" when there is none, None when the endpoint cannot say."""
    try:
        found = yield from _read_or_unknown(ctx, table, "GetResourcePolicy", {"ResourceArn": arn})
    except DynamoError as exc:
        if exc.code == "PolicyNotFoundException":
            return ""
        raise
    return None if found is None else str(found.get("Policy") or "")


@dataclass(frozen=True)
class ApplyReport:
    """What `apply_table` planned and did: the ``plan``, the ``applied`` steps (none on a dry
    run) and the drift ``after`` them (None on a dry run)."""

    plan: ApplyPlan
    applied: tuple[ApplyStep, ...] = ()
    after: DriftReport | None = None

    @property
    def ok(self) -> bool:
        """Whether the table has its declared settings: after applying, or already."""
        return (
            self.after.ok if self.after is not None else not self.plan.steps and not self.plan.left
        )

    def __str__(self) -> str:
        if self.after is None:
            return str(self.plan)
        done = [f"applied: {step}" for step in self.applied] or ["nothing to apply"]
        return "\n".join([*done, str(self.after)])


def apply_table(ctx: Context, table: Table, *, dry_run: bool = False) -> Operation[ApplyReport]:
    """Plan (and, unless ``dry_run``, send) the requests that bring the live table to its
    declared settings (see `lsiorm._model.apply_plan`), waiting for it to be ACTIVE after each
    UpdateTable; then check it again."""
    live = renamed_table(table, ctx.live_name(table))
    try:
        described = yield from call(ctx, "DescribeTable", {"TableName": table.name}, (table,))
    except ResourceNotFoundError as exc:
        raise restated(
            exc,
            ResourceNotFoundError,
            f"Table {live.name!r} does not exist; create it with Session.create_table or "
            "`lsiorm create-table`, then apply its settings.",
        ) from exc
    ttl = yield from call(ctx, "DescribeTimeToLive", {"TableName": table.name}, (table,))
    settings = yield from read_settings(ctx, table, described)
    plan = plan_apply(table, described, ttl, settings, live.check(described, ttl, settings))
    plan = dataclasses.replace(plan, table=live.name)
    if dry_run:
        return ApplyReport(plan)
    for step in plan.steps:
        yield from call(ctx, step.operation, step.params, (table,))
        if step.wait:
            yield from _settled(ctx, table)
    after = yield from check_table(ctx, table)
    return ApplyReport(plan, plan.steps, after)
