"""Backfill and re-key: rewrite the derived key attributes of stale items, and only those.

The job reads a partition or the whole table in work units (scan segments, or the files of an
export) and checks each item of one entity type with `check_item_keys`. A stale item is
rewritten on the condition that it is unchanged since it was read (`lsiorm._ops.unchanged`:
every attribute equal, no attribute added), so a concurrent writer's update is never
overwritten nor lost; a rewrite whose condition fails re-reads the item and tries again.

* Only index slots or the type attribute differ: one UpdateItem that sets the derived values
  and removes the slots the declaration no longer derives.
* The primary key differs (a new sort key format, say): a move. One transaction puts the item
  under its new key, create-only, on the condition that the original is unchanged; then the
  original is deleted on that condition, and what a writer added to it meanwhile is given to
  the new item (see `BackfillKind._move`).

The units run on the job engine (`lsiorm._jobs.engine`), which keeps the job's positions
and counts in the ledger, so a run that stops resumes from any process. Before a page's
rewrites are sent, the page's intent (which items become which) is committed; a worker that
reads the page again recognizes its predecessor's rewrites and counts them as rewritten, not
as current. Writes are paced to the job's rate budget, priced by the capacity model (LSI and
GSI write amplification included); a dry run reads the items and prices the rewrites without
writing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import JobRun, digest
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import JobProgress, WriteBudget
from lsiorm._jobs.scans import ScanSpec, price_scan
from lsiorm._jobs.write_tally import (
    TallyingKind,
    WriteJobReport,
    WriteTally,
    closing_lines,
    take_run,
    written_estimate,
)
from lsiorm._model.capacity import ReadEstimate, WriteEstimate, estimate_write
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.key_check import ItemKeyCheck, check_item_keys
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire, same_item
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.rekeying import move_request, moved_item
from lsiorm._ops.steps import Operation
from lsiorm._ops.unchanged import (
    create_only_put,
    delete_unchanged,
    give_attributes,
    unchanged_condition,
    unchanged_target,
    watched_attributes,
    withdraw_copy,
)
from lsiorm.errors import ConditionFailedError, TransactionCanceledError, ValidationError

__all__ = [
    "BackfillKind",
    "BackfillReport",
    "WriteBudget",
    "backfill",
    "backfill_declaration",
    "kind_factory",
]


class Attempts:
    """A request hook that counts the attempts of the one request it watches."""

    def __init__(self) -> None:
        self.sent = 0

    def before(self, request: object) -> None:
        self.sent += 1


# -- the report -----------------------------------------------------------------------------


@dataclass
class BackfillReport(WriteJobReport):
    """What one run of a backfill did.

    ``rewritten`` items had stale keys and were rewritten in place, ``moved`` of them by a move
    to a new primary key; ``current`` items needed nothing; ``gone`` items were deleted (or,
    during a re-keying, moved by a write) by someone else before they could be rewritten. A
    ``dry_run`` writes nothing: ``rewritten`` then counts the items that would be rewritten
    and ``estimate`` prices them. Each item is counted once, an item rewritten before a resume
    as rewritten, and an item this run moved to a key the scan reaches later is not counted
    again when it is read there.
    """

    table: str
    entity: str
    read_estimate: ReadEstimate
    estimate: WriteEstimate
    rewritten: int = 0
    moved: int = 0
    current: int = 0
    other: int = 0
    units_spent: float = 0.0

    @property
    def complete(self) -> bool:
        """Whether every stale item was rewritten (nothing failed)."""
        return not self.failed

    def __str__(self) -> str:
        verb = "would rewrite" if self.dry_run else "rewritten"
        lines = [
            f"Backfill of {self.entity} in table {self.table!r}"
            + (" (dry run)" if self.dry_run else "")
            + (" (resumed)" if self.resumed else ""),
            f"  read priced at {self.read_estimate}",
            f"  rewrites priced at {self.estimate}",
            f"  {self.scanned} items read in {self.elapsed:.1f} s",
            f"  {verb}: {self.rewritten} (moved to a new key: {self.moved})",
            f"  already current: {self.current}",
            f"  skipped because changed, and retried: {self.retried}",
            f"  deleted meanwhile: {self.gone}",
            f"  failed: {len(self.failed)}",
            *closing_lines(self),
        ]
        return "\n".join(lines)


_COUNTERS = ("scanned", "rewritten", "moved", "current", "retried", "gone", "other")


# -- the job --------------------------------------------------------------------------------


class BackfillKind(TallyingKind):
    """What a backfill does with each item of a page (the engine does the rest).

    ``arrived`` is shared by every unit of the run in this process: the keys it moved items
    to, so that an item read again at its new key is not counted twice. A unit also carries
    the arrivals in its current partition in the ledger, for the worker that resumes it.
    """

    def __init__(
        self,
        ctx: Context,
        entity: type[Entity],
        budget: RateBudget | None,
        *,
        dry_run: bool = False,
        max_attempts: int = 10,
        arrived: set[str] | None = None,
        exported: bool = False,
    ) -> None:
        meta = meta_of(entity)
        self.ctx = ctx
        self.table: Table = meta.table
        self.entity = entity
        self.budget = budget
        self.dry_run = dry_run
        self.max_attempts = max_attempts
        self.arrived: set[str] = arrived if arrived is not None else set()
        self.local_arrivals: dict[str, str] = {}  # key digest -> partition digest
        self.watched = watched_attributes(self.table, (entity,))
        self.names = _key_names(self.table)
        self.partition: str | None = None
        self.exported = exported

    # the engine's side ---------------------------------------------------------------------

    def new_part(self) -> WriteTally:
        return WriteTally(estimate=WriteEstimate(self.table.name, 0.0))

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """What this page will write: per stale item, the digest of what it becomes."""
        if self.dry_run:
            return {}
        planned: dict[str, Any] = {}
        for item in items:
            try:
                check = check_item_keys(self.table, item, (self.entity,))
            except ValidationError:
                continue
            if check is None or check.current:
                continue
            new = moved_item(item, check)
            moved_to = {k: new[k] for k in self.names} if check.moves else None
            planned[digest(self._key(item))] = {"i": digest(new), "m": moved_to}
        return planned

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("rewritten", 0))

    def carry(self) -> dict[str, Any]:
        if not self.local_arrivals:
            return {}
        return {"arrived": sorted(self.local_arrivals.items())}

    def restore(self, carry: Mapping[str, Any]) -> None:
        self.local_arrivals = {str(k): str(p) for k, p in carry.get("arrived", ())}

    def end_page(self, part: WriteTally) -> Operation[None]:
        # Arrivals in partitions the scan has left cannot be read again by this unit.
        if self.partition is not None:
            self.local_arrivals = {
                k: p for k, p in self.local_arrivals.items() if p == self.partition
            }
        return
        yield  # a generator: nothing is sent at the end of a page

    def settle(self, part: WriteTally, recovered: dict[str, Any]) -> Operation[None]:
        """Resolve the moves of a page cut short whose originals this page did not read."""
        for old, entry in list(recovered.items()):
            if entry.get("m") is None:
                continue  # an in-place rewrite: its item is recognized whenever it is read
            del recovered[old]
            there = yield from self._reread(entry["m"])
            if there is not None:
                part.add("scanned")
                part.add("rewritten")
                part.add("moved")
                self._arrive(entry["m"])
                continue
            # The move did not happen: the original is read (and counted) when its page is.

    # the items -----------------------------------------------------------------------------

    def _key(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {k: item[k] for k in self.names if k in item}

    def _arrive(self, key: Mapping[str, Any]) -> None:
        name = digest(dict(key))
        self.arrived.add(name)
        self.local_arrivals[name] = digest({self.names[0]: key[self.names[0]]})

    def _reread(self, key: Mapping[str, Any]) -> Operation[WireItem | None]:
        params = {"TableName": self.table.name, "Key": dict(key), "ConsistentRead": True}
        response = yield from call(self.ctx, "GetItem", params, (self.table,))
        found: WireItem | None = response.get("Item")
        return found

    def _update(self, item: WireItem, check: ItemKeyCheck, attempts: Attempts) -> Operation[None]:
        """Rewrite the derived attributes in place, on the condition that the item is unchanged
        (an UpdateItem keeps whatever an unwatched writer added meanwhile); ``attempts``
        counts the attempts sent."""
        condition, names, values = unchanged_condition(item, self.watched)
        sets = [p.attribute for p in check.problems if p.kind != "extra"]
        removes = [p.attribute for p in check.problems if p.kind == "extra"]
        for i, name in enumerate(sets):
            names[f"#s{i}"] = name
            values[f":s{i}"] = check.expected[name]
        for i, name in enumerate(removes):
            names[f"#r{i}"] = name
        clauses = []
        if sets:
            clauses.append("SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(sets))))
        if removes:
            clauses.append("REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes))))
        params: dict[str, Any] = {
            "TableName": self.table.name,
            "Key": check.stored_key,
            "UpdateExpression": " ".join(clauses),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        ctx = self.ctx.with_hooks((*self.ctx.hooks, attempts))
        yield from call(ctx, "UpdateItem", params, (self.table,))

    def _move(
        self, item: WireItem, check: ItemKeyCheck, new: WireItem, mine: str | None
    ) -> Operation[str]:
        """Move ``item`` to its new key; return ``"moved"``, ``"changed"`` (read it again),
        ``"gone"`` (deleted by another writer meanwhile) or ``"taken"`` (another item is
        there).

        1. One transaction puts the new item, create-only, on the condition that the original
           is unchanged. A copy already there that is exactly the new item (this move's own,
           its answer lost; or a predecessor's) is accepted; a predecessor's copy of an older
           state of the item (``mine``: the digest its intent named) is withdrawn first.
        2. The original is deleted on the same condition, and the attributes it had beyond
           those read (added by a writer meanwhile) are given to the new item. When the delete
           fails, the copy is withdrawn: the original changed (it is read and moved again) or
           is gone.
        """
        table = self.table
        new_key = {k: new[k] for k in self.names}
        unchanged = unchanged_target(table, check.stored_key, item, self.watched)
        put = create_only_put(table, new)
        try:
            yield from call(
                self.ctx,
                "TransactWriteItems",
                {
                    "TransactItems": [{"Put": put}, {"ConditionCheck": unchanged}],
                    "ClientRequestToken": uuid.uuid4().hex,
                },
                (table,),
            )
        except TransactionCanceledError as exc:
            # The put may have applied (its answer lost, its resend refused or throttled), or
            # an identical copy was there already: then the move goes on to the delete.
            there = yield from self._reread(new_key)
            if there is None or not same_item(there, new):
                reasons = exc.reasons
                if not (reasons and reasons[0].code == "ConditionalCheckFailed"):
                    return "changed"
                if there is not None and mine is not None and digest(there) == mine:
                    yield from withdraw_copy(
                        self.ctx, table, new_key, there
                    )  # a predecessor's older copy
                    return "changed"
                original = yield from self._reread(check.stored_key)
                if original is None or not same_item(original, item):
                    return "changed"  # its own condition failed too: read it again
                return "taken"
        removal = yield from delete_unchanged(self.ctx, table, check.stored_key, item, self.watched)
        if removal.deleted:
            yield from give_attributes(self.ctx, table, new_key, new, removal.added)
            return "moved"
        original = yield from self._reread(check.stored_key)
        if original is None and removal.unsure:
            return "moved"  # most likely deleted by this move's own delete, its answer lost
        yield from withdraw_copy(self.ctx, table, new_key, new)
        return "changed" if original is not None else "gone"

    def _move_while_rekeying(
        self, item: WireItem, check: ItemKeyCheck, new: WireItem
    ) -> Operation[str]:
        """Move ``item`` in one transaction (put the new item, delete the original if
        unchanged), as every write of a re-keying entity does (`rekeying.ensure_moved`).

        While `rekeying_from` is set, writers move the items they touch too; a move in two
        steps (put, then delete) would let a writer's move land between them. Return as
        `_move` does.
        """
        table = self.table
        try:
            yield from call(self.ctx, "TransactWriteItems", move_request(item, check), (table,))
            return "moved"
        except TransactionCanceledError:
            new_key = {k: new[k] for k in self.names}
            original = yield from self._reread(check.stored_key)
            if original is None:
                there = yield from self._reread(new_key)
                # Moved: by this move (its answer lost) or by a writer, which then counts it.
                return "moved" if there is not None and same_item(there, new) else "gone"
            if not same_item(original, item):
                return "changed"
            return "taken"

    def _maybe_mine(self, attempts: Attempts) -> bool:
        """Whether a refused rewrite may have been refused because of itself (its answer lost).

        An item read by a scan was as read a moment before: refused, and then found exactly as
        this rewrite makes it, it was this rewrite whose answer was lost. An item read from an
        export may have been rewritten long before (by an earlier run): only a request that was
        actually sent more than once can have been refused because of its own first attempt.
        """
        return attempts.sent > 1 or not self.exported

    def _cost(self, item: WireItem, check: ItemKeyCheck) -> WriteEstimate:
        table = self.table
        new = moved_item(item, check)
        if not check.moves:
            return estimate_write(table, item, new)
        return estimate_write(table, None, new, transactional=True) + estimate_write(
            table, item, None
        )

    def _done(self, part: WriteTally, check: ItemKeyCheck, units: WriteEstimate) -> None:
        assert part.estimate is not None
        part.estimate = part.estimate + units
        part.add("rewritten")
        if check.moves:
            part.add("moved")
            self._arrive({k: check.expected[k] for k in self.names})

    def _fail(self, part: WriteTally, key: Mapping[str, Any], why: str) -> None:
        part.failed.append([{k: from_wire(v) for k, v in key.items()}, why])

    def visit(self, part: WriteTally, item: WireItem, recovered: dict[str, Any]) -> Operation[bool]:
        table = self.table
        self.partition = digest({self.names[0]: item[self.names[0]]})
        if self.arrived and digest(self._key(item)) in self.arrived:
            return False  # moved here by this run: counted already
        if self.local_arrivals and digest(self._key(item)) in self.local_arrivals:
            return False
        part.add("scanned")
        entry = recovered.pop(digest(self._key(item)), None) if recovered else None
        current: WireItem | None = item
        for _attempt in range(self.max_attempts):
            if current is None:
                part.add("gone")
                return False
            try:
                check = check_item_keys(table, current, (self.entity,))
            except ValidationError as exc:
                self._fail(part, self._key(current), str(exc))
                return False
            if check is None:
                part.add("other")
                return False
            if check.current:
                # Rewritten by this run before a resume (or an answer lost): its intent said
                # it would become exactly this.
                mine = entry is not None and entry["i"] == digest(current)
                part.add("rewritten" if mine else "current")
                return mine
            units = self._cost(current, check)
            if self.dry_run:
                self._done(part, check, units)
                return True
            if self.budget is not None:
                yield from self.budget.take_write(units.total)
            new = moved_item(current, check)
            if check.moves:
                try:
                    if meta_of(self.entity).rekeying_from is not None:
                        outcome = yield from self._move_while_rekeying(current, check, new)
                    else:
                        outcome = yield from self._move(
                            current, check, new, entry["i"] if entry else None
                        )
                except ValidationError as exc:  # raised before any request: nothing written
                    self._fail(part, check.stored_key, str(exc))
                    return False
                if outcome == "moved":
                    self._done(part, check, units)
                    return True
                if outcome == "taken":
                    key = {k: from_wire(check.expected[k]) for k in self.names}
                    self._fail(
                        part, check.stored_key, f"an item already exists under the new key {key}"
                    )
                    return False
                part.add("retried")
                entry = None
                current = None if outcome == "gone" else (yield from self._reread(check.stored_key))
                continue
            attempts = Attempts()
            try:
                yield from self._update(current, check, attempts)
            except ValidationError as exc:  # raised before any request: nothing was written
                self._fail(part, check.stored_key, str(exc))
                return False
            except ConditionFailedError:
                part.add("retried")
            else:
                self._done(part, check, units)
                return True
            current = yield from self._reread(check.stored_key)
            if self._maybe_mine(attempts):
                # A rewrite whose answer was lost and whose resend found the item changed:
                # the change may be this rewrite itself.
                entry = {"i": digest(new)}
                if current is not None and same_item(current, new):
                    part.counts["retried"] -= 1
                    self._done(part, check, units)
                    return True
        self._fail(part, self._key(item), f"changed on each of {self.max_attempts} attempts")
        return False


def _key_names(table: Table) -> tuple[str, ...]:
    return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))


def backfill_declaration(
    entity: type[Entity], live_table: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """What a backfill is, for its fingerprint and for workers elsewhere: the entity (by
    import path), its key templates, the live table, and the options that change its work."""
    meta = meta_of(entity)
    return {
        "kind": "backfill",
        "table": live_table,
        "entity": f"{entity.__module__}:{entity.__qualname__}",
        "type": meta.type_name,
        "templates": {name: t.source for name, t in sorted(meta.templates.items())},
        **dict(options),
    }


def kind_factory(
    entity: type[Entity], *, dry_run: bool, max_attempts: int, exported: bool = False
) -> Callable[[Context, RateBudget], BackfillKind]:
    """Make each unit's kind; every unit of the run in this process shares its arrivals.
    ``exported``: the items are read from an export (they may be older than the table's)."""
    arrived: set[str] = set()

    def kind_for(ctx: Context, budget: RateBudget) -> BackfillKind:
        return BackfillKind(
            ctx,
            entity,
            budget,
            dry_run=dry_run,
            max_attempts=max_attempts,
            arrived=arrived,
            exported=exported,
        )

    return kind_for


def backfill(
    ctx: Context,
    entity: type[Entity],
    options: JobOptions,
    *,
    partition: Any = None,
    segments: int = 4,
    dry_run: bool = False,
    max_attempts: int = 10,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
) -> Operation[BackfillReport]:
    """Rewrite the stale key attributes of ``entity``'s items; see the module docstring.

    ``options`` says where the ledger is, how units run (threads here or an executor), the
    rate budget, and the export to read instead of scanning. Running it again after a run is
    done starts a new run over what is stale now; a run that stopped is resumed.
    """
    meta = meta_of(entity)
    table: Table = meta.table
    spec = ScanSpec(table, entity, partition, segments, page_size=page_size)
    if options.export is not None:
        read_estimate, total = ReadEstimate(table.name, 0.0), options.export.items
    else:
        read_estimate, total = yield from price_scan(ctx, spec)
    report = BackfillReport(
        table.name, meta.type_name, read_estimate, WriteEstimate(table.name, 0.0), dry_run=dry_run
    )
    declaration = backfill_declaration(
        entity,
        ctx.live_name(table),
        {
            "partition": None if spec.partition is None else repr(spec.partition),
            "segments": spec.parallel,
            "page_size": page_size,
            "dry_run": dry_run,
            "max_attempts": max_attempts,
            **options.declared(),
        },
    )
    run = JobRun(
        declaration,
        options.units(spec),
        kind_factory(
            entity,
            dry_run=dry_run,
            max_attempts=max_attempts,
            exported=options.export is not None,
        ),
        options.pages(spec),
        options.rate(),
        total,
    )
    ledger = options.ledger_for(ctx, table, writes=not dry_run)
    record, resumed = yield from options.run(ctx, ledger, run, progress)
    counts = take_run(report, record, resumed, _COUNTERS)
    report.estimate = written_estimate(table.name, counts)
    report.units_spent = report.estimate.total if not dry_run else 0.0
    return report
