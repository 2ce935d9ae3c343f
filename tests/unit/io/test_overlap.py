"""Sync batches overlap their chunks in a small thread pool; results and errors keep their order.

A segment killed in a threaded gather stops its siblings.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Session, Table
from lsiorm._io.drivers import SyncDriver
from lsiorm._io.overlap import gather_in_threads
from lsiorm._ops.steps import Gather, Operation, Sleep
from support.jobs import Killed


def returning(value: Any, fail: bool = False) -> Operation[Any]:
    if fail:
        raise ValueError(value)
    return value
    yield  # a generator


def run_plain(op: Operation[Any], stop: threading.Event | None) -> Any:
    try:
        next(op)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("no steps expected")


@given(st.lists(st.booleans(), max_size=12), st.integers(min_value=1, max_value=20))
def test_results_in_order_and_first_error_raised(fails: list[bool], limit: int) -> None:
    ops = [returning(i, fail) for i, fail in enumerate(fails)]
    if any(fails):
        with pytest.raises(ValueError, match=str(fails.index(True))):
            gather_in_threads(run_plain, ops, limit)
    else:
        assert gather_in_threads(run_plain, ops, limit) == list(range(len(fails)))


table = Table("overlap", partition_key="pk", sort_key="sk")


class Row(Entity, table=table, keys={"pk": "R#{group}", "sk": "{n:06d}"}):
    group: str
    n: int


class SlowStub:
    """A client whose BatchWriteItem waits a little, recording how many run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = self.calls = 0
        self.items: list[Any] = []

    def batch_write_item(self, **params: Any) -> dict[str, Any]:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)
            self.items.extend(params["RequestItems"]["overlap"])
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        return {"UnprocessedItems": {}}


@pytest.mark.parametrize(("concurrency", "bound"), [(1, 1), (4, 4)])
def test_sync_batch_chunks_overlap_up_to_the_limit(concurrency: int, bound: int) -> None:
    stub = SlowStub()
    session = Session(client=stub)
    rows = [Row(group="g", n=i) for i in range(250)]
    result = session.batch_write(puts=rows, concurrency=concurrency)
    assert result.written == 250
    assert stub.calls == 10
    assert len(stub.items) == 250
    assert stub.most == bound


def test_a_killed_segment_stops_its_siblings() -> None:
    steps = Counter[str]()
    killer_ran = threading.Event()

    def sibling() -> Operation[str]:
        for _ in range(10_000):
            steps["sibling"] += 1
            yield Sleep(0.001)
        return "finished"

    def killer() -> Operation[str]:
        yield Sleep(0.001)
        killer_ran.set()
        raise Killed

    def job() -> Operation[list[str]]:
        done: list[str] = yield Gather((sibling(), killer(), sibling()), limit=3, threads=True)
        return done

    with pytest.raises(Killed):
        SyncDriver(client=None).run(job())
    assert killer_ran.is_set()
    assert steps["sibling"] < 2 * 10_000  # the siblings stopped long before their end
