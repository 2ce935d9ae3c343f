"""Transaction conflicts behind the AWS-like engine, as boto3 and lsiorm see them.

``TransactionConflicts(hold=...)`` keeps a transaction's items held after it is applied, and
the engine's clock stands still unless the test moves it: every overlap below is certain.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from lsiorm import Entity, Put, RetryPolicy, Session, Table
from lsiorm.errors import TransactionCanceledError, TransactionConflictError
from lsiorm.testing import AwsLikeEngine, TransactionConflicts
from support.aws_like import Clock, engine_client
from support.tables import create_and_wait, table_request

Start = Callable[..., AwsLikeEngine]


def item(pk: str, v: int = 1) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "I"}, "v": {"N": str(v)}}


def put(table: str, pk: str, v: int = 1) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": item(pk, v)}}


def reasons(exc: pytest.ExceptionInfo[ClientError]) -> list[str]:
    return [r["Code"] for r in exc.value.response["CancellationReasons"]]


def stored(endpoint_url: str, table: str, pk: str) -> str | None:
    direct = boto3.client("dynamodb", endpoint_url=endpoint_url)
    found = direct.get_item(
        TableName=table, Key={"PK": {"S": pk}, "SK": {"S": "I"}}, ConsistentRead=True
    ).get("Item")
    return None if found is None else str(found["v"]["N"])


def test_a_transaction_meeting_a_held_item_is_cancelled_at_its_position(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    clock = Clock()
    engine = aws_like(conflicts=TransactionConflicts(hold=5.0), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.transact_write_items(TransactItems=[put(table_name, "a"), put(table_name, "b")])
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(
            TransactItems=[put(table_name, "c"), put(table_name, "b", 2), put(table_name, "d")]
        )
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert reasons(cancelled) == ["None", "TransactionConflict", "None"]
    assert stored(endpoint_url, table_name, "c") is None  # nothing applied
    assert stored(endpoint_url, table_name, "b") == "1"
    # A transactional read of a held item is cancelled too; a plain read is not.
    with pytest.raises(ClientError) as read:
        client.transact_get_items(
            TransactItems=[
                {"Get": {"TableName": table_name, "Key": {"PK": {"S": "a"}, "SK": {"S": "I"}}}}
            ]
        )
    assert reasons(read) == ["TransactionConflict"]
    assert client.get_item(TableName=table_name, Key={"PK": {"S": "a"}, "SK": {"S": "I"}})["Item"]
    clock.advance(5.0)
    client.transact_write_items(TransactItems=[put(table_name, "c"), put(table_name, "b", 2)])
    assert stored(endpoint_url, table_name, "b") == "2"
    assert engine.stats["conflicts"] == 2


def test_a_plain_write_of_a_held_item_gets_a_conflict_exception(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    clock = Clock()
    engine = aws_like(conflicts=TransactionConflicts(hold=1.0), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.transact_write_items(TransactItems=[put(table_name, "a")])
    for write in (
        lambda: client.put_item(TableName=table_name, Item=item("a", 2)),
        lambda: client.delete_item(TableName=table_name, Key={"PK": {"S": "a"}, "SK": {"S": "I"}}),
        lambda: client.update_item(
            TableName=table_name,
            Key={"PK": {"S": "a"}, "SK": {"S": "I"}},
            UpdateExpression="SET v = :v",
            ExpressionAttributeValues={":v": {"N": "3"}},
        ),
    ):
        with pytest.raises(ClientError) as refused:
            write()
        assert refused.value.response["Error"]["Code"] == "TransactionConflictException"
    assert stored(endpoint_url, table_name, "a") == "1"
    # A batch's entries are not refused (AWS does not document it).
    client.batch_write_item(RequestItems={table_name: [{"PutRequest": {"Item": item("a", 4)}}]})
    assert stored(endpoint_url, table_name, "a") == "4"
    clock.advance(1.0)
    client.put_item(TableName=table_name, Item=item("a", 5))


def test_lsiorm_types_both_conflicts(aws_like: Start, table_name: str) -> None:
    clock = Clock()
    engine = aws_like(conflicts=TransactionConflicts(hold=1.0), clock=clock)
    table = Table(table_name, "PK", "SK")

    class Doc(Entity, table=table, keys={"PK": "D#{n:03d}", "SK": "I"}):
        n: int
        v: int = 0

    with Session(
        endpoint_url=engine.endpoint_url,
        region_name="us-east-1",
        retry=RetryPolicy(max_attempts=1),
    ) as session:
        session.create_table(table)
        session.transact_write([Put(Doc(n=1)), Put(Doc(n=2))])
        with pytest.raises(TransactionCanceledError) as cancelled:
            session.transact_write([Put(Doc(n=3)), Put(Doc(n=2, v=1))])
        assert [r.code for r in cancelled.value.reasons] == ["None", "TransactionConflict"]
        with pytest.raises(TransactionConflictError):
            session.put(Doc(n=1, v=1))
        clock.advance(1.0)
        session.put(Doc(n=1, v=1))
        assert session.get(Doc, n=1, consistent=True) == Doc(n=1, v=1)


def test_transactions_in_flight_at_once_conflict_on_real_time(
    aws_like: Start, table_name: str
) -> None:
    # Held 5 s past its answer: the ten threads meet the one applied first.
    engine = aws_like(conflicts=TransactionConflicts(hold=5.0))
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    outcomes: list[str] = []
    gate = threading.Barrier(10)

    def write(n: int) -> None:
        own = engine_client(engine)
        gate.wait()
        try:
            own.transact_write_items(TransactItems=[put(table_name, "hot", n)])
            outcomes.append("applied")
        except ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("applied") == 1
    assert outcomes.count("TransactionCanceledException") == 9


def test_a_rate_cancels_a_seeded_share_of_transactions(aws_like: Start, table_name: str) -> None:
    engine = aws_like(conflicts=TransactionConflicts(rate=0.5, seed=3))
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    codes: list[list[str]] = []
    for n in range(40):
        try:
            client.transact_write_items(TransactItems=[put(table_name, f"i{n}")])
        except ClientError as exc:
            codes.append([r["Code"] for r in exc.response["CancellationReasons"]])
    cancelled = len(codes)
    assert codes == [["TransactionConflict"]] * cancelled
    assert 8 < cancelled < 32
    assert engine.stats["conflicts"] == cancelled
