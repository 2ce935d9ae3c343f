"""What the key jobs share to run resumably, paced, and in parallel segments without a race.

The audit, the backfill and the relief each read items page by page, in one or more segments
that may run at the same time (tasks under ``AsyncSession``, threads under ``Session``). They
share only what this module holds:

* `Ledger`: the one place segments meet. Each segment counts a page into a part of its
  own; when the page is done it hands the part over, and the ledger adds it to the report,
  records where the segment resumes, stores the checkpoint and reports progress, all under one
  lock. A checkpoint therefore never counts half a page, and two segments never write it at
  once.
* `CheckpointStore`: where the ledger stores its checkpoint. The session layer passes a
  file (`lsiorm._io.checkpoint`); the jobs themselves do no file I/O for it.
* `WriteBudget`: a token bucket of write units per second, shared by every segment.
* `unchanged_condition`: the condition that an item is exactly as it was read.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import ValidationError

__all__ = [
    "DONE",
    "MAX_EXPRESSION_BYTES",
    "CheckpointStore",
    "JobProgress",
    "Ledger",
    "Position",
    "WireItem",
    "WriteBudget",
    "from_json_av",
    "json_av",
    "key_of",
    "plain_key",
    "unchanged_condition",
]

#: A segment's position: the start key of its next page, None to start, or DONE.
DONE = "done"
Position = WireItem | str | None


# -- progress -------------------------------------------------------------------------------


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

    @property
    def rate(self) -> float:
        """Items per second so far."""
        return self.items / self.elapsed if self.elapsed > 0 else 0.0

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
            f"{self.items}{total} items, {self.changed} changed, {self.rate:.0f} items/s{left}, "
            f"segments {self.segments_done}/{self.segments}"
        )


# -- checkpoints ----------------------------------------------------------------------------


class CheckpointStore(Protocol):
    """Where a job keeps its checkpoint: a JSON-able mapping, replaced whole on each save."""

    def load(self) -> dict[str, Any] | None:
        """The stored checkpoint, or None when there is none yet."""

    def save(self, data: Mapping[str, Any]) -> None:
        """Replace the stored checkpoint (a crash must leave the old one or the new one)."""


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


R = TypeVar("R")
P = TypeVar("P")


class Ledger(Generic[R, P]):
    """The report, positions and checkpoint of one job, shared by its segments under one lock.

    ``new_part`` makes an empty per-page part, ``merge(report, part)`` adds a done page's part
    to the report, and ``changed(report)`` gives the count a progress callback sees besides
    the items read.
    ``saved(report)`` gives what the checkpoint keeps of the report besides ``identity`` (what
    the job is) and the positions; `resume` restores it.
    """

    def __init__(
        self,
        report: R,
        *,
        new_part: Callable[[], P],
        merge: Callable[[R, P], None],
        changed: Callable[[R], int],
        segments: int,
        total: int | None = None,
        progress: Callable[[JobProgress], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
        store: CheckpointStore | None = None,
        identity: Mapping[str, Any] | None = None,
        saved: Callable[[R], Mapping[str, Any]] | None = None,
    ) -> None:
        self.report = report
        self.new_part = new_part
        self._merge = merge
        self._changed = changed
        #: Items read by the pages done (this run only).
        self.read = 0
        self.segments = segments
        self.total = total
        self._progress = progress
        self._clock = clock
        self._store = store
        self.identity = dict(identity or {})
        self._saved = saved
        self.positions: dict[int, Position] = {}
        self.started = clock()
        self._lock = threading.Lock()

    def resume(self, table: Table, rule: str) -> dict[str, Any] | None:
        """Load the stored checkpoint, if any; check it is this job's; restore the positions.

        Returns the stored data (for the job to restore its counts), or None when there is
        no checkpoint. Raises ValidationError(``rule``) when it belongs to another job.
        """
        data = self._store.load() if self._store is not None else None
        if data is None:
            return None
        for name, value in self.identity.items():
            if data.get(name) != value:
                raise ValidationError(
                    rule,
                    f"The checkpoint is for {name} {data.get(name)!r}, not {value!r}; remove it "
                    "or run the job it belongs to.",
                    table=table.name,
                )
        self.positions = {int(n): from_json_av(p) for n, p in (data.get("positions") or {}).items()}
        return data

    def page_done(self, segment: int, position: Position, part: P, read: int) -> None:
        """A segment finished a page of ``read`` items: add its part, move it on, store and
        report. Thread-safe."""
        with self._lock:
            self._merge(self.report, part)
            self.read += read
            self.positions[segment] = position
            if self._store is not None:
                self._store.save(self._checkpoint())
            if self._progress is not None:
                self._progress(self._state())

    def _checkpoint(self) -> dict[str, Any]:
        return {
            **self.identity,
            "positions": {str(n): json_av(p) for n, p in sorted(self.positions.items())},
            **(self._saved(self.report) if self._saved is not None else {}),
        }

    def _state(self) -> JobProgress:
        done = sum(1 for p in self.positions.values() if p == DONE)
        return JobProgress(
            self.read,
            self._changed(self.report),
            self._clock() - self.started,
            self.total,
            done,
            self.segments,
        )

    @property
    def elapsed(self) -> float:
        """Seconds since the ledger was opened."""
        return self._clock() - self.started


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

#: DynamoDB's limit on the length of one expression.
MAX_EXPRESSION_BYTES = 4096


def unchanged_condition(
    item: Mapping[str, Any], also_absent: frozenset[str]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A condition that holds only while the item is exactly as read.

    Every attribute read must still have its value, and every attribute of ``also_absent``
    that was not read (the entity's fields and key attributes) must still be absent: a writer
    that sets a field the keys derive from must make the rewrite fail, not be undone by it.
    """
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    parts: list[str] = []
    for i, name in enumerate(sorted(set(item) | also_absent)):
        names[f"#u{i}"] = name
        if name in item:
            values[f":u{i}"] = item[name]
            parts.append(f"#u{i} = :u{i}")
        else:
            parts.append(f"attribute_not_exists(#u{i})")
    expression = " AND ".join(parts)
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        raise ValidationError(
            "jobs.condition-too-long",
            f"The item has {len(names)} attributes to compare; the condition that it is "
            f"unchanged would exceed DynamoDB's {MAX_EXPRESSION_BYTES} byte expression limit.",
        )
    return expression, names, values


def key_of(table: Table, item: Mapping[str, Any]) -> WireItem:
    """The primary key attributes of a wire item."""
    names = (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))
    return {name: dict(item[name]) for name in names if name in item}


def plain_key(table: Table, item: Mapping[str, Any]) -> dict[str, Any]:
    """The primary key of a wire item as Python values (for reports)."""
    return {k: from_wire(v) for k, v in key_of(table, item).items()}
