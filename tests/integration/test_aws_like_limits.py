"""Partition limits and on-demand maxima behind the AWS-like engine, as boto3 and lsiorm see them.

The engine's clock stands still in these tests, so a bucket never refills unless the test moves
the clock: each refusal happens at exactly the request the limits say. Every refusal is checked
for what AWS sends (the exception, its ``ThrottlingReasons`` as botocore parses them, the
resource's ARN) and for what it must not do (apply anything).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.session import get_session

from lsiorm import Entity, OnDemandThroughput, Put, RetryPolicy, Session, Table
from lsiorm.errors import ThrottledError, TransactionCanceledError
from lsiorm.testing import AwsLikeEngine, OnDemandMaximum, PartitionLimits
from support.aws_like import Clock, engine_client
from support.tables import create_and_wait, table_request

Start = Callable[..., AwsLikeEngine]

_MODEL = get_session().get_service_model("dynamodb")
if "ThrottlingReasons" not in _MODEL.shape_for("ProvisionedThroughputExceededException").members:
    pytest.skip(
        "this botocore predates ThrottlingReasons in its DynamoDB model", allow_module_level=True
    )

OWNER_INDEX = {
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "ByOwner",
            "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        }
    ]
}


NO_RETRY = RetryPolicy(max_attempts=1)


def declared(name: str) -> tuple[Table, Any]:
    """A table of boxes whose items are keyed ``P#<pk>`` and ``S#<sk>``."""
    table = Table(name, "PK", "SK")

    class Box(Entity, table=table, keys={"PK": "P#{pk}", "SK": "S#{sk}"}):
        pk: str
        sk: str

    return table, Box


def key(pk: str, sk: str = "I") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def put(pk: str, sk: str = "I", **more: str) -> dict[str, Any]:
    return {**key(pk, sk), **{k: {"S": v} for k, v in more.items()}}


def table_arn(client: Any, name: str) -> str:
    arn: str = client.describe_table(TableName=name)["Table"]["TableArn"]
    return arn


#: Where botocore puts each exception's reasons (the names of its DynamoDB model).
REASONS = {
    "ProvisionedThroughputExceededException": "ThrottlingReasons",
    "ThrottlingException": "throttlingReasons",
}


def refusal(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, list[dict[str, str]]]:
    """The error code and the reasons, read where botocore puts them for that code."""
    response = exc.value.response
    code = response["Error"]["Code"]
    return code, response[REASONS[code]]


def stored(endpoint_url: str, table: str, item_key: dict[str, Any]) -> bool:
    """Whether the upstream engine itself holds the item (read past the engine)."""
    direct = boto3.client("dynamodb", endpoint_url=endpoint_url)
    return "Item" in direct.get_item(TableName=table, Key=item_key, ConsistentRead=True)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_hot_partition_is_refused_with_the_reason_and_resource_aws_sends(
    aws_like: Start, table_name: str, clock: Clock, endpoint_url: str
) -> None:
    engine = aws_like(partition_limits=PartitionLimits(write_units=3), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    for n in range(3):
        client.put_item(TableName=table_name, Item=put("hot", str(n)))
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=table_name, Item=put("hot", "3"))
    assert refusal(refused) == (
        "ProvisionedThroughputExceededException",
        [
            {
                "reason": "TableWriteKeyRangeThroughputExceeded",
                "resource": table_arn(client, table_name),
            }
        ],
    )
    assert not stored(endpoint_url, table_name, key("hot", "3"))  # nothing applied
    client.put_item(TableName=table_name, Item=put("cold"))  # another key range is not hot
    clock.advance(1 / 3)  # one unit back
    client.put_item(TableName=table_name, Item=put("hot", "3"))
    assert stored(endpoint_url, table_name, key("hot", "3"))
    assert engine.stats["TableWriteKeyRangeThroughputExceeded"] == 1


