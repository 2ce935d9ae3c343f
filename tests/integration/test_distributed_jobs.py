"""Key jobs whose units run in other processes: a process pool, two processes started on the
same job, and a Dask cluster with a worker killed mid-job while writers keep writing.

The units find their entity classes by module path, so the app is a module written to a
folder on every process's path. The Dask tests are ``slow``: ``LSIORM_SCALE`` sets their size
(1 is the full size: 20,000 items in 40 units; the default, for CI, is a fiftieth of it: 400
items in 12 units).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lsiorm import AsyncSession, RetryPolicy, Session, unit_from_json, unit_to_json
from lsiorm._io.exports import open_export
from lsiorm._jobs.catalog import run_declared_unit
from lsiorm._jobs.options import ledger_location
from lsiorm._model.key_check import check_item_keys
from lsiorm._model.wire import item_from_wire
from support.faults import FaultProxy
from support.jobs import Killed, WriteLog, everything, session_on, unit_counts, worker_apps
from support.writers import ConcurrentWriters

SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
PARTITIONS = 40
#: The Dask job's units: one per partition at full size, fewer (of more items) at CI size.
SEGMENTS = PARTITIONS if SCALE >= 1 else 12
#: The lease of the Dask job's units: how long the killed worker's units wait for a takeover.
LEASE = 5.0
#: How long a worker is frozen to tell the units it holds from the others'.
FREEZE = 1.5
#: The delay of every request of the Dask job (through the fault proxy). At CI size a unit is
#: a few pages, while the worker killer needs a look of FREEZE seconds per busy worker: CI once
#: saw the job end before a worker could be killed holding a unit.
LATENCY = 0.03 if SCALE < 1 else 0.0


@pytest.fixture
def apps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: Session, table_name: str
) -> Iterator[tuple[Any, Any]]:
    """The old and new release of the workers' app, its table created (deleted after)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    old, new = worker_apps(tmp_path, table_name)
    session.create_table(old.table)
    try:
        yield old, new
    finally:
        session.delete_table(old.table)


def seed(session: Session, old: Any, count: int) -> dict[int, dict[str, Any]]:
    items = {
        n: {"p": n % PARTITIONS, "n": n, "title": f"t{n % 97}", "hits": 0, "note": None}
        for n in range(count)
    }
    session.batch_write([old.Item(**fields) for fields in items.values()])
    return items


