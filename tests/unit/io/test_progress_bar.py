"""The key jobs' progress bar: items, rate and ETA against an estimated total, on stderr."""

from __future__ import annotations

import io
import re

from lsiorm._io.progress_bar import ProgressBar
from lsiorm._jobs.resumable import JobProgress


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


def test_each_job_says_what_it_counts() -> None:
    out = io.StringIO()
    with ProgressBar("audit-keys", out) as bar:
        bar(JobProgress(10, 3, 1.0, 10, 1, 1, counted="stale"))
    assert "3 stale, segments 1/1" in out.getvalue()
    assert "changed" not in out.getvalue()


def test_a_resumed_run_goes_on_from_its_count() -> None:
    out = io.StringIO()
    with ProgressBar("backfill", out) as bar:
        bar(JobProgress(1700, 40, 0.0, 4000, 2, 4, counted="rewritten", resumed=1700))
        bar(JobProgress(1800, 41, 1.0, 4000, 2, 4, counted="rewritten", resumed=1700))
    text = out.getvalue()
    assert "1700/~4000 items" in text
    assert "1800/~4000 items" in text
    assert " 0/~4000" not in text  # it never shows the run as starting over
    assert JobProgress(1800, 41, 1.0, 4000, 2, 4, resumed=1700).rate == 100.0
