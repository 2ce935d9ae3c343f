"""The slowest test files of a run, summed from their tests' durations, after pytest's own
``--durations`` list (which names tests, not files).

A suite's time is spent by files as much as by single tests: one file of many middling tests
costs more than its slowest test shows. Each test's setup, call and teardown are added to its
file; the slowest files are listed at the end of the run with their share of the whole and
their test count. ``--file-durations N`` sets how many (0: none; the default is 15). Under
pytest-xdist the workers' reports reach the controlling process, so the sums cover every
worker (and, with two workers, add up to about twice the run's wall time).
"""

from __future__ import annotations

from collections import defaultdict

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--file-durations",
        type=int,
        default=15,
        metavar="N",
        help="list the N slowest test files, by the sum of their tests' durations (0: none)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FileDurations(config.getoption("file_durations")))


class FileDurations:
    """Adds each test report's duration to its file; lists the slowest files at the end."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, set[str]] = defaultdict(set)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] += report.duration
        self.tests[path].add(report.nodeid)

    @pytest.hookimpl(trylast=True)  # after pytest's own list of the slowest tests
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.most <= 0 or not self.seconds:
            return
        total = sum(self.seconds.values())
        slowest = sorted(self.seconds.items(), key=lambda kv: kv[1], reverse=True)[: self.most]
        terminalreporter.write_sep("=", f"slowest {len(slowest)} test files")
        for path, seconds in slowest:
            share = 100 * seconds / total if total else 0.0
            count = len(self.tests[path])
            terminalreporter.write_line(f"{seconds:8.1f}s {share:5.1f}% {count:5d} tests  {path}")
        terminalreporter.write_line(
            f"{total:8.1f}s in all, over {len(self.seconds)} files (summed across workers)"
        )
