"""One rate budget for every worker of a job, kept in the ledger, adapted to throttling.

A job may have a target in write units and in read units per second. The rate in force is
stored in the job's ledger item, so every worker, in any process, paces to the same number:
each takes its share (the rate divided by the units running) from a token bucket of its own
(`lsiorm._jobs.resumable.WriteBudget`), and reads the rate again every ``sync_every`` seconds.

The rate adapts (additive increase, multiplicative decrease). A worker that saw throttling
since its last look halves the rate, at most once per ``cooldown`` seconds for the whole job;
after ``calm`` seconds without any change, one worker raises it by a tenth of the target,
never above the target. Both changes are compare-and-set writes on the ledger, so many workers
seeing the same throttle lower the rate once.

A job that is no longer running in the ledger (paused by Ctrl-C elsewhere, or cancelled) stops
its workers here: `RateBudget.sync` raises `LeaseLost`, and each unit stops after its last
commit.

A call that resumes a run with a budget of its own gives the run that budget from then on
(`retarget`): the target and the rate in force both become the new budget, in the ledger, so
every worker of the run paces to it at its next sync. A resume without a budget keeps the
run's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

from lsiorm._jobs.ledger import LeaseLost
from lsiorm._jobs.resumable import WriteBudget
from lsiorm._ops.steps import Operation
from lsiorm.errors import ThrottledError, TransactionCanceledError, ValidationError

if TYPE_CHECKING:
    from lsiorm._jobs.memory_ledger import Ledger

__all__ = ["RateBudget", "ThrottleWatch", "initial_rate", "resumed_rate", "retarget"]

#: The least a decrease leaves of the target: a job never stops itself entirely.
FLOOR = 0.05


def initial_rate(write: float | None, read: float | None) -> dict[str, float]:
    """The rate a new job starts at: its targets (a job without one is not paced)."""
    for name, value in (("write", write), ("read", read)):
        if value is not None and value <= 0:
            raise ValidationError(
                "jobs.budget",
                f"The {name} budget is {value} units per second; it must be positive.",
            )
    rate: dict[str, float] = {}
    if write is not None:
        rate["write"] = rate["write_target"] = float(write)
    if read is not None:
        rate["read"] = rate["read_target"] = float(read)
    return rate


def resumed_rate(stored: Mapping[str, float], given: Mapping[str, float]) -> dict[str, float]:
    """The rate of a run resumed by a call with rate ``given`` (its `initial_rate`): each
    budget the call gives replaces the run's (target and rate in force); the others stay."""
    rate = dict(stored)
    for name in ("write", "read"):
        target = given.get(f"{name}_target")
        if target is not None:
            rate[name] = rate[f"{name}_target"] = float(target)
    return rate


def retarget(
    ledger: Ledger, job_id: str, given: Mapping[str, float]
) -> Operation[tuple[dict[str, float], dict[str, float]] | None]:
    """Give a resumed run the budgets of the call that resumed it (`resumed_rate`); return the
    rate before and after, or None when nothing changed."""
    while True:
        control = yield from ledger.control(job_id)
        old: dict[str, float] = dict(control["rate"])
        new = resumed_rate(old, given)
        if new == old:
            return None
        # A compare-and-set on the rate, as a worker's adaptation is: one that changed it in
        # between makes this read it again.
        if (yield from ledger.set_rate(job_id, old, new, not_since=ledger.clock())):
            return old, new


@dataclass(eq=False, repr=False)
class RateBudget:
    """A worker's share of its job's rate; see the module docstring."""

    ledger: Ledger
    job_id: str
    _: KW_ONLY
    sync_every: float = 2.0
    cooldown: float = 1.0
    calm: float = 10.0
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.write = WriteBudget(None, self.clock)
        self.read = WriteBudget(None, self.clock)
        self.throttles = 0
        self.seen_throttles = 0
        self.rate: dict[str, float] = {}
        self._synced: float | None = None
        self._lock = threading.Lock()

    def throttled(self) -> None:
        """Note one throttled request (thread-safe); the next sync lowers the rate."""
        with self._lock:
            self.throttles += 1

    def take_write(self, units: float) -> Operation[None]:
        """Wait until ``units`` write units are in this worker's share, then spend them."""
        yield from self.sync()
        yield from self.write.take(units)

    def take_read(self, units: float) -> Operation[None]:
        """Spend ``units`` read units (after a read: the next read waits for them)."""
        yield from self.sync()
        yield from self.read.take(units)

    def sync(self, *, force: bool = False) -> Operation[None]:
        """Every ``sync_every`` seconds: read the shared rate, adapt it, take this share."""
        now = self.clock()
        with self._lock:
            due = force or self._synced is None or now - self._synced >= self.sync_every
            if due:
                self._synced = now
                throttles, self.seen_throttles = (
                    self.throttles - self.seen_throttles,
                    self.throttles,
                )
        if not due:
            return
        control = yield from self.ledger.control(self.job_id)
        if control["state"] != "running":
            raise LeaseLost(f"job {self.job_id} is {control['state']}")
        rate: dict[str, float] = dict(control["rate"])
        wall = self.ledger.clock()
        new = _adapted(rate, throttled=throttles > 0)
        if new != rate:
            since = wall - (self.cooldown if throttles else self.calm)
            if control["rate_at"] <= since:
                changed = yield from self.ledger.set_rate(self.job_id, rate, new, not_since=since)
                if changed:
                    rate = new
        self.rate = rate
        share = max(1, int(control["running"]))
        self.write.set_rate(_share(rate, "write", share))
        self.read.set_rate(_share(rate, "read", share))

    @property
    def spent(self) -> float:
        """The write units this worker spent."""
        return self.write.spent


def _share(rate: Mapping[str, float], name: str, running: int) -> float | None:
    value = rate.get(name)
    return None if value is None else value / running


def _adapted(rate: Mapping[str, float], *, throttled: bool) -> dict[str, float]:
    """The next rate: halved after throttling, else a tenth of the target more (AIMD)."""
    new = dict(rate)
    for name in ("write", "read"):
        if name not in rate:
            continue
        target = rate[f"{name}_target"]
        if throttled:
            new[name] = max(target * FLOOR, rate[name] / 2)
        else:
            new[name] = min(target, rate[name] + target / 10)
    return new


class ThrottleWatch:
    """A request hook that tells a `RateBudget` about each throttled attempt."""

    def __init__(self, budget: RateBudget) -> None:
        self.budget = budget

    def error(self, request: Any, error: BaseException) -> None:
        cancelled = isinstance(error, TransactionCanceledError) and any(
            r.code in ("ThrottlingError", "ProvisionedThroughputExceeded") for r in error.reasons
        )
        if cancelled or isinstance(error, ThrottledError):
            self.budget.throttled()
