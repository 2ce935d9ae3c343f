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
  ``cancelled``), the units done, progress counters (each claim adds to them at most once a
  second, and when it ends), and the shared rate (`lsiorm._jobs.budget`);
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
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from lsiorm._conditions import Condition, all_of, any_of, cond
from lsiorm._jobs.ledger_items import (
    JobItem,
    LedgerEntities,
    UnitItem,
    check_format,
    plain,
)
from lsiorm._jobs.resumable import counted_as
from lsiorm._jobs.units import Unit, unit_from_json, unit_to_json
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.schema import Table
from lsiorm._ops import items as ops
from lsiorm._ops.batch import batch_write
from lsiorm._ops.pages import read_pages
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reads import all as read_all
from lsiorm._ops.reserved import NAMESPACE
from lsiorm._ops.steps import Operation, Sleep
from lsiorm._ops.transactions import transact_write
from lsiorm._query.values import query
from lsiorm._requests.items import get_request
from lsiorm._requests.pages import PagedRead, ReadPage
from lsiorm._requests.reads import partition_query
from lsiorm._requests.transactions import Update
from lsiorm._requests.update_plan import update_spec
from lsiorm.errors import (
    ConditionFailedError,
    NotFoundError,
    OutcomeUnknownError,
    TransactionCanceledError,
    ValidationError,
)

__all__ = [
    "NAMESPACE",
    "FormatCheck",
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
    "open_ended",
    "read_item",
    "read_items",
]

JobState = Literal["running", "paused", "done", "cancelled"]
#: The states a job is resumed from; any other starts a new run.
RESUMABLE = ("running", "paused")

#: Seconds between a claim's additions to its job's progress counters (`Ledger.commit`): one
#: ``job#`` item takes every worker's progress, so each page adding to it at once would make it
#: a hot item, and the transactions that finish units would meet those writes there.
PROGRESS_EVERY = 1.0


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
    #: Where its next page starts (None: at its beginning; a done unit keeps none).
    position: Any = None


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
    #: Items read and changed since the job's progress counters last heard of this claim, and
    #: when they last did (`Ledger.commit`).
    unreported: tuple[int, int] = (0, 0)
    reported: float = 0.0


def open_ended(declaration: Mapping[str, Any]) -> bool:
    """Whether a run never ends by itself (a live stream's catch-up, whose units are shards
    added as the stream splits): it is not marked done when its units are."""
    return bool(declaration.get("open"))


def new_owner() -> str:
    """A fresh claim token: who holds a unit's lease."""
    return uuid.uuid4().hex


# -- reading ledger items ------------------------------------------------------------------

X = TypeVar("X", bound=Entity)


def _unit_record(item: UnitItem) -> UnitRecord:
    return UnitRecord(
        unit=unit_from_json(plain(item.unit)),
        state=item.state,
        counts={k: int(v) for k, v in item.counts.items()},
        runs=item.runs,
        owner=item.owner,
        lease=item.lease,
        notes=plain(item.notes or {}),
        position=plain(item.position),
    )


def _job_record(item: JobItem, units: Iterable[UnitRecord] = ()) -> JobRecord:
    return JobRecord(
        id=item.id,
        kind=item.kind,
        state=item.state,
        declaration=plain(item.declaration),
        fingerprint=item.fingerprint,
        created=item.created,
        updated=item.updated,
        units_total=item.units,
        units_done=item.done,
        items=item.items,
        changed=item.changed,
        rate=dict(item.rate),
        units=tuple(units),
    )


#: Refuses an item the earlier format wrote (`check_format`, in the words of its reader).
FormatCheck = Callable[[Mapping[str, Any] | None], None]


def read_item(
    ctx: Context, cls: type[X], key: Mapping[str, Any], check: FormatCheck
) -> Operation[X | None]:
    """The ledger item of ``cls`` whose key fields are ``key``, read consistently (None when
    there is none); ``check`` refuses an item the earlier format wrote."""
    meta = meta_of(cls)
    params = get_request(meta, key, consistent=True)
    response = yield from call(ctx, "GetItem", params, (meta.table,))
    item = response.get("Item")
    check(item)
    return cast("X | None", decode_stored(meta.table, item, only=(cls,)) if item else None)


