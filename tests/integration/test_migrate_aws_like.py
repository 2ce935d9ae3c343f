"""A table migration where production's stream, limits and indexes are: behind the AWS-like engine.

DynamoDB Local's and moto's streams have one shard that never splits, their global indexes are
synchronous, and nothing is throttled by partition. Here the source's stream has 16 shards
(8 at the reduced size CI runs, ``LSIORM_SCALE`` below 0.1) that split twice while the
catch-up reads them, every partition key is limited to a few write
units a second (the writers hit one of them more than the others: a hot key), the destination's
global index lags its table, transactions that overlap conflict, lsiorm's requests meet 30%
faults, two writers change the source through the whole run, and the migration is killed in
the middle of its catch-up and resumed. After the cut-over the destination must equal the
source item by item and attribute by attribute, every key derived right, and every change of
the stream counted once.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config

from lsiorm import Entity, GlobalIndex, RetryPolicy, Session, Table
from lsiorm._migration import catch_up
from lsiorm.testing import (
    AwsLikeEngine,
    GsiLag,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)
from support.faults import FaultProxy
from support.jobs import Killed
from support.migration import (
    TYPES,
    ShopRecord,
    SourceWriters,
    assert_migrated,
    source_item,
    stream_records,
    stream_table,
)

SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
SHARDS = 16 if SCALE >= 0.1 else 8
# Each writer's pause between writes: the two writers change the source ten times a second
# each at most, whatever the machine's speed or the test's size. Unpaced at full size, on
# DynamoDB Local they outran this test's catch-up (one process, at 30% faults): each pass found
# more changes than the one before (451 to 4,855 over five minutes) and the run outlasted half
# an hour; moto's slower writers did not outrun it.
WRITER_PAUSE = 0.1
# A killed run's units are taken over once their leases lapse: a lease renewed with every
# page's commit, short enough that the resumed run does not wait a minute for the killed one.
LEASE = 15.0


def declare_indexed_shop(name: str) -> tuple[Table, dict[str, type[Entity]]]:
    """The destination: the five reserved slots and a global index by status; Order uses
    LSI1 and the GSI."""
    table = Table.with_reserved_lsi_slots(
        name, "PK", "SK", global_indexes=[GlobalIndex("ByStatus", "GSI1PK", "GSI1SK")]
    )
    classes: dict[str, type[Entity]] = {}
    for kind in TYPES:
        keys = {"PK": "G#{group:03d}", "SK": kind.upper() + "#{n:06d}"}
        if kind == "Order":
            keys |= {
                "LSI1SK": "STATUS#{status}#{n:06d}",
                "GSI1PK": "STATUS#{status}",
                "GSI1SK": "ORDER#{n:06d}",
            }
        classes[kind] = type(kind, (ShopRecord,), {}, table=table, keys=keys)
    return table, classes


def patient_client(endpoint_url: str) -> Callable[[], Any]:
    """Clients for the source's writers: throttled on the hot key, they try again."""

    def make() -> Any:
        config = Config(retries={"max_attempts": 30, "mode": "adaptive"})
        return boto3.client(
            "dynamodb", endpoint_url=endpoint_url, region_name="us-east-1", config=config
        )

    return make


def hot_burst(make_client: Callable[[], Any], table: str, items: int) -> None:
    """A burst of writes to the hot partition (``G#000``: the items whose number is a multiple
    of 7), as a flash sale would send: eight threads, each writing every hot item three times
    in batches of 25. The first batch of the first thread carries 6 KB titles: it asks for
    about 150 write units of the one partition at once, more than the partition's bucket holds,
    so the batches right after it are refused whatever the speed of the machine (a slow engine
    spreading 25-unit batches over time would keep each within the limit)."""
    hot = [n for n in range(items) if n % 7 == 0]

    def write(thread: int) -> None:
        client = make_client()
        for round_ in range(3):
            for start in range(0, len(hot), 25):
                title = f"burst {thread}.{round_}"
                if thread == round_ == start == 0:
                    title += " " + "-" * 6000
                puts = [{"PutRequest": {"Item": source_item(n, title=title)}} for n in hot]
                pending: dict[str, Any] = {table: puts[start : start + 25]}
                while pending:
                    answer = client.batch_write_item(RequestItems=pending)
                    pending = answer.get("UnprocessedItems") or {}

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))