def test_reads_of_a_hot_partition_are_refused_for_reads(
    aws_like: Start, table_name: str, clock: Clock
) -> None:
    engine = aws_like(partition_limits=PartitionLimits(read_units=2), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.put_item(TableName=table_name, Item=put("hot"))
    for _ in range(2):  # a strongly consistent read of a small item: one unit
        client.get_item(TableName=table_name, Key=key("hot"), ConsistentRead=True)
    with pytest.raises(ClientError) as refused:
        client.query(
            TableName=table_name,
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": {"S": "hot"}},
        )
    assert refusal(refused)[1] == [
        {"reason": "TableReadKeyRangeThroughputExceeded", "resource": table_arn(client, table_name)}
    ]
    client.put_item(TableName=table_name, Item=put("hot", "2"))  # writes have their own units


def test_a_global_indexs_partitions_have_limits_of_their_own(
    aws_like: Start, table_name: str, clock: Clock, endpoint_url: str
) -> None:
    limits = PartitionLimits(write_units=2, read_units=1)
    engine = aws_like(partition_limits=limits, clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK", indexed=["owner"], **OWNER_INDEX))
    index_arn = table_arn(client, table_name) + "/index/ByOwner"
    # Two items in two table partitions, both in the index partition of "ann".
    client.put_item(TableName=table_name, Item=put("a", owner="ann"))
    client.put_item(TableName=table_name, Item=put("b", owner="ann"))
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=table_name, Item=put("c", owner="ann"))
    assert refusal(refused) == (
        "ProvisionedThroughputExceededException",
        [{"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": index_arn}],
    )
    assert not stored(endpoint_url, table_name, key("c"))
    # An update that would take an item's entry out of the hot index partition is refused too.
    with pytest.raises(ClientError):
        client.update_item(
            TableName=table_name,
            Key=key("a"),
            UpdateExpression="SET #o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": "bob"}},
        )
    client.put_item(TableName=table_name, Item=put("c", owner="bob"))
    by_owner = {
        "TableName": table_name,
        "IndexName": "ByOwner",
        "KeyConditionExpression": "#o = :o",
        "ExpressionAttributeNames": {"#o": "owner"},
        "ExpressionAttributeValues": {":o": {"S": "ann"}},
    }
    client.query(**by_owner)
    client.query(**by_owner)  # 0.5 unit each (eventually consistent): the bucket is empty
    with pytest.raises(ClientError) as read:
        client.query(**by_owner)
    assert refusal(read)[1] == [
        {"reason": "IndexReadKeyRangeThroughputExceeded", "resource": index_arn}
    ]


def test_a_batch_gives_back_the_refused_entries_as_unprocessed(
    aws_like: Start, table_name: str, clock: Clock, endpoint_url: str
) -> None:
    engine = aws_like(partition_limits=PartitionLimits(write_units=1, read_units=1), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.put_item(TableName=table_name, Item=put("hot", "0"))  # the hot bucket is empty
    hot = [{"PutRequest": {"Item": put("hot", str(n))}} for n in (1, 2)]
    cold = [{"PutRequest": {"Item": put(f"cold{n}")}} for n in (1, 2)]
    answer = client.batch_write_item(RequestItems={table_name: [hot[0], *cold, hot[1]]})
    assert answer["UnprocessedItems"] == {table_name: hot}
    assert stored(endpoint_url, table_name, key("cold1"))
    assert not stored(endpoint_url, table_name, key("hot", "1"))
    with pytest.raises(ClientError) as all_hot:
        client.batch_write_item(RequestItems={table_name: hot})
    assert refusal(all_hot)[0] == "ProvisionedThroughputExceededException"
    # Reads: the hot partition's read bucket is emptied, then a batch of reads splits the same way.
    client.get_item(TableName=table_name, Key=key("hot", "0"), ConsistentRead=True)
    keys = [key("hot", "0"), key("cold1"), key("cold2")]
    read = client.batch_get_item(RequestItems={table_name: {"Keys": keys, "ConsistentRead": True}})
    assert read["UnprocessedKeys"] == {
        table_name: {"Keys": [key("hot", "0")], "ConsistentRead": True}
    }
    assert sorted(i["PK"]["S"] for i in read["Responses"][table_name]) == ["cold1", "cold2"]


def test_a_transaction_meeting_a_hot_partition_is_cancelled_with_throttling_error(
    aws_like: Start, table_name: str, clock: Clock, endpoint_url: str
) -> None:
    engine = aws_like(partition_limits=PartitionLimits(write_units=1), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.put_item(TableName=table_name, Item=put("hot", "0"))
    actions = [
        {"Put": {"TableName": table_name, "Item": put("cold")}},
        {"Put": {"TableName": table_name, "Item": put("hot", "1")}},
    ]
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=actions)
    response = cancelled.value.response
    assert response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in response["CancellationReasons"]] == ["None", "ThrottlingError"]
    assert not stored(endpoint_url, table_name, key("cold"))  # all or nothing
    # lsiorm types it: a cancellation whose one reason is throttling.
    _table, box = declared(table_name)
    with Session(endpoint_url=engine.endpoint_url, region_name="us-east-1", retry=NO_RETRY) as s:
        s.put(box(pk="hot", sk="1"))  # the partition of P#hot has no unit left
        with pytest.raises(TransactionCanceledError) as typed:
            s.transact_write([Put(box(pk="cold", sk="1")), Put(box(pk="hot", sk="2"))])
    assert [r.code for r in typed.value.reasons] == ["None", "ThrottlingError"]


