"""The key jobs' write budget: never more units than it holds, whatever the threads do."""

from __future__ import annotations

import sys
import threading
from collections import Counter

import pytest

from lsiorm._jobs.resumable import WriteBudget
from lsiorm._ops.steps import Sleep
from support.fakes import Clock


def _granted(budget: WriteBudget, units: float) -> bool:
    """Drive one take: True when granted at once, False when it would have to wait."""
    steps = budget.take(units)
    try:
        step = next(steps)
    except StopIteration:
        return True
    assert isinstance(step, Sleep)
    assert step.seconds > 0
    steps.close()
    return False


def _taker(budget: WriteBudget, start: threading.Barrier, granted: Counter[int], me: int) -> None:
    start.wait()
    for _ in range(200):
        if _granted(budget, 1.0):
            granted[me] += 1


@pytest.mark.parametrize("attempt", range(5))
def test_the_write_budget_holds_across_threads(attempt: int) -> None:
    clock = Clock(100.0)
    budget = WriteBudget(40.0, clock)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: provoke any race
    try:
        for elapsed in (0.0, 0.25, 0.5, 1.0):
            clock.now += elapsed
            granted = Counter[int]()
            start = threading.Barrier(8)
            threads = [
                threading.Thread(target=_taker, args=(budget, start, granted, i)) for i in range(8)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            # A full bucket holds one second of units; then each interval refills its share.
            assert sum(granted.values()) == (40 if elapsed in (0.0, 1.0) else int(40 * elapsed))
    finally:
        sys.setswitchinterval(interval)
    assert budget.spent == 40 + 10 + 20 + 40
