"""Streams of many shards behind the AWS-like engine, read with boto3 as an AWS reader reads them.

Each test writes through the engine to a table on the backend and reads the engine's virtual
stream with a boto3 DynamoDB Streams client: split lineage, one shard per item at a time, the
records in write order when parents are read first, iterator expiry, retention, and
GetRecords' limits, each as AWS documents them.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from lsiorm.testing import AwsLikeEngine, StreamShards
from support.aws_like import Clock, engine_client, streams_client
from support.tables import create_and_wait, table_request

STREAMED = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}

Start = Callable[..., AwsLikeEngine]


def streamed_table(client: Any, name: str) -> str:
    create_and_wait(client, table_request(name, "PK", "SK", **STREAMED))
    arn: str = client.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    return arn


def item(pk: str, n: int, body: str = "") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "I"}, "n": {"N": str(n)}, "body": {"S": body}}


def all_shards(streams: Any, arn: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"StreamArn": arn, "Limit": 5}
    while True:
        description = streams.describe_stream(**params)["StreamDescription"]
        found += description["Shards"]
        if "LastEvaluatedShardId" not in description:
            return found
        params["ExclusiveStartShardId"] = description["LastEvaluatedShardId"]


def parents_first(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {s["ShardId"]: s for s in shards}
    order: list[dict[str, Any]] = []

    def place(shard: dict[str, Any]) -> None:
        if shard not in order:
            parent = by_id.get(shard.get("ParentShardId", ""))
            if parent is not None:
                place(parent)
            order.append(shard)

    for shard in shards:
        place(shard)
    return order


def shard_records(streams: Any, arn: str, shard: str) -> list[dict[str, Any]]:
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records: list[dict[str, Any]] = []
    while iterator:
        page = streams.get_records(ShardIterator=iterator, Limit=50)
        records += page["Records"]
        iterator = page.get("NextShardIterator")
        if not page["Records"]:
            break
    return records


def test_a_busy_stream_has_many_shards_that_split_with_true_lineage(
    aws_like: Start, table_name: str
) -> None:
    engine = aws_like(streams=StreamShards(shards=8, split_every=30, get_records_per_second=1000))
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    rng = random.Random(42)
    written: dict[str, list[int]] = {}
    on_demand = 0
    for n in range(360):
        pk = f"item{rng.randrange(40)}"
        client.put_item(TableName=table_name, Item=item(pk, n))
        written.setdefault(pk, []).append(n)
        if n == 200:
            opened = engine.split(table_name)  # on demand, while writers write
            on_demand = len(opened) // 2
            assert on_demand >= 8
    shards = all_shards(streams, arn)
    by_id = {s["ShardId"]: s for s in shards}
    assert sum("EndingSequenceNumber" not in s["SequenceNumberRange"] for s in shards) > 8
    assert engine.stats["splits"] > on_demand  # shards that received 30 records split too
    read: dict[str, list[int]] = {}
    home: dict[str, list[str]] = {}
    for shard in parents_first(shards):
        records = shard_records(streams, arn, shard["ShardId"])
        numbers = shard["SequenceNumberRange"]
        sequences = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
        assert sequences == sorted(sequences)
        assert all(s > int(numbers["StartingSequenceNumber"]) for s in sequences)
        if "EndingSequenceNumber" in numbers:  # closed at its last record (or its start)
            last = sequences[-1] if sequences else int(numbers["StartingSequenceNumber"])
            assert int(numbers["EndingSequenceNumber"]) == last
        parent = by_id.get(shard.get("ParentShardId", ""))
        if parent is not None:
            assert "EndingSequenceNumber" in parent["SequenceNumberRange"]
            ending = int(parent["SequenceNumberRange"]["EndingSequenceNumber"])
            assert int(numbers["StartingSequenceNumber"]) > ending
        for record in records:
            pk = record["dynamodb"]["Keys"]["PK"]["S"]
            read.setdefault(pk, []).append(int(record["dynamodb"]["NewImage"]["n"]["N"]))
            home.setdefault(pk, []).append(shard["ShardId"])
    # Every record once, and each item's records in write order, reading parents first.
    assert read == written

    def descends(child: str, ancestor: str) -> bool:
        parent = by_id[child].get("ParentShardId")
        return parent is not None and (parent == ancestor or descends(parent, ancestor))

    # An item's records are in one shard at a time: it only moves to a descendant.
    for shards_of_item in home.values():
        for earlier, later in itertools.pairwise(shards_of_item):
            assert earlier == later or descends(later, earlier)


def test_records_keep_what_upstream_recorded_and_are_stamped_after_the_write(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    engine = aws_like(streams=StreamShards(shards=4))
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    before = math.floor(time.time())
    client.put_item(TableName=table_name, Item=item("a", 1))
    client.update_item(
        TableName=table_name,
        Key={"PK": {"S": "a"}, "SK": {"S": "I"}},
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": {"N": "2"}},
    )
    client.delete_item(TableName=table_name, Key={"PK": {"S": "a"}, "SK": {"S": "I"}})
    records = [
        r for s in all_shards(streams, arn) for r in shard_records(streams, arn, s["ShardId"])
    ]
    after = time.time()
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    insert, modify, remove = (r["dynamodb"] for r in records)
    assert insert["NewImage"]["n"] == {"N": "1"}
    assert "OldImage" not in insert
    assert modify["OldImage"]["n"] == {"N": "1"}
    assert modify["NewImage"]["n"] == {"N": "2"}
    assert remove["OldImage"]["n"] == {"N": "2"}
    assert "NewImage" not in remove
    for record in (insert, modify, remove):
        assert record["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert record["Keys"] == {"PK": {"S": "a"}, "SK": {"S": "I"}}
        assert len(record["SequenceNumber"]) >= 21
        stamped = record["ApproximateCreationDateTime"].timestamp()
        assert stamped == int(stamped)  # rounded down to the second
        assert before <= stamped <= after  # never before the write
    # The same records the upstream engine holds (eventIDs), with their own sequence numbers.
    direct = streams_client_on(endpoint_url)
    upstream_shards = direct.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    upstream = [r for s in upstream_shards for r in shard_records(direct, arn, s["ShardId"])]
    assert [r["eventID"] for r in upstream] == [r["eventID"] for r in records]


def streams_client_on(url: str) -> Any:
    import boto3

    return boto3.client("dynamodbstreams", endpoint_url=url)


def test_iterators_expire_after_15_minutes_scaled(aws_like: Start, table_name: str) -> None:
    clock = Clock()
    engine = aws_like(streams=StreamShards(shards=1), time_scale=0.001, clock=clock)  # 0.9 s
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    client.put_item(TableName=table_name, Item=item("a", 1))
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    clock.advance(0.9)
    page = streams.get_records(ShardIterator=iterator)
    assert len(page["Records"]) == 1
    clock.advance(0.01)
    with pytest.raises(ClientError) as expired:
        streams.get_records(ShardIterator=iterator)
    assert expired.value.response["Error"]["Code"] == "ExpiredIteratorException"
    # NextShardIterator was handed out with the answer: it lives 0.9 s from then.
    assert streams.get_records(ShardIterator=page["NextShardIterator"])["Records"] == []


def test_records_older_than_24_hours_scaled_are_trimmed(aws_like: Start, table_name: str) -> None:
    clock = Clock()
    engine = aws_like(streams=StreamShards(shards=1), time_scale=0.001, clock=clock)  # 86.4 s
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    client.put_item(TableName=table_name, Item=item("a", 1))
    (shard,) = all_shards(streams, arn)
    (first,) = shard_records(streams, arn, shard["ShardId"])
    clock.advance(50)
    client.put_item(TableName=table_name, Item=item("a", 2))
    assert len(shard_records(streams, arn, shard["ShardId"])) == 2
    clock.advance(36.0)  # 86 s after the first record: 0.4 s before it is trimmed
    early = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    clock.advance(0.5)
    with pytest.raises(ClientError) as stale:
        streams.get_records(ShardIterator=early)
    assert stale.value.response["Error"]["Code"] == "TrimmedDataAccessException"
    with pytest.raises(ClientError) as gone:
        streams.get_shard_iterator(
            StreamArn=arn,
            ShardId=shard["ShardId"],
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=first["dynamodb"]["SequenceNumber"],
        )
    assert gone.value.response["Error"]["Code"] == "TrimmedDataAccessException"
    kept = shard_records(streams, arn, shard["ShardId"])
    assert [r["dynamodb"]["NewImage"]["n"]["N"] for r in kept] == ["2"]
    assert engine.stats["trimmed"] == 1


def test_get_records_answers_at_most_a_megabyte(aws_like: Start, table_name: str) -> None:
    engine = aws_like(streams=StreamShards(shards=1))
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    for n in range(8):
        client.put_item(TableName=table_name, Item=item(f"i{n}", n, "x" * 200_000))
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    seen = 0
    while seen < 8:
        page = streams.get_records(ShardIterator=iterator)
        sizes = [r["dynamodb"]["SizeBytes"] for r in page["Records"]]
        assert sizes
        assert sum(sizes) <= 1024 * 1024
        seen += len(sizes)
        if seen < 8:  # the page stopped because the next record would pass the megabyte
            assert sum(sizes) + 200_000 > 1024 * 1024
        iterator = page["NextShardIterator"]
    assert seen == 8


def test_get_records_limit_and_calls_a_second(aws_like: Start, table_name: str) -> None:
    clock = Clock()
    engine = aws_like(streams=StreamShards(shards=1), clock=clock)
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    client.put_item(TableName=table_name, Item=item("a", 1))
    (shard,) = all_shards(streams, arn)
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    with pytest.raises(ClientError) as too_many:
        streams.get_records(ShardIterator=iterator, Limit=1001)
    assert too_many.value.response["Error"]["Code"] == "ValidationException"
    pages = [streams.get_records(ShardIterator=iterator) for _ in range(5)]
    assert all(len(p["Records"]) == 1 for p in pages)
    with pytest.raises(ClientError) as throttled:
        streams.get_records(ShardIterator=iterator)
    assert throttled.value.response["Error"]["Code"] == "LimitExceededException"
    clock.advance(1.0)
    assert len(streams.get_records(ShardIterator=iterator)["Records"]) == 1  # nothing consumed


def test_without_streams_the_upstream_stream_is_served(aws_like: Start, table_name: str) -> None:
    engine = aws_like()
    client, streams = engine_client(engine), streams_client(engine)
    arn = streamed_table(client, table_name)
    client.put_item(TableName=table_name, Item=item("a", 1))
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    assert len(shard_records(streams, arn, shard["ShardId"])) == 1
    assert engine.stats["records"] == 0