def test_lsiorm_types_a_refusal_as_a_throttle_carrying_the_reasons(
    aws_like: Start, table_name: str, clock: Clock
) -> None:
    engine = aws_like(partition_limits=PartitionLimits(write_units=1), clock=clock)
    table, box = declared(table_name)
    with Session(
        endpoint_url=engine.endpoint_url, region_name="us-east-1", retry=NO_RETRY
    ) as session:
        session.create_table(table)
        session.put(box(pk="hot", sk="0"))
        with pytest.raises(ThrottledError) as throttled:
            session.put(box(pk="hot", sk="1"))
        assert session.get(box, pk="hot", sk="1", consistent=True) is None  # nothing applied
    assert throttled.value.code == "ProvisionedThroughputExceededException"
    assert throttled.value.response["ThrottlingReasons"] == [
        {
            "reason": "TableWriteKeyRangeThroughputExceeded",
            "resource": f"{table_arn_of(engine, table_name)}",
        }
    ]


def table_arn_of(engine: AwsLikeEngine, name: str) -> str:
    return table_arn(engine_client(engine), name)


def test_an_on_demand_maximum_set_by_the_option_throttles_the_whole_table(
    aws_like: Start, table_name: str, clock: Clock, endpoint_url: str
) -> None:
    engine = aws_like(on_demand=OnDemandMaximum(write_units=2), clock=clock)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    client.put_item(TableName=table_name, Item=put("a"))
    client.put_item(TableName=table_name, Item=put("b"))
    with pytest.raises(ClientError) as refused:
        client.put_item(TableName=table_name, Item=put("c"))  # another partition: the table's max
    assert refusal(refused) == (
        "ThrottlingException",
        [
            {
                "reason": "TableWriteMaxOnDemandThroughputExceeded",
                "resource": table_arn(client, table_name),
            }
        ],
    )
    assert not stored(endpoint_url, table_name, key("c"))
    client.get_item(TableName=table_name, Key=key("a"))  # reads have no maximum here
    _, box = declared(table_name)
    with (
        Session(
            endpoint_url=engine.endpoint_url, region_name="us-east-1", retry=NO_RETRY
        ) as session,
        pytest.raises(ThrottledError) as typed,
    ):
        session.put(box(pk="d", sk="1"))
    assert typed.value.code == "ThrottlingException"
    assert typed.value.response["throttlingReasons"][0]["reason"] == (
        "TableWriteMaxOnDemandThroughputExceeded"
    )


