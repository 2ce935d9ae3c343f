"""The requests of table settings no local engine takes, on botocore's Stubber: each request is
checked against botocore's model of the API and compared with the expected parameters.

DynamoDB Local answers the continuous backups, tagging and resource policy operations as
unknown, keeps no warm throughput, and takes on-demand maxima at CreateTable only; moto keeps no
on-demand maxima and cannot enable a stream again once it was disabled (docs/testing.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from lsiorm import GlobalIndex, OnDemandThroughput, Session, Table, WarmThroughput

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Stubbed"
POLICY = {"Version": "2012-10-17", "Statement": []}
POLICY_TEXT = json.dumps(POLICY, separators=(",", ":"), sort_keys=True)

declared = Table(
    "Stubbed",
    "PK",
    "SK",
    global_indexes=[
        GlobalIndex(
            "ByG",
            "G",
            warm_throughput=WarmThroughput(read_units_per_second=15000),
            on_demand_throughput=OnDemandThroughput(10, 5),
        )
    ],
    warm_throughput=WarmThroughput(13000, 5000),
    on_demand_throughput=OnDemandThroughput(max_read_request_units=100),
    stream="NEW_AND_OLD_IMAGES",
    point_in_time_recovery=True,
    recovery_period_days=7,
    tags={"team": "shop"},
    resource_policy=POLICY,
)


def _description(stream: str | None = "KEYS_ONLY") -> dict[str, Any]:
    table: dict[str, Any] = {
        "TableName": "Stubbed",
        "TableArn": ARN,
        "TableStatus": "ACTIVE",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": n, "AttributeType": "S"} for n in ("G", "PK", "SK")
        ],
        "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
        "WarmThroughput": {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000},
        "OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 40},
        "DeletionProtectionEnabled": False,
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "IndexStatus": "ACTIVE",
                "WarmThroughput": {"ReadUnitsPerSecond": 12000, "WriteUnitsPerSecond": 4000},
            }
        ],
    }
    if stream:
        table["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream}
    return {"Table": table}


@pytest.fixture
def stubbed() -> Iterator[tuple[Session, Stubber]]:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber, Session(client) as session:
        yield session, stubber
        stubber.assert_no_pending_responses()


def _reads(
    stubber: Stubber,
    description: dict[str, Any],
    pitr: bool,
    tags: dict[str, str],
    policy: str | None,
) -> None:
    stubber.add_response("describe_table", description, {"TableName": "Stubbed"})
    stubber.add_response(
        "describe_time_to_live",
        {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}},
        {"TableName": "Stubbed"},
    )
    status = "ENABLED" if pitr else "DISABLED"
    stubber.add_response(
        "describe_continuous_backups",
        {
            "ContinuousBackupsDescription": {
                "ContinuousBackupsStatus": status,
                "PointInTimeRecoveryDescription": {
                    "PointInTimeRecoveryStatus": status,
                    **({"RecoveryPeriodInDays": 7} if pitr else {}),
                },
            }
        },
        {"TableName": "Stubbed"},
    )
    stubber.add_response(
        "list_tags_of_resource",
        {"Tags": [{"Key": k, "Value": v} for k, v in tags.items()]},
        {"ResourceArn": ARN},
    )
    if policy is None:
        stubber.add_client_error(
            "get_resource_policy", "PolicyNotFoundException", expected_params={"ResourceArn": ARN}
        )
    else:
        stubber.add_response(
            "get_resource_policy", {"Policy": policy, "RevisionId": "1"}, {"ResourceArn": ARN}
        )


def test_apply_sends_each_setting_as_dynamodb_takes_it(stubbed: tuple[Session, Stubber]) -> None:
    session, stubber = stubbed
    _reads(stubber, _description(), pitr=False, tags={"old": "1", "aws:x": "y"}, policy=None)
    settings_update = {
        "TableName": "Stubbed",
        "OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": -1},
        "WarmThroughput": {"ReadUnitsPerSecond": 13000, "WriteUnitsPerSecond": 5000},
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "ByG",
                    "OnDemandThroughput": {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 5},
                    "WarmThroughput": {"ReadUnitsPerSecond": 15000},
                }
            }
        ],
    }
    stubber.add_response("update_table", {}, settings_update)
    stubber.add_response("describe_table", _description(), {"TableName": "Stubbed"})
    stubber.add_response(
        "update_table",
        {},
        {"TableName": "Stubbed", "StreamSpecification": {"StreamEnabled": False}},
    )
    stubber.add_response("describe_table", _description(None), {"TableName": "Stubbed"})
    stubber.add_response(
        "update_table",
        {},
        {
            "TableName": "Stubbed",
            "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        },
    )
    stubber.add_response("describe_table", _description(), {"TableName": "Stubbed"})
    stubber.add_response(
        "update_continuous_backups",
        {},
        {
            "TableName": "Stubbed",
            "PointInTimeRecoverySpecification": {
                "PointInTimeRecoveryEnabled": True,
                "RecoveryPeriodInDays": 7,
            },
        },
    )
    stubber.add_response(
        "tag_resource", {}, {"ResourceArn": ARN, "Tags": [{"Key": "team", "Value": "shop"}]}
    )
    stubber.add_response("untag_resource", {}, {"ResourceArn": ARN, "TagKeys": ["old"]})
    stubber.add_response(
        "put_resource_policy", {"RevisionId": "2"}, {"ResourceArn": ARN, "Policy": POLICY_TEXT}
    )
    # The check after: as the engine would now answer.
    done = _description("NEW_AND_OLD_IMAGES")
    done["Table"]["WarmThroughput"] = {"ReadUnitsPerSecond": 13000, "WriteUnitsPerSecond": 5000}
    done["Table"]["OnDemandThroughput"] = {"MaxReadRequestUnits": 100}
    index = done["Table"]["GlobalSecondaryIndexes"][0]
    index["WarmThroughput"] = {"ReadUnitsPerSecond": 15000, "WriteUnitsPerSecond": 4000}
    index["OnDemandThroughput"] = {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 5}
    _reads(stubber, done, pitr=True, tags={"team": "shop", "aws:x": "y"}, policy=POLICY_TEXT)

    report = session.apply_table(declared)
    assert [s.operation for s in report.applied] == [
        "UpdateTable",
        "UpdateTable",
        "UpdateTable",
        "UpdateContinuousBackups",
        "TagResource",
        "UntagResource",
        "PutResourcePolicy",
    ]
    assert report.after is not None
    assert report.after.ok, str(report.after)


def test_a_dry_run_reads_and_sends_nothing(stubbed: tuple[Session, Stubber]) -> None:
    session, stubber = stubbed
    _reads(stubber, _description(), pitr=False, tags={}, policy=None)
    report = session.apply_table(declared, dry_run=True)
    assert report.applied == ()
    assert report.after is None
    assert report.plan.update_tables == 3
    assert not report.ok


def test_create_table_sends_the_settings_then_turns_on_recovery(
    stubbed: tuple[Session, Stubber],
) -> None:
    session, stubber = stubbed
    stubber.add_response("create_table", {}, declared.create_table_request())
    stubber.add_response("describe_table", _description(), {"TableName": "Stubbed"})
    stubber.add_response(
        "update_continuous_backups",
        {},
        {
            "TableName": "Stubbed",
            "PointInTimeRecoverySpecification": {
                "PointInTimeRecoveryEnabled": True,
                "RecoveryPeriodInDays": 7,
            },
        },
    )
    assert session.create_table(declared) is True


def test_apply_waits_until_the_table_its_indexes_and_warm_throughput_settle(
    stubbed: tuple[Session, Stubber],
) -> None:
    session, stubber = stubbed
    protected = Table(
        "Stubbed", "PK", "SK", global_indexes=[GlobalIndex("ByG", "G")], deletion_protection=True
    )
    stubber.add_response("describe_table", _description(), {"TableName": "Stubbed"})
    stubber.add_response(
        "describe_time_to_live",
        {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}},
        {"TableName": "Stubbed"},
    )
    stubber.add_response(
        "update_table", {}, {"TableName": "Stubbed", "DeletionProtectionEnabled": True}
    )
    updating_table = _description()
    updating_table["Table"]["TableStatus"] = "UPDATING"
    updating_index = _description()
    updating_index["Table"]["GlobalSecondaryIndexes"][0]["IndexStatus"] = "UPDATING"
    updating_warm = _description()
    updating_warm["Table"]["WarmThroughput"]["Status"] = "UPDATING"
    settled = _description()
    settled["Table"]["DeletionProtectionEnabled"] = True
    for answer in (updating_table, updating_index, updating_warm, settled):
        stubber.add_response("describe_table", answer, {"TableName": "Stubbed"})
    # The check after the plan.
    stubber.add_response("describe_table", settled, {"TableName": "Stubbed"})
    stubber.add_response(
        "describe_time_to_live",
        {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}},
        {"TableName": "Stubbed"},
    )
    report = session.apply_table(protected)
    assert [s.operation for s in report.applied] == ["UpdateTable"]
    assert report.ok
