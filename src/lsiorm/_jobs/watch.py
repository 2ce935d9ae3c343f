"""What a job's coordinator watches while units run: their futures, and the ledger's progress.

A coordinator never waits for ever. Two rules bound its wait:

* **Every outcome of a submitted unit is handled** (`Submissions`). A unit whose future ended
  (whatever it returned) is sent again once its lease is free; a future that was cancelled, or
  that failed with an error that is not lsiorm's (a worker process that died, Dask's
  ``KilledWorker``, a broken process pool), counts as a failure of the unit's worker, and the
  unit is sent again, at most `WORKER_FAILURES` times in a row: one more stops the job with a
  `JobError` (``jobs.worker-failed``). An lsiorm error a unit raised stops the job as it is. A
  future still pending whose unit's lease lapsed (its worker died without the executor
  noticing) is sent again once per lapsed lease. A future still pending whose unit nobody
  holds, while the whole run made no progress for a while (`resend_after`: a lease period,
  and a minute at least, since workers may start slowly), is cancelled and sent again, once
  per such while: the executor lost the task, or queued it behind a worker that hangs. Each
  submission carries a claim token of its own, so an executor that caches calls by their
  arguments (Dask's pure tasks) runs each one, and a unit sent twice runs once at a time: the
  ledger's claim lets one of them hold it.
* **No progress for too long stops the job** (`StallWatch`). Progress is any change of the run
  in the ledger: a page committed, a lease taken, renewed or given up, a unit done. A
  coordinator that sees none for `STALL_LEASES` lease periods, and at least `STALL_MINIMUM`
  seconds (`stall_limit`), raises a `JobError` (``jobs.stalled``) naming the units it waited
  for. A live worker renews its lease with each page, and a dead one's lease lapses and is
  taken over, so a run that is working never looks stalled; a run whose units all wait in a
  busy executor's queue (or for its workers to start) does, when they wait longer than that (a
  longer lease gives them longer).

Either error pauses the run (the coordinator's exit does); running the same job again resumes
it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from lsiorm._jobs.ledger import JobRecord, UnitRecord
from lsiorm._jobs.units import Unit
from lsiorm.errors import JobError, LsiormError

__all__ = [
    "RESEND_MINIMUM",
    "STALL_LEASES",
    "STALL_MINIMUM",
    "WORKER_FAILURES",
    "StallWatch",
    "Submissions",
    "resend_after",
    "stall_limit",
]

log = logging.getLogger("lsiorm.jobs")

#: How many times in a row a unit's worker may fail before the job stops.
WORKER_FAILURES = 3
#: How many lease periods without progress in the ledger stop a coordinator...
STALL_LEASES = 3
#: ... and the least time that takes, in seconds (workers that start slowly are not stuck).
STALL_MINIMUM = 300.0
#: The least time without progress before a queued unit is sent again (`resend_after`).
RESEND_MINIMUM = 60.0


def stall_limit(lease_seconds: float) -> float:
    """How long a coordinator waits without progress in the ledger before it stops."""
    return max(STALL_LEASES * lease_seconds, STALL_MINIMUM)


def resend_after(lease_seconds: float) -> float:
    """How long a run stands still before a unit whose future never started is sent again."""
    return max(lease_seconds, RESEND_MINIMUM)


def lapsed(record: UnitRecord, now: float) -> bool:
    """Whether the unit is leased to a worker whose lease ran out (it died, or is stuck)."""
    return record.owner is not None and record.lease is not None and record.lease < now


class Submissions:
    """The units of one run sent to an executor: one live future per unit (module doc)."""

    def __init__(
        self,
        submit: Callable[[str, Unit], Future[Any]],
        job_id: str,
        *,
        lease: float,
        clock: Callable[[], float],
        failures: int = WORKER_FAILURES,
    ) -> None:
        self.submit = submit
        self.job_id = job_id
        self.wait = resend_after(lease)
        self.clock = clock
        self.limit = failures
        self.futures: dict[str, Future[Any]] = {}
        #: When (on ``clock``) each live future was sent.
        self.sent_at: dict[str, float] = {}
        self.failures: dict[str, int] = {}
        #: The owner of the lapsed lease a unit with a pending future was sent again for.
        self.resent_for: dict[str, str | None] = {}

    def step(self, waiting: Sequence[UnitRecord], now: float, quiet_since: float) -> None:
        """Handle what ended, and send each unit that needs a worker (see the module doc).

        ``now`` is the ledger's clock (leases); ``quiet_since`` is when (on ``clock``) the run
        last made progress.
        """
        at = self.clock()
        quiet = at - quiet_since >= self.wait
        for record in waiting:
            unit = record.unit
            free = record.owner is None or lapsed(record, now)
            future = self.futures.get(unit.id)
            if future is not None and future.done():
                del self.futures[unit.id]
                self._ended(unit, future)
                future = None
            if future is None:
                if free:
                    self._send(unit)
            elif lapsed(record, now) and self.resent_for.get(unit.id) != record.owner:
                # Its worker died without the executor noticing: send it again, once per lease.
                self.resent_for[unit.id] = record.owner
                self._send(unit)
            elif record.owner is None and quiet and at - self.sent_at[unit.id] >= self.wait:
                # Nobody holds it, nothing moved for a while, and its future is still
                # pending: the executor lost it, or queued it behind a worker that hangs.
                log.warning(
                    "job %s, unit %s: still not started after %.0f s without progress; sent again",
                    self.job_id,
                    unit.id,
                    at - self.sent_at[unit.id],
                )
                del self.futures[unit.id]
                future.cancel()
                self._send(unit)

    def cancel(self) -> None:
        """Cancel every future still pending (those already running stop at their next page)."""
        for future in self.futures.values():
            future.cancel()

    def _send(self, unit: Unit) -> None:
        try:
            self.futures[unit.id] = self.submit(self.job_id, unit)
            self.sent_at[unit.id] = self.clock()
        except Exception as exc:  # an executor shut down or broken: a failure like a worker's
            self._failed(unit, exc)

    def _ended(self, unit: Unit, future: Future[Any]) -> None:
        if future.cancelled():
            self._failed(unit, None)
            return
        error = future.exception()
        if error is None:
            self.failures.pop(unit.id, None)
        elif isinstance(error, LsiormError):
            raise error
        else:
            self._failed(unit, error)

    def _failed(self, unit: Unit, error: BaseException | None) -> None:
        count = self.failures[unit.id] = self.failures.get(unit.id, 0) + 1
        what = "was cancelled" if error is None else f"failed: {error!r}"
        log.warning(
            "job %s, unit %s: its worker %s (%d in a row)", self.job_id, unit.id, what, count
        )
        if count > self.limit:
            raise JobError(
                "jobs.worker-failed",
                f"The worker of unit {unit.id} {what}, {count} times in a row. The run is "
                "paused; run the job again to resume it once the cause is fixed.",
                job=self.job_id,
                units=(unit.id,),
            ) from error


def progress(record: JobRecord) -> tuple[Any, ...]:
    """What changes in the ledger whenever a run makes progress (module doc)."""
    return (
        record.state,
        record.items,
        record.units_done,
        tuple(
            (u.unit.id, u.state, u.owner, u.lease, u.runs, tuple(sorted(u.counts.items())))
            for u in record.units
        ),
    )


class StallWatch:
    """Raises `JobError` (``jobs.stalled``) once a run shows no progress for ``limit`` s."""

    def __init__(self, limit: float, clock: Callable[[], float]) -> None:
        self.limit = limit
        self.clock = clock
        self.last: tuple[Any, ...] | None = None
        self.since = clock()

    def check(self, record: JobRecord, now: float) -> None:
        """Note the run as the ledger has it now; raise if it stood still for too long."""
        seen = progress(record)
        at = self.clock()
        if seen != self.last:
            self.last, self.since = seen, at
            return
        if at - self.since <= self.limit:
            return
        waiting = [u for u in record.units if u.state != "done"]
        raise JobError(
            "jobs.stalled",
            f"Run {record.id} made no progress in {at - self.since:.0f} s (no page committed, "
            f"no lease taken or renewed); it waited for {_describe(waiting, now)}. The run is "
            "paused; run the job again to resume it.",
            job=record.id,
            units=tuple(u.unit.id for u in waiting),
        )


def _describe(waiting: Sequence[UnitRecord], now: float, most: int = 5) -> str:
    """The units waited for, in words: which is held, until when, and which is free."""
    parts = []
    for record in waiting[:most]:
        if record.owner is None:
            parts.append(f"{record.unit.id} (free)")
        elif record.lease is None:
            parts.append(f"{record.unit.id} (held)")
        else:
            left = record.lease - now
            when = f"for {left:.0f} s more" if left >= 0 else f"lapsed {-left:.0f} s ago"
            parts.append(f"{record.unit.id} (held, {when})")
    more = f" and {len(waiting) - most} more" if len(waiting) > most else ""
    return ", ".join(parts) + more
