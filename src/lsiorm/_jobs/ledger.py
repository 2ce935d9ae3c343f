"""The ledger of the key jobs, kept in DynamoDB: runs, units, leases, counts and the rate.

Every worker of a job, on any machine, meets the others here and nowhere else. The ledger is a
set of items in one partition (`LedgerLocation.namespace`, ``~lsiorm#jobs`` by default) of the
job's own table, or of a table the user names:

* ``run#<fingerprint>`` points at the current run of a declaration (the fingerprint hashes what
  the job is: its kind, table, entity type and key templates, its options). Opening a job
  resumes that run while it is running or paused, and starts a new one when it is done or
  cancelled, with a compare-and-set on the pointer, so two processes started together join the
  same run;
* ``job#<id>`` holds the declaration, the state (``running``, ``paused``, ``done``,
  ``cancelled``), the units done, progress counters, and the shared rate (`lsiorm._jobs.budget`);
* ``unit#<id>#<unit>`` holds one unit: its state, the lease (an owner token and a time), the
  position its next page starts from, its exact counts, and the intent of the page in flight.

A worker claims a unit with a conditional write that succeeds only while the unit is not done
and its lease is free or expired, renews the lease with each commit, and loses it when another
worker took it over: its commit then fails (`LeaseLost`) and it stops without counting the page,
which the new owner reads again. Counts are committed with the position, in one conditional
write, so a unit's counts always describe exactly the pages before its position.

Times come from ``clock`` (wall-clock seconds; leases cross machines), so tests control expiry.
`lsiorm._jobs.memory_ledger` keeps the same records in this process, for dry runs and
read-only audits.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lsiorm._jobs.resumable import counted_as, from_json_av, json_av
from lsiorm._jobs.units import Unit, unit_from_json, unit_to_json
from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reserved import NAMESPACE
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import ConditionFailedError, TransactionCanceledError, ValidationError

__all__ = [
    "NAMESPACE",
    "JobLedger",
    "JobRecord",
    "JobState",
    "LeaseLost",
    "LedgerLocation",
    "UnitClaim",
    "UnitRecord",
    "fingerprint",
    "ledger_table",
    "new_owner",
]

JobState = Literal["running", "paused", "done", "cancelled"]
#: The states a job is resumed from; any other starts a new run.
RESUMABLE = ("running", "paused")


class LeaseLost(Exception):
    """A unit's lease was taken over (it expired), or its job was stopped: stop the unit."""


@dataclass(frozen=True)
class LedgerLocation:
    """Where a job's ledger items live: a live table, its key attributes, the reserved partition."""

    table: str
    partition_key: str
    sort_key: str
    namespace: str = NAMESPACE

    def key(self, sort: str) -> dict[str, Any]:
        """The primary key (wire) of the ledger item ``sort``."""
        return {self.partition_key: {"S": self.namespace}, self.sort_key: {"S": sort}}


def ledger_table(name: str) -> Table:
    """The declaration of a table that holds only job ledgers (``ledger=name``): create it once
    with ``session.create_table(ledger_table(name))``."""
    return Table(name, "PK", "SK")


#: What a declaration may change between a run and its resume: how it reads and retries.
TUNING = frozenset({"page_size", "max_attempts", "examples"})


def fingerprint(declaration: Mapping[str, Any]) -> str:
    """A short digest of what a job is (canonical JSON of its declaration, without `TUNING`)."""
    what = {k: v for k, v in declaration.items() if k not in TUNING}
    text = json.dumps(what, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class UnitRecord:
    """One unit of a job as the ledger holds it."""

    unit: Unit
    state: str
    counts: Mapping[str, int]
    runs: int = 0
    owner: str | None = None
    lease: float | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobRecord:
    """One run of a job as the ledger holds it (``units`` when read with them)."""

    id: str
    kind: str
    state: str
    declaration: Mapping[str, Any]
    fingerprint: str
    created: float
    updated: float
    units_total: int
    units_done: int
    items: int = 0
    changed: int = 0
    rate: Mapping[str, float] = field(default_factory=dict)
    units: tuple[UnitRecord, ...] = ()

    @property
    def elapsed(self) -> float:
        """Seconds from the run's start to its last update."""
        return max(0.0, self.updated - self.created)

    @property
    def items_per_second(self) -> float:
        """The aggregated rate of every worker, items read per second."""
        return self.items / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far, by units done; None once the run ended, or before
        its first unit is done."""
        if self.state not in RESUMABLE or not self.units_done or self.elapsed <= 0:
            return None
        return self.elapsed * (self.units_total - self.units_done) / self.units_done

    def counts(self) -> dict[str, int]:
        """The exact counts of the run: every unit's counts added up."""
        total: dict[str, int] = {}
        for record in self.units:
            for name, value in record.counts.items():
                total[name] = total.get(name, 0) + value
        return total

    def __str__(self) -> str:
        rate = f", {self.items_per_second:.0f} items/s" if self.items else ""
        if self.eta is not None:
            rate += f", ETA {self.eta:.0f} s"
        return (
            f"{self.id}  {self.kind:<10} {self.state:<9} units {self.units_done}/"
            f"{self.units_total}, {self.items} items, {self.changed} {counted_as(self.kind)}{rate}"
        )


@dataclass
class UnitClaim:
    """A unit a worker holds: its lease token and what its last commit stored."""

    unit: Unit
    owner: str
    position: Any = None
    counts: dict[str, int] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    intent: dict[str, Any] | None = None
    runs: int = 1
    renewed: float = 0.0


def new_owner() -> str:
    """A fresh claim token: who holds a unit's lease."""
    return uuid.uuid4().hex


# -- encoding of ledger items ---------------------------------------------------------------


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: float) -> dict[str, str]:
    return {"N": repr(float(value)) if isinstance(value, float) else str(value)}


