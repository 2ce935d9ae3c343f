"""The parameters of lsiorm's own reads on stored attributes, compared as dictionaries."""

from __future__ import annotations

import pytest

from lsiorm._requests.reads import consistent_get, item_scan, partition_query, projection
from lsiorm.errors import ValidationError

PK = {"S": "USER#1"}


def test_a_partition_query_reads_one_partition() -> None:
    assert partition_query("Things", "PK", PK, consistent=True) == {
        "TableName": "Things",
        "KeyConditionExpression": "#n0 = :v0",
        "ExpressionAttributeNames": {"#n0": "PK"},
        "ExpressionAttributeValues": {":v0": PK},
        "ConsistentRead": True,
    }


def test_a_partition_query_with_a_prefix_reads_the_sort_keys_that_begin_with_it() -> None:
    params = partition_query("Jobs", "PK", PK, sort_key="SK", prefix={"S": "job#"})
    assert params == {
        "TableName": "Jobs",
        "KeyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "SK"},
        "ExpressionAttributeValues": {":v0": PK, ":v1": {"S": "job#"}},
    }


def test_a_prefix_of_a_number_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValidationError) as caught:
        partition_query("Jobs", "PK", PK, sort_key="SK", prefix={"N": "1"})
    assert caught.value.rule == "condition.operand-type"


def test_a_scan_of_every_item_has_no_expression() -> None:
    assert item_scan("Things", partition_key="PK") == ("Scan", {"TableName": "Things"})


def test_a_scan_of_one_type_lets_the_partition_it_skips_through() -> None:
    skip = {"S": "~lsiorm#jobs"}
    operation, params = item_scan(
        "Things", partition_key="PK", type_attribute="_type", type_name="User", skip=skip
    )
    assert operation == "Scan"
    assert params == {
        "TableName": "Things",
        "FilterExpression": "#n0 = :v0 OR #n1 = :v1",
        "ExpressionAttributeNames": {"#n0": "_type", "#n1": "PK"},
        "ExpressionAttributeValues": {":v0": {"S": "User"}, ":v1": skip},
    }


def test_a_query_of_an_untyped_entity_reads_the_items_without_a_type() -> None:
    operation, params = item_scan(
        "Things",
        partition_key="PK",
        partition=PK,
        type_attribute="_type",
        skip={"S": "~lsiorm#jobs"},  # one partition never reaches the ledger's
        consistent=True,
    )
    assert operation == "Query"
    assert params == {
        "TableName": "Things",
        "KeyConditionExpression": "#n0 = :v0",
        "FilterExpression": "attribute_not_exists(#n1)",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "_type"},
        "ExpressionAttributeValues": {":v0": PK},
        "ConsistentRead": True,
    }


def test_a_projection_names_each_attribute_once() -> None:
    assert projection(["PK", "SK", "PK", "name"]) == {
        "ProjectionExpression": "#n0, #n1, #n2",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "SK", "#n2": "name"},
    }


def test_a_consistent_get_reads_the_item_as_it_is_now() -> None:
    key = {"PK": PK, "SK": {"S": "A"}}
    params = consistent_get("Things", key)
    assert params == {"TableName": "Things", "Key": key, "ConsistentRead": True}
    assert params["Key"] is not key  # the caller's key is not shared with the request
