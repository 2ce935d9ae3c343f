"""The AWS-like engine as a whole: lsiorm works through it unchanged, and its own calls.

With every behaviour on but nothing pushed past a limit, a session through the engine reads and
writes exactly as it does on the backend directly: the engine's bookkeeping (images, buckets,
holds, shadows, the consumed capacity it asks for) never shows in an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from lsiorm import (
    Delete,
    Entity,
    Get,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    Put,
    Session,
    Table,
    between,
    query,
    scan,
)
from lsiorm.errors import ValidationError
from lsiorm.testing import (
    AwsLikeEngine,
    GsiLag,
    OnDemandMaximum,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)
from support.aws_like import engine_client, streams_client
from support.tables import create_and_wait, table_request

Start = Callable[..., AwsLikeEngine]


def declared(name: str) -> tuple[Table, Any]:
    table = Table(
        name,
        "PK",
        "SK",
        local_indexes=[LocalIndex("ByDay", KeyAttribute("LSI1"))],
        global_indexes=[GlobalIndex("ByOwner", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK"))],
    )

    class Note(
        Entity,
        table=table,
        keys={
            "PK": "U#{user}",
            "SK": "N#{nid:04d}",
            "LSI1": "{day}",
            "GSI1PK": "O#{owner}",
            "GSI1SK": "N#{nid:04d}",
        },
    ):
        user: str
        nid: int
        day: str
        owner: str
        text: str = ""

    return table, Note


def every_behaviour(start: Start) -> AwsLikeEngine:
    return start(
        streams=StreamShards(shards=4, split_every=5),
        partition_limits=PartitionLimits(),
        on_demand=OnDemandMaximum(read_units=10_000, write_units=10_000),
        gsi_lag=GsiLag(seconds=0.0),
        conflicts=TransactionConflicts(),
    )


def test_a_session_reads_and_writes_through_the_engine_as_on_the_backend(
    aws_like: Start, table_name: str
) -> None:
    engine = every_behaviour(aws_like)
    table, note = declared(table_name)
    with Session(endpoint_url=engine.endpoint_url, region_name="us-east-1") as session:
        session.create_table(table)
        notes = [
            note(user="ann", nid=n, day=f"2025-01-{n:02d}", owner="bob" if n % 2 else "cy")
            for n in range(1, 9)
        ]
        for one in notes[:4]:
            session.put(one)
        session.batch_write(puts=notes[4:])
        assert session.get(note, user="ann", nid=3, consistent=True) == notes[2]
        changed = session.update(note, user="ann", nid=3, set={"text": "hello"})
        assert changed.text == "hello"
        days = session.all(
            query(note).where(user="ann", day=between("2025-01-02", "2025-01-05")).using("ByDay")
        )
        assert [n.nid for n in days] == [2, 3, 4, 5]
        owned = session.all(query(note).where(owner="bob").using("ByOwner"))
        assert [n.nid for n in owned] == [1, 3, 5, 7]
        got = session.batch_get(note, [{"user": "ann", "nid": n} for n in (1, 8)], consistent=True)
        assert sorted(n.nid for n in got) == [1, 8]
        session.transact_write(
            [Put(note(user="ann", nid=9, day="2025-01-09", owner="cy")), Delete(notes[0])]
        )
        read = session.transact_get(
            [Get(note, {"user": "ann", "nid": 9}), Get(note, {"user": "ann", "nid": 1})]
        )
        assert [None if r is None else r.nid for r in read] == [9, None]
        assert sorted(n.nid for n in session.all(scan(note))) == [2, 3, 4, 5, 6, 7, 8, 9]
        session.delete_table(table)
    assert engine.stats["throttled"] == engine.stats["conflicts"] == 0
    assert engine.stats["records"] == 0  # no stream on this table: nothing to serve


def test_split_and_rollover_on_demand(aws_like: Start, table_name: str) -> None:
    engine = aws_like(streams=StreamShards(shards=2))
    client, streams = engine_client(engine), streams_client(engine)
    spec = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    create_and_wait(client, table_request(table_name, "PK", "SK", StreamSpecification=spec))
    arn = client.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
    first = {
        s["ShardId"] for s in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    }
    split = engine.split(table_name)
    rolled = engine.rollover(table_name)
    listed = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    by_id = {s["ShardId"]: s for s in listed}
    assert len(split) == 4
    assert len(rolled) == 4
    assert {by_id[s]["ParentShardId"] for s in split} == first
    assert {by_id[s]["ParentShardId"] for s in rolled} == set(split)
    assert (engine.stats["splits"], engine.stats["rollovers"]) == (2, 4)


def test_split_names_what_is_missing(aws_like: Start, table_name: str) -> None:
    engine = aws_like(streams=StreamShards())
    create_and_wait(engine_client(engine), table_request(table_name, "PK", "SK"))
    with pytest.raises(ValidationError, match="no stream") as no_stream:
        engine.split(table_name)
    assert no_stream.value.rule == "aws_like.no-stream"
    with pytest.raises(ValidationError) as no_streams:
        aws_like().split(table_name)
    assert no_streams.value.rule == "aws_like.no-streams"


def test_requests_the_engine_cannot_read_go_upstream_as_they_came(
    aws_like: Start, table_name: str
) -> None:
    engine = every_behaviour(aws_like)
    client = engine_client(engine)
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.get_item(TableName=table_name, Key={"PK": {"S": "a"}, "SK": {"S": "b"}})
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    with pytest.raises(client.exceptions.ClientError) as missing:
        client.put_item(TableName=table_name, Item={"PK": {"S": "a"}})  # no sort key
    assert missing.value.response["Error"]["Code"] == "ValidationException"


def test_the_engine_stops_by_itself_when_idle_with_its_stream_reader(endpoint_url: str) -> None:
    engine = AwsLikeEngine(endpoint_url, streams=StreamShards(), idle_timeout=0.3)
    engine.start()
    assert engine.reading_streams
    deadline = time.monotonic() + 10
    while engine.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not engine.running
    assert not engine.reading_streams
    engine.stop()


def test_a_refusal_of_the_engines_own_request_is_answered_not_dropped(
    aws_like: Start, table_name: str, endpoint_url: str
) -> None:
    engine = aws_like(partition_limits=PartitionLimits())
    client = engine_client(engine)
    index = {
        "IndexName": "ByOwner",
        "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    create_and_wait(
        client,
        table_request(table_name, "PK", "SK", indexed=["owner"], GlobalSecondaryIndexes=[index]),
    )
    item = {"PK": {"S": "a"}, "SK": {"S": "1"}, "owner": {"S": "ann"}}
    client.put_item(TableName=table_name, Item=item)
    boto3.client("dynamodb", endpoint_url=endpoint_url).delete_table(TableName=table_name)
    # The engine reads the item before the write (its index partitions): the table is gone.
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.put_item(TableName=table_name, Item=item)
    assert engine.stats["upstream:ResourceNotFoundException"] == 1


def test_latency_holds_every_answer_back_as_a_network_round_trip(
    aws_like: Start, table_name: str
) -> None:
    engine = aws_like(latency=0.25)
    client = engine_client(engine)
    create_and_wait(client, table_request(table_name, "PK", "SK"))
    key = {"PK": {"S": "a"}, "SK": {"S": "1"}}
    for send in (
        lambda: client.put_item(TableName=table_name, Item=key),
        lambda: client.get_item(TableName=table_name, Key=key),
        lambda: client.describe_table(TableName=table_name),
    ):
        started = time.monotonic()
        send()
        assert time.monotonic() - started >= 0.25  # a lower bound: the engine waited


@pytest.mark.parametrize("latency", [-0.1, 30.0])
def test_a_latency_below_zero_or_past_the_upstream_timeout_is_refused(
    endpoint_url: str, latency: float
) -> None:
    with pytest.raises(ValidationError) as refused:
        AwsLikeEngine(endpoint_url, latency=latency)
    assert refused.value.rule == "aws_like.latency"
