"""The plan that brings a live table to its declaration's settings (pure: `lsiorm apply` runs it).

`plan_apply` compares a declaration with what the live table says (DescribeTable,
DescribeTimeToLive and the reads of the other settings) and returns the fewest requests that
make them agree, in the order DynamoDB allows:

1. one UpdateTable with every throughput and protection change: the billing mode (with the
   provisioned capacities of the table and each global index when switching to PROVISIONED),
   the on-demand maxima, the warm throughput, deletion protection, and each global index's own
   maxima and warm throughput. DynamoDB takes one such change of the table at a time and
   refuses another UpdateTable while the table is UPDATING, so one request carries them all,
   and the table is waited for until it (and each index) is ACTIVE again;
2. the stream, in UpdateTables of its own: a stream that is on cannot change its view type, so
   it is disabled first (waited for), then enabled with the declared type;
3. point-in-time recovery (UpdateContinuousBackups), time to live (UpdateTimeToLive, when it
   is disabled), tags (TagResource, UntagResource) and the resource policy
   (PutResourcePolicy): each its own request, none of them UpdateTable.

What no request can change in place (a key schema, a local index, a global index's keys or
projection, a time to live on another attribute) is listed as ``left``, with check's message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from lsiorm._model.drift import DriftReport
from lsiorm._model.schema import Table
from lsiorm._model.table_settings import (
    LiveSettings,
    TableSettings,
    WarmThroughput,
    live_on_demand,
    live_pitr,
    live_stream,
    live_warm,
    managed_tags,
    on_demand_differs,
    same_policy,
    warm_below,
)

__all__ = ["ApplyPlan", "ApplyStep", "plan_apply"]

#: The drift kinds the plan's requests fix; every other kind is left as it is.
FIXED: Final = frozenset(
    {
        "billing-mode",
        "warm-throughput",
        "on-demand-throughput",
        "gsi-warm-throughput",
        "gsi-on-demand-throughput",
        "deletion-protection",
        "stream",
        "point-in-time-recovery",
        "recovery-period",
        "ttl-disabled",
        "tags",
        "resource-policy",
    }
)


@dataclass(frozen=True)
class ApplyStep:
    """One request of a plan: what it sends, why, and whether the table is waited for after."""

    operation: str
    params: dict[str, Any]
    why: str
    wait: bool = False

    def __str__(self) -> str:
        return f"{self.operation}: {self.why}"


@dataclass(frozen=True)
class ApplyPlan:
    """The requests that bring a table to its declaration, and the drift they leave.

    ``left`` holds the messages of the drift no request can fix; ``unchecked`` the settings
    the endpoint could not report (nothing is planned for them).
    """

    table: str
    steps: tuple[ApplyStep, ...]
    left: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    @property
    def update_tables(self) -> int:
        """How many UpdateTable requests the plan sends."""
        return sum(step.operation == "UpdateTable" for step in self.steps)

    def __str__(self) -> str:
        if not self.steps and not self.left:
            lines = [f"Table {self.table!r} has its declared settings: nothing to apply."]
        else:
            lines = [f"{n}. {step}" for n, step in enumerate(self.steps, start=1)]
            lines += [f"left as it is: {message}" for message in self.left]
        if self.unchecked:
            lines.append(
                f"Not checked (the endpoint does not report them): {', '.join(self.unchecked)}."
            )
        return "\n".join(lines)


def plan_apply(
    table: Table,
    described: Mapping[str, Any],
    describe_ttl: Mapping[str, Any] | None,
    live: LiveSettings,
    report: DriftReport,
) -> ApplyPlan:
    """The plan for a table, from its live description and reads and check's ``report``."""
    inner = described.get("Table")
    desc: Mapping[str, Any] = inner if isinstance(inner, Mapping) else described
    name, settings = table.name, table.settings
    steps: list[ApplyStep] = []
    update = _settings_update(table, desc)
    if update is not None:
        steps.append(update)
    steps.extend(_stream_steps(name, settings, desc))
    steps.extend(_pitr_steps(name, settings, live))
    if any(d.kind == "ttl-disabled" for d in report.drifts):
        steps.append(
            ApplyStep(
                "UpdateTimeToLive",
                table.update_ttl_request(),
                f"enable time to live on {table.ttl_attribute!r}",
            )
        )
    arn = str(desc.get("TableArn") or "")
    steps.extend(_tag_steps(settings, live, arn))
    policy, held = settings.resource_policy, live.resource_policy
    if policy is not None and held is not None and not (held and same_policy(policy, held)):
        steps.append(
            ApplyStep(
                "PutResourcePolicy",
                {"ResourceArn": arn, "Policy": policy},
                "attach the declared resource policy",
            )
        )
    left = tuple(d.message for d in report.drifts if d.kind not in FIXED)
    return ApplyPlan(report.table, tuple(steps), left, report.unchecked)