def test_a_backfill_runs_its_units_in_a_process_pool(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    old, new = apps
    seed(session, old, 240)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        report = session.backfill(new.Item, segments=6, executor=pool)
    assert (report.scanned, report.rewritten, report.current, report.failed) == (240, 240, 0, [])
    record = session.job(new.table, report.job)
    assert record.state == "done"
    assert [u.runs for u in record.units] == [1] * 6
    assert session.audit_keys(new.Item).clean


def test_an_async_session_built_from_parameters_runs_a_backfill_on_an_executor(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    old, new = apps
    seed(session, old, 120)

    async def backfill() -> Any:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as s:
            assert s.config is not None
            assert s.config.endpoint_url == endpoint_url
            with ThreadPoolExecutor(2) as pool:
                return await s.backfill(new.Item, segments=4, executor=pool)

    report = asyncio.run(backfill())
    assert (report.scanned, report.rewritten, report.current, report.failed) == (120, 120, 0, [])
    assert [u.runs for u in session.job(new.table, report.job).units] == [1] * 4
    assert session.audit_keys(new.Item).clean


def test_a_submission_run_again_waits_for_the_lease_of_its_dead_first_run(
    session: Session, endpoint_url: str, apps: tuple[Any, Any]
) -> None:
    """An executor may run one submission twice (Dask retries the task of a worker that died):
    the second run does not take the first run's lease for its own; it waits for it to lapse,
    as any other worker does (two runs of one submission could otherwise both hold a unit)."""
    old, new = apps
    seed(session, old, 40)
    opened = session.backfill(new.Item, segments=1, detach=True, page_size=5)
    unit = session.job(new.table, opened.job).units[0].unit
    location = ledger_location(session.ctx, new.table, None)
    with session_on(endpoint_url, WriteLog(limit=3)) as dying, pytest.raises(Killed):
        dying.run(
            run_declared_unit(dying.ctx, location, 60.0, opened.job, unit, open_export, "sub")
        )
    again = session.run(
        run_declared_unit(session.ctx, location, 60.0, opened.job, unit, open_export, "sub")
    )
    assert again == "held"
    held = session.job(new.table, opened.job).units[0]
    assert held.state == "running"
    assert held.owner is not None
    assert held.owner.startswith("sub.")


def test_a_detached_run_is_run_unit_by_unit_as_a_map_state_would(
    session: Session, apps: tuple[Any, Any]
) -> None:
    """Open the run, pass each unit on as JSON, run each with run_unit (one twice)."""
    old, new = apps
    seed(session, old, 90)
    opened = session.backfill(new.Item, segments=3, detach=True)
    assert opened.scanned == 0
    record = session.job(new.table, opened.job)
    assert record.state == "running"
    assert session.audit_keys(new.Item).stale_items == 90  # nothing ran yet
    payloads = [json.dumps(unit_to_json(u.unit)) for u in record.units]
    results = [
        session.run_unit(new.table, opened.job, unit_from_json(json.loads(p))) for p in payloads
    ]
    assert results == ["done"] * 3
    again = session.run_unit(new.table, opened.job, unit_from_json(json.loads(payloads[0])))
    assert again == "done"  # a retried map item: its unit is done, nothing is read again
    record = session.job(new.table, opened.job)
    assert record.state == "done"
    assert [u.runs for u in record.units] == [1, 1, 1]
    assert (record.counts()["scanned"], record.counts()["rewritten"]) == (90, 90)
    assert session.audit_keys(new.Item).clean


def _backfill_in_a_process(endpoint_url: str, folder: str, module: str, out: Any) -> None:
    import importlib
    import sys

    sys.path.insert(0, folder)
    app = importlib.import_module(module)
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as own:
        report = own.backfill(app.Item, segments=8, page_size=7, lease_seconds=20)
    out.put((report.job, report.resumed, report.rewritten))


def test_two_processes_started_on_one_job_run_each_unit_once(
    session: Session, endpoint_url: str, apps: tuple[Any, Any], tmp_path: Path
) -> None:
    old, new = apps
    seed(session, old, 300)
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    args = (endpoint_url, str(tmp_path), new.__name__, out)
    processes = [spawn.Process(target=_backfill_in_a_process, args=args) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)
        assert process.exitcode == 0
    results = [out.get(timeout=5) for _ in processes]
    assert len({job for job, _, _ in results}) == 1  # one run, joined by both
    record = session.job(new.table, results[0][0])
    counted = unit_counts(record)
    assert record.state == "done", counted
    assert [u.runs for u in record.units] == [1] * 8, counted  # each unit ran once
    counts = record.counts()
    assert (counts["scanned"], counts["rewritten"]) == (300, 300), counted
    assert session.audit_keys(new.Item).clean


# -- Dask ---------------------------------------------------------------------------------------


#: CPython 3.11 before 3.11.9 can deadlock a process whose threads run while another calls
#: sys._current_frames(), as Dask's worker profiler does every 10 ms (CPython issues 106883 and
#: 116969): a worker then hangs for good, holding its units' futures (docs/migrations.md).
PROFILER_DEADLOCKS = (3, 11) <= sys.version_info < (3, 11, 9)


@pytest.fixture
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    import dask

    profiler = {"distributed.worker.profile.enabled": not PROFILER_DEADLOCKS}
    with (
        dask.config.set(profiler),
        distributed.LocalCluster(
            n_workers=3, threads_per_worker=2, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        profiling = client.run(dask.config.get, "distributed.worker.profile.enabled")
        assert set(profiling.values()) == {not PROFILER_DEADLOCKS}
        yield client


def _running_units(session: Session, table: Any) -> dict[str, tuple[Any, ...]]:
    """The units of the newest run that a worker holds now, each with its lease and counts."""
    jobs = session.jobs(table)
    if not jobs or jobs[0].state != "running":
        return {}
    record = session.job(table, jobs[0].id)
    return {
        u.unit.id: (u.owner, u.lease, sorted(u.counts.items()))
        for u in record.units
        if u.state == "running" and u.owner is not None
    }


def _kill_a_worker_holding_a_unit(
    client: Any, session: Session, table: Any, stop: threading.Event
) -> tuple[int, set[str]]:
    """SIGKILL one worker process while it holds a unit half done; return its pid and the units
    it held.

    Only a worker that Dask says is running a task (a unit) is a candidate. It is frozen
    (SIGSTOP) for a while: the units that do not move meanwhile are its own (the others commit
    a page every few milliseconds). A worker holding none is let go on (SIGCONT) and the next is
    tried. (Without asking Dask first, a loaded machine made another worker's slow unit look
    held, and an idle worker was killed.)
    """
    while not stop.is_set():
        pids = client.run(os.getpid)
        busy = {address for address, tasks in client.processing().items() if tasks}
        for victim in sorted(pid for address, pid in pids.items() if address in busy):
            if not any(counts for _, _, counts in _running_units(session, table).values()):
                break  # no unit is half done yet (or the run is over)
            try:
                os.kill(victim, signal.SIGSTOP)
            except ProcessLookupError:  # a worker that just restarted
                continue
            held: set[str] = set()
            try:
                before = _running_units(session, table)
                time.sleep(FREEZE)
                after = _running_units(session, table)
                held = {unit for unit, seen in before.items() if after.get(unit) == seen}
            finally:
                # Killed while still frozen (it cannot finish a unit meanwhile), or let go on.
                os.kill(victim, signal.SIGKILL if held else signal.SIGCONT)
            if held:
                return victim, held
        time.sleep(0.05)
    raise AssertionError("the job ended before a worker could be killed holding a unit")


@pytest.mark.slow
@pytest.mark.parametrize("fault_rate", [0.0, 0.3], ids=["clean", "faults-30"])
def test_a_backfill_on_a_dask_cluster_survives_a_killed_worker_and_concurrent_writers(
    session: Session,
    endpoint_url: str,
    apps: tuple[Any, Any],
    dask_client: Any,
    fault_rate: float,
) -> None:
    old, new = apps
    count = max(400, int(20_000 * SCALE))
    items = seed(session, old, count)
    retry = RetryPolicy(max_attempts=30, initial=0.0, maximum=0.01)
    kinds = ("throttle", "error500", "drop", "lost-response")
    with (
        FaultProxy(endpoint_url, rate=fault_rate, kinds=kinds, seed=24, latency=LATENCY) as proxy,
        Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=retry) as jobs,
        ConcurrentWriters(endpoint_url, new.Item, items, seed=int(fault_rate * 10)) as writers,
        ThreadPoolExecutor(1) as watcher,
    ):
        over = threading.Event()
        killer = watcher.submit(
            _kill_a_worker_holding_a_unit, dask_client, session, new.table, over
        )
        try:
            report = jobs.backfill(
                new.Item,
                segments=SEGMENTS,
                executor=dask_client.get_executor(),
                lease_seconds=LEASE,
                page_size=max(2, min(50, count // SEGMENTS // 5)),  # five pages or more
            )
        finally:
            over.set()
        (_, held) = killer.result()  # its AssertionError if no worker was killed holding a unit
        writers.stop()
    if fault_rate:
        assert proxy.stats["faults"] > 0
    assert report.failed == []
    record = session.job(new.table, report.job)
    assert record.state == "done"
    assert sum(u.runs for u in record.units) > SEGMENTS  # the killed worker's unit ran again
    assert any(u.runs > 1 for u in record.units if u.unit.id in held)
    # Exact counts: every item read once is exactly one of these.
    assert report.scanned == report.rewritten + report.current + report.gone
    untouched = {n for n in items if n not in writers.touched}
    assert report.rewritten >= len(untouched)  # no writer made those current
    assert report.rewritten <= count
    # Against brute force: the table holds what the writers left, each item with its keys.
    stored = {int(i["SK"]["S"][2:]): i for i in everything(session, new.table.name)}
    expected = {n: f for n, f in writers.model.items() if f is not None}
    assert sorted(stored) == sorted(expected)  # 0 lost, 0 duplicated, none resurrected
    for n, item in stored.items():
        check = check_item_keys(new.table, item)
        assert check is not None, n
        assert check.current, (n, check)  # 0 wrong keys
        plain = item_from_wire(item)
        for name, value in expected[n].items():
            assert plain.get(name) == value, (n, name)