class CatchUpKiller:
    """Kills the migration at its ``limit``-th GetRecords (the catch-up reading a page)."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self.reads = 0

    def before(self, request: Any) -> None:
        if request.operation != "GetRecords" or self.limit is None:
            return
        self.reads += 1
        if self.reads >= self.limit:
            raise Killed


@pytest.mark.slow
def test_a_many_shard_migration_with_splits_a_hot_key_and_lagging_indexes_ends_clean(
    aws_like: Callable[..., AwsLikeEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = aws_like(
        streams=StreamShards(shards=SHARDS),
        partition_limits=PartitionLimits(write_units=60.0, read_units=300.0),
        gsi_lag=GsiLag(seconds=0.5),
        conflicts=TransactionConflicts(hold=0.02),
    )
    # Changes older than the copy by two seconds are not applied: the engine stamps each
    # record to the second, as AWS does, so two seconds are a margin here.
    monkeypatch.setattr(catch_up, "REPLAY_MARGIN", 2.0)
    tag = uuid.uuid4().hex[:10]
    source, dest = f"src_{tag}", f"dst_{tag}"
    items = max(120, int(8_000 * SCALE))
    direct = patient_client(engine.endpoint_url)()
    table, _ = declare_indexed_shop(dest)
    stream_table(direct, source, items=items)
    killer = CatchUpKiller()
    # Backoff as in production (jittered, growing to two seconds): the workers of up to 64 shards
    # claim, release and finish units on the run's one ledger item, and retries without a
    # pause would meet there again. A busy machine's moto server may take seconds a request:
    # attempts, not time, bound the retries.
    retry = RetryPolicy(max_attempts=40, max_delay=900.0, initial=0.02, maximum=2.0)
    kinds = ("throttle", "error500", "drop", "lost-response")
    with (
        SourceWriters(
            patient_client(engine.endpoint_url), source, items, hot=0.5, pause=WRITER_PAUSE
        ) as writers,
        FaultProxy(engine.endpoint_url, rate=0.3, kinds=kinds, seed=42) as faults,
        Session(
            endpoint_url=faults.endpoint_url, region_name="us-east-1", retry=retry, hooks=[killer]
        ) as session,
    ):
        time.sleep(3.0)  # changes older than the copy, which the catch-up need not apply
        first = session.migrate_table(table, source, segments=4, page_size=50, lease_seconds=LEASE)
        assert first.phase == "catch-up", str(first)
        engine.split(source)  # the stream splits under the catch-up: every shard becomes two
        hot_burst(patient_client(engine.endpoint_url), source, items)
        while writers.writes < items:
            time.sleep(0.05)
        killer.limit = killer.reads + 2 * SHARDS  # in the middle of the next catch-up
        with pytest.raises(Killed):
            session.migrate_table(table, source, segments=4, page_size=50, lease_seconds=LEASE)
        killer.limit = None
        engine.split(source)  # and again, while the migration is stopped: four times as many shards
        session.migrate_table(table, source, segments=4, page_size=50, lease_seconds=LEASE)
    assert engine.stats["splits"] >= 2 * SHARDS
    # The hot key was throttled (the source's; a ledger's throttles do not count).
    assert engine.stats[f"throttled:{source}"] > 0, engine.stats
    assert faults.stats["faults"] > 0
    with Session(endpoint_url=engine.endpoint_url, region_name="us-east-1", retry=retry) as plain:
        final = plain.migrate_table(table, source, finish=True, lease_seconds=LEASE)
    assert final.phase == "switched", str(final)
    assert_migrated(direct, source, dest, table)
    counted = final.applied + final.skipped + final.before_copy + final.unapplied
    assert counted == stream_records(engine.endpoint_url, source), str(final)
    assert final.before_copy > 0, str(final)  # the changes before the copy were not written
    assert final.applied > 0
