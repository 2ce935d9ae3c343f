"""The job ledger kept in this process only: for dry runs and read-only audits.

It has the methods of `lsiorm._jobs.ledger.JobLedger`, with the same rules (a unit is held by
one claim at a time; a commit by a claim that lost its unit raises `LeaseLost`), kept in
dicts under a lock; its operations send no request.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lsiorm._jobs.ledger import (
    RESUMABLE,
    JobLedger,
    JobRecord,
    JobState,
    LeaseLost,
    UnitClaim,
    UnitRecord,
    fingerprint,
    new_owner,
    open_ended,
)
from lsiorm._jobs.units import Unit
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = ["Ledger", "MemoryLedger"]


class MemoryLedger:
    """The same ledger kept in this process only: for dry runs and read-only audits.

    It sends no request (its operations yield no step); its runs are not seen by other
    processes, resumed only by this object (a running or paused run of the same declaration),
    and gone with it. Its leases last for ever unless
    ``lease_seconds`` says otherwise (tests of expiry and takeover set it).
    """

    where = "this process's ledger"

    def __init__(
        self, clock: Callable[[], float] = time.time, *, lease_seconds: float = float("inf")
    ) -> None:
        self.clock = clock
        self.lease_seconds = lease_seconds
        self._jobs: dict[str, dict[str, Any]] = {}
        self._units: dict[str, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def open(
        self, declaration: Mapping[str, Any], units: Iterable[Unit], rate: Mapping[str, float]
    ) -> Operation[tuple[JobRecord, bool]]:
        print_ = fingerprint(declaration)
        with self._lock:
            current = next(
                (
                    job_id
                    for job_id, job in self._jobs.items()
                    if job["fingerprint"] == print_ and job["state"] in RESUMABLE
                ),
                None,
            )
            if current is not None:  # as the ledger in DynamoDB does: resume it
                self._jobs[current]["state"] = "running"
        if current is not None:
            record = yield from self.job(current, units=False)
            return record, True
        job_id = f"{declaration.get('kind', 'job')}-{uuid.uuid4().hex[:12]}"
        now = self.clock()
        with self._lock:
            self._units[job_id] = {
                u.id: {"unit": u, "state": "pending", "counts": {}, "notes": {}, "runs": 0}
                for u in units
            }
            self._jobs[job_id] = {
                "kind": str(declaration.get("kind", "job")),
                "state": "running",
                "declaration": dict(declaration),
                "fingerprint": print_,
                "created": now,
                "updated": now,
                "items": 0,
                "changed": 0,
                "rate": dict(rate),
                "rate_at": now,
            }
        record = yield from self.job(job_id, units=False)
        return record, False

    def job(self, job_id: str, *, units: bool = True) -> Operation[JobRecord]:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise ValidationError("jobs.unknown", f"No job {job_id!r} in {self.where}.")
            held = self._units[job_id].values()
            records = tuple(
                UnitRecord(
                    u["unit"],
                    u["state"],
                    dict(u["counts"]),
                    u["runs"],
                    u.get("owner"),
                    u["lease"] if u.get("owner") and u["lease"] < float("inf") else None,
                    dict(u["notes"]),
                    u.get("position"),
                )
                for u in held
            )
            record = JobRecord(
                job_id,
                job["kind"],
                job["state"],
                job["declaration"],
                fingerprint(job["declaration"]),
                job["created"],
                job["updated"],
                len(records),
                sum(r.state == "done" for r in records),
                job["items"],
                job["changed"],
                dict(job["rate"]),
                records if units else (),
            )
        return record
        yield  # never reached: nothing is sent

    def add_units(self, job_id: str, units: Iterable[Unit], total: int) -> Operation[int]:
        added = 0
        with self._lock:
            held = self._units[job_id]
            for unit in units:
                if unit.id not in held:
                    held[unit.id] = {
                        "unit": unit,
                        "state": "pending",
                        "counts": {},
                        "notes": {},
                        "runs": 0,
                    }
                    added += 1
        return added
        yield  # never reached: nothing is sent

    def jobs(self) -> Operation[list[JobRecord]]:
        found = []
        for job_id in list(self._jobs):
            found.append((yield from self.job(job_id, units=False)))
        return sorted(found, key=lambda j: -j.created)

    def set_state(
        self, job_id: str, state: JobState, *, only_from: Iterable[str] = ()
    ) -> Operation[bool]:
        allowed = tuple(only_from)
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or (allowed and job["state"] not in allowed):
                return False
            job["state"] = state
        return True
        yield  # never reached: nothing is sent

    def claim(
        self, job_id: str, unit: Unit, *, owner: str | None = None
    ) -> Operation[UnitClaim | None]:
        now = self.clock()
        with self._lock:
            held = self._units[job_id][unit.id]
            if held["state"] == "done" or (held.get("owner") and held["lease"] >= now):
                return None
            held.update(
                owner=owner or new_owner(),
                lease=now + self.lease_seconds,
                state="running",
                runs=held["runs"] + 1,
            )
            claim = UnitClaim(
                unit,
                held["owner"],
                held.get("position"),
                dict(held["counts"]),
                dict(held["notes"]),
                held.get("intent"),
                held["runs"],
                self.clock(),
            )
        return claim
        yield  # never reached: nothing is sent

    def _held(self, job_id: str, claim: UnitClaim) -> dict[str, Any]:
        held = self._units[job_id][claim.unit.id]
        if held.get("owner") != claim.owner:
            raise LeaseLost(claim.unit.id)
        return held

    def commit(
        self, job_id: str, claim: UnitClaim, *, items: int = 0, changed: int = 0
    ) -> Operation[None]:
        with self._lock:
            held = self._held(job_id, claim)
            held.update(
                position=claim.position,
                counts=dict(claim.counts),
                notes=dict(claim.notes),
                intent=claim.intent,
                lease=self.clock() + self.lease_seconds,
            )
            job = self._jobs[job_id]
            job["items"] += items
            job["changed"] += changed
            job["updated"] = self.clock()
        return
        yield  # never reached: nothing is sent

    def finish(self, job_id: str, claim: UnitClaim) -> Operation[bool]:
        with self._lock:
            held = self._held(job_id, claim)
            held.update(
                state="done",
                owner=None,
                counts=dict(claim.counts),
                notes=dict(claim.notes),
                intent=None,
                position=None,  # as in DynamoDB: a done unit keeps no position
            )
            done = all(u["state"] == "done" for u in self._units[job_id].values())
            if done and not open_ended(self._jobs[job_id]["declaration"]):
                self._jobs[job_id]["state"] = "done"
        return done
        yield  # never reached: nothing is sent

    def pause(
        self, job_id: str, claim: UnitClaim, *, items: int = 0, changed: int = 0
    ) -> Operation[None]:
        # In memory nothing is sent: the commit and the release, each under the lock, are the
        # one write DynamoDB's ledger makes (the claim holds the unit between the two).
        yield from self.commit(job_id, claim, items=items, changed=changed)
        yield from self.release(job_id, claim)

    def release(self, job_id: str, claim: UnitClaim) -> Operation[None]:
        with self._lock:
            held = self._units[job_id][claim.unit.id]
            if held.get("owner") == claim.owner:
                held.update(owner=None, state="pending")
        return
        yield  # never reached: nothing is sent

    def control(self, job_id: str) -> Operation[dict[str, Any]]:
        with self._lock:
            job = self._jobs[job_id]
            return {
                "state": job["state"],
                "rate": dict(job["rate"]),
                "rate_at": job["rate_at"],
                "running": 1,
            }
        yield  # never reached: nothing is sent

    def set_rate(
        self, job_id: str, old: Mapping[str, float], new: Mapping[str, float], *, not_since: float
    ) -> Operation[bool]:
        with self._lock:
            job = self._jobs[job_id]
            if job["rate"] != dict(old) or job["rate_at"] > not_since:
                return False
            job["rate"], job["rate_at"] = dict(new), self.clock()
        return True
        yield  # never reached: nothing is sent


#: Either ledger: the one in DynamoDB, or the one in this process.
Ledger = JobLedger | MemoryLedger