def test_declared_on_demand_maxima_of_a_table_and_its_index_are_enforced(
    aws_like: Start, table_name: str, clock: Clock, backend: str
) -> None:
    if backend == "moto":
        pytest.skip("moto drops OnDemandThroughput from CreateTable: only the option sets one")
    engine = aws_like(on_demand=OnDemandMaximum(), clock=clock)
    client = engine_client(engine)
    request = table_request(
        table_name,
        "PK",
        "SK",
        indexed=["owner"],
        OnDemandThroughput={"MaxReadRequestUnits": 1, "MaxWriteRequestUnits": 10},
        GlobalSecondaryIndexes=[
            {
                **OWNER_INDEX["GlobalSecondaryIndexes"][0],
                "OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 2},
            }
        ],
    )
    create_and_wait(client, request)
    arn = table_arn(client, table_name)
    client.put_item(TableName=table_name, Item=put("a", owner="ann"))
    client.put_item(TableName=table_name, Item=put("b", owner="bob"))
    with pytest.raises(ClientError) as index_max:
        client.put_item(TableName=table_name, Item=put("c", owner="cy"))
    assert refusal(index_max) == (
        "ThrottlingException",
        [{"reason": "IndexWriteMaxOnDemandThroughputExceeded", "resource": arn + "/index/ByOwner"}],
    )
    client.put_item(TableName=table_name, Item=put("c"))  # not in the index: only the table's max
    client.get_item(TableName=table_name, Key=key("a"), ConsistentRead=True)
    with pytest.raises(ClientError) as read_max:
        client.get_item(TableName=table_name, Key=key("b"))
    assert refusal(read_max)[1] == [
        {"reason": "TableReadMaxOnDemandThroughputExceeded", "resource": arn}
    ]


def test_consumed_capacity_comes_back_as_the_caller_asked(aws_like: Start, table_name: str) -> None:
    engine = aws_like(partition_limits=PartitionLimits())
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK", indexed=["owner"], **OWNER_INDEX))
    plain = client.put_item(TableName=table_name, Item=put("a", owner="ann"))
    assert "ConsumedCapacity" not in plain
    total = client.put_item(
        TableName=table_name, Item=put("b", owner="ann"), ReturnConsumedCapacity="TOTAL"
    )["ConsumedCapacity"]
    assert set(total) <= {"TableName", "CapacityUnits", "ReadCapacityUnits", "WriteCapacityUnits"}
    assert total["TableName"] == table_name
    listed = client.batch_write_item(
        RequestItems={table_name: [{"PutRequest": {"Item": put("c")}}]},
        ReturnConsumedCapacity="TOTAL",
    )["ConsumedCapacity"]
    assert all("Table" not in entry for entry in listed)
    detailed = client.put_item(
        TableName=table_name, Item=put("d", owner="ann"), ReturnConsumedCapacity="INDEXES"
    )["ConsumedCapacity"]
    assert detailed["TableName"] == table_name
    assert "CapacityUnits" in detailed


def test_a_maximum_declared_with_lsiorm_is_enforced(
    aws_like: Start, table_name: str, clock: Clock, backend: str
) -> None:
    if backend == "moto":
        pytest.skip("moto drops OnDemandThroughput from CreateTable: only the option sets one")
    engine = aws_like(on_demand=OnDemandMaximum(), clock=clock)
    # DynamoDB Local refuses a maximum of one kind alone ("read and write throughput must be at
    # least 1"): both are declared.
    most = OnDemandThroughput(max_read_request_units=100, max_write_request_units=1)
    table = Table(table_name, "PK", "SK", on_demand_throughput=most)

    class Box(Entity, table=table, keys={"PK": "P#{pk}", "SK": "S#{sk}"}):
        pk: str
        sk: str

    with Session(
        endpoint_url=engine.endpoint_url, region_name="us-east-1", retry=NO_RETRY
    ) as session:
        session.create_table(table)
        session.put(Box(pk="a", sk="1"))
        with pytest.raises(ThrottledError) as throttled:
            session.put(Box(pk="b", sk="1"))
    arn = table_arn_of(engine, table_name)
    assert throttled.value.response["throttlingReasons"] == [
        {"reason": "TableWriteMaxOnDemandThroughputExceeded", "resource": arn}
    ]
