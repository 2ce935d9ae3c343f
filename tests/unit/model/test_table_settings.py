"""Table settings as code, without an engine: the CreateTable request (compared as
dictionaries), the declaration rules, the drift of each setting, and the apply plan checked
against an in-memory table that refuses what DynamoDB refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import (
    DeclarationError,
    GlobalIndex,
    OnDemandThroughput,
    Table,
    WarmThroughput,
)
from lsiorm._model.apply_plan import plan_apply
from support.table_model import LiveTable

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "dynamodb:GetItem",
            "Resource": "*",
        }
    ],
}


def _declared(**settings: Any) -> Table:
    index = settings.pop("index", {})
    return Table(
        "Settings",
        "PK",
        "SK",
        global_indexes=[GlobalIndex("ByG", "G", **index)],
        **settings,
    )


def test_create_table_carries_every_declared_setting() -> None:
    table = _declared(
        warm_throughput=WarmThroughput(13000, 5000),
        on_demand_throughput=OnDemandThroughput(max_read_request_units=100),
        deletion_protection=True,
        stream="NEW_AND_OLD_IMAGES",
        tags={"team": "shop", "env": "prod"},
        resource_policy=POLICY,
        point_in_time_recovery=True,
        recovery_period_days=7,
        index={
            "on_demand_throughput": OnDemandThroughput(10, 5),
            "warm_throughput": WarmThroughput(write_units_per_second=4500),
        },
    )
    assert table.create_table_request() == {
        "TableName": "Settings",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "G", "AttributeType": "S"},
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "OnDemandThroughput": {"MaxReadRequestUnits": 100},
        "WarmThroughput": {"ReadUnitsPerSecond": 13000, "WriteUnitsPerSecond": 5000},
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "DeletionProtectionEnabled": True,
        "Tags": [{"Key": "env", "Value": "prod"}, {"Key": "team", "Value": "shop"}],
        "ResourcePolicy": json.dumps(POLICY, separators=(",", ":"), sort_keys=True),
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "OnDemandThroughput": {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 5},
                "WarmThroughput": {"WriteUnitsPerSecond": 4500},
            }
        ],
    }


def test_a_table_without_settings_asks_for_what_it_always_did() -> None:
    request = _declared().create_table_request()
    assert set(request) == {
        "TableName",
        "KeySchema",
        "AttributeDefinitions",
        "BillingMode",
        "GlobalSecondaryIndexes",
    }
    assert _declared(stream=False, deletion_protection=None).create_table_request() == request


@pytest.mark.parametrize(
    ("settings", "rule"),
    [
        ({"warm_throughput": WarmThroughput()}, "table.warm-throughput"),
        ({"warm_throughput": WarmThroughput(0, 5)}, "table.warm-throughput"),
        ({"on_demand_throughput": OnDemandThroughput(-1)}, "table.on-demand-throughput"),
        (
            {
                "billing_mode": "PROVISIONED",
                "read_capacity": 1,
                "write_capacity": 1,
                "on_demand_throughput": OnDemandThroughput(5),
            },
            "table.on-demand-throughput",
        ),
        ({"recovery_period_days": 7}, "table.recovery-period"),
        ({"point_in_time_recovery": True, "recovery_period_days": 36}, "table.recovery-period"),
        ({"stream": "ALL_IMAGES"}, "table.stream"),
        ({"tags": {"aws:cloudformation:stack": "x"}}, "table.tags"),
        ({"tags": {"k": "v" * 257}}, "table.tags"),
        ({"tags": {f"k{n}": "v" for n in range(51)}}, "table.tags"),
        ({"resource_policy": "{not json"}, "table.resource-policy"),
        ({"resource_policy": "[1, 2]"}, "table.resource-policy"),
        (
            {"index": {"warm_throughput": WarmThroughput(read_units_per_second=0)}},
            "table.warm-throughput",
        ),
    ],
)
def test_each_setting_rule_is_checked_when_declared(settings: dict[str, Any], rule: str) -> None:
    if settings.get("billing_mode") == "PROVISIONED":
        settings["index"] = {"read_capacity": 1, "write_capacity": 1}
    with pytest.raises(DeclarationError) as caught:
        _declared(**settings)
    assert caught.value.rule == rule


def test_check_reports_each_setting_and_leaves_what_is_not_declared() -> None:
    live = LiveTable.of(_declared())
    live.desc["WarmThroughput"] = {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000}
    live.desc["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    live.tags = {"aws:cloudformation:stack-name": "x", "old": "1"}
    undeclared = _declared()
    assert undeclared.check(live.described(), live.ttl, live.live()).ok
    declared = _declared(
        warm_throughput=WarmThroughput(13000),
        stream="NEW_IMAGE",
        deletion_protection=True,
        point_in_time_recovery=True,
        tags={"team": "shop"},
        resource_policy=POLICY,
    )
    report = declared.check(live.described(), live.ttl, live.live())
    assert [d.kind for d in report.drifts] == [
        "warm-throughput",
        "stream",
        "deletion-protection",
        "point-in-time-recovery",
        "tags",
        "resource-policy",
    ]
    # Warm throughput above the declared one, and AWS's own tags, are no drift.
    live.desc["WarmThroughput"] = {"ReadUnitsPerSecond": 20000, "WriteUnitsPerSecond": 4000}
    live.tags = {"aws:cloudformation:stack-name": "x", "team": "shop"}
    kinds = [d.kind for d in declared.check(live.described(), live.ttl, live.live()).drifts]
    assert "warm-throughput" not in kinds
    assert "tags" not in kinds


def test_switching_to_provisioned_is_one_update_with_every_index_capacity() -> None:
    live = LiveTable.of(_declared())
    target = Table(
        "Settings",
        "PK",
        "SK",
        global_indexes=[GlobalIndex("ByG", "G", read_capacity=3, write_capacity=4)],
        billing_mode="PROVISIONED",
        read_capacity=5,
        write_capacity=6,
        deletion_protection=True,
    )
    report = target.check(live.described(), live.ttl, live.live())
    plan = plan_apply(target, live.described(), live.ttl, live.live(), report)
    (step,) = plan.steps
    assert (step.operation, step.wait) == ("UpdateTable", True)
    assert step.params == {
        "TableName": "Settings",
        "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
        "DeletionProtectionEnabled": True,
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "ByG",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
                }
            }
        ],
    }


def test_a_stream_of_another_view_type_is_disabled_then_enabled() -> None:
    live = LiveTable.of(_declared(stream="KEYS_ONLY"))
    target = _declared(stream="NEW_AND_OLD_IMAGES")
    report = target.check(live.described(), live.ttl, live.live())
    plan = plan_apply(target, live.described(), live.ttl, live.live(), report)
    assert [(s.operation, s.params.get("StreamSpecification"), s.wait) for s in plan.steps] == [
        ("UpdateTable", {"StreamEnabled": False}, True),
        ("UpdateTable", {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}, True),
    ]


def test_a_maximum_that_is_no_longer_declared_is_removed_with_minus_one() -> None:
    live = LiveTable.of(_declared(on_demand_throughput=OnDemandThroughput(100, 50)))
    target = _declared(on_demand_throughput=OnDemandThroughput(max_read_request_units=100))
    report = target.check(live.described(), live.ttl, live.live())
    (step,) = plan_apply(target, live.described(), live.ttl, live.live(), report).steps
    assert step.params["OnDemandThroughput"] == {
        "MaxReadRequestUnits": 100,
        "MaxWriteRequestUnits": -1,
    }


def test_structural_drift_is_left_with_checks_message() -> None:
    live = LiveTable.of(Table("Settings", "PK", "SK"))
    target = _declared(deletion_protection=True)
    report = target.check(live.described(), live.ttl, live.live())
    plan = plan_apply(target, live.described(), live.ttl, live.live(), report)
    assert [s.operation for s in plan.steps] == ["UpdateTable"]
    assert len(plan.left) == 1
    assert "ByG" in plan.left[0]
    assert "left as it is" in str(plan)


# -- the plan, against a table that refuses what DynamoDB refuses -----------------------------

units = st.one_of(st.none(), st.integers(1, 50_000))
views = st.sampled_from([None, False, "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"])


@st.composite
def declarations(draw: st.DrawFn) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if draw(st.booleans()):
        settings["warm_throughput"] = WarmThroughput(draw(st.integers(1, 50_000)), draw(units))
    if draw(st.booleans()):
        settings["on_demand_throughput"] = OnDemandThroughput(draw(units), draw(units))
    settings["stream"] = draw(views)
    settings["deletion_protection"] = draw(st.sampled_from([None, True, False]))
    pitr = draw(st.sampled_from([None, True, False]))
    settings["point_in_time_recovery"] = pitr
    if pitr:
        settings["recovery_period_days"] = draw(st.one_of(st.none(), st.integers(1, 35)))
    if draw(st.booleans()):
        settings["tags"] = draw(
            st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]))
        )
    if draw(st.booleans()):
        settings["resource_policy"] = draw(st.sampled_from([POLICY, {**POLICY, "Id": "x"}]))
    if draw(st.booleans()):
        settings["index"] = {
            "warm_throughput": WarmThroughput(draw(st.integers(1, 50_000))),
            "on_demand_throughput": OnDemandThroughput(draw(units), draw(units)),
        }
    return settings


@given(start=declarations(), target=declarations())
def test_applying_the_plan_leaves_no_setting_drift_and_nothing_more_to_do(
    start: dict[str, Any], target: dict[str, Any]
) -> None:
    live = LiveTable.of(_declared(**start))
    declared = _declared(**target)
    report = declared.check(live.described(), live.ttl, live.live())
    plan = plan_apply(declared, live.described(), live.ttl, live.live(), report)
    for step in plan.steps:
        live.send(step.operation, step.params)  # refuses what DynamoDB refuses
    # Fewest UpdateTables: one for every throughput and protection change, two for a stream.
    assert plan.update_tables <= 3
    assert plan.update_tables == len({s.why for s in plan.steps if s.operation == "UpdateTable"})
    after = declared.check(live.described(), live.ttl, live.live())
    assert after.ok, [d.message for d in after.drifts]
    again = plan_apply(declared, live.described(), live.ttl, live.live(), after)
    assert again.steps == ()
