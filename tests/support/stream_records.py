"""Stream records recorded from an engine, in the shape Lambda hands them to a function.

`record_changes` writes items to a table whose stream is on, reads the stream back with
DynamoDB Streams' GetRecords and keeps each record exactly as the engine sent it (the JSON
body, before botocore parses it: ``ApproximateCreationDateTime`` stays epoch seconds, as in
Lambda's events). `lambda_event` wraps records as Lambda does for a DynamoDB event source:
``{"Records": [...]}``, each record with the stream's ``eventSourceARN``.

Run this module to record the fixtures the unit tests read (``data/streams/*.json``) from
DynamoDB Local::

    LSIORM_DYNAMODB_LOCAL_DIR=... .venv/bin/python -m support.stream_records   # from tests/
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import boto3
import orjson

from lsiorm import Entity, Session, Table

DATA = Path(__file__).parent / "data" / "streams"

shop = Table("StreamShop", "PK", "SK")


class Customer(Entity, table=shop, keys={"PK": "C#{cid}", "SK": "PROFILE"}):
    cid: str
    email: str


class Order(Entity, table=shop, keys={"PK": "C#{cid}", "SK": "O#{oid}"}, version="v"):
    cid: str
    oid: str
    total: int
    placed: date = date(2026, 1, 5)
    v: int = 0


def _raw_get_records(streams: Any) -> list[dict[str, Any]]:
    """Collect GetRecords bodies as the engine sent them (a before-parse handler)."""
    bodies: list[dict[str, Any]] = []

    def keep(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
        if operation_model.name == "GetRecords" and response_dict.get("status_code") == 200:
            bodies.append(orjson.loads(response_dict["body"]))

    streams.meta.events.register("before-parse", keep)
    return bodies


def read_stream(endpoint_url: str, stream_arn: str) -> list[dict[str, Any]]:
    """Every record of a stream, shard by shard (parents first), as the engine sent it."""
    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint_url, region_name="us-east-1")
    bodies = _raw_get_records(streams)
    shards = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    ids = {s["ShardId"] for s in shards}
    ordered = sorted(shards, key=lambda s: (s.get("ParentShardId") in ids, s["ShardId"]))
    for shard in ordered:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        ).get("ShardIterator")
        for _ in range(50):
            if not iterator:
                break
            before = len(bodies)
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            iterator = page.get("NextShardIterator")
            if not page.get("Records") and len(bodies) > before:
                break
    streams.close()
    return [record for body in bodies for record in body.get("Records") or ()]


def lambda_event(records: list[dict[str, Any]], stream_arn: str) -> dict[str, Any]:
    """Records as Lambda delivers them to a function: each with the stream's ARN."""
    return {"Records": [{**record, "eventSourceARN": stream_arn} for record in records]}


def record_changes(
    endpoint_url: str, view: str, writes: Callable[[Session, Table], None]
) -> tuple[dict[str, Any], Table]:
    """Create a shop table with a stream of ``view``, run ``writes`` on it, read its stream;
    return the Lambda event of its records and the table (deleted again)."""
    table = Table(f"StreamShop-{uuid.uuid4().hex[:8]}", "PK", "SK")
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        request = {
            **shop.create_table_request(),
            "TableName": table.name,
            "StreamSpecification": {"StreamEnabled": True, "StreamViewType": view},
        }
        session.client.create_table(**request)
        try:
            session.client.get_waiter("table_exists").wait(
                TableName=table.name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100}
            )
            writes(session, table)
            arn = session.client.describe_table(TableName=table.name)["Table"]["LatestStreamArn"]
            records = read_stream(endpoint_url, arn)
        finally:
            session.client.delete_table(TableName=table.name)
    return lambda_event(records, arn), table


def shop_story(session: Session, table: Table) -> None:
    """A customer and an order change in turn; another tool writes an item of no entity."""
    live = _on(session, table)
    live.put(Customer(cid="c1", email="ann@example.com"))
    order = live.put(Order(cid="c1", oid="7", total=42))
    live.update(order, set={"total": 40})
    session.client.put_item(
        TableName=table.name,
        Item={"PK": {"S": "AUDIT#1"}, "SK": {"S": "X"}, "note": {"S": "another tool"}},
    )
    live.update(Customer, cid="c1", set={"email": "ann@example.org"})
    live.delete(Order, cid="c1", oid="7")


def _on(session: Session, table: Table) -> Session:
    """A session on the same engine that writes the shop's entities into ``table``."""
    return Session(session.client, table_names=lambda declared: table.name)


def fixture_path(name: str) -> Path:
    return DATA / f"{name}.json"


def load_event(name: str) -> dict[str, Any]:
    """A recorded Lambda event (``new_and_old``, ``keys_only``, ``new_image``)."""
    loaded: dict[str, Any] = json.loads(fixture_path(name).read_text())
    return loaded


VIEWS = {"new_and_old": "NEW_AND_OLD_IMAGES", "new_image": "NEW_IMAGE", "keys_only": "KEYS_ONLY"}


def _record_all(endpoint_url: str) -> Iterator[Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    for name, view in VIEWS.items():
        event, table = record_changes(endpoint_url, view, shop_story)
        # The fixtures name the declared table, so that they read as the docs' shop table.
        text = json.dumps(event, indent=1, sort_keys=True).replace(table.name, shop.name)
        path = fixture_path(name)
        path.write_text(text + "\n")
        yield path


if __name__ == "__main__":
    from lsiorm.testing import DynamoDBLocal

    with DynamoDBLocal() as engine:
        for written in _record_all(engine.endpoint_url):
            print(f"recorded {written}")


def order_record(n: int, cid: str, oid: str, total: int) -> dict[str, Any]:
    """A MODIFY record of an order, shaped as the recorded ones (number ``n`` in its shard)."""
    template = copy.deepcopy(load_event("new_and_old")["Records"][2])
    image = Order(cid=cid, oid=oid, total=total, v=n).to_wire()
    body = template["dynamodb"]
    body["Keys"] = {"PK": image["PK"], "SK": image["SK"]}
    body["NewImage"] = image
    body["OldImage"] = Order(cid=cid, oid=oid, total=total - 1, v=n).to_wire()
    body["SequenceNumber"] = f"{n:021d}"
    template["eventID"] = f"event-{n}"
    return template


def redeliver(records: list[dict[str, Any]], response: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch Lambda delivers next after a partial batch response: every record from the
    lowest sequence number reported on (none when nothing was reported)."""
    reported = {f["itemIdentifier"] for f in response.get("batchItemFailures") or ()}
    positions = [i for i, r in enumerate(records) if r["dynamodb"]["SequenceNumber"] in reported]
    return records[min(positions) :] if positions else []
