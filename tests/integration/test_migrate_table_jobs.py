"""A table migration's runs on executors, detached and run unit by unit, and in `lsiorm jobs`.

The workers import the destination's entity classes by module path, so the app is a module
written to a folder on every process's path (as for the key jobs' workers).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import re
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest

from lsiorm import HookRequest, Session
from lsiorm._cli import EXIT_OK
from lsiorm.errors import JobError, ValidationError
from support.cli import run
from support.jobs import Killed
from support.migration import (
    PageReads,
    assert_migrated,
    declare_shop,
    source_request,
    stream_table,
)

APP = """
from lsiorm import Entity, Table

shop = Table.with_reserved_lsi_slots("{name}", "PK", "SK")


class Order(
    Entity,
    table=shop,
    keys={{
        "PK": "G#{{group:03d}}",
        "SK": "ORDER#{{n:06d}}",
        "LSI1SK": "STATUS#{{status}}#{{n:06d}}",
    }},
):
    group: int
    n: int
    title: str
    status: str = "new"
"""


@pytest.fixture
def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"src_{tag}", f"dst_{tag}"


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: tuple[str, str]) -> Iterator[Any]:
    """The destination's declaration as a module every worker process can import."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.chdir(tmp_path)
    module = f"shop_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(APP.format(name=names[1]))
    yield importlib.import_module(module)
    sys.modules.pop(module, None)


class SourceReads:
    """Records the Scans of the source table this session sends (none when the units run
    in the executor's workers, which build their own sessions)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.scans = 0
        self.lock = threading.Lock()

    def before(self, request: HookRequest) -> None:
        if request.operation == "Scan" and request.params.get("TableName") == self.source:
            with self.lock:
                self.scans += 1


def on(endpoint_url: str, *hooks: object) -> Session:
    return Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=hooks)


def test_the_copy_and_the_verification_run_in_a_process_pool(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], app: Any
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=30)
    reads = SourceReads(source)
    spawn = multiprocessing.get_context("spawn")
    with on(endpoint_url, reads) as session, ProcessPoolExecutor(2, mp_context=spawn) as pool:
        report = session.migrate_table(app.shop, source, segments=4, executor=pool)
        runs = {r.kind: session.job(app.shop, r.id) for r in session.jobs(app.shop)}
    assert report.ready, str(report)
    assert report.verify is not None
    assert (report.copied, report.verify.source) == (31, 31)
    assert reads.scans == 0  # every unit of the copy and of the verification ran in the pool
    for kind in ("migrate-copy", "migrate-verify"):
        assert [u.runs for u in runs[kind].units] == [1] * 4, kind
    dynamodb_client.delete_item(**source_request("delete", source, 2))
    with on(endpoint_url) as session, ThreadPoolExecutor(2) as threads:
        final = session.migrate_table(app.shop, source, finish=True, executor=threads)
    assert final.phase == "switched", str(final)
    assert_migrated(dynamodb_client, source, dest, app.shop)


def test_an_executor_is_refused_before_any_request_when_workers_cannot_run_units(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=2)
    local, _ = declare_shop(dest)  # declared in a function: no worker can import it
    with on(endpoint_url) as session, ThreadPoolExecutor(1) as pool:
        with pytest.raises(ValidationError) as refused:
            session.migrate_table(local, source, executor=pool)
        assert refused.value.rule == "jobs.not-importable"
        client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
        with Session(client=client) as given, pytest.raises(ValidationError) as refused:
            given.migrate_table(local, source, executor=pool)
        assert refused.value.rule == "jobs.executor"
        with pytest.raises(ValidationError) as refused:
            session.migrate_table(local, source, detach=True, finish=True)
        assert refused.value.rule == "migrate.one-action"
    assert dest not in dynamodb_client.list_tables()["TableNames"]


def test_a_detached_migration_is_run_unit_by_unit_and_resumed(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], app: Any
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=24)
    url = ("--endpoint-url", endpoint_url)
    shop = (f"{app.__name__}:shop", "--source", source, "--segments", "3")
    code, out = run("migrate-table", *shop, "--detach", *url)
    assert code == EXIT_OK, out
    assert f"Migration of '{source}' to '{dest}': copy" in out
    assert "0 copied" in out
    with on(endpoint_url) as session:
        opened = session.migrate_table(app.shop, source, segments=3, detach=True)  # the same run
        assert (opened.phase, opened.copied) == ("copy", 0)
        assert opened.copy_job is not None
        code, listed = run("jobs", f"{app.__name__}:shop", *url)
        assert code == EXIT_OK, listed
        assert f"{opened.copy_job}  migrate-copy running" in listed
        units = session.job(app.shop, opened.copy_job).units
        assert [session.run_unit(app.shop, opened.copy_job, u.unit) for u in units[:2]] == [
            "done",
            "done",
        ]
        # The next call resumes the same run: it runs the last unit, catches up, verifies.
        report = session.migrate_table(app.shop, source, segments=3)
        assert report.copy_job == opened.copy_job
        assert report.copied == 25
        assert report.ready, str(report)
        assert [u.runs for u in session.job(app.shop, opened.copy_job).units] == [1, 1, 1]
        # Once the copy is done, a detached call catches up and opens a verification's run.
        dynamodb_client.delete_item(**source_request("delete", source, 2))
        session.migrate_table(app.shop, source, segments=3, detach=True)
        verifying = [r for r in session.jobs(app.shop) if r.state == "running"]
        assert [r.kind for r in verifying] == ["migrate-verify"]
        for unit in session.job(app.shop, verifying[0].id).units:
            assert session.run_unit(app.shop, verifying[0].id, unit.unit) == "done"
        final = session.migrate_table(app.shop, source, segments=3, finish=True)
    assert final.phase == "switched", str(final)
    assert final.verify is not None
    assert (final.verify.source, final.verify.matched) == (24, 24)
    assert_migrated(dynamodb_client, source, dest, app.shop)


class SecondUnit:
    """Kills the migration at the first page read of the copy's second unit (segment 1)."""

    def before(self, request: HookRequest) -> None:
        if request.operation == "Scan" and request.params.get("Segment") == 1:
            raise Killed


