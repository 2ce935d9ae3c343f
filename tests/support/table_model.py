"""A live table's settings, in memory, changed by the requests `lsiorm apply` sends, under
DynamoDB's rules: what a plan is checked against without an engine.

`LiveTable` holds a DescribeTable description and the answers of the other reads, and `send`
applies one request as DynamoDB would, refusing what DynamoDB refuses: an UpdateTable that
changes the stream together with anything else, one that enables a stream while one is
enabled, warm throughput lowered, a request while the table is not ACTIVE.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from lsiorm import LiveSettings, Table
from support.describe_table import describe

__all__ = ["LiveTable", "Refused"]


class Refused(AssertionError):
    """DynamoDB would refuse this request."""


@dataclass
class LiveTable:
    """One table's live settings (see the module)."""

    desc: dict[str, Any]
    ttl: dict[str, Any] = field(default_factory=lambda: {"TimeToLiveStatus": "DISABLED"})
    pitr: tuple[bool, int | None] = (False, None)
    tags: dict[str, str] = field(default_factory=dict)
    policy: str = ""
    sent: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, table: Table) -> LiveTable:
        """The live table as CreateTable would leave it for a declaration."""
        request = table.create_table_request()
        desc = describe(request)["Table"]
        for part in ("OnDemandThroughput", "WarmThroughput", "StreamSpecification"):
            if part in request:
                desc[part] = copy.deepcopy(request[part])
        desc["DeletionProtectionEnabled"] = bool(request.get("DeletionProtectionEnabled"))
        for gsi, asked in zip(
            desc.get("GlobalSecondaryIndexes") or (),
            request.get("GlobalSecondaryIndexes") or (),
            strict=True,
        ):
            for part in ("OnDemandThroughput", "WarmThroughput"):
                if part in asked:
                    gsi[part] = copy.deepcopy(asked[part])
        tags = {t["Key"]: t["Value"] for t in request.get("Tags") or ()}
        return cls(desc, tags=tags, policy=request.get("ResourcePolicy", ""))

    def described(self) -> dict[str, Any]:
        return {"Table": copy.deepcopy(self.desc)}

    def live(self) -> LiveSettings:
        status = "ENABLED" if self.pitr[0] else "DISABLED"
        pitr: dict[str, Any] = {"PointInTimeRecoveryStatus": status}
        if self.pitr[1] is not None:
            pitr["RecoveryPeriodInDays"] = self.pitr[1]
        backups = {"ContinuousBackupsDescription": {"PointInTimeRecoveryDescription": pitr}}
        return LiveSettings(backups, dict(self.tags), self.policy)

    def send(self, operation: str, params: dict[str, Any]) -> None:
        self.sent.append(operation)
        getattr(self, f"_{operation}")(params)

    def _UpdateTable(self, params: dict[str, Any]) -> None:
        changes = set(params) - {"TableName"}
        if "StreamSpecification" in changes and len(changes) > 1:
            raise Refused("a stream change goes in an UpdateTable of its own")
        if not changes:
            raise Refused("nothing to update")
        stream = params.get("StreamSpecification")
        if stream is not None:
            enabled = (self.desc.get("StreamSpecification") or {}).get("StreamEnabled")
            if stream["StreamEnabled"] and enabled:
                raise Refused("the table already has an enabled stream")
            if not stream["StreamEnabled"] and not enabled:
                raise Refused("no stream to disable")
            self.desc["StreamSpecification"] = stream if stream["StreamEnabled"] else None
        if "BillingMode" in params:
            self.desc["BillingModeSummary"] = {"BillingMode": params["BillingMode"]}
        if "DeletionProtectionEnabled" in params:
            self.desc["DeletionProtectionEnabled"] = params["DeletionProtectionEnabled"]
        _throughputs(self.desc, params)
        indexes = {g["IndexName"]: g for g in self.desc.get("GlobalSecondaryIndexes") or ()}
        for update in params.get("GlobalSecondaryIndexUpdates") or ():
            _throughputs(indexes[update["Update"]["IndexName"]], update["Update"])

    def _UpdateContinuousBackups(self, params: dict[str, Any]) -> None:
        spec = params["PointInTimeRecoverySpecification"]
        on = spec["PointInTimeRecoveryEnabled"]
        self.pitr = (on, spec.get("RecoveryPeriodInDays", 35) if on else None)

    def _UpdateTimeToLive(self, params: dict[str, Any]) -> None:
        spec = params["TimeToLiveSpecification"]
        if spec["Enabled"] and self.ttl["TimeToLiveStatus"] != "DISABLED":
            raise Refused("TimeToLive is already enabled")
        self.ttl = {"TimeToLiveStatus": "ENABLED", "AttributeName": spec["AttributeName"]}

    def _TagResource(self, params: dict[str, Any]) -> None:
        self.tags.update({t["Key"]: t["Value"] for t in params["Tags"]})

    def _UntagResource(self, params: dict[str, Any]) -> None:
        for key in params["TagKeys"]:
            self.tags.pop(key, None)

    def _PutResourcePolicy(self, params: dict[str, Any]) -> None:
        self.policy = params["Policy"]


def _throughputs(part: dict[str, Any], params: dict[str, Any]) -> None:
    """Apply the throughput changes of an UpdateTable (or an index update) to ``part``."""
    warm = params.get("WarmThroughput")
    if warm is not None:
        have = part.get("WarmThroughput") or {}
        for unit, value in warm.items():
            if value < (have.get(unit) or 0):
                raise Refused("warm throughput cannot be lowered")
        part["WarmThroughput"] = {**have, **warm}
    demand = params.get("OnDemandThroughput")
    if demand is not None:
        have = dict(part.get("OnDemandThroughput") or {})
        for unit, value in demand.items():
            if value == -1:
                have.pop(unit, None)
            else:
                have[unit] = value
        part["OnDemandThroughput"] = have
    if "ProvisionedThroughput" in params:
        part["ProvisionedThroughput"] = {
            **part["ProvisionedThroughput"],
            **params["ProvisionedThroughput"],
        }
