"""The key jobs' progress bar: items, rate and ETA against an estimated total, on stderr."""

from __future__ import annotations

import io
import re

import pytest

from lsiorm import Entity, Session, Table
from lsiorm._io.progress_bar import ProgressBar
from lsiorm._ops.resumable import JobProgress


def test_the_bar_shows_items_rate_and_time_left_against_an_estimate() -> None:
    out = io.StringIO()
    with ProgressBar("backfill", out) as bar:
        bar(JobProgress(10, 2, 1.0, 100, 0, 4))
        bar(JobProgress(100, 20, 2.0, 100, 4, 4))
    text = out.getvalue()
    assert "backfill:" in text
    assert "100/~100 items" in text  # the total is marked as an estimate
    assert re.search(r"<\d\d:\d\d", text)  # the time left
    assert "items/s" in text
    assert "20 changed, segments 4/4" in text
    assert text.endswith("\n")  # closed: the line is finished


def test_a_low_estimate_never_shows_more_than_the_whole() -> None:
    out = io.StringIO()
    with ProgressBar("audit-keys", out) as bar:
        bar(JobProgress(5, 0, 1.0, 8, 0, 1))
        bar(JobProgress(12, 0, 2.0, 8, 1, 1))
    assert "12/~12 items" in out.getvalue()
    assert "100%" in out.getvalue()


def test_without_a_total_the_bar_counts_items_and_rate() -> None:
    out = io.StringIO()
    with ProgressBar("relief", out) as bar:
        bar(JobProgress(7, 1, 1.0, None, 0, 1))
    assert re.search(r"relief: 7 items \[.*items/s, 1 changed", out.getvalue())


def test_session_jobs_draw_the_bar_on_stderr_when_asked(
    endpoint_url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = Table.with_reserved_lsi_slots(table_name, "PK", "SK")

    class Note(Entity, table=table, keys={"PK": "N#{a}", "SK": "{b}"}):
        a: str
        b: str

    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(table)
        try:
            session.batch_write([Note(a=str(n % 3), b=str(n)) for n in range(20)])
            capsys.readouterr()
            session.audit_keys(Note, segments=2, progress=True)
            session.backfill(Note, partition="N#1", progress=True)
            err = capsys.readouterr().err
            assert re.search(r"audit-keys: .*20\S* items", err)
            assert "backfill: 100%" in err  # a partition's total is measured: exact
            assert "7/~7 items" in err
            session.audit_keys(Note, progress=False)
            assert capsys.readouterr().err == ""
        finally:
            session.delete_table(table)