def _settings_update(table: Table, desc: Mapping[str, Any]) -> ApplyStep | None:
    """The one UpdateTable of every throughput and protection change, or None."""
    params: dict[str, Any] = {"TableName": table.name}
    why: list[str] = []
    settings = table.settings
    summary = desc.get("BillingModeSummary") or {}
    billed = summary.get("BillingMode") or "PROVISIONED"
    switching = billed != table.billing_mode
    if switching:
        params["BillingMode"] = table.billing_mode
        why.append(f"billing mode {billed} -> {table.billing_mode}")
        if table.billing_mode == "PROVISIONED":
            params["ProvisionedThroughput"] = {
                "ReadCapacityUnits": table.read_capacity,
                "WriteCapacityUnits": table.write_capacity,
            }
    demand = settings.on_demand_throughput
    if demand is not None and (switching or on_demand_differs(demand, desc)):
        request = demand.request(removing=not switching)
        if request:
            params["OnDemandThroughput"] = request
            why.append(f"on-demand maxima {live_on_demand(desc)} -> {_pair(demand)}")
    warm = settings.warm_throughput
    have = live_warm(desc)
    if warm is not None and have is not None and warm_below(warm, have):
        params["WarmThroughput"] = _raised(warm, have)
        why.append(f"warm throughput {have} -> {_pair(warm)}")
    protection = settings.deletion_protection
    if protection is not None and bool(desc.get("DeletionProtectionEnabled")) != protection:
        params["DeletionProtectionEnabled"] = protection
        why.append(f"deletion protection {'on' if protection else 'off'}")
    index_updates = _index_updates(table, desc, switching)
    if index_updates:
        params["GlobalSecondaryIndexUpdates"] = [{"Update": u} for u, _ in index_updates]
        why.extend(w for _, w in index_updates)
    if not why:
        return None
    return ApplyStep("UpdateTable", params, "; ".join(why), wait=True)


def _index_updates(
    table: Table, desc: Mapping[str, Any], switching: bool
) -> list[tuple[dict[str, Any], str]]:
    described = {d.get("IndexName"): d for d in desc.get("GlobalSecondaryIndexes") or ()}
    out: list[tuple[dict[str, Any], str]] = []
    for index in table.global_indexes:
        found = described.get(index.name)
        if found is None:
            continue
        update: dict[str, Any] = {"IndexName": index.name}
        why: list[str] = []
        if switching and table.billing_mode == "PROVISIONED":
            update["ProvisionedThroughput"] = {
                "ReadCapacityUnits": index.read_capacity,
                "WriteCapacityUnits": index.write_capacity,
            }
            why.append("its provisioned capacity")
        demand = index.on_demand_throughput
        if demand is not None and (switching or on_demand_differs(demand, found)):
            request = demand.request(removing=not switching)
            if request:
                update["OnDemandThroughput"] = request
                why.append(f"on-demand maxima -> {_pair(demand)}")
        warm, have = index.warm_throughput, live_warm(found)
        if warm is not None and have is not None and warm_below(warm, have):
            update["WarmThroughput"] = _raised(warm, have)
            why.append(f"warm throughput -> {_pair(warm)}")
        if why:
            out.append((update, f"index {index.name}: {', '.join(why)}"))
    return out


def _raised(warm: WarmThroughput, have: tuple[int | None, int | None]) -> dict[str, int]:
    """The units of a warm throughput request that raise the live ones (it is never lowered:
    a unit already at or above its declared value is left out)."""
    request = warm.request()
    live = {"ReadUnitsPerSecond": have[0], "WriteUnitsPerSecond": have[1]}
    return {unit: value for unit, value in request.items() if (live[unit] or 0) < value}


def _pair(value: Any) -> tuple[Any, ...]:
    """A throughput value's two units, as a plan's line shows them."""
    return dataclasses.astuple(value)


def _stream_steps(name: str, settings: TableSettings, desc: Mapping[str, Any]) -> list[ApplyStep]:
    want, have = settings.stream, live_stream(desc)
    if want is None or want == have:
        return []
    steps = []
    if have:
        steps.append(
            ApplyStep(
                "UpdateTable",
                {"TableName": name, "StreamSpecification": {"StreamEnabled": False}},
                f"disable the {have} stream"
                + (
                    f" (a stream's view type cannot change: {want} is enabled next)" if want else ""
                ),
                wait=True,
            )
        )
    if want:
        steps.append(
            ApplyStep(
                "UpdateTable",
                {
                    "TableName": name,
                    "StreamSpecification": {"StreamEnabled": True, "StreamViewType": want},
                },
                f"enable a {want} stream",
                wait=True,
            )
        )
    return steps


def _pitr_steps(name: str, settings: TableSettings, live: LiveSettings) -> list[ApplyStep]:
    want = settings.point_in_time_recovery
    if want is None or live.continuous_backups is None:
        return []
    enabled, days = live_pitr(live.continuous_backups)
    period = settings.recovery_period_days
    if enabled == want and (not want or period in (None, days)):
        return []
    spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": want}
    if want and period is not None:
        spec["RecoveryPeriodInDays"] = period
    what = f"point-in-time recovery {'on' if want else 'off'}"
    if want and period is not None:
        what += f", {period} days"
    return [
        ApplyStep(
            "UpdateContinuousBackups",
            {"TableName": name, "PointInTimeRecoverySpecification": spec},
            what,
        )
    ]


def _tag_steps(settings: TableSettings, live: LiveSettings, arn: str) -> list[ApplyStep]:
    want = settings.tag_map
    if want is None or live.tags is None:
        return []
    have = managed_tags(live.tags)
    steps = []
    to_set = {k: v for k, v in want.items() if have.get(k) != v}
    if to_set:
        steps.append(
            ApplyStep(
                "TagResource",
                {
                    "ResourceArn": arn,
                    "Tags": [{"Key": k, "Value": v} for k, v in sorted(to_set.items())],
                },
                f"set tags {', '.join(sorted(to_set))}",
            )
        )
    extra = sorted(k for k in have if k not in want)
    if extra:
        steps.append(
            ApplyStep(
                "UntagResource",
                {"ResourceArn": arn, "TagKeys": extra},
                f"remove tags {', '.join(extra)}",
            )
        )
    return steps
