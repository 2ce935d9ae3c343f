"""Ctrl-C and SIGTERM stop `lsiorm backfill` cleanly: one line, leases released, resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from lsiorm import Session, Table
from lsiorm._cli import EXIT_STOPPED
from support.cli import run
from support.jobs import session_on

MODULE = """
from lsiorm import Entity, Table

app = Table.with_reserved_lsi_slots("{name}", "PK", "SK")


class Task(Entity, table=app, keys={{"PK": "P#{{project}}", "SK": "TASK#{{n:04d}}"{slot}}}):
    project: str
    n: int
    due: str
"""
COUNT = 24


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_backfill_says_one_line_and_resumes(
    endpoint_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    name = f"stop_{uuid.uuid4().hex[:10]}"
    old, new = f"old_{uuid.uuid4().hex[:8]}", f"new_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{old}.py").write_text(textwrap.dedent(MODULE).format(name=name, slot=""))
    slot = ', "LSI3SK": "DUE#{due}#{n:04d}"'
    (tmp_path / f"{new}.py").write_text(textwrap.dedent(MODULE).format(name=name, slot=slot))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    app = __import__(old)
    new_app = __import__(new)
    with session_on(endpoint_url) as session:
        session.create_table(app.app)
        session.batch_write([app.Task(project="x", n=n, due="2024-05-01") for n in range(COUNT)])
        try:
            command = [sys.executable, "-m", "lsiorm._cli", "backfill", f"{new}:Task"]
            command += ["--endpoint-url", endpoint_url, "--budget", "8", "--page-size", "3"]
            env = {**os.environ, "PYTHONPATH": str(tmp_path)}
            child = subprocess.Popen(
                command,
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=_interruptible,
            )
            _wait_for_progress(session, new_app.app, child)
            child.send_signal(stop)
            out, err = child.communicate(timeout=60)
            lines = err.decode().strip().splitlines()
            assert child.returncode == EXIT_STOPPED, (out, err)
            assert len(lines) == 1, lines
            assert lines[0].startswith("lsiorm backfill: stopped (job backfill-")
            assert "run the same command again to resume" in lines[0]
            assert "Traceback" not in err.decode()
            job = lines[0].split("(job ")[1].split(")")[0]
            record = session.job(new_app.app, job)
            assert record.state == "paused"
            assert all(u.owner is None for u in record.units)  # leases released
            done = record.counts().get("rewritten", 0)
            assert 0 < done < COUNT
            code, printed = run("backfill", f"{new}:Task", "--endpoint-url", endpoint_url)
            assert code == 0, printed
            assert f"job: {job}" in printed
            assert f"rewritten: {COUNT} (moved" in printed  # both runs' work, each item once
            assert "(resumed)" in printed
        finally:
            session.delete_table(app.app)


def _interruptible() -> None:
    """Give the child Ctrl-C's default action even when this run ignores it (a background job
    of a shell ignores SIGINT, and a child inherits that: Python would then never raise
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_progress(session: Session, table: Table, child: subprocess.Popen[bytes]) -> None:
    """Wait until the child's job has committed a page with a rewrite."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        jobs = session.jobs(table)
        if jobs and jobs[0].changed > 0:
            return
        time.sleep(0.2)
    raise AssertionError("the backfill made no progress")