def read_items(ctx: Context, cls: type[X], check: FormatCheck) -> Operation[list[X]]:
    """Every ledger item of ``cls``, read consistently page by page: the items of its
    partition whose sort keys begin with its sort key template's text before the first field.
    No type filter is sent, so ``check`` meets (and refuses) an item the earlier format wrote;
    items of other types met there are left out by their type."""
    meta = meta_of(cls)
    table = meta.table
    partition, sort = table.partition_key.name, table.sort_key.name if table.sort_key else None
    found: list[X] = []

    def add(page: ReadPage) -> None:
        for item in page.items:
            check(item)
            entity = decode_stored(table, item, only=(cls,))
            if isinstance(entity, cls):
                found.append(entity)

    params = partition_query(
        table.name,
        partition,
        {"S": meta.templates[partition].render({})},
        sort_key=sort,
        prefix={"S": meta.templates[sort].prefix({}, 0)} if sort else None,
        consistent=True,
    )
    yield from read_pages(ctx, PagedRead("Query", params, tables=(table,)), add)
    return found


# -- the ledger in DynamoDB -----------------------------------------------------------------


class JobLedger:
    """The ledger of jobs at ``location``; each method returns an operation (see module doc).

    Its items are lsiorm entities (`lsiorm._jobs.ledger_items`) bound to the location's table:
    every write is a put, an update or a transaction of lsiorm's own, with its conditions in
    field terms.
    """

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

    @property
    def entities(self) -> LedgerEntities:
        """The ledger's entities, bound to its location's table (once per location)."""
        loc = self.location
        return LedgerEntities.at(loc.table, loc.partition_key, loc.sort_key, loc.namespace)

    # requests ---------------------------------------------------------------------------

    def _read(self, cls: type[X], **key: str) -> Operation[X | None]:
        """One item, read consistently; an item of the earlier format is refused."""
        return (yield from read_item(self.ctx, cls, key, self.check))

    def _update(
        self,
        cls: type[X],
        key: Mapping[str, str],
        *,
        condition: Condition | None = None,
        set: Mapping[str, Any] | None = None,
        add: Mapping[str, Any] | None = None,
        upsert: bool = False,
    ) -> Operation[X]:
        spec = update_spec(set=set, add=add, upsert=upsert)
        return (yield from ops.update(self.ctx, cls, key, spec, condition=condition))

    def _count(
        self,
        job_id: str,
        *,
        set: Mapping[str, Any] | None = None,
        **add: int,
    ) -> Operation[None]:
        """Add to a run's progress counters. They are not exact (each unit's counts are): an
        addition whose answer was lost is not sent again, so it may be missing."""
        try:
            yield from self._update(self.entities.job, {"id": job_id}, set=set, add=add)
        except OutcomeUnknownError:
            return

    # runs -------------------------------------------------------------------------------

    def open(
        self, declaration: Mapping[str, Any], units: Iterable[Unit], rate: Mapping[str, float]
    ) -> Operation[tuple[JobRecord, bool]]:
        """The running (or paused) run of ``declaration``, or a new one; and whether it resumed.

        A done or cancelled run is never resumed: the pointer moves to a new run, with a
        compare-and-set, so that of two processes opening at once one creates and one joins.
        """
        print_ = fingerprint(declaration)
        ents = self.entities
        for attempt in range(40):
            head = yield from self._read(ents.pointer, fingerprint=print_)
            current = head.current if head is not None else None
            if current is not None:
                job = yield from self._read(ents.job, id=current)
                if job is None and attempt < 30:
                    # Another process is creating that run (its units first, then its job
                    # item): wait for it; a pointer left by a crash is replaced after a while.
                    yield Sleep(0.2)
                    continue
                if job is not None and job.state in RESUMABLE:
                    if job.state == "paused":
                        yield from self._update(ents.job, {"id": current}, set={"state": "running"})
                    record = yield from self.job(current, units=False)
                    return record, True
            job_id = f"{declaration.get('kind', 'job')}-{uuid.uuid4().hex[:12]}"
            moved = cond("current") == current if current else cond("current").not_exists()
            try:
                yield from self._update(
                    ents.pointer,
                    {"fingerprint": print_},
                    set={"current": job_id},
                    condition=moved,
                    upsert=True,
                )
            except ConditionFailedError:
                continue  # another process moved the pointer first: join its run
            record = yield from self._create(job_id, print_, declaration, list(units), rate)
            return record, False
        raise ValidationError(
            "jobs.open", f"Could not open a run of {declaration.get('kind')}: the pointer moved"
        )

    def _new_unit(self, job_id: str, unit: Unit) -> UnitItem:
        return self.entities.unit(
            job=job_id, unit_id=unit.id, unit=unit_to_json(unit), state="pending", counts={}
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
        yield from batch_write(self.ctx, [self._new_unit(job_id, unit) for unit in units])
        item = self.entities.job(
            id=job_id,
            kind=str(declaration.get("kind", "job")),
            state="running",
            declaration=dict(declaration),
            fingerprint=print_,
            created=now,
            updated=now,
            units=len(units),
            rate=dict(rate),
            rate_at=now,
        )
        yield from ops.put(self.ctx, item)
        return _job_record(item)

    def add_units(self, job_id: str, units: Iterable[Unit], total: int) -> Operation[int]:
        """Add ``units`` to a run (a live stream's new shards); each is put only if the run
        does not have it yet. ``total`` is the run's unit count with them. Returns how many
        were new."""
        added = 0
        for unit in units:
            try:
                yield from ops.put(self.ctx, self._new_unit(job_id, unit), create_only=True)
            except ConditionFailedError:
                continue
            added += 1
        yield from self._update(
            self.entities.job, {"id": job_id}, set={"units": total, "updated": self.clock()}
        )
        return added

    def job(self, job_id: str, *, units: bool = True) -> Operation[JobRecord]:
        """The run ``job_id``, with its units unless ``units=False``."""
        item = yield from self._read(self.entities.job, id=job_id)
        if item is None:
            raise ValidationError("jobs.unknown", f"No job {job_id!r} in {self.where}.")
        records: list[UnitRecord] = []
        if units:
            found = yield from read_all(
                self.ctx, query(self.entities.unit).where(job=job_id).consistent()
            )
            records = [_unit_record(i) for i in found]
        return _job_record(item, records)

    def jobs(self) -> Operation[list[JobRecord]]:
        """Every run in the ledger, newest first (without their units)."""
        found = yield from read_items(self.ctx, self.entities.job, self.check)
        return sorted((_job_record(job) for job in found), key=lambda j: -j.created)

    def delete_prefixed(self, prefixes: Iterable[str]) -> Operation[None]:
        """Delete the items of the ledger's partition whose sort keys begin with one of
        ``prefixes`` (a run's ``job#<id>`` and ``unit#<id>#``, a pointer's ``run#<fingerprint>``,
        or another record kept in the partition), whatever their format."""
        loc = self.location
        names = (loc.partition_key, loc.sort_key)
        keys: list[dict[str, Any]] = []

        def add(page: ReadPage) -> None:
            keys.extend({n: item[n] for n in names} for item in page.items)

        for prefix in prefixes:
            read = partition_query(
                loc.table, loc.partition_key, {"S": loc.namespace}, sort_key=loc.sort_key,
                prefix={"S": prefix},
            )  # fmt: skip
            yield from read_pages(self.ctx, PagedRead("Query", read), add)
        for key in keys:
            yield from call(self.ctx, "DeleteItem", {"TableName": loc.table, "Key": key})

    @property
    def where(self) -> str:
        """The ledger's place, in words."""
        return f"the ledger of table {self.location.table!r}"

    def check(self, item: Mapping[str, Any] | None) -> None:
        """Refuse a run's item the earlier format wrote."""
        check_format(item, self.where)

    def set_state(
        self, job_id: str, state: JobState, *, only_from: Iterable[str] = ()
    ) -> Operation[bool]:
        """Set a run's state (only from one of ``only_from`` when given); False if it was not."""
        allowed = list(only_from)
        condition = cond("state").is_in(*allowed) if allowed else None
        try:
            yield from self._update(
                self.entities.job,
                {"id": job_id},
                set={"state": state, "updated": self.clock()},
                condition=condition,
            )
        except (ConditionFailedError, NotFoundError):
            return False
        return True

    # units ------------------------------------------------------------------------------

    def unit_record(self, job_id: str, unit: Unit) -> Operation[UnitRecord | None]:
        """One unit of a run as the ledger has it (None if the run has no such unit)."""
        item = yield from self._read(self.entities.unit, job=job_id, unit_id=unit.id)
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
        key = {"job": job_id, "unit_id": unit.id}
        free = all_of(
            cond("state") != "done",
            any_of(cond("owner").not_exists(), cond("lease") < now),
        )
        item: UnitItem | None
        try:
            item = yield from self._update(
                self.entities.unit,
                key,
                set={"owner": owner, "lease": now + self.lease_seconds, "state": "running"},
                add={"runs": 1},
                condition=free,
            )
        except (ConditionFailedError, NotFoundError, OutcomeUnknownError):
            # Refused: held by another worker, done, or taken by this very claim, whose attempt
            # applied and lost its answer (an addition is not sent twice: read what it did).
            item = yield from self._read(self.entities.unit, **key)
            if item is None or item.owner != owner:
                return None
        yield from self._count(job_id, running=1)
        return UnitClaim(
            unit,
            owner,
            position=plain(item.position),
            counts={k: int(v) for k, v in item.counts.items()},
            notes=plain(item.notes or {}),
            intent=plain(item.intent),
            runs=item.runs or 1,
            renewed=now,
        )

    def _held(self, claim: UnitClaim) -> Condition:
        return all_of(cond("owner") == claim.owner, cond("state") == "running")

    def commit(
        self, job_id: str, claim: UnitClaim, *, items: int = 0, changed: int = 0
    ) -> Operation[None]:
        """Store the claim's position, counts, notes and intent, and renew its lease.

        Raises `LeaseLost` when another worker holds the unit now. ``items`` and ``changed``
        are added to the job's progress counters (for `lsiorm jobs`; the exact counts are the
        units').
        """
        now = self.clock()
        try:
            yield from self._update(
                self.entities.unit,
                {"job": job_id, "unit_id": claim.unit.id},
                set={**_page_of(claim), "lease": now + self.lease_seconds},
                condition=self._held(claim),
            )
        except (ConditionFailedError, NotFoundError) as exc:
            raise LeaseLost(claim.unit.id) from exc
        claim.renewed = now
        seen, touched = claim.unreported
        claim.unreported = (seen + items, touched + changed)
        if now - claim.reported >= PROGRESS_EVERY:
            yield from self._report_progress(job_id, claim, now)

    def _report_progress(self, job_id: str, claim: UnitClaim, now: float) -> Operation[None]:
        """Add the claim's unreported items and changes to the job's progress counters."""
        items, changed = claim.unreported
        if items or changed:
            yield from self._count(job_id, set={"updated": now}, items=items, changed=changed)
        claim.unreported, claim.reported = (0, 0), now

    def finish(self, job_id: str, claim: UnitClaim) -> Operation[bool]:
        """Mark the unit done (with its final counts); return whether the whole run is done."""
        now = self.clock()
        ents = self.entities
        key = {"job": job_id, "unit_id": claim.unit.id}
        done = Update(
            ents.unit,
            key,
            # None removes: a done unit keeps no lease, intent or position.
            set={
                "state": "done",
                "counts": claim.counts,
                "notes": claim.notes,
                "finished": now,
                "owner": None,
                "lease": None,
                "intent": None,
                "position": None,
            },
            condition=self._held(claim),
        )
        items, changed = claim.unreported
        counted = Update(
            ents.job,
            {"id": job_id},
            set={"updated": now},
            add={"done": 1, "running": -1, "items": items, "changed": changed},
        )
        try:
            yield from transact_write(self.ctx, [done, counted], f"{claim.owner}-done"[:36])
        except TransactionCanceledError as exc:
            if exc.reasons and exc.reasons[0].code == "ConditionalCheckFailed":
                # The answer of this very transaction may have been lost and its resend found
                # the unit done by it: read the unit to tell that from a lost lease.
                unit = yield from self._read(ents.unit, **key)
                if unit is None or unit.state != "done":
                    raise LeaseLost(claim.unit.id) from exc
            else:
                raise
        job = yield from self._read(ents.job, id=job_id)
        if job is None or open_ended(job.declaration):
            return False
        if job.done >= job.units:
            yield from self.set_state(job_id, "done", only_from=RESUMABLE)
            return True
        return False

    def pause(
        self, job_id: str, claim: UnitClaim, *, items: int = 0, changed: int = 0
    ) -> Operation[None]:
        """Store the claim's last page and give the lease up, in one write: `commit` and
        `release` in one (a unit whose source has nothing more for now).

        Raises `LeaseLost` when this claim no longer holds the unit (another worker does, or
        the write applied and its answer was lost: the page is stored either way, or read again
        by the next claim and counted once). ``items`` and ``changed`` are added to the job's
        progress counters with the running count.
        """
        try:
            yield from self._update(
                self.entities.unit,
                {"job": job_id, "unit_id": claim.unit.id},
                set={**_page_of(claim), "state": "pending", "owner": None, "lease": None},
                condition=self._held(claim),
            )
        except (ConditionFailedError, NotFoundError) as exc:
            raise LeaseLost(claim.unit.id) from exc
        seen, touched = claim.unreported
        claim.unreported = (0, 0)
        yield from self._count(job_id, running=-1, items=seen + items, changed=touched + changed)

    def release(self, job_id: str, claim: UnitClaim) -> Operation[None]:
        """Give the unit's lease up (its last commit stays); nothing when it is lost already."""
        try:
            yield from self._update(
                self.entities.unit,
                {"job": job_id, "unit_id": claim.unit.id},
                set={"state": "pending", "owner": None, "lease": None},
                condition=self._held(claim),
            )
        except (ConditionFailedError, NotFoundError):
            return
        items, changed = claim.unreported
        claim.unreported = (0, 0)
        yield from self._count(job_id, running=-1, items=items, changed=changed)

    # the shared rate ----------------------------------------------------------------------

    def control(self, job_id: str) -> Operation[dict[str, Any]]:
        """The run's state, current rate, when it last changed, and how many units run."""
        item = yield from self._read(self.entities.job, id=job_id)
        if item is None:
            return {"state": "cancelled", "rate": {}, "rate_at": 0.0, "running": 1}
        return {
            "state": item.state,
            "rate": dict(item.rate),
            "rate_at": item.rate_at,
            "running": max(1, item.running),
        }

    def set_rate(
        self, job_id: str, old: Mapping[str, float], new: Mapping[str, float], *, not_since: float
    ) -> Operation[bool]:
        """Replace the shared rate ``old`` by ``new`` if it did not change since ``not_since``."""
        try:
            yield from self._update(
                self.entities.job,
                {"id": job_id},
                set={"rate": dict(new), "rate_at": self.clock()},
                condition=all_of(cond("rate") == dict(old), cond("rate_at") <= not_since),
            )
        except (ConditionFailedError, NotFoundError):
            return False
        return True


def _page_of(claim: UnitClaim) -> dict[str, Any]:
    """What a unit stores of its claim's last page: position, counts, notes and intent."""
    return {
        "position": claim.position,
        "counts": claim.counts,
        "notes": claim.notes,
        "intent": claim.intent,
    }
