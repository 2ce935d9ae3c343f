"""A known hazard of a Dask worker that runs key-job units: its profiler on CPython 3.11.0-3.11.8.

Dask's worker samples every running thread's frames every 10 ms (``sys._current_frames()``).
On CPython 3.11 before 3.11.9, that call can deadlock against a thread that starts or ends
while the garbage collector runs (CPython issues 106883 and 116969): the worker process hangs
for good, with the units it runs. A unit run in such a worker logs one warning per process,
saying how to turn the profiler off (docs/migrations.md).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["PROFILER_SETTING", "profiler_may_deadlock", "warn_once"]

log = logging.getLogger("lsiorm.jobs")

#: The Dask setting that turns the worker's profiler on or off.
PROFILER_SETTING = "distributed.worker.profile.enabled"

_warned = False


def profiler_may_deadlock(version: tuple[int, ...], profiler_on: Callable[[], bool | None]) -> bool:
    """Whether this interpreter has the deadlock and a Dask profiler runs in this process.

    ``profiler_on`` answers None outside a Dask worker (Dask not loaded).
    """
    return (3, 11) <= version[:3] < (3, 11, 9) and profiler_on() is True


def _dask_profiler_on() -> bool | None:
    if "distributed" not in sys.modules:  # not a Dask worker: never import Dask here
        return None
    config: Any = sys.modules.get("dask.config")
    if config is None:
        return None
    return bool(config.get(PROFILER_SETTING, default=False))


def warn_once() -> None:
    """Log the hazard once per process, when it applies here."""
    global _warned
    if _warned:
        return
    _warned = True
    version = sys.version_info
    if profiler_may_deadlock((version[0], version[1], version[2]), _dask_profiler_on):
        log.warning(
            "Python %d.%d.%d can deadlock this Dask worker through its profiler (CPython "
            "issue 106883); set %s to false in the workers' Dask configuration "
            "(DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False), or use Python 3.11.9 or later.",
            *version[:3],
            PROFILER_SETTING,
        )
