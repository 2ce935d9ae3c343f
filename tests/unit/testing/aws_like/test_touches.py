"""What a request touches: items and their positions, and the partition a Query reads."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm.testing.aws_like.tables import TableShape, partition_id
from lsiorm.testing.aws_like.touches import equalities, query_partition, touches


def shape(name: str = "Shop") -> TableShape:
    return TableShape.of(
        {
            "TableName": name,
            "TableArn": f"arn:aws:dynamodb:us-east-1:000000000000:table/{name}",
            "KeySchema": [
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            "LocalSecondaryIndexes": [
                {
                    "IndexName": "ByDate",
                    "KeySchema": [
                        {"AttributeName": "PK", "KeyType": "HASH"},
                        {"AttributeName": "date", "KeyType": "RANGE"},
                    ],
                }
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "ByOwner",
                    "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                },
                {
                    "IndexName": "ByPlace",  # a multi-attribute partition key
                    "KeySchema": [
                        {"AttributeName": "country", "KeyType": "HASH"},
                        {"AttributeName": "city", "KeyType": "HASH"},
                        {"AttributeName": "at", "KeyType": "RANGE"},
                    ],
                },
            ],
        }
    )


def known(name: str) -> TableShape | None:
    return shape(name) if name in ("Shop", "Other") else None


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def test_single_item_requests_touch_their_key() -> None:
    (put,) = (
        touches("PutItem", {"TableName": "Shop", "Item": {**key("a", "1"), "x": {"N": "1"}}}, known)
        or []
    )
    assert (put.kind, put.key, put.position) == ("put", key("a", "1"), 0)
    assert put.item is not None
    assert put.item["x"] == {"N": "1"}
    (update,) = touches("UpdateItem", {"TableName": "Shop", "Key": key("a", "1")}, known) or []
    assert update.kind == "update"
    assert update.changes
    assert update.writes
    (get,) = touches("GetItem", {"TableName": "Shop", "Key": key("a", "1")}, known) or []
    assert get.kind == "get"
    assert not get.writes
    assert put.identity == update.identity == get.identity


def test_batches_and_transactions_touch_one_item_per_entry_in_position_order() -> None:
    batch = {
        "RequestItems": {
            "Shop": [
                {"PutRequest": {"Item": key("a", "1")}},
                {"DeleteRequest": {"Key": key("b", "1")}},
            ],
            "Other": [{"PutRequest": {"Item": key("c", "1")}}],
        }
    }
    found = touches("BatchWriteItem", batch, known) or []
    assert [(t.position, t.table.name, t.kind) for t in found] == [
        (0, "Shop", "put"),
        (1, "Shop", "delete"),
        (2, "Other", "put"),
    ]
    transaction = {
        "TransactItems": [
            {"ConditionCheck": {"TableName": "Shop", "Key": key("a", "1")}},
            {"Update": {"TableName": "Other", "Key": key("b", "2")}},
        ]
    }
    check, update = touches("TransactWriteItems", transaction, known) or []
    assert (check.kind, check.writes, check.changes) == ("check", True, False)
    assert (update.position, update.kind) == (1, "update")
    gets = {"TransactItems": [{"Get": {"TableName": "Shop", "Key": key("a", "1")}}]}
    assert [t.kind for t in touches("TransactGetItems", gets, known) or []] == ["get"]


@pytest.mark.parametrize(
    "params",
    [
        {"TableName": "Missing", "Key": key("a", "1")},  # the upstream engine says why
        {"TableName": "Shop", "Key": {"PK": {"S": "a"}}},  # a key attribute is missing
        {"Key": key("a", "1")},
    ],
)
def test_a_request_that_cannot_be_read_touches_nothing_known(params: dict[str, Any]) -> None:
    assert touches("GetItem", params, known) is None


def test_equalities_are_found_with_names_and_values_either_way_round() -> None:
    values = {":p": {"S": "a"}, ":s": {"S": "b"}, ":lo": {"N": "1"}, ":hi": {"N": "2"}}
    names = {"#pk": "PK", "#sk": "SK"}
    assert equalities("#pk = :p AND #sk = :s", names, values) == {
        "PK": values[":p"],
        "SK": values[":s"],
    }
    assert equalities(":p=#pk", names, values) == {"PK": values[":p"]}
    assert equalities("(PK = :p) AND begins_with(#sk, :s)", names, values) == {"PK": values[":p"]}
    assert equalities("#pk = :p AND #sk BETWEEN :lo AND :hi", names, values) == {"PK": values[":p"]}
    assert equalities("#pk = :p AND #sk >= :lo", names, values) == {"PK": values[":p"]}
    assert equalities("#sk <= :lo", names, values) == {}


def test_a_query_reads_the_partition_of_the_table_local_or_global_index_it_names() -> None:
    table = shape()
    base = {
        "KeyConditionExpression": "#k = :v",
        "ExpressionAttributeNames": {"#k": "PK"},
        "ExpressionAttributeValues": {":v": {"S": "a"}},
    }
    assert query_partition(base, table) == (None, partition_id(({"S": "a"},)))
    assert query_partition({**base, "IndexName": "ByDate"}, table) == (
        None,
        partition_id(({"S": "a"},)),
    )  # a local index shares its table's partitions
    owner = {
        "IndexName": "ByOwner",
        "KeyConditionExpression": "owner = :o",
        "ExpressionAttributeValues": {":o": {"S": "ann"}},
    }
    assert query_partition(owner, table) == ("ByOwner", partition_id(({"S": "ann"},)))
    place = {
        "IndexName": "ByPlace",
        "KeyConditionExpression": "#c = :c AND city = :t AND #a > :a",
        "ExpressionAttributeNames": {"#c": "country", "#a": "at"},
        "ExpressionAttributeValues": {":c": {"S": "NO"}, ":t": {"S": "Oslo"}, ":a": {"N": "1"}},
    }
    assert query_partition(place, table) == (
        "ByPlace",
        partition_id(({"S": "NO"}, {"S": "Oslo"})),
    )
    half = {**place, "KeyConditionExpression": "#c = :c"}
    assert query_partition(half, table) == ("ByPlace", None)
    legacy = {
        "KeyConditions": {
            "PK": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]},
            "SK": {"ComparisonOperator": "GT", "AttributeValueList": [{"S": "b"}]},
        }
    }
    assert query_partition(legacy, table) == (None, partition_id(({"S": "a"},)))


def test_index_entries_need_every_key_attribute() -> None:
    table = shape()
    place = table.global_indexes["ByPlace"]
    full = {"country": {"S": "NO"}, "city": {"S": "Oslo"}, "at": {"N": "1"}}
    assert place.partition_of(full) == partition_id(({"S": "NO"}, {"S": "Oslo"}))
    assert place.partition_of({"country": {"S": "NO"}}) is None  # not in the index
    assert place.entry_key({"country": {"S": "NO"}, "city": {"S": "Oslo"}}) is None
    assert place.entry_key(full) is not None
