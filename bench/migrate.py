"""Items per second of a table migration's copy, against a hand-written copy; catch-up rate.

``python -m bench.migrate [--items N] [--changes M]`` starts DynamoDB Local, seeds a source
table of N items (with a stream of both images), and measures:

* **hand-written copy**: a parallel scan (4 segments, one thread each) and BatchWriteItem of
  the same re-derived items into a fresh table: no condition, no ledger, no verification;
* **lsiorm copy**: ``Session.migrate_table`` into another fresh table, of which the copy phase
  is timed alone (the ledger's ``migrate-copy`` run: its elapsed time); each item is a
  conditional PutItem, which BatchWriteItem cannot carry;
* **catch-up**: M changes written to the source after the copy, then timed as the next call
  applies them (events per second).

It prints the figures; nothing is asserted. On a shared or small machine they say more about
the machine than about either side: compare them within one run.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from typing import Any

import boto3

from lsiorm import Entity, Session, Table
from lsiorm._migration.table_copy import derive_item
from lsiorm.testing import DynamoDBLocal

REGION = "us-east-1"
SEGMENTS = 4


def declare(name: str) -> Table:
    """The destination: the five reserved slots, LSI1 by title."""
    table = Table.with_reserved_lsi_slots(name, "PK", "SK")

    class Item(
        Entity, table=table, keys={"PK": "P#{p:03d}", "SK": "I#{n:07d}", "LSI1SK": "T#{title}"}
    ):
        p: int
        n: int
        title: str

    return table


def source_item(n: int, title: str = "") -> dict[str, Any]:
    return {
        "PK": {"S": f"P#{n % 50:03d}"},
        "SK": {"S": f"I#{n:07d}"},
        "_type": {"S": "Item"},
        "p": {"N": str(n % 50)},
        "n": {"N": str(n)},
        "title": {"S": title or f"item {n}"},
    }


def seed(client: Any, name: str, items: int) -> None:
    client.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    for start in range(0, items, 25):
        chunk = [
            {"PutRequest": {"Item": source_item(n)}} for n in range(start, min(items, start + 25))
        ]
        client.batch_write_item(RequestItems={name: chunk})


def hand_written_copy(endpoint_url: str, source: str, table: Table) -> float:
    """Scan in parallel, derive, BatchWriteItem; return items per second."""
    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=REGION)
    client.create_table(**table.create_table_request())
    copied = [0] * SEGMENTS

    def segment(number: int) -> None:
        mine = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=REGION)
        pages = mine.get_paginator("scan").paginate(
            TableName=source, Segment=number, TotalSegments=SEGMENTS
        )
        for page in pages:
            items = [derive_item(table, i).item for i in page["Items"]]
            writes = [{"PutRequest": {"Item": i}} for i in items if i is not None]
            for start in range(0, len(writes), 25):
                pending = {table.name: writes[start : start + 25]}
                while pending:
                    answer = mine.batch_write_item(RequestItems=pending)
                    pending = answer.get("UnprocessedItems") or {}
            copied[number] += len(writes)

    started = time.perf_counter()
    threads = [threading.Thread(target=segment, args=(n,)) for n in range(SEGMENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(copied) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--changes", type=int, default=1000)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]
    with DynamoDBLocal() as engine:
        url = engine.endpoint_url
        client = boto3.client("dynamodb", endpoint_url=url, region_name=REGION)
        source = f"bench_source_{tag}"
        seed(client, source, args.items)
        rate = hand_written_copy(url, source, declare(f"bench_hand_{tag}"))
        print(f"hand-written copy (scan + BatchWriteItem): {rate:,.0f} items/s")
        table = declare(f"bench_lsiorm_{tag}")
        with Session(endpoint_url=url, region_name=REGION) as session:
            report = session.migrate_table(table, source, segments=SEGMENTS)
            run = session.job(table, report.copy_job or "")
            print(f"lsiorm copy (conditional PutItem): {report.copied / run.elapsed:,.0f} items/s")
            for n in range(args.changes):
                client.put_item(TableName=source, Item=source_item(n, f"changed {n}"))
            started = time.perf_counter()
            again = session.migrate_table(table, source, segments=SEGMENTS)
            spent = time.perf_counter() - started
            events = again.applied + again.skipped - report.applied - report.skipped
            print(
                f"catch-up and verify: {events} events in {spent:.1f} s ({events / spent:,.0f}/s)"
            )


if __name__ == "__main__":
    main()
