"""A typed consumer of a table's DynamoDB stream, as AWS Lambda runs it, with its retries.

Run it with ``.venv/bin/python examples/stream_consumer.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. The shop's orders change; the script reads the
table's stream with GetRecords and hands the records to the handler wrapped as Lambda wraps
them (``{"Records": [...]}``, each with its ``eventSourceARN``). The handler's function fails
once on one order, so the first delivery reports it in the partial batch response; the script
then delivers again what Lambda would (every record from the lowest sequence number reported),
and the marks of the records already applied keep them from being applied twice.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import boto3

from lsiorm import ChangeEvent, Entity, Session, Table, stream_handler
from lsiorm.testing import example_endpoint

TAG = uuid.uuid4().hex[:8]
shop = Table(f"Shop-{TAG}", "PK", "SK", stream="NEW_AND_OLD_IMAGES")
marks = Table(f"ShopMarks-{TAG}", "PK", ttl_attribute="expires")


class Order(Entity, table=shop, keys={"PK": "C#{cid}", "SK": "O#{oid}"}):
    """An order of a customer."""

    cid: str
    oid: str
    total: int
    status: str = "NEW"


def stream_records(endpoint_url: str, session: Session) -> dict[str, Any]:
    """The table's stream records, as a Lambda event (GetRecords stands in for Lambda)."""
    described = session.client.describe_table(TableName=session.table_name(shop))
    arn = described["Table"]["LatestStreamArn"]
    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint_url, region_name="us-east-1")
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        page = streams.get_records(ShardIterator=iterator)
        records.extend(page["Records"])
    streams.close()
    return {"Records": [{**r, "eventSourceARN": arn} for r in records]}


def main(endpoint_url: str) -> None:
    # The handler logs each failed record with its traceback; the one below is on purpose.
    logging.getLogger("lsiorm.streams").setLevel(logging.CRITICAL)
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(shop)  # with its stream, as the table declares
        session.create_table(marks)
        try:
            a = session.put(Order(cid="ann", oid="1", total=30))
            session.put(Order(cid="ben", oid="2", total=12))
            session.update(Order, cid="ben", oid="2", set={"status": "PAID"})
            session.update(a, set={"status": "PAID"})
            print("wrote 2 orders and paid both: 4 changes")

            shipped: list[str] = []
            outage = {"ben": 1}  # the warehouse refuses ben's first order once

            @stream_handler(shop, only=[Order], idempotency=marks, session=session)
            def ship(change: ChangeEvent[Order]) -> None:
                order = change.new
                if order is None or order.status != "PAID":
                    return
                if outage.get(order.cid):
                    outage[order.cid] -= 1
                    raise RuntimeError(f"warehouse refused order {order.oid}")
                shipped.append(f"{order.cid}/{order.oid}")

            event = stream_records(endpoint_url, session)
            records = event["Records"]
            print(f"stream records: {', '.join(r['eventName'] for r in records)}")
            first = ship.handle(event)
            print(f"delivery 1: applied {len(first.applied)}, failed {len(first.failed)}")
            failed = [f["itemIdentifier"] for f in first.response["batchItemFailures"]]
            where = [r["dynamodb"]["SequenceNumber"] for r in records].index(failed[0])
            print(f"reported to Lambda: record {where + 1} of {len(records)}")
            again = {"Records": records[where:]}
            second = ship.handle(again)
            print(
                f"delivery 2: applied {len(second.applied)}, marked before {len(second.duplicates)}"
            )
            print(f"delivery 2 response: {second.response}")
            print(f"shipped: {', '.join(shipped)}")
            third = ship.handle(event)
            print(f"the whole batch again: applied {len(third.applied)}, ", end="")
            print(f"marked before {len(third.duplicates)}")
        finally:
            session.delete_table(shop)
            session.delete_table(marks)
            print("deleted both tables")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
