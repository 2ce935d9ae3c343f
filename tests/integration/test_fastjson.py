"""The fast response path on the engines: responses and errors as botocore's, sync and async."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from lsiorm import Table
from lsiorm._io import fastjson
from support.outcomes import typed
from support.tables import created

BINARY_ITEM: dict[str, Any] = {
    "pk": {"S": "P"},
    "sk": {"S": "bin"},
    "b": {"B": b"\x00\x01\xfe\xff"},
    "bs": {"BS": [b"a", b"\x80\x81"]},
    "n": {"N": "1.50"},
    "ns": {"NS": ["1", "2.5"]},
    "ss": {"SS": ["x", "y"]},
    "m": {"M": {"inner": {"L": [{"B": b"zz"}, {"NULL": True}, {"BOOL": False}]}}},
    "text": {"S": "é ü 漢字 \u2028"},
}


def client_for(endpoint_url: str, *, fast: bool) -> Any:
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    if fast:
        fastjson.install(client)
    return client


def without_metadata(response: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in response.items() if key != "ResponseMetadata"}


@pytest.fixture
def filled_table(dynamodb_client: Any, table_name: str) -> Iterator[str]:
    with created(dynamodb_client, Table(table_name, "pk", "sk")):
        dynamodb_client.put_item(TableName=table_name, Item=BINARY_ITEM)
        for i in range(30):
            dynamodb_client.put_item(
                TableName=table_name,
                Item={
                    "pk": {"S": "P"},
                    "sk": {"S": f"item{i:03d}"},
                    "n": {"N": str(i * 7)},
                    "blob": {"B": bytes([i]) * 3},
                },
            )
        yield table_name


def read_calls(table: str) -> list[tuple[str, dict[str, Any]]]:
    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    return [
        ("get_item", {"TableName": table, "Key": key, "ReturnConsumedCapacity": "TOTAL"}),
        ("get_item", {"TableName": table, "Key": {"pk": {"S": "P"}, "sk": {"S": "none"}}}),
        (
            "query",
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "P"}},
                "ReturnConsumedCapacity": "INDEXES",
            },
        ),
        (
            "query",
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "P"}},
                "Limit": 7,
            },
        ),
        ("scan", {"TableName": table, "ReturnConsumedCapacity": "TOTAL"}),
        (
            "batch_get_item",
            {
                "RequestItems": {
                    table: {"Keys": [key, {"pk": {"S": "P"}, "sk": {"S": "item003"}}]}
                },
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
    ]


def write_calls(table: str) -> list[tuple[str, dict[str, Any]]]:
    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    return [
        (
            "put_item",
            {
                "TableName": table,
                "Item": BINARY_ITEM,
                "ReturnValues": "ALL_OLD",
                "ReturnConsumedCapacity": "TOTAL",
                "ReturnItemCollectionMetrics": "SIZE",
            },
        ),
        (
            "update_item",
            {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET #n = :n",
                "ExpressionAttributeNames": {"#n": "n"},
                "ExpressionAttributeValues": {":n": {"N": "1.50"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        (
            "batch_write_item",
            {
                "RequestItems": {table: [{"PutRequest": {"Item": BINARY_ITEM}}]},
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
        ("delete_item", {"TableName": table, "Key": key, "ReturnValues": "ALL_OLD"}),
    ]


def restore(plain: Any, table: str) -> None:
    """Put the binary item back, so each write call sees the same table state."""
    plain.put_item(TableName=table, Item=BINARY_ITEM)


def failing_call(table: str) -> tuple[str, dict[str, Any]]:
    return (
        "put_item",
        {
            "TableName": table,
            "Item": BINARY_ITEM,
            "ConditionExpression": "attribute_not_exists(pk)",
        },
    )


def error_of(method: Any, params: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        method(**params)
    return without_metadata(info.value.response)


def test_sync_client_matches_botocore_on_the_engine(endpoint_url: str, filled_table: str) -> None:
    plain, fast = client_for(endpoint_url, fast=False), client_for(endpoint_url, fast=True)
    stats = fastjson.fast_path_of(fast)
    assert stats is not None
    for method, params in read_calls(filled_table) + write_calls(filled_table):
        got = without_metadata(getattr(fast, method)(**params))
        restore(plain, filled_table)
        want = without_metadata(getattr(plain, method)(**params))
        restore(plain, filled_table)
        assert typed(got) == typed(want), method
    assert stats.stats.parsed == len(read_calls(filled_table)) + len(write_calls(filled_table))
    got_item = fast.get_item(TableName=filled_table, Key={"pk": {"S": "P"}, "sk": {"S": "bin"}})
    assert got_item["Item"]["b"] == {"B": b"\x00\x01\xfe\xff"}
    assert sorted(got_item["Item"]["bs"]["BS"]) == [b"a", b"\x80\x81"]
    assert got_item["Item"]["m"]["M"]["inner"]["L"][0] == {"B": b"zz"}
    method, params = failing_call(filled_table)
    assert error_of(getattr(fast, method), params) == error_of(getattr(plain, method), params)


def test_other_before_parse_handlers_still_see_the_body(
    endpoint_url: str, filled_table: str
) -> None:
    fast = client_for(endpoint_url, fast=True)
    seen: list[bytes] = []

    def spy(response_dict: dict[str, Any], **kwargs: Any) -> None:
        seen.append(response_dict["body"])

    fast.meta.events.register("before-parse.dynamodb.Query", spy)
    fast.meta.events.register("before-parse", spy)
    response = fast.query(
        TableName=filled_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "P"}},
    )
    assert len(seen) == 2
    assert all(json.loads(body)["Count"] == response["Count"] == 31 for body in seen)


def test_a_corrupted_body_checksum_falls_back_on_the_engine(
    endpoint_url: str, filled_table: str
) -> None:
    fast = client_for(endpoint_url, fast=True)
    stats = fastjson.fast_path_of(fast)
    assert stats is not None

    def corrupt(response_dict: dict[str, Any], **kwargs: Any) -> None:
        assert response_dict["headers"].get("X-Amz-CRC32") is not None  # both engines send it
        response_dict["headers"]["x-amz-crc32"] = "1"

    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    fast.get_item(TableName=filled_table, Key=key)
    assert (stats.stats.parsed, stats.stats.fallbacks) == (1, 0)
    fast.meta.events.register("before-parse.dynamodb.GetItem", corrupt)
    got = fast.get_item(TableName=filled_table, Key=key)
    assert (stats.stats.parsed, stats.stats.fallbacks) == (1, 1)
    assert got["Item"]["b"] == {"B": b"\x00\x01\xfe\xff"}


async def test_async_client_matches_botocore_on_the_engine(
    endpoint_url: str, filled_table: str
) -> None:
    aioboto3 = pytest.importorskip("aioboto3", reason="needs the async extra")
    plain = client_for(endpoint_url, fast=False)
    async with aioboto3.Session().client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    ) as client:
        fastjson.install(client)
        fast = fastjson.fast_path_of(client)
        assert fast is not None
        calls = read_calls(filled_table) + write_calls(filled_table)
        for method, params in calls:
            got = without_metadata(await getattr(client, method)(**params))
            restore(plain, filled_table)
            want = without_metadata(getattr(plain, method)(**params))
            restore(plain, filled_table)
            assert typed(got) == typed(want), method
        assert fast.stats.parsed == len(calls)
        method, params = failing_call(filled_table)
        with pytest.raises(ClientError) as info:
            await getattr(client, method)(**params)
        assert without_metadata(info.value.response) == error_of(getattr(plain, method), params)