def test_lsiorm_jobs_shows_a_migration_its_copy_and_its_lag(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], app: Any
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=20)
    jobs = ("jobs", f"{app.__name__}:shop", "--endpoint-url", endpoint_url)
    with on(endpoint_url, SecondUnit()) as doomed, pytest.raises(Killed):
        doomed.migrate_table(app.shop, source, segments=2, concurrency=1)
    code, listed = run(*jobs)
    assert code == EXIT_OK, listed
    head, copy, *rest = listed.splitlines()
    assert re.fullmatch(rf"migration \w+  '{source}' -> '{dest}': copy", head), listed
    # The first unit is done: the rate and an ETA from the units done.
    shown = re.fullmatch(
        r"  copy: run (\S+) paused, units 1/2, (\d+) items read, \2 copied, \d+ items/s, "
        r"ETA \d+ s",
        copy,
    )
    assert shown, listed
    assert rest[0].startswith(f"{shown[1]}  migrate-copy paused"), listed  # the run's own line
    with on(endpoint_url) as session:
        session.migrate_table(app.shop, source, segments=2)
    code, listed = run(*jobs)
    assert code == EXIT_OK, listed
    lines = listed.splitlines()
    assert re.fullmatch(rf"migration \w+  '{source}' -> '{dest}': catch-up", lines[0]), listed
    assert re.fullmatch(
        rf"  copy: run {shown[1]} done, units 2/2, 21 items read, 21 copied, \d+ items/s", lines[1]
    ), listed
    assert re.fullmatch(
        r"  catch-up: \d+ changes applied, \d+ skipped; lag 0 records, 0\.0 s behind "
        r"\(measured \d+ s ago\)",
        lines[2],
    ), listed
    assert lines[3] == "  verify: clean: 21 source items, 0 missing, 0 different, 0 extra"


class CancelVerification(PageReads):
    """At the verification's first page read of the destination, cancels its run (as `lsiorm
    jobs ... cancel` would, from another session)."""

    def __init__(self, other: Session, table: Any, destination: str) -> None:
        super().__init__(destination)
        self.other = other
        self.shop = table
        self.cancelled: list[str] = []

    def reached(self, reads: int) -> None:
        if self.cancelled:
            return
        for record in self.other.jobs(self.shop):
            if record.kind == "migrate-verify" and record.state == "running":
                self.other.cancel_job(self.shop, record.id)
                self.cancelled.append(record.id)


def test_a_verification_cancelled_while_it_runs_stops_and_the_next_call_begins_afresh(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], app: Any
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=12)
    with on(endpoint_url) as session:
        assert session.migrate_table(app.shop, source, page_size=2).ready
        first = {r.id for r in session.jobs(app.shop) if r.kind == "migrate-verify"}
        canceller = CancelVerification(session, app.shop, dest)
        with on(endpoint_url, canceller) as cancelling, pytest.raises(JobError) as stopped:
            cancelling.migrate_table(app.shop, source, page_size=2)
        assert stopped.value.rule == "migrate.verify-cancelled"
        assert [stopped.value.job] == canceller.cancelled
        # A detached verification whose run is cancelled before it runs is run again.
        session.migrate_table(app.shop, source, detach=True)
        (opened,) = [r for r in session.jobs(app.shop) if r.state == "running"]
        assert session.cancel_job(app.shop, opened.id)
        again = session.migrate_table(app.shop, source)
        verified = [r for r in session.jobs(app.shop) if r.kind == "migrate-verify"]
        session.migrate_table(app.shop, source)
        last = [r for r in session.jobs(app.shop) if r.kind == "migrate-verify"]
    assert again.ready, str(again)
    assert again.verify is not None
    assert again.verify.source == 13
    assert [r.state for r in verified] == ["done", "cancelled"]
    assert verified[1].id == opened.id
    assert verified[0].id not in {*first, *canceller.cancelled}
    # The ledger keeps the runs of the last verification only.
    assert [r.state for r in last] == ["done"]
    assert last[0].id != verified[0].id
