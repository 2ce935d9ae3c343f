"""The Dask profiler hazard is named only where it exists: CPython 3.11.0-3.11.8 with Dask's
worker profiler on."""

from __future__ import annotations

import logging
import sys

import pytest

from lsiorm._io import dask_profiler
from lsiorm._io.dask_profiler import profiler_may_deadlock


@pytest.mark.parametrize(
    ("version", "on", "expected"),
    [
        ((3, 11, 0), True, True),
        ((3, 11, 8), True, True),
        ((3, 11, 9), True, False),
        ((3, 12, 0), True, False),
        ((3, 10, 14), True, False),
        ((3, 11, 7), False, False),
        ((3, 11, 7), None, False),  # not a Dask worker
    ],
)
def test_the_hazard_is_named_only_for_affected_pythons_with_the_profiler_on(
    version: tuple[int, int, int], on: bool | None, expected: bool
) -> None:
    assert profiler_may_deadlock((*version, "final", 0), lambda: on) is expected


def test_a_worker_process_says_it_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(dask_profiler, "_warned", False)
    monkeypatch.setattr(dask_profiler, "_dask_profiler_on", lambda: True)
    monkeypatch.setattr(sys, "version_info", (3, 11, 7, "final", 0))
    with caplog.at_level(logging.WARNING, logger="lsiorm.jobs"):
        dask_profiler.warn_once()
        dask_profiler.warn_once()
    (record,) = caplog.records
    assert "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in record.getMessage()
    assert "3.11.7" in record.getMessage()