def _json(value: Any) -> dict[str, str]:
    return {"S": json.dumps(json_av(value), sort_keys=True, separators=(",", ":"))}


def _read_json(av: Mapping[str, Any] | None, default: Any = None) -> Any:
    if not av:
        return default
    return from_json_av(json.loads(av["S"]))


def _num(av: Mapping[str, Any] | None, default: float = 0.0) -> float:
    return float(av["N"]) if av else default


def _unit_record(item: Mapping[str, Any]) -> UnitRecord:
    owner = item.get("owner")
    return UnitRecord(
        unit=unit_from_json(_read_json(item["unit"])),
        state=item["state"]["S"],
        counts={k: int(v) for k, v in (_read_json(item.get("counts"), {}) or {}).items()},
        runs=int(_num(item.get("runs"))),
        owner=owner["S"] if owner else None,
        lease=_num(item.get("lease")) if "lease" in item else None,
        notes=_read_json(item.get("notes"), {}) or {},
    )


def _job_record(item: Mapping[str, Any], units: Iterable[UnitRecord] = ()) -> JobRecord:
    return JobRecord(
        id=item["id"]["S"],
        kind=item["kind"]["S"],
        state=item["state"]["S"],
        declaration=_read_json(item["declaration"], {}),
        fingerprint=item["fingerprint"]["S"],
        created=_num(item.get("created")),
        updated=_num(item.get("updated")),
        units_total=int(_num(item.get("units"))),
        units_done=int(_num(item.get("done"))),
        items=int(_num(item.get("items"))),
        changed=int(_num(item.get("changed"))),
        rate=_read_json(item.get("rate"), {}) or {},
        units=tuple(units),
    )


def _names(*names: str) -> dict[str, str]:
    return {f"#{name}": name for name in names}


# -- the ledger in DynamoDB -----------------------------------------------------------------


