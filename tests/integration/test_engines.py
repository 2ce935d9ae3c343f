"""The test engines serve what lsiorm relies on: tables with an LSI, and LSI queries."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from support.tables import created, table_request

LSI = "by_rank"


@pytest.fixture
def lsi_table(dynamodb_client: Any, table_name: str) -> Iterator[str]:
    """A fresh table with string keys pk/sk and one LSI on the string attribute ``rank``."""
    request = table_request(
        table_name,
        "pk",
        "sk",
        indexed=["rank"],
        LocalSecondaryIndexes=[
            {
                "IndexName": LSI,
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "rank", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    with created(dynamodb_client, request) as name:
        yield name


def test_lsi_query_orders_by_the_index_sort_key(dynamodb_client: Any, lsi_table: str) -> None:
    # sk order and rank order disagree on purpose, so a query that ignored the LSI would show.
    ranks = {"a": "r3", "b": "r1", "c": "r4", "d": "r0", "e": "r2"}
    for sk, rank in ranks.items():
        dynamodb_client.put_item(
            TableName=lsi_table,
            Item={"pk": {"S": "P"}, "sk": {"S": sk}, "rank": {"S": rank}},
        )
    dynamodb_client.put_item(
        TableName=lsi_table, Item={"pk": {"S": "other"}, "sk": {"S": "a"}, "rank": {"S": "r9"}}
    )

    response = dynamodb_client.query(
        TableName=lsi_table,
        IndexName=LSI,
        KeyConditionExpression="pk = :pk AND #rank >= :low",
        ExpressionAttributeNames={"#rank": "rank"},
        ExpressionAttributeValues={":pk": {"S": "P"}, ":low": {"S": "r1"}},
    )

    got = [(item["sk"]["S"], item["rank"]["S"]) for item in response["Items"]]
    expected = sorted(((sk, r) for sk, r in ranks.items() if r >= "r1"), key=lambda p: p[1])
    assert got == expected


def test_lsi_rejects_a_number_for_a_string_sort_key(
    backend: str, dynamodb_client: Any, lsi_table: str
) -> None:
    if backend == "moto":
        pytest.skip("moto accepts index-key type mismatches; DynamoDB Local and AWS reject them")
    item = {"pk": {"S": "P"}, "sk": {"S": "a"}, "rank": {"N": "5"}}

    with pytest.raises(ClientError) as caught:
        dynamodb_client.put_item(TableName=lsi_table, Item=item)

    assert caught.value.response["Error"]["Code"] == "ValidationException"
    stored = dynamodb_client.get_item(
        TableName=lsi_table, Key={"pk": {"S": "P"}, "sk": {"S": "a"}}, ConsistentRead=True
    )
    assert "Item" not in stored


def _racing_create(
    client: Any, table: str, start: threading.Barrier, round_number: int, racer: int
) -> str:
    """Create the round's item unless it exists; return "won" or the error code."""
    start.wait()
    try:
        client.put_item(
            TableName=table,
            Item={
                "pk": {"S": "race"},
                "sk": {"S": f"round-{round_number}"},
                "rank": {"S": f"racer-{racer}"},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return "won"


def test_concurrent_conditional_creates_of_one_item_let_exactly_one_win(
    dynamodb_client: Any, lsi_table: str
) -> None:
    """A conditional write is applied whole: of many racing creates of one item, one wins.

    moto's own server checks the condition and then writes, so two racers could both win;
    lsiorm's MotoServer answers one request at a time, as DynamoDB Local and DynamoDB apply
    each write whole.
    """
    racers = 8
    switch = sys.getswitchinterval()
    # Threads of this process (moto's server among them) switch far more often than the
    # default 5 ms, so racing requests interleave inside moto's steps if nothing stops them.
    sys.setswitchinterval(1e-6)
    try:
        outcomes_by_round = _race(dynamodb_client, lsi_table, racers, rounds=40)
    finally:
        sys.setswitchinterval(switch)
    for outcomes in outcomes_by_round:
        assert outcomes.count("won") == 1, outcomes
        assert set(outcomes) == {"won", "ConditionalCheckFailedException"}


def _race(client: Any, table: str, racers: int, *, rounds: int) -> list[list[str]]:
    """Each round, ``racers`` threads create one item at once; what each got, by round."""
    by_round = []
    with ThreadPoolExecutor(racers) as pool:
        for round_number in range(rounds):
            start = threading.Barrier(racers)
            runs = [
                pool.submit(_racing_create, client, table, start, round_number, racer)
                for racer in range(racers)
            ]
            by_round.append([run.result() for run in runs])
    return by_round
