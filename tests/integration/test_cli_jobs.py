"""`lsiorm audit-keys` and `lsiorm backfill` end to end, on each engine."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Session
from lsiorm._cli import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from lsiorm.testing import FaultInjector
from support.cli import app_module, run
from support.migration import stream_table

#: The tasks app: the old release keys tasks by project and number, the new one adds LSI3SK.
APP = """
from lsiorm import Entity, Table

app = Table.with_reserved_lsi_slots({name!r}, "PK", "SK")


class Task(Entity, table=app, keys={keys!r}):
    project: str
    n: int
    due: str
"""
OLD_KEYS = {"PK": "P#{project}", "SK": "TASK#{n:04d}"}
NEW_KEYS = {**OLD_KEYS, "LSI3SK": "DUE#{due}#{n:04d}"}


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """The old and the new release of the tasks app, on one table; their module names."""
    name = f"cli_{uuid.uuid4().hex[:10]}"
    old, new = (
        app_module(tmp_path, monkeypatch, APP.format(name=name, keys=keys), stem)
        for keys, stem in ((OLD_KEYS, "old"), (NEW_KEYS, "new"))
    )
    yield next(old), next(new)
    for module in (old, new):
        next(module, None)  # forgets the module


@contextlib.contextmanager
def tasks_of(module: str, endpoint_url: str, count: int) -> Iterator[tuple[str, str]]:
    """The module's table made by `lsiorm create-table`, with ``count`` tasks; deleted after.
    Yields the command line's options that name the engine."""
    assert run("create-table", f"{module}:app", "--endpoint-url", endpoint_url)[0] == EXIT_OK
    app = sys.modules[module]
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.batch_write(
            [app.Task(project="x", n=n, due=f"2024-0{1 + n % 9}-01") for n in range(count)]
        )
        try:
            yield ("--endpoint-url", endpoint_url)
        finally:
            session.delete_table(app.app)


