"""Helpers of the key-job tests: a write log that can kill a job, reading a table back, an app
whose classes workers in other processes can import, and a pacing floor for injected throttles."""

from __future__ import annotations

import importlib
import threading
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsiorm import HookRequest, JobRecord, Session
from lsiorm._jobs import budget
from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._jobs.pacing import Pacer

#: The least rate (units a second) `pace_injected_throttles` lets a worker's pacing fall to.
INJECTED_FLOOR = 20.0


@dataclass(eq=False, repr=False)
class InjectedThrottlePacer(Pacer):
    """A worker's pacer whose rate never falls below `INJECTED_FLOOR` (production: 1)."""

    floor: float = INJECTED_FLOOR


def pace_injected_throttles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the job's workers pace no slower than `INJECTED_FLOOR` units a second.

    Injected throttles (a fault proxy's, or a `FaultInjector`'s) are drawn at random, a share
    of all requests, not a limit the job's rate could meet: at 30% faults a worker is told
    "throttled" every dozen requests, so its pacing (`lsiorm._jobs.pacing`) halves the rate of
    the table (or of the hot key named) down to its floor of one unit a second and keeps it
    there, and a job of a hundred items spends most of a minute waiting.
    The pacing still starts, halves and recovers on every injected throttle; it only stops
    halving at the higher floor. Pacing itself is tested against a real limit elsewhere (the
    AWS-like engine's hot keys, the pacing unit tests)."""
    monkeypatch.setattr(budget, "Pacer", InjectedThrottlePacer)


class Killed(BaseException):
    """The job was killed (a BaseException: hooks swallow Exception, not this)."""


class WriteLog:
    """Counts each successful rewrite per stored sort key; kills the job past ``limit`` writes.

    The ledger's own writes are neither counted nor limited.

    Segments run in threads: the count and the limit are kept under a lock, and a write is
    let through only while fewer than ``limit`` have been let through.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.writes: Counter[str] = Counter()
        self.sent = 0
        self.lock = threading.Lock()

    def before(self, request: HookRequest) -> None:
        if request.operation not in ("UpdateItem", "TransactWriteItems") or on_ledger(request):
            return
        with self.lock:
            if self.limit is not None and self.sent >= self.limit:
                raise Killed
            self.sent += 1

    def after(self, request: HookRequest, response: dict[str, Any]) -> None:
        if on_ledger(request):
            return
        with self.lock:
            if request.operation == "UpdateItem":
                self.writes[request.params["Key"]["SK"]["S"]] += 1
            elif request.operation == "TransactWriteItems":
                # A move: its second action guards (or deletes) the original.
                original = next(iter(request.params["TransactItems"][1].values()))
                self.writes[original["Key"]["SK"]["S"]] += 1


def on_ledger(request: HookRequest) -> bool:
    """Whether a request reads or writes the jobs' ledger (its reserved partition)."""
    params = request.params
    keys = [params.get("Key")] + [
        next(iter(action.values())).get("Key") for action in params.get("TransactItems", ())
    ]
    ledger = {"S": NAMESPACE}
    if any(key is not None and key.get("PK") == ledger for key in keys):
        return True
    return ledger in (params.get("ExpressionAttributeValues") or {}).values() and (
        request.operation == "Query"
    )


def unit_counts(record: JobRecord) -> str:
    """What each unit of a run counted, and how often it was claimed: one line per unit, for a
    failure message that says where the items went (the priced ``units:`` counts left out)."""
    lines = []
    for unit in record.units:
        counts = ", ".join(
            f"{name} {value}"
            for name, value in sorted(unit.counts.items())
            if not name.startswith("units:")
        )
        lines.append(f"{unit.unit.id} ({unit.state}, claimed {unit.runs}x): {counts or '-'}")
    return "\n".join(lines)


def session_on(endpoint_url: str, *hooks: object, **options: Any) -> Session:
    """A Session on the engine with these hooks and ``options`` (a job's sessions differ only in
    their hooks)."""
    return Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=hooks, **options)


def everything(session: Session, name: str, *, ledger: bool = False) -> list[dict[str, Any]]:
    """Every stored item of a table (wire form), read consistently.

    The key jobs keep their ledger in the table's reserved partition (``~lsiorm#jobs``); its
    items are left out unless ``ledger`` is true.
    """
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
    while True:
        page = session.call("Scan", params)
        items += [i for i in page["Items"] if ledger or i.get("PK") != {"S": NAMESPACE}]
        if "LastEvaluatedKey" not in page:
            return items
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


#: An app for jobs run by other processes: its classes must be importable there by module path.
#: ``{name}`` is the table's name; ``{slot}`` adds the new release's LSI3 key (or nothing).
WORKER_APP = """
from lsiorm import Entity, Table

table = Table.with_reserved_lsi_slots({name!r}, "PK", "SK")


class Item(
    Entity,
    table=table,
    keys={{"PK": "P#{{p:03d}}", "SK": "I#{{n:06d}}", "LSI1SK": "T#{{title}}"{slot}}},
    type_name="Item",
):
    p: int
    n: int
    title: str
    hits: int = 0
    note: str | None = None
"""
NEW_SLOT = ', "LSI3SK": "T#{title}#{n:06d}"'


def worker_apps(folder: Path, name: str) -> tuple[Any, Any]:
    """Write the old and the new release of :data:`WORKER_APP` to ``folder`` (which must be on
    ``sys.path``, and on the workers'), import both and return them."""
    old, new = f"jobs_old_{uuid.uuid4().hex[:8]}", f"jobs_new_{uuid.uuid4().hex[:8]}"
    (folder / f"{old}.py").write_text(WORKER_APP.format(name=name, slot=""))
    (folder / f"{new}.py").write_text(WORKER_APP.format(name=name, slot=NEW_SLOT))
    return importlib.import_module(old), importlib.import_module(new)
