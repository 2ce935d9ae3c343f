"""Partition limits and on-demand maxima: buckets, reasons and the units charged, against
what AWS documents (ThrottlingReason: resource + operation + limit, and the resource's ARN)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm.testing.aws_like.options import OnDemandMaximum, PartitionLimits
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.tables import TableShape, partition_id
from lsiorm.testing.aws_like.throughput import (
    Access,
    Throughput,
    TokenBucket,
    estimated_units,
    reported_units,
    throttled,
    wire_size,
)
from lsiorm.testing.aws_like.touches import Touch

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/Shop"


def shop(*, max_read: int = -1, max_write: int = -1, index_max: int = -1) -> TableShape:
    return TableShape.of(
        {
            "TableName": "Shop",
            "TableArn": ARN,
            "KeySchema": [
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "ByOwner",
                    "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                    "OnDemandThroughput": {"MaxWriteRequestUnits": index_max},
                }
            ],
            "OnDemandThroughput": {
                "MaxReadRequestUnits": max_read,
                "MaxWriteRequestUnits": max_write,
            },
        }
    )


def pk(value: str) -> str:
    return partition_id(({"S": value},))


# -- token buckets ------------------------------------------------------------------------------


def test_a_bucket_starts_full_refills_continuously_and_holds_its_burst() -> None:
    bucket = TokenBucket(10.0, 1.0, now=0.0)
    assert bucket.level(0.0) == 10.0
    bucket.charge(10.0, 0.0)
    assert not bucket.has_room(0.0)  # empty: refused
    assert bucket.level(0.25) == pytest.approx(2.5)
    assert bucket.has_room(0.25)
    bucket.charge(7.5, 0.25)  # a request let in is charged in full: below zero
    assert bucket.level(0.25) == pytest.approx(-5.0)
    assert not bucket.has_room(0.7)
    assert bucket.level(100.0) == 10.0  # never more than its burst


@given(st.lists(st.tuples(st.floats(0, 2), st.floats(0.1, 5)), max_size=60))
def test_a_bucket_lets_through_no_more_than_its_rate_and_burst(
    requests: list[tuple[float, float]],
) -> None:
    bucket = TokenBucket(10.0, 1.0, now=0.0)
    now = 0.0
    taken = 0.0
    for wait, units in requests:
        now += wait
        if bucket.has_room(now):
            bucket.charge(units, now)
            taken += units
    # What went in beyond the burst and the refill is at most the last request's overdraft.
    assert taken <= 10.0 + 10.0 * now + 5.0


# -- refusals and their reasons -----------------------------------------------------------------


def test_a_hot_key_range_is_refused_and_others_are_not() -> None:
    stats = Tally()
    throughput = Throughput(PartitionLimits(write_units=4, read_units=8), None, stats)
    table = shop()
    hot = Access(0, table, None, True, pk("hot"))
    cold = Access(0, table, None, True, pk("cold"))
    throughput.charge([hot], {("Shop", None): 4.0}, 0.0)
    (refusal,) = throughput.refusals([hot], 0.0)
    assert (refusal.reason, refusal.resource, refusal.on_demand) == (
        "TableWriteKeyRangeThroughputExceeded",
        ARN,
        False,
    )
    assert throughput.refusals([cold], 0.0) == []
    # Reads of the hot partition have a bucket of their own.
    assert throughput.refusals([Access(0, table, None, False, pk("hot"))], 0.0) == []
    assert throughput.refusals([hot], 0.3) == []  # 1.2 units came back
    assert stats["throttled"] == 1
    assert stats["TableWriteKeyRangeThroughputExceeded"] == 1
    assert stats["throttled:Shop"] == 1


@pytest.mark.parametrize(
    ("index", "write", "reason", "resource"),
    [
        (None, True, "TableWriteKeyRangeThroughputExceeded", ARN),
        (None, False, "TableReadKeyRangeThroughputExceeded", ARN),
        ("ByOwner", True, "IndexWriteKeyRangeThroughputExceeded", ARN + "/index/ByOwner"),
        ("ByOwner", False, "IndexReadKeyRangeThroughputExceeded", ARN + "/index/ByOwner"),
    ],
)
def test_each_reason_names_its_resource_operation_and_limit(
    index: str | None, write: bool, reason: str, resource: str
) -> None:
    throughput = Throughput(PartitionLimits(write_units=1, read_units=1), None, Tally())
    access = Access(3, shop(), index, write, pk("x"))
    throughput.charge([access], {("Shop", index): 1.0}, 0.0)
    (refusal,) = throughput.refusals([access], 0.0)
    assert (refusal.position, refusal.reason, refusal.resource) == (3, reason, resource)


def test_a_partition_shares_a_requests_units_with_the_others_of_its_table() -> None:
    throughput = Throughput(PartitionLimits(write_units=2), None, Tally())
    table = shop()
    a, b = Access(0, table, None, True, pk("a")), Access(1, table, None, True, pk("b"))
    throughput.charge([a, b], {("Shop", None): 4.0}, 0.0)  # 2 each: both empty
    assert [r.position for r in throughput.refusals([a, b], 0.0)] == [0, 1]


def test_declared_on_demand_maxima_are_enforced_per_table_and_index() -> None:
    stats = Tally()
    throughput = Throughput(None, OnDemandMaximum(), stats)
    table = shop(max_write=5, index_max=3)
    write = Access(0, table, None, True, pk("a"))
    other = Access(0, table, None, True, pk("b"))
    throughput.charge([write], {("Shop", None): 5.0}, 0.0)
    (refusal,) = throughput.refusals([other], 0.0)  # the whole table is at its maximum
    assert (refusal.reason, refusal.on_demand) == ("TableWriteMaxOnDemandThroughputExceeded", True)
    assert throughput.refusals([Access(0, table, None, False, pk("a"))], 0.0) == []  # no read max
    index = Access(0, table, "ByOwner", True, pk("o"))
    throughput.charge([index], {("Shop", "ByOwner"): 3.0}, 0.0)
    (refusal,) = throughput.refusals([index], 0.0)
    assert refusal.reason == "IndexWriteMaxOnDemandThroughputExceeded"
    assert refusal.resource == ARN + "/index/ByOwner"


def test_an_option_sets_a_maximum_for_tables_that_declare_none() -> None:
    throughput = Throughput(None, OnDemandMaximum(read_units=2), Tally())
    read = Access(0, shop(), None, False, None)  # a Scan: no partition, the table's maximum
    assert throughput.refusals([read], 0.0) == []
    throughput.charge([read], {("Shop", None): 2.0}, 0.0)
    (refusal,) = throughput.refusals([read], 0.0)
    assert refusal.reason == "TableReadMaxOnDemandThroughputExceeded"
    declared = shop(max_read=100)
    throughput.forget("Shop")
    assert throughput.refusals([Access(0, declared, None, False, None)], 0.0) == []


def test_the_errors_have_the_shapes_botocore_reads() -> None:
    key_range = throttled(
        [
            _refusal(0, "TableWriteKeyRangeThroughputExceeded", ARN, False),
            _refusal(1, "TableWriteKeyRangeThroughputExceeded", ARN, False),
        ]
    )
    body = json.loads(key_range.body())
    assert body["__type"].endswith("#ProvisionedThroughputExceededException")
    assert body["ThrottlingReasons"] == [
        {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN}
    ]
    on_demand = json.loads(
        throttled(
            [
                _refusal(0, "TableWriteKeyRangeThroughputExceeded", ARN, False),
                _refusal(1, "TableWriteMaxOnDemandThroughputExceeded", ARN, True),
            ]
        ).body()
    )
    assert on_demand["__type"].endswith("#ThrottlingException")
    assert on_demand["throttlingReasons"] == [
        {"reason": "TableWriteMaxOnDemandThroughputExceeded", "resource": ARN}
    ]


def _refusal(position: int, reason: str, resource: str, on_demand: bool) -> Any:
    from lsiorm.testing.aws_like.throughput import Refusal

    return Refusal(position, reason, resource, on_demand)


# -- units --------------------------------------------------------------------------------------


def test_reported_units_charge_local_indexes_to_the_table() -> None:
    single = {
        "TableName": "Shop",
        "CapacityUnits": 4.0,
        "Table": {"CapacityUnits": 1.0},
        "LocalSecondaryIndexes": {"ByDate": {"CapacityUnits": 1.0}},
        "GlobalSecondaryIndexes": {"ByOwner": {"CapacityUnits": 2.0}},
    }
    assert reported_units(single) == {("Shop", None): 2.0, ("Shop", "ByOwner"): 2.0}
    listed = [
        {"TableName": "Shop", "CapacityUnits": 2.0, "Table": {"CapacityUnits": 2.0}},
        {"TableName": "Other", "CapacityUnits": 1.0},
    ]
    assert reported_units(listed) == {("Shop", None): 2.0, ("Other", None): 1.0}
    assert reported_units(None) == {}


def item(owner: str | None, body: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = {"PK": {"S": "p"}, "SK": {"S": "s"}, "body": {"S": "x" * body}}
    if owner is not None:
        found["owner"] = {"S": owner}
    return found


def test_estimated_write_units_follow_the_size_model() -> None:
    table = shop()
    put = Touch(0, table, {"PK": {"S": "p"}, "SK": {"S": "s"}}, "put", item("ann", 2000))
    units = estimated_units("PutItem", {}, {}, [put])
    assert units == {("Shop", None): 2, ("Shop", "ByOwner"): 2}  # 2 KB: two units each
    moved = Touch(0, table, put.key, "update", before=item("ann"), after=item("bob"))
    assert estimated_units("UpdateItem", {}, {}, [moved]) == {
        ("Shop", None): 1,
        ("Shop", "ByOwner"): 2,  # the old entry deleted, the new one written
    }
    gone = Touch(0, table, put.key, "delete", before=item(None, 5000))
    assert estimated_units("DeleteItem", {}, {}, [gone]) == {("Shop", None): 5}
    in_transaction = estimated_units("TransactWriteItems", {}, {}, [gone])
    assert in_transaction == {("Shop", None): 10}  # transactions cost twice


def test_estimated_read_units_come_from_the_items_returned() -> None:
    table = shop()
    answer = {"Items": [item("a", 3000), item("a", 3000)]}
    assert estimated_units("Query", {"IndexName": "ByOwner"}, answer, [], table) == {
        ("Shop", "ByOwner"): 1.0  # 6 KB eventually consistent: 2 units / 2
    }
    assert estimated_units("Query", {"ConsistentRead": True}, {"Items": []}, [], table) == {
        ("Shop", None): 1.0  # at least one unit
    }
    get = Touch(0, table, {"PK": {"S": "p"}, "SK": {"S": "s"}}, "get")
    assert estimated_units("GetItem", {}, {"Item": item("a", 9000)}, [get]) == {("Shop", None): 1.5}


def test_binary_values_are_sized_as_bytes_not_base64() -> None:
    assert wire_size({"b": {"B": "AAECAw=="}}) == 1 + 4
    assert wire_size({"b": {"BS": ["AAE=", "AA=="]}}) == 1 + 3
    assert wire_size(None) == 0