def test_audit_then_backfill_then_audit(
    modules: tuple[str, str], endpoint_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = modules
    with tasks_of(old, endpoint_url, 25) as url:
        code, out = run("audit-keys", f"{new}:Task", *url, "--segments", "2")
        assert code == EXIT_FOUND
        assert "LSI3SK: 0 stale, 25 missing, 0 extra" in out
        code, out = run("backfill", f"{new}:app", "--entity", "Task", *url, "--dry-run")
        assert code == EXIT_OK
        assert "would rewrite: 25" in out
        code, out = run(
            "backfill",
            f"{new}:Task",
            *url,
            "--budget",
            "1000",
            "--page-size",
            "5",
            "--progress",
        )
        assert code == EXIT_OK, out
        assert "rewritten: 25" in out
        job = out.split("job: ")[1].split()[0]
        code, listed = run("jobs", f"{new}:Task", *url)
        assert code == EXIT_OK
        assert job in listed
        assert "done" in listed
        code, shown = run("jobs", f"{new}:app", "show", job, *url)
        assert code == EXIT_OK, shown
        assert "rewritten=25" in shown
        err = capsys.readouterr().err
        assert "backfill:" in err  # the progress bar, on stderr
        assert "items/s" in err
        code, out = run("audit-keys", f"{new}:app", *url, "--partition", "P#x")
        assert code == EXIT_OK, out
        assert "nothing is stale" in out
        assert run("audit-keys", f"{new}:app", *url, "--entity", "Nope")[0] == EXIT_USAGE
        assert run("backfill", f"{new}:app", *url)[0] == EXIT_USAGE


def test_relieve_moves_old_items_to_a_file(
    modules: tuple[str, str], endpoint_url: str, tmp_path: Path
) -> None:
    from lsiorm import read_relief_file

    old, _ = modules
    with tasks_of(old, endpoint_url, 18) as url:
        args = ("relieve", f"{old}:app", *url, "--partition", "P#x", "--entity", "Task")
        code, out = run(*args, "--before", "due=2024-03-01", "--to-file", "old.jsonl")
        assert code == EXIT_OK, out
        moved = [n for n in range(18) if f"2024-0{1 + n % 9}-01" < "2024-03-01"]
        assert f"moved: {len(moved)}; kept: {18 - len(moved)}" in out
        assert "shrank by" in out
        lines = read_relief_file(tmp_path / "old.jsonl")
        assert sorted(i["SK"]["S"] for i in lines) == [f"TASK#{n:04d}" for n in moved]
        assert run(*args, "--before", "due=2024-03-01")[0] == EXIT_USAGE  # no destination
        assert run(*args[:-2], "--before", "due=x", "--to-file", "a")[0] == EXIT_USAGE


def test_a_checkpoint_option_of_0_2_is_accepted_and_said_to_be_ignored(
    modules: tuple[str, str], endpoint_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = modules
    with tasks_of(old, endpoint_url, 5) as url:
        code, out = run("backfill", f"{new}:Task", *url, "--checkpoint", str(tmp_path / "c.json"))
        assert code == EXIT_OK, out
        assert "rewritten: 5" in out
        assert "--checkpoint is ignored" in capsys.readouterr().err
        assert not (tmp_path / "c.json").exists()


def test_under_a_prefix_the_job_commands_name_the_live_table_and_price_once(
    modules: tuple[str, str], endpoint_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LSIORM_TABLE_PREFIX", "dev-")  # tasks_of's table is dev-<name> too
    old, new = modules
    with tasks_of(old, endpoint_url, 6) as url:
        name = sys.modules[old].app.name
        table = f"table '{name}' (live table 'dev-{name}')"
        code, out = run("jobs", f"{new}:app", *url)
        assert (code, out) == (EXIT_OK, f"No jobs in the ledger of {table}.\n")
        for command, kind in (("audit-keys", "Key audit"), ("adopt", "Adoption")):
            for dry_run in ((), ("--dry-run",)):
                code, out = run(command, f"{new}:app", *url, *dry_run)
                assert code == (EXIT_OK if dry_run else EXIT_FOUND), out
                assert out.startswith(f"{kind} of {table}: priced at "), out
                assert out.count("priced at") == 1, out
        code, out = run("audit-keys", f"{new}:app", *url, "--partition", "P#x")
        assert code == EXIT_FOUND, out
        assert out.startswith(f"Key audit of {table}: priced at ")
        assert out.count("priced at") == 1, out
        code, out = run("backfill", f"{new}:Task", *url)
        assert code == EXIT_OK, out
        lines = out.splitlines()
        assert lines[0] == f"Backfill of Task in {table}"
        assert lines[1].startswith("  read priced at ")
        assert lines[2].startswith("  rewrites priced at ")
        assert out.count("priced at") == 2
        assert "write units" not in out  # the total is said once, as the read's is
        job = out.split("job: ")[1].split()[0]
        code, out = run("relieve", f"{new}:app", *url, "--partition", "P#x", "--to-file", "x.jl")
        assert code == EXIT_OK, out
        assert out.startswith(f"Relief of collection 'P#x' of {table} to ")
        # The options of `jobs` go before or after its action and id alike.
        shown = run("jobs", f"{new}:app", "show", job, *url)
        assert shown[0] == EXIT_OK
        assert run("jobs", f"{new}:app", *url, "show", job) == shown
        assert run("jobs", f"{new}:app", "show", *url, job) == shown


def test_migrate_status_before_any_migration_finds_nothing(
    endpoint_url: str,
    dynamodb_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, dest = (f"cli_{uuid.uuid4().hex[:10]}" for _ in range(2))
    stream_table(dynamodb_client, source, items=3)
    module = next(app_module(tmp_path, monkeypatch, APP.format(name=dest, keys=OLD_KEYS), "dst"))
    try:
        args = (
            "migrate-table",
            f"{module}:app",
            "--source",
            source,
            "--endpoint-url",
            endpoint_url,
        )
        code, out = run(*args, "--status")
        assert (code, out) == (EXIT_FOUND, "")
        err = capsys.readouterr().err
        assert err.startswith(f"lsiorm migrate-table: No migration of '{source}' to '{dest}'")
        assert dest not in dynamodb_client.list_tables()["TableNames"]  # asking wrote nothing
        assert run(*args, "--abandon")[0] == EXIT_USAGE  # nothing to act on
    finally:
        dynamodb_client.delete_table(TableName=source)


def test_a_backfill_and_jobs_show_name_the_hot_partition(
    modules: tuple[str, str], endpoint_url: str
) -> None:
    old, new = modules
    reason = "TableWriteKeyRangeThroughputExceeded"
    with tasks_of(old, endpoint_url, 12) as url, FaultInjector() as faults:
        faults.throttle(  # twice: the command tries a request 3 times
            "UpdateItem",
            reason=reason,
            times=2,
            when=lambda _, params: params["Key"]["PK"] == {"S": "P#x"},  # not the ledger's
        )
        code, out = run("backfill", f"{new}:Task", *url, "--page-size", "4")
        assert code == EXIT_OK, out
        table = sys.modules[new].app.name
        assert f"  throttled: {table} {reason} x2" in out
        assert f"  hot partitions (throttles): {table} PK=P#x (2)" in out
        job = out.split("job: ")[1].split()[0]
        code, shown = run("jobs", f"{new}:app", "show", job, *url)
        assert code == EXIT_OK, shown
        assert f"  throttled: {table} {reason} x2" in shown
        assert f"  hot partitions (throttles): {table} PK=P#x (2)" in shown
        assert "hot:" not in shown  # the counts line keeps its plain counts
