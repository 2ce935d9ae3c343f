"""Items per second of a backfill with 1, 2 and 4 workers, against a hand-written boto3 loop.

``python -m bench.backfill [--items N]`` starts DynamoDB Local, and for each worker count
seeds a table of N items that lack their new LSI3 key, then:

* **boto3 loop**: each worker process scans its segments and sends, per item, the same
  conditional UpdateItem as the backfill (set the new key on the condition that every
  attribute is as read);
* **lsiorm backfill**: ``Session.backfill`` with a ``ProcessPoolExecutor`` of that many
  workers (the ledger, leases and progress included).

It prints items per second; nothing is asserted. On a shared or small machine the figures
say more about the machine than about either side: compare them within one run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from lsiorm import Entity, Session, Table
from lsiorm.testing import DynamoDBLocal

REGION = "us-east-1"
NAME = os.environ.get("LSIORM_BENCH_TABLE", "bench_backfill")
SEGMENTS_PER_WORKER = 4

old_table = Table.with_reserved_lsi_slots(NAME, "PK", "SK")
new_table = Table.with_reserved_lsi_slots(NAME, "PK", "SK")


class OldItem(
    Entity,
    table=old_table,
    keys={"PK": "P#{p:03d}", "SK": "I#{n:07d}", "LSI1SK": "T#{title}"},
    type_name="Item",
):
    p: int
    n: int
    title: str
    hits: int = 0


class Item(
    Entity,
    table=new_table,
    keys={"PK": "P#{p:03d}", "SK": "I#{n:07d}", "LSI1SK": "T#{title}", "LSI3SK": "X#{n:07d}"},
    type_name="Item",
):
    p: int
    n: int
    title: str
    hits: int = 0


def _boto3_segments(endpoint_url: str, table: str, segments: list[int], total: int) -> int:
    """The hand-written loop of one worker: scan, then one conditional UpdateItem per item."""
    import boto3

    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=REGION)
    done = 0
    for segment in segments:
        params: dict[str, Any] = {"TableName": table, "Segment": segment, "TotalSegments": total}
        while True:
            page = client.scan(**params)
            for item in page.get("Items", ()):
                names = {f"#a{i}": name for i, name in enumerate(sorted(item))}
                values = {f":a{i}": item[name] for i, name in enumerate(sorted(item))}
                condition = " AND ".join(f"#a{i} = :a{i}" for i in range(len(names)))
                names["#new"] = "LSI3SK"
                values[":new"] = {"S": "X#" + item["SK"]["S"][2:]}
                client.update_item(
                    TableName=table,
                    Key={"PK": item["PK"], "SK": item["SK"]},
                    UpdateExpression="SET #new = :new",
                    ConditionExpression=f"{condition} AND attribute_not_exists(#new)",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
                done += 1
            if "LastEvaluatedKey" not in page:
                break
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return done


def _seed(session: Session, items: int) -> None:
    session.create_table(old_table)
    session.batch_write([OldItem(p=n % 100, n=n, title=f"t{n % 97}") for n in range(items)])


def _boto3_loop(endpoint_url: str, workers: int, items: int, pool: ProcessPoolExecutor) -> float:
    total = workers * SEGMENTS_PER_WORKER
    started = time.perf_counter()
    futures = [
        pool.submit(_boto3_segments, endpoint_url, NAME, list(range(w, total, workers)), total)
        for w in range(workers)
    ]
    done = sum(f.result() for f in futures)
    elapsed = time.perf_counter() - started
    assert done == items, (done, items)
    return items / elapsed


def _lsiorm(session: Session, workers: int, items: int, pool: ProcessPoolExecutor) -> float:
    started = time.perf_counter()
    report = session.backfill(Item, segments=workers * SEGMENTS_PER_WORKER, executor=pool)
    elapsed = time.perf_counter() - started
    assert report.rewritten == items, report
    return items / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    spawn = multiprocessing.get_context("spawn")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with (
        DynamoDBLocal() as engine,
        Session(endpoint_url=engine.endpoint_url, region_name=REGION) as session,
    ):
        print(f"{'workers':>7} {'boto3 loop':>14} {'lsiorm':>14} {'ratio':>7}", flush=True)
        for workers in args.workers:
            with ProcessPoolExecutor(workers, mp_context=spawn) as pool:
                list(pool.map(abs, range(workers)))  # start the workers before timing
                _seed(session, args.items)
                loop = _boto3_loop(engine.endpoint_url, workers, args.items, pool)
                session.delete_table(old_table)
                _seed(session, args.items)
                ours = _lsiorm(session, workers, args.items, pool)
                session.delete_table(old_table)
            print(
                f"{workers:>7} {loop:>10.0f} it/s {ours:>10.0f} it/s {ours / loop:>7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    # Run as the module bench.backfill, so that workers import its classes by that path.
    from bench.backfill import main as imported_main

    imported_main()
