"""One rate budget for every worker of a job, kept in the ledger, adapted to throttling.

A job may have a target in write units and in read units per second. The rate in force is
stored in the job's ledger item, so every worker, in any process, paces to the same number:
each takes its share (the rate divided by the units running) from a token bucket of its own
(`lsiorm._jobs.resumable.WriteBudget`), and reads the rate again every ``sync_every`` seconds.

The rate adapts (additive increase, multiplicative decrease), to the throttles that concern
the whole job. Each throttle a worker meets is read by its reasons (`lsiorm._jobs.pacing`): a
hot partition key (a table's key-range throttle, or a transaction action cancelled as
throttled) slows only this worker's writes to that key, through its `Pacer`, and leaves the
job's rate alone; a table's or an index's limit (and a throttle without reasons) is the whole
job's. A worker that saw such throttling of writes (or of reads) since its last look halves the
write rate (or the read rate), at most once per ``cooldown`` seconds for the whole job; after
``calm`` seconds without any change, one worker raises it by a tenth of the target, never
above the target. Both changes are compare-and-set writes on the ledger, so many workers
seeing the same throttle lower the rate once. A job without a budget for writes (or reads) has
no shared rate to lower: each worker paces its own writes to the table instead, with the same
rule as a hot key.

What each worker met is counted in its unit's counts with the page it commits (`throttle_counts`:
per resource and reason, and per hot partition key), so a run's report names the throttled
resources and the hot keys, whichever worker met them.

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
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

from lsiorm._jobs.ledger import LeaseLost
from lsiorm._jobs.pacing import Pacer, Resource, Signal, signals, throttle_counts
from lsiorm._jobs.resumable import WriteBudget
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import ValidationError

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
        #: Throttles of the whole job's writes and reads seen, and those seen at the last sync.
        self.throttles = {"write": 0, "read": 0}
        self.seen_throttles = dict(self.throttles)
        self.rate: dict[str, float] = {}
        #: This worker's pacing of the resources DynamoDB throttled (hot keys; the table).
        self.pacer = Pacer(self.clock)
        self._signals: list[Signal] = []
        self._synced: float | None = None
        self._lock = threading.Lock()

    def throttled(self, operation: str = "write") -> None:
        """Note one throttle of the whole job's writes (or ``"read"``s) (thread-safe); the next
        sync lowers that rate."""
        with self._lock:
            self.throttles[operation] += 1

    def note(self, signal: Signal) -> None:
        """Act on one throttle (see the module doc): pace its key, or lower the job's rate (or,
        without a budget, pace the table in this worker); count it for the report."""
        with self._lock:
            self._signals.append(signal)
            budgeted = signal.operation in self.rate
        if signal.resource.key is not None:
            self.pacer.throttled(signal.resource)
            return
        self.throttled(signal.operation)
        if not budgeted and signal.operation == "write":
            self.pacer.throttled(signal.resource)

    def counts(self, held: Mapping[str, int]) -> dict[str, int]:
        """The counts of the throttles noted since the last call, to commit with a page
        (``held``: the unit's counts so far)."""
        with self._lock:
            found, self._signals = self._signals, []
        return throttle_counts(found, held)

    def take_write(self, units: float, resources: Sequence[Resource] = ()) -> Operation[None]:
        """Wait until ``units`` write units are in this worker's share and it is the turn of
        a write to each of ``resources`` (the table, the partition key), then spend them."""
        yield from self.sync()
        yield from self.write.take(units)
        wait = self.pacer.reserve(resources, units)
        if wait > 0:
            yield Sleep(wait)

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
                throttled = {k for k, n in self.throttles.items() if n > self.seen_throttles[k]}
                self.seen_throttles = dict(self.throttles)
        if not due:
            return
        control = yield from self.ledger.control(self.job_id)
        if control["state"] != "running":
            raise LeaseLost(f"job {self.job_id} is {control['state']}")
        rate: dict[str, float] = dict(control["rate"])
        wall = self.ledger.clock()
        new = _adapted(rate, throttled=throttled)
        if new != rate:
            since = wall - (self.cooldown if throttled else self.calm)
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


def _adapted(rate: Mapping[str, float], *, throttled: Set[str]) -> dict[str, float]:
    """The next rate: each throttled one (``"write"``, ``"read"``) halved; when none was, each
    a tenth of its target more (AIMD)."""
    new = dict(rate)
    for name in ("write", "read"):
        if name not in rate:
            continue
        target = rate[f"{name}_target"]
        if name in throttled:
            new[name] = max(target * FLOOR, rate[name] / 2)
        elif not throttled:
            new[name] = min(target, rate[name] + target / 10)
    return new


class ThrottleWatch:
    """A request hook that tells a `RateBudget` about each throttled attempt, as the
    throttle's reasons say (`lsiorm._jobs.pacing.signals`)."""

    def __init__(self, budget: RateBudget) -> None:
        self.budget = budget

    def error(self, request: Any, error: BaseException) -> None:
        operation = getattr(request, "operation", "")
        params = getattr(request, "params", None) or {}
        tables = getattr(request, "tables", ())
        for signal in signals(operation, params, tables, error):
            self.budget.note(signal)
