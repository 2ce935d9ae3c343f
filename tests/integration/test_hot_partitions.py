"""A hot partition slows its writers, not the whole job.

One partition key holds many items and is limited to a few writes a second; the job meets
sustained key-range throttling there (`TableWriteKeyRangeThroughputExceeded`, as AWS sends
it). The limit is a token bucket in front of the engine, in lsiorm's fault injector: a write
to the hot key that finds the bucket empty is throttled and not applied.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lsiorm import Entity, RetryPolicy, Session, Table
from lsiorm.testing import FaultInjector
from support.jobs import everything, session_on
from support.models import declare_doc

HOT = "USER#hot"
HOT_ITEMS = 32
COLD_ITEMS = 24
#: The hot partition's writes a second, and its bucket's burst (seconds of the rate).
LIMIT = 4.0
KEY_RANGE = "TableWriteKeyRangeThroughputExceeded"
PATIENT = RetryPolicy(max_attempts=30, max_delay=60.0, initial=0.01, maximum=0.2)


class KeyLimit:
    """A fault injector's ``when``: a token bucket of ``rate`` writes a second for the item
    writes to one partition key; a write that finds it empty is chosen (and throttled)."""

    def __init__(self, key: str, rate: float) -> None:
        self.key = key
        self.rate = rate
        self.tokens = rate
        self.stamp = time.monotonic()
        self.lock = threading.Lock()
        #: When each write to the key was let through, and when each attempt was throttled
        #: (with the item it wrote: a write's retries are throttled again).
        self.passed: list[float] = []
        self.throttled: list[float] = []
        self.throttled_items: list[tuple[float, str]] = []

    def __call__(self, operation: str, params: Mapping[str, Any]) -> bool:
        if params.get("Key", {}).get("PK") != {"S": self.key}:
            return False
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1.0:
                self.tokens -= 1.0
                self.passed.append(now)
                return False
            self.throttled.append(now)
            self.throttled_items.append((now, params["Key"]["SK"]["S"]))
            return True


@pytest.fixture
def hot_table(session: Session, table_name: str) -> Iterator[tuple[Table, type[Entity]]]:
    """Old items: ``HOT_ITEMS`` in one partition, ``COLD_ITEMS`` in partitions of one item."""
    old_table, old_doc = declare_doc(table_name, lsi3=False)
    session.create_table(old_table)
    hot = [old_doc(user="hot", n=n, title="t", size=n) for n in range(HOT_ITEMS)]
    cold = [old_doc(user=f"c{n}", n=n, title="t", size=n) for n in range(COLD_ITEMS)]
    session.batch_write([*hot, *cold])
    _, doc = declare_doc(table_name, lsi3=True)
    try:
        yield old_table, doc
    finally:
        session.delete_table(old_table)


def limited(job: Session, limit: KeyLimit) -> FaultInjector:
    faults = FaultInjector(session=job)
    faults.throttle("UpdateItem", reason=KEY_RANGE, when=limit, rate=1.0)
    return faults


def test_sustained_throttling_of_one_partition_slows_its_writer(
    endpoint_url: str, session: Session, hot_table: tuple[Table, type[Entity]]
) -> None:
    """With the default budget (none), the worker that writes the hot key paces its writes to
    it after the first throttles: the key is not throttled write after write, and the report
    names it."""
    table, doc = hot_table
    limit = KeyLimit(HOT, LIMIT)
    with session_on(endpoint_url, retry=PATIENT) as job, limited(job, limit) as faults:
        report = job.backfill(doc, segments=2)
    assert (report.scanned, report.rewritten, report.failed) == (
        HOT_ITEMS + COLD_ITEMS,
        HOT_ITEMS + COLD_ITEMS,
        [],
    )
    assert len(limit.passed) == HOT_ITEMS
    throttles = faults.count("UpdateItem", fault="throttle")
    assert throttles == len(limit.throttled) > 0
    # Backing off request by request alone, nearly every write past the bucket's first second
    # meets throttles, to the end. Paced, the writer slows to the partition's rate after its
    # first throttles: in the second half of the hot key's writes, a write that meets one is
    # rare, a quarter of them at most (the pace probes upwards after each calm spell, and
    # meets the limit again).
    half = limit.passed[HOT_ITEMS // 2]
    late = {item for at, item in limit.throttled_items if at > half}
    assert len(late) <= HOT_ITEMS // 8, (throttles, late, limit.throttled, limit.passed)
    # The report names the hot key and the reason, with every throttle the job met.
    assert report.hot_partitions == {f"{table.name} PK={HOT}": throttles}
    assert report.throttled == {f"{table.name} {KEY_RANGE}": throttles}
    assert sum(1 for i in everything(session, table.name) if "LSI3SK" in i) == (
        HOT_ITEMS + COLD_ITEMS
    )


def test_a_hot_partition_leaves_the_jobs_rate_alone(
    endpoint_url: str, session: Session, hot_table: tuple[Table, type[Entity]]
) -> None:
    """With a budget, key-range throttles never lower the job's shared rate: every other
    partition keeps its pace."""
    table, doc = hot_table
    limit = KeyLimit(HOT, LIMIT)
    with session_on(endpoint_url, retry=PATIENT) as job, limited(job, limit) as faults:
        report = job.backfill(doc, segments=2, write_budget=1000)
    assert faults.count("UpdateItem", fault="throttle") > 0
    assert report.rewritten == HOT_ITEMS + COLD_ITEMS
    run = session.job(table, report.job)
    assert run.rate["write"] == run.rate["write_target"] == 1000.0
    assert report.hot_partitions == {f"{table.name} PK={HOT}": len(limit.throttled)}
