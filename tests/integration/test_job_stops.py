"""A job that stops with an error stops all its workers first: once the error reaches the
caller, no worker of the run writes any more, and the error carries the job's report.

One unit's request fails for good (a throttle, with a retry policy of one attempt); its
siblings run in threads here, as tasks of an AsyncSession, or on an executor whose workers
build their own sessions. lsiorm's fault injector records every request each session sends,
with the time it was sent.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lsiorm import AsyncSession, RetryPolicy, Session, ThrottledError
from lsiorm.testing import FaultInjector
from lsiorm.testing.faults import DATA_PLANE
from support.jobs import everything, worker_apps

ITEMS = 240
SEGMENTS = 4
ONCE = RetryPolicy(max_attempts=1)
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
#: Which of the job's item rewrites fails for good.
FAILING = 25


class Recorder:
    """An injector's ``when``: notes every request it is asked about (by any session the
    injector watches) with the time it was sent, and chooses only the ``FAILING``-th rewrite of
    an item (not of the ledger), which the test's rule throttles."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str, bool]] = []
        self.rewrites = 0
        self.failed_at: float | None = None
        self.lock = threading.Lock()

    def __call__(self, operation: str, params: Mapping[str, Any]) -> bool:
        ledger = "~lsiorm#jobs" in repr(params.get("Key") or params.get("TransactItems") or "")
        with self.lock:
            self.sent.append((time.monotonic(), operation, ledger))
            if operation != "UpdateItem" or ledger:
                return False
            self.rewrites += 1
            if self.rewrites != FAILING:
                return False
            self.failed_at = time.monotonic()
            return True

    def writes_after(self, instant: float) -> list[tuple[float, str, bool]]:
        with self.lock:
            return [s for s in self.sent if s[0] > instant and s[1] in WRITES]

    def rewrites_after(self, instant: float) -> int:
        return sum(1 for _, op, ledger in self.writes_after(instant) if not ledger)


@pytest.fixture
def apps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: Session, table_name: str
) -> Iterator[tuple[Any, Any]]:
    """The old and new release of an app whose classes workers can import; its items."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    old, new = worker_apps(tmp_path, table_name)
    session.create_table(old.table)
    session.batch_write([old.Item(p=n % 40, n=n, title=f"t{n}") for n in range(ITEMS)])
    try:
        yield old, new
    finally:
        session.delete_table(old.table)


def record(faults: FaultInjector, recorder: Recorder) -> None:
    """Note every request; throttle the chosen one (the rule of the others chooses none)."""
    faults.throttle("UpdateItem", when=recorder, rate=1.0)
    faults.drop(DATA_PLANE - {"UpdateItem"}, when=recorder, rate=1.0)


def rewritten(session: Session, name: str) -> int:
    return sum(1 for item in everything(session, name) if "LSI3SK" in item)


def check_stopped(
    session: Session, new: Any, recorder: Recorder, error: ThrottledError, caught_at: float
) -> None:
    assert recorder.failed_at is not None
    # Once the error has reached the caller, nothing more is written; every worker stopped.
    time.sleep(1.0)
    assert recorder.writes_after(caught_at) == []
    # The siblings stopped at their next request, not at the end of their units: a few
    # rewrites at most were on their way while the error went up the failing unit.
    assert recorder.rewrites_after(recorder.failed_at) <= 3 * (SEGMENTS - 1)
    report = error.report
    assert report is not None
    assert report.job is not None
    stored = rewritten(session, new.table.name)
    assert stored < ITEMS
    # The report counts the pages committed: never more than what was written.
    assert 0 <= report.rewritten <= stored
    run = session.job(new.table, report.job)
    assert run.state == "paused"
    assert all(u.owner is None for u in run.units)  # every lease given up
    # The same job resumes the run and ends it, exactly.
    again = session.backfill(new.Item, segments=SEGMENTS)
    assert again.resumed
    assert again.job == report.job
    assert (again.scanned, again.rewritten, again.failed) == (ITEMS, ITEMS, [])
    assert rewritten(session, new.table.name) == ITEMS


def test_a_failing_unit_stops_its_sibling_threads(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    _, new = apps
    recorder = Recorder()
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1", retry=ONCE) as job,
        FaultInjector(session=job) as faults,
    ):
        record(faults, recorder)
        with pytest.raises(ThrottledError) as caught:
            job.backfill(new.Item, segments=SEGMENTS, page_size=10, concurrency=SEGMENTS)
        caught_at = time.monotonic()
    check_stopped(session, new, recorder, caught.value, caught_at)


def test_a_failing_unit_stops_its_sibling_tasks(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    _, new = apps
    recorder = Recorder()

    async def run() -> tuple[ThrottledError, float]:
        async with AsyncSession(
            endpoint_url=endpoint_url, region_name="us-east-1", retry=ONCE
        ) as s:
            with FaultInjector(session=s) as faults:
                record(faults, recorder)
                try:
                    await s.backfill(new.Item, segments=SEGMENTS, page_size=10)
                except ThrottledError as exc:
                    return exc, time.monotonic()
        raise AssertionError("the backfill did not fail")

    error, caught_at = asyncio.run(run())
    check_stopped(session, new, recorder, error, caught_at)


def test_a_failing_unit_stops_the_workers_of_an_executor(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    """The workers build their own sessions (the injector sees them all, in this process) and
    hear of the stop from the ledger; the caller gets the error once they have ended."""
    _, new = apps
    recorder = Recorder()
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1", retry=ONCE) as job,
        FaultInjector() as faults,
        ThreadPoolExecutor(SEGMENTS) as pool,
    ):
        record(faults, recorder)
        with pytest.raises(ThrottledError) as caught:
            job.backfill(new.Item, segments=SEGMENTS, page_size=10, executor=pool)
        caught_at = time.monotonic()
    error = caught.value
    assert recorder.failed_at is not None
    time.sleep(1.0)
    assert recorder.writes_after(caught_at) == []
    assert error.report is not None
    assert session.job(new.table, error.report.job).state == "paused"
