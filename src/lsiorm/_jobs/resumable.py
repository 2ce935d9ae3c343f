"""The small things every key job shares: progress, positions, pacing, and conditions.

* `JobProgress`: what a progress callback receives after each page.
* `Position`: where a unit's next page starts (None to start, DONE at the end), and its JSON
  form (`json_av`, `from_json_av`: bytes become base64) as the ledger stores it.
* `WriteBudget`: a token bucket of units per second (a worker's share of its job's rate,
  `lsiorm._jobs.budget`).
* `key_of`, `plain_key`: an item's primary key, as wire values or as Python values.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import ValidationError

__all__ = [
    "COUNTED",
    "DONE",
    "JobProgress",
    "Position",
    "WireItem",
    "WriteBudget",
    "from_json_av",
    "json_av",
    "key_of",
    "plain_key",
]

#: A unit's position: where its next page starts (a key, a line), None to start, or DONE.
DONE = "done"
Position = WireItem | int | str | None


# -- progress -------------------------------------------------------------------------------

#: By kind of run, what its count besides the items read counts (`JobProgress.changed`, a
#: ledger run's ``changed``): the word a progress bar and `lsiorm jobs` put after it. A
#: verification's runs count what differed when they read it: the migration reads those items
#: again before it reports, so its verdict can be clean.
COUNTED: dict[str, str] = {
    "audit": "stale",
    "backfill": "rewritten",
    "relief": "moved",
    "adoption": "not accounted for",
    "migrate-copy": "copied",
    "migrate-verify": "missing or different when read",
    "migrate-extra": "extra when read",
}


def counted_as(kind: str) -> str:
    """What a run of ``kind`` counts besides the items it reads (see `COUNTED`)."""
    return COUNTED.get(kind, "changed")


@dataclass(frozen=True)
class JobProgress:
    """Where a job stands: what a progress callback receives after each page.

    ``items`` counts the items read (those a filter on the entity type left out included, as
    the total counts them), ``changed`` the items the job found stale or changed. ``total`` is
    an estimate of the items the job will read (for a table, DescribeTable's
    ItemCount, which DynamoDB refreshes about every six hours; for a partition, the item count
    measured when it was priced), or None when there is none.
    """

    items: int
    changed: int
    elapsed: float
    total: int | None
    segments_done: int
    segments: int
    #: The job's run in the ledger (``lsiorm jobs show ID``), when it has one.
    job: str | None = None
    #: A table migration's catch-up: the stream records its last pass found, and how old the
    #: oldest of them was (seconds); None for other jobs.
    events_behind: int | None = None
    seconds_behind: float | None = None
    #: What ``changed`` counts for this job ("stale", "rewritten", ...; see `COUNTED`).
    counted: str = "changed"
    #: The items a resumed run had read before this process took it up (in ``items`` too).
    resumed: int = 0

    @property
    def rate(self) -> float:
        """Items per second read by this process so far."""
        return (self.items - self.resumed) / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate, when the total is known."""
        if self.total is None or self.rate <= 0:
            return None
        return max(0.0, (self.total - self.items) / self.rate)

    def __str__(self) -> str:
        eta = self.eta
        total = f"/~{self.total}" if self.total is not None else ""
        left = f", ETA {eta:.0f} s" if eta is not None else ""
        return (
            f"{self.items}{total} items, {self.changed} {self.counted}, {self.rate:.0f} items/s"
            f"{left}, "
            f"segments {self.segments_done}/{self.segments}"
        )


# -- positions as JSON ----------------------------------------------------------------------


def json_av(value: Any) -> Any:
    """A wire value (or item) as JSON-able data: bytes become ``{"$b64": ...}``."""
    if isinstance(value, Mapping):
        return {k: json_av(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_av(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"$b64": base64.b64encode(bytes(value)).decode()}
    return value


def from_json_av(value: Any) -> Any:
    """Undo `json_av`."""
    if isinstance(value, Mapping):
        if list(value) == ["$b64"]:
            return base64.b64decode(value["$b64"])
        return {k: from_json_av(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_av(v) for v in value]
    return value


# -- pacing ---------------------------------------------------------------------------------


class WriteBudget:
    """A token bucket of write units per second, shared by every segment of one job.

    It holds at most one second of units, so a burst never exceeds the budget by more than
    one second's worth. A write that costs more than a second's units waits for all of them.
    Segments in threads share it: each take is decided under a lock (the waits are not).
    """

    def __init__(
        self, units_per_second: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if units_per_second is not None and units_per_second <= 0:
            raise ValidationError(
                "backfill.budget",
                f"The write budget is {units_per_second} units per second; it must be positive.",
            )
        self.rate = units_per_second
        self.clock = clock
        self.available = units_per_second or 0.0
        self.last = clock()
        self.spent = 0.0
        self._lock = threading.Lock()

    def set_rate(self, units_per_second: float | None) -> None:
        """Change the rate (the job's shared rate moved); what is in the bucket stays."""
        with self._lock:
            if units_per_second is not None and self.rate is None:
                self.available, self.last = 0.0, self.clock()
            self.rate = units_per_second
            if units_per_second is not None:
                self.available = min(self.available, units_per_second)

    def take(self, units: float) -> Operation[None]:
        """Wait (with Sleep steps) until ``units`` are available, then spend them."""
        while True:
            wait = self._try(units)
            if wait is None:
                return
            yield Sleep(wait)

    def _try(self, units: float) -> float | None:
        """Spend ``units`` if they are there (None), or say how long to wait for them."""
        with self._lock:
            if self.rate is None:
                self.spent += units
                return None
            now = self.clock()
            self.available = min(self.rate, self.available + (now - self.last) * self.rate)
            self.last = now
            needed = min(units, self.rate)
            if self.available >= needed:
                self.available -= units
                self.spent += units
                return None
            return (needed - self.available) / self.rate


# -- items ----------------------------------------------------------------------------------


def key_of(table: Table, item: Mapping[str, Any]) -> WireItem:
    """The primary key attributes of a wire item."""
    names = (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))
    return {name: dict(item[name]) for name in names if name in item}


def plain_key(table: Table, item: Mapping[str, Any]) -> dict[str, Any]:
    """The primary key of a wire item as Python values (for reports)."""
    return {k: from_wire(v) for k, v in key_of(table, item).items()}
