"""Global indexes that lag behind their table, behind the AWS-like engine.

A Query or Scan of a global index sees a write only ``GsiLag.seconds`` after it, and sees the
item as it was before until then; the table and its local indexes are consistent at once, as
on AWS. The engine's clock stands still unless the test moves it, except in the one test whose
point is real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from lsiorm.testing import AwsLikeEngine, GsiLag
from support.aws_like import Clock, engine_client
from support.tables import create_and_wait

Start = Callable[..., AwsLikeEngine]


def request(name: str) -> dict[str, Any]:
    """A table keyed PK, SK, with a local index on ``date`` and a global one on ``owner``."""
    return {
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK", "date", "owner")
        ],
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
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ByOwner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }


KEY = {"PK": {"S": "doc"}, "SK": {"S": "1"}}


def owned_by(client: Any, table: str, owner: str) -> list[str]:
    """The versions of the items the global index lists under ``owner``."""
    answer = client.query(
        TableName=table,
        IndexName="ByOwner",
        KeyConditionExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": {"S": owner}},
    )
    return [i["v"]["N"] for i in answer["Items"]]


def dated(client: Any, table: str) -> list[str]:
    answer = client.query(
        TableName=table,
        IndexName="ByDate",
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": {"S": "doc"}},
    )
    return [i["v"]["N"] for i in answer["Items"]]


def stored(client: Any, table: str) -> str | None:
    item = client.get_item(TableName=table, Key=KEY, ConsistentRead=True).get("Item")
    return None if item is None else str(item["v"]["N"])


def doc(v: int, owner: str) -> dict[str, Any]:
    return {**KEY, "v": {"N": str(v)}, "owner": {"S": owner}, "date": {"S": f"2025-0{v}"}}


def test_a_global_index_shows_each_state_of_an_item_one_lag_late(
    aws_like: Start, table_name: str
) -> None:
    clock = Clock()
    engine = aws_like(gsi_lag=GsiLag(seconds=2.0), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, request(table_name))
    client.put_item(TableName=table_name, Item=doc(1, "ann"))
    # The table and its local index at once; the global index not yet.
    assert stored(client, table_name) == "1"
    assert dated(client, table_name) == ["1"]
    assert owned_by(client, table_name, "ann") == []
    clock.advance(1.99)
    assert owned_by(client, table_name, "ann") == []
    clock.advance(0.01)
    assert owned_by(client, table_name, "ann") == ["1"]
    # A move to another index key: the old entry stays, the new one waits.
    client.put_item(TableName=table_name, Item=doc(2, "bob"))
    assert owned_by(client, table_name, "ann") == ["1"]
    assert owned_by(client, table_name, "bob") == []
    clock.advance(2.0)
    assert owned_by(client, table_name, "ann") == []
    assert owned_by(client, table_name, "bob") == ["2"]
    # A delete: the index still lists the item for a lag.
    client.delete_item(TableName=table_name, Key=KEY)
    assert stored(client, table_name) is None
    assert dated(client, table_name) == []
    assert owned_by(client, table_name, "bob") == ["2"]
    scan = client.scan(TableName=table_name, IndexName="ByOwner")
    assert [i["v"]["N"] for i in scan["Items"]] == ["2"]  # a Scan of the index too
    clock.advance(2.0)
    assert owned_by(client, table_name, "bob") == []
    assert engine.stats["gsi_reads"] >= 9


def test_every_state_read_before_the_lag_is_applied_in_write_order(
    aws_like: Start, table_name: str
) -> None:
    clock = Clock()
    engine = aws_like(gsi_lag=GsiLag(seconds=1.0), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, request(table_name))
    owners = ["ann", "bob", "cy", "bob", "ann"]
    for v, owner in enumerate(owners, start=1):
        if v > 1:
            clock.advance(0.25)
        client.put_item(TableName=table_name, Item=doc(v, owner))
    # Writes 1, 0.75, 0.5, 0.25 and 0 s ago: the index shows the state of 1 s ago (v1).
    assert (owned_by(client, table_name, "ann"), owned_by(client, table_name, "bob")) == (["1"], [])
    clock.advance(0.5)  # the state written 0.5 s after the first
    assert owned_by(client, table_name, "cy") == ["3"]
    assert owned_by(client, table_name, "ann") == []
    clock.advance(0.5)
    assert owned_by(client, table_name, "ann") == ["5"]
    assert owned_by(client, table_name, "cy") == []


def test_answers_name_the_table_and_the_shadow_stays_hidden(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    engine = aws_like(gsi_lag=GsiLag(seconds=0.0))
    client = engine_client(engine)
    create_and_wait(client, request(table_name))
    client.put_item(TableName=table_name, Item=doc(1, "ann"))
    answer = client.query(
        TableName=table_name,
        IndexName="ByOwner",
        KeyConditionExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": {"S": "ann"}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert answer["ConsumedCapacity"]["TableName"] == table_name
    with pytest.raises(ClientError) as refused:
        client.query(
            TableName=table_name,
            IndexName="ByOwner",
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "ann"}},
            ConsistentRead=True,  # refused on a global index, as on AWS
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert ".lsiorm-gsi-lag" not in str(refused.value.response)
    names = client.list_tables()["TableNames"]
    assert table_name in names
    assert not [n for n in names if n.endswith(".lsiorm-gsi-lag")]
    direct = boto3.client("dynamodb", endpoint_url=endpoint_url)
    assert f"{table_name}.lsiorm-gsi-lag" in _all_tables(direct)  # the shadow, upstream
    client.delete_table(TableName=table_name)
    assert not [n for n in _all_tables(direct) if n.startswith(f"{table_name}.")]


def _all_tables(client: Any) -> list[str]:
    names: list[str] = []
    params: dict[str, Any] = {}
    while True:
        page = client.list_tables(**params)
        names += page["TableNames"]
        if "LastEvaluatedTableName" not in page:
            return names
        params["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]


def test_a_table_that_held_items_before_the_engine_is_copied_when_first_needed(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    direct = boto3.client("dynamodb", endpoint_url=endpoint_url)
    create_and_wait(direct, request(table_name))
    direct.put_item(TableName=table_name, Item=doc(1, "ann"))
    engine = aws_like(gsi_lag=GsiLag(seconds=30.0))
    client = engine_client(engine)
    assert owned_by(client, table_name, "ann") == ["1"]
    client.put_item(TableName=table_name, Item=doc(2, "ann"))
    assert owned_by(client, table_name, "ann") == ["1"]  # the write through the engine lags
    engine.stop()
    assert not [n for n in _all_tables(direct) if n.startswith(f"{table_name}.")]
    direct.delete_table(TableName=table_name)


def test_the_lag_runs_on_real_time(aws_like: Start, table_name: str) -> None:
    engine = aws_like(gsi_lag=GsiLag(seconds=0.3))
    client = engine_client(engine)
    create_and_wait(client, request(table_name))
    client.put_item(TableName=table_name, Item=doc(1, "ann"))
    written = time.monotonic()
    seen = owned_by(client, table_name, "ann")
    if time.monotonic() - written < 0.3:  # a slow machine may take the whole lag to answer
        assert seen == []
    time.sleep(0.35)
    assert owned_by(client, table_name, "ann") == ["1"]