class JobLedger:
    """The ledger of jobs at ``location``; each method returns an operation (see module doc)."""

    def __init__(
        self,
        ctx: Context,
        location: LedgerLocation,
        *,
        lease_seconds: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ctx = ctx
        self.location = location
        self.lease_seconds = lease_seconds
        self.clock = clock

    # requests ---------------------------------------------------------------------------

    def _call(self, operation: str, params: dict[str, Any]) -> Operation[dict[str, Any]]:
        return call(self.ctx, operation, {"TableName": self.location.table, **params})

    def _get(self, sort: str) -> Operation[dict[str, Any] | None]:
        response = yield from self._call(
            "GetItem", {"Key": self.location.key(sort), "ConsistentRead": True}
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _query(self, prefix: str) -> Operation[list[dict[str, Any]]]:
        loc = self.location
        params: dict[str, Any] = {
            "KeyConditionExpression": "#p = :p AND begins_with(#s, :s)",
            "ExpressionAttributeNames": {"#p": loc.partition_key, "#s": loc.sort_key},
            "ExpressionAttributeValues": {":p": _s(loc.namespace), ":s": _s(prefix)},
            "ConsistentRead": True,
        }
        items: list[dict[str, Any]] = []
        while True:
            response = yield from self._call("Query", params)
            items += response.get("Items") or ()
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            params = {**params, "ExclusiveStartKey": last}

    def _update(
        self,
        sort: str,
        expression: str,
        values: Mapping[str, Any],
        condition: str | None = None,
        returns: bool = False,
    ) -> Operation[dict[str, Any]]:
        text = f"{expression} {condition or ''}"
        # Every attribute is written #name (many of them are reserved words: state, position).
        used = {f"#{name}": name for name in re.findall(r"#(\w+)", text)}
        params: dict[str, Any] = {"Key": self.location.key(sort), "UpdateExpression": expression}
        if used:
            params["ExpressionAttributeNames"] = used
        if values:
            tokens = set(re.findall(r":\w+", text))
            params["ExpressionAttributeValues"] = {k: v for k, v in values.items() if k in tokens}
        if condition:
            params["ConditionExpression"] = condition
        if returns:
            params["ReturnValues"] = "ALL_NEW"
        response = yield from self._call("UpdateItem", params)
        attributes: dict[str, Any] = response.get("Attributes") or {}
        return attributes

    # runs -------------------------------------------------------------------------------

    def open(
        self, declaration: Mapping[str, Any], units: Iterable[Unit], rate: Mapping[str, float]
    ) -> Operation[tuple[JobRecord, bool]]:
        """The running (or paused) run of ``declaration``, or a new one; and whether it resumed.

        A done or cancelled run is never resumed: the pointer moves to a new run, with a
        compare-and-set, so that of two processes opening at once one creates and one joins.
        """
        print_ = fingerprint(declaration)
        pointer = f"run#{print_}"
        for attempt in range(40):
            head = yield from self._get(pointer)
            # A pointer without a run is read as none (moto shows an item that an UpdateItem
            # is creating by its key alone for a moment; DynamoDB never does).
            current = head["current"]["S"] if head and "current" in head else None
            if current is not None:
                job = yield from self._get(f"job#{current}")
                if job is None and attempt < 30:
                    # Another process is creating that run (its units first, then its job
                    # item): wait for it; a pointer left by a crash is replaced after a while.
                    yield Sleep(0.2)
                    continue
                if job is not None and job["state"]["S"] in RESUMABLE:
                    if job["state"]["S"] == "paused":
                        yield from self._update(
                            f"job#{current}", "SET #state = :r", {":r": _s("running")}
                        )
                    record = yield from self.job(current, units=False)
                    return record, True
            job_id = f"{declaration.get('kind', 'job')}-{uuid.uuid4().hex[:12]}"
            try:
                yield from self._update(
                    pointer,
                    "SET #current = :new",
                    {":new": _s(job_id), **({":old": _s(current)} if current else {})},
                    "#current = :old" if current else "attribute_not_exists(#current)",
                )
            except ConditionFailedError:
                continue  # another process moved the pointer first: join its run
            record = yield from self._create(job_id, print_, declaration, list(units), rate)
            return record, False
        raise ValidationError(
            "jobs.open", f"Could not open a run of {declaration.get('kind')}: the pointer moved"
        )

    def _create(
        self,
        job_id: str,
        print_: str,
        declaration: Mapping[str, Any],
        units: list[Unit],
        rate: Mapping[str, float],
    ) -> Operation[JobRecord]:
        now = self.clock()
        # The units first, the job item last: a run whose job item exists has all its units.
        puts = [
            {
                "PutRequest": {
                    "Item": {
                        **self.location.key(f"unit#{job_id}#{unit.id}"),
                        "unit": _json(unit_to_json(unit)),
                        "state": _s("pending"),
                        "counts": _json({}),
                    }
                }
            }
            for unit in units
        ]
        for start in range(0, len(puts), 25):
            pending: list[dict[str, Any]] = puts[start : start + 25]
            while pending:
                response = yield from call(
                    self.ctx, "BatchWriteItem", {"RequestItems": {self.location.table: pending}}
                )
                pending = (response.get("UnprocessedItems") or {}).get(self.location.table) or []
        item = {
            **self.location.key(f"job#{job_id}"),
            "id": _s(job_id),
            "kind": _s(str(declaration.get("kind", "job"))),
            "state": _s("running"),
            "declaration": _json(declaration),
            "fingerprint": _s(print_),
            "created": _n(now),
            "updated": _n(now),
            "units": _n(len(units)),
            "done": _n(0),
            "items": _n(0),
            "changed": _n(0),
            "running": _n(0),
            "rate": _json(dict(rate)),
            "rate_at": _n(now),
        }
        yield from self._call("PutItem", {"Item": item})
        return _job_record(item)

    def job(self, job_id: str, *, units: bool = True) -> Operation[JobRecord]:
        """The run ``job_id``, with its units unless ``units=False``."""
        item = yield from self._get(f"job#{job_id}")
        if item is None:
            raise ValidationError("jobs.unknown", f"No job {job_id!r} in {self.where}.")
        records: list[UnitRecord] = []
        if units:
            records = [_unit_record(i) for i in (yield from self._query(f"unit#{job_id}#"))]
        return _job_record(item, records)

    def jobs(self) -> Operation[list[JobRecord]]:
        """Every run in the ledger, newest first (without their units)."""
        items = yield from self._query("job#")
        return sorted((_job_record(i) for i in items), key=lambda j: -j.created)

    @property
    def where(self) -> str:
        """The ledger's place, in words."""
        return f"the ledger of table {self.location.table!r}"

    def set_state(
        self, job_id: str, state: JobState, *, only_from: Iterable[str] = ()
    ) -> Operation[bool]:
        """Set a run's state (only from one of ``only_from`` when given); False if it was not."""
        allowed = list(only_from)
        values: dict[str, Any] = {":s": _s(state), ":now": _n(self.clock())}
        condition = "attribute_exists(#state)"
        if allowed:
            condition += " AND #state IN (" + ", ".join(f":f{i}" for i in range(len(allowed))) + ")"
            values.update({f":f{i}": _s(s) for i, s in enumerate(allowed)})
        try:
            yield from self._update(
                f"job#{job_id}", "SET #state = :s, #updated = :now", values, condition
            )
        except ConditionFailedError:
            return False
        return True

    # units ------------------------------------------------------------------------------

    def unit_record(self, job_id: str, unit: Unit) -> Operation[UnitRecord | None]:
        """One unit of a run as the ledger has it (None if the run has no such unit)."""
        item = yield from self._get(f"unit#{job_id}#{unit.id}")
        return None if item is None else _unit_record(item)

    def claim(
        self, job_id: str, unit: Unit, *, owner: str | None = None
    ) -> Operation[UnitClaim | None]:
        """Take ``unit``'s lease; None when it is done or another worker holds it.

        ``owner`` is the claim's token (a fresh one when None). A caller that notes the token
        before the claim is sent can give the lease up (`release`) even when the claim is cut
        short after it applied, so a claim never holds a unit that nobody knows of.
        """
        owner = owner or new_owner()
        now = self.clock()
        try:
            item = yield from self._update(
                f"unit#{job_id}#{unit.id}",
                "SET #owner = :me, #lease = :until, #state = :running, "
                "#runs = if_not_exists(#runs, :zero) + :one",
                {
                    ":me": _s(owner),
                    ":until": _n(now + self.lease_seconds),
                    ":running": _s("running"),
                    ":done": _s("done"),
                    ":now": _n(now),
                    ":zero": _n(0),
                    ":one": _n(1),
                },
                "attribute_exists(#state) AND #state <> :done AND "
                "(attribute_not_exists(#owner) OR #lease < :now)",
                returns=True,
            )
        except ConditionFailedError:
            # Refused: held by another worker, done, or taken by this very claim, whose first
            # attempt applied and lost its answer (the retry then meets its own lease).
            found = yield from self._get(f"unit#{job_id}#{unit.id}")
            if found is None or found.get("owner") != _s(owner):
                return None
            item = found
        yield from self._update(f"job#{job_id}", "ADD #running :one", {":one": _n(1)})
        return UnitClaim(
            unit,
            owner,
            position=_read_json(item.get("position")),
            counts={k: int(v) for k, v in (_read_json(item.get("counts"), {}) or {}).items()},
            notes=_read_json(item.get("notes"), {}) or {},
            intent=_read_json(item.get("intent")),
            runs=int(_num(item.get("runs"), 1)),
            renewed=now,
        )

    def _held(self, claim: UnitClaim) -> tuple[str, dict[str, Any]]:
        return "#owner = :me AND #state = :running", {
            ":me": _s(claim.owner),
            ":running": _s("running"),
        }

    def commit(
        self, job_id: str, claim: UnitClaim, *, items: int = 0, changed: int = 0
    ) -> Operation[None]:
        """Store the claim's position, counts, notes and intent, and renew its lease.

        Raises `LeaseLost` when another worker holds the unit now. ``items`` and ``changed``
        are added to the job's progress counters (for `lsiorm jobs`; the exact counts are the
        units').
        """
        now = self.clock()
        condition, values = self._held(claim)
        sets = "#position = :p, #counts = :c, #notes = :n, #lease = :until"
        values.update(
            {
                ":p": _json(claim.position),
                ":c": _json(claim.counts),
                ":n": _json(claim.notes),
                ":until": _n(now + self.lease_seconds),
            }
        )
        if claim.intent is not None:
            sets += ", #intent = :i"
            values[":i"] = _json(claim.intent)
            expression = f"SET {sets}"
        else:
            expression = f"SET {sets} REMOVE #intent"
        try:
            yield from self._update(
                f"unit#{job_id}#{claim.unit.id}",
                expression,
                values,
                condition,
            )
        except ConditionFailedError as exc:
            raise LeaseLost(claim.unit.id) from exc
        claim.renewed = now
        if items or changed:
            yield from self._update(
                f"job#{job_id}",
                "ADD #items :i, #changed :c SET #updated = :now",
                {":i": _n(items), ":c": _n(changed), ":now": _n(now)},
            )

    def finish(self, job_id: str, claim: UnitClaim) -> Operation[bool]:
        """Mark the unit done (with its final counts); return whether the whole run is done."""
        now = self.clock()
        condition, values = self._held(claim)
        values.update({":c": _json(claim.counts), ":n": _json(claim.notes), ":done": _s("done")})
        values[":now"] = _n(now)
        loc = self.location
        try:
            yield from call(
                self.ctx,
                "TransactWriteItems",
                {
                    "TransactItems": [
                        {
                            "Update": {
                                "TableName": loc.table,
                                "Key": loc.key(f"unit#{job_id}#{claim.unit.id}"),
                                "UpdateExpression": "SET #state = :done, #counts = :c, "
                                "#notes = :n, #finished = :now "
                                "REMOVE #owner, #lease, #intent, #position",
                                "ConditionExpression": condition,
                                "ExpressionAttributeNames": _names(
                                    "state",
                                    "counts",
                                    "notes",
                                    "finished",
                                    "owner",
                                    "lease",
                                    "intent",
                                    "position",
                                ),
                                "ExpressionAttributeValues": values,
                            }
                        },
                        {
                            "Update": {
                                "TableName": loc.table,
                                "Key": loc.key(f"job#{job_id}"),
                                "UpdateExpression": "ADD #done :one, #running :minus "
                                "SET #updated = :now",
                                "ExpressionAttributeNames": _names("done", "running", "updated"),
                                "ExpressionAttributeValues": {
                                    ":one": _n(1),
                                    ":minus": _n(-1),
                                    ":now": _n(now),
                                },
                            }
                        },
                    ],
                    "ClientRequestToken": f"{claim.owner}-done"[:36],
                },
            )
        except TransactionCanceledError as exc:
            if exc.reasons and exc.reasons[0].code == "ConditionalCheckFailed":
                # The answer of this very transaction may have been lost and its resend found
                # the unit done by it: read the unit to tell that from a lost lease.
                item = yield from self._get(f"unit#{job_id}#{claim.unit.id}")
                if item is None or item["state"]["S"] != "done":
                    raise LeaseLost(claim.unit.id) from exc
            else:
                raise
        job = yield from self._get(f"job#{job_id}")
        if job is None:
            return False
        if _num(job.get("done")) >= _num(job.get("units")):
            yield from self.set_state(job_id, "done", only_from=RESUMABLE)
            return True
        return False

    def release(self, job_id: str, claim: UnitClaim) -> Operation[None]:
        """Give the unit's lease up (its last commit stays); nothing when it is lost already."""
        condition, values = self._held(claim)
        values[":pending"] = _s("pending")
        try:
            yield from self._update(
                f"unit#{job_id}#{claim.unit.id}",
                "SET #state = :pending REMOVE #owner, #lease",
                values,
                condition,
            )
        except ConditionFailedError:
            return
        yield from self._update(f"job#{job_id}", "ADD #running :minus", {":minus": _n(-1)})

    # the shared rate ----------------------------------------------------------------------

    def control(self, job_id: str) -> Operation[dict[str, Any]]:
        """The run's state, current rate, when it last changed, and how many units run."""
        item = yield from self._get(f"job#{job_id}")
        if item is None:
            return {"state": "cancelled", "rate": {}, "rate_at": 0.0, "running": 1}
        return {
            "state": item["state"]["S"],
            "rate": _read_json(item.get("rate"), {}) or {},
            "rate_at": _num(item.get("rate_at")),
            "running": max(1, int(_num(item.get("running"), 1))),
        }

    def set_rate(
        self, job_id: str, old: Mapping[str, float], new: Mapping[str, float], *, not_since: float
    ) -> Operation[bool]:
        """Replace the shared rate ``old`` by ``new`` if it did not change since ``not_since``."""
        now = self.clock()
        try:
            yield from self._update(
                f"job#{job_id}",
                "SET #rate = :new, #rate_at = :now",
                {
                    ":new": _json(dict(new)),
                    ":old": _json(dict(old)),
                    ":since": _n(not_since),
                    ":now": _n(now),
                },
                "#rate = :old AND #rate_at <= :since",
            )
        except ConditionFailedError:
            return False
        return True
