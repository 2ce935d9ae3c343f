"""A read-only scan in parallel segments whose pages add up into one report in this process.

`adopt` reads a table once and sorts its items; it writes nothing, so it needs no ledger,
lease or resume position: each segment counts a page into a part of its own and hands it to
the `ScanTally`, which adds it to the report under one lock and reports progress. (The key
jobs that write run on work units and a ledger instead: see `job_engine`.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, Generic, TypeVar

from lsiorm._jobs.resumable import JobProgress
from lsiorm._jobs.scans import ScanSpec, split_off
from lsiorm._model.wire import WireItem
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Gather, Operation

__all__ = ["ScanTally", "scan_items"]

log = logging.getLogger("lsiorm.jobs")

R = TypeVar("R")
P = TypeVar("P")


@dataclass(eq=False, repr=False)
class ScanTally(Generic[R, P]):
    """The report of one read-only scan, which its segments add their pages to under a lock.

    ``new_part`` makes an empty per-page part, ``merge(report, part)`` adds a done page's part
    to the report, and ``changed(report)`` gives the count a progress callback sees besides
    the items read. ``name`` names the job in the log line of each page.
    """

    report: R
    _: KW_ONLY
    new_part: Callable[[], P]
    merge: Callable[[R, P], None]
    changed: Callable[[R], int]
    segments: int
    total: int | None = None
    progress: Callable[[JobProgress], object] | None = None
    clock: Callable[[], float] = time.monotonic
    name: str = "scan"
    #: What ``changed`` counts, for the progress callback (see `COUNTED`).
    counted: str = "changed"

    def __post_init__(self) -> None:
        #: Items read by the pages done.
        self.read = 0
        #: Items of the jobs' ledger the pages done left out (not in ``read``).
        self.skipped = 0
        self.done = 0
        self.started = self.clock()
        self._lock = threading.Lock()

    def page_done(self, segment: int, last: bool, part: P, read: int, skipped: int = 0) -> None:
        """A segment finished a page of ``read`` items (and left ``skipped`` of the jobs'
        ledger out): add its part and report. Thread-safe."""
        with self._lock:
            self.merge(self.report, part)
            self.read += read
            self.skipped += skipped
            self.done += int(last)
            state = JobProgress(
                self.read,
                self.changed(self.report),
                self.elapsed,
                self.total,
                self.done,
                self.segments,
                counted=self.counted,
            )
            log.info(
                "%s: segment %d read a page of %d items%s; %d items, %d of %d segments done",
                self.name,
                segment,
                read,
                " (its last)" if last else "",
                state.items,
                state.segments_done,
                state.segments,
            )
            if self.progress is not None:
                self.progress(state)

    @property
    def elapsed(self) -> float:
        """Seconds since the scan started."""
        return self.clock() - self.started


def scan_items(
    ctx: Context,
    spec: ScanSpec,
    visit: Callable[[P, WireItem], Operation[object]],
    tally: ScanTally[Any, P],
    *,
    skip: Mapping[str, Any] | None = None,
    concurrency: int = 8,
) -> Operation[None]:
    """Read every item of ``spec`` and run ``visit(part, item)`` on each; segments in parallel.

    Each segment reads until DynamoDB returns no LastEvaluatedKey (an empty filtered page
    included), counts each page into a part of its own (``tally.new_part()``) and hands it to
    ``tally.page_done``. The segments share nothing else, so the sync driver runs them in
    threads (and the async one interleaves them). The items of partition ``skip`` (the jobs'
    ledger's, `reserved_partition`) are left out, and counted apart.
    """
    operation = "Query" if spec.partition is not None else "Scan"
    base, skip = spec.reading(skip)

    def segment(number: int) -> Operation[None]:
        params = dict(base)
        if spec.parallel > 1:
            params["Segment"], params["TotalSegments"] = number, spec.parallel
        while True:
            response = yield from call(ctx, operation, params, (spec.table,))
            part = tally.new_part()
            found = response.get("Items") or ()
            items, skipped = split_off(spec.table, found, skip)
            for item in items:
                yield from visit(part, item)
            last: Mapping[str, Any] | None = response.get("LastEvaluatedKey")
            read = int(response.get("ScannedCount", len(found))) - skipped
            tally.page_done(number, not last, part, read, skipped)
            if not last:
                return
            params = {**params, "ExclusiveStartKey": dict(last)}

    yield Gather(tuple(segment(n) for n in range(spec.parallel)), limit=concurrency, threads=True)
