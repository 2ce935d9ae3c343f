"""The copy and the verification of a table migration: job kinds on the job engine.

Both read the source table in the units of a parallel scan and re-derive each item through the
destination's declaration (`derive_item`): the entity is recognized by its type attribute, its
key attributes for the destination (primary key, every index slot, the type attribute) are
computed, and every other attribute is kept as stored (attributes the models do not declare
included). An item no entity recognizes is kept as it is when it has the destination's primary
key attributes; otherwise it is *unmatched*: counted and reported with examples, never dropped
silently.

* `CopyKind` puts each derived item into the destination on the condition that nothing is at
  its key (``attribute_not_exists``), so it never overwrites what the catch-up already wrote;
  an item found there counts as ``present``, and one whose derived primary key is not its
  own as ``key_moved`` (a new key format). (BatchWriteItem would be fewer requests, but it
  cannot carry a condition.) A page's keys are its intent: after a resume, a key found present
  that the cut-short page was about to write counts as ``copied``.
* `VerifyKind` reads the destination item of each derived key (BatchGetItem, consistent) and
  compares it with the derived item, attribute by attribute; it counts ``matched``,
  ``missing`` and ``different`` items, keeps the source keys of those that differ in its
  unit's notes (for a re-check; `FINDINGS` at most, then counts only), and sums a checksum
  (the engine's `digest`) of both sides. `ExtraKind` scans the destination for items that no
  source item derives, reading the source at the key each carries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import digest
from lsiorm._jobs.resumable import json_av, key_of
from lsiorm._model.capacity import estimate_write
from lsiorm._model.key_check import check_item_keys
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire, same_item
from lsiorm._ops.batch import read_keys
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.rekeying import moved_item
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConditionFailedError, ValidationError

__all__ = [
    "FINDINGS",
    "FINDING_BYTES",
    "CopyKind",
    "Derived",
    "ExtraKind",
    "VerifyKind",
    "checksum",
    "derive_item",
    "moved_from",
]

#: Examples kept per kind of note.
EXAMPLES = 20
#: Keys a verification's unit keeps per kind of finding (missing, different, extra), to read
#: them again before they are reported; past that, and for a key longer than `FINDING_BYTES`
#: (as JSON), only their counts. A unit's ledger item then stays well within DynamoDB's 400 KB.
FINDINGS = 100
FINDING_BYTES = 1024


@dataclass(frozen=True)
class Derived:
    """A source item re-derived for the destination: ``item`` (None when it cannot be placed:
    unmatched), the entity type that recognized it (None: kept as stored), and why an item is
    unmatched or was kept as stored although its type is declared."""

    item: WireItem | None
    entity: str | None = None
    reason: str | None = None


def derive_item(table: Table, item: Mapping[str, Any]) -> Derived:
    """Re-derive a source item through the declaration ``table`` (see the module docstring)."""
    reason = None
    try:
        check = check_item_keys(table, item)
    except ValidationError as exc:
        check, reason = None, str(exc)
    if check is not None:
        return Derived(moved_item(item, check), check.entity.__name__)
    if all(name in item for name in _primary(table)):
        return Derived(dict(item), None, reason)
    return Derived(
        None,
        None,
        reason or f"no declared entity recognizes it and it lacks {'/'.join(_primary(table))}",
    )


def _primary(table: Table) -> tuple[str, ...]:
    return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))


def checksum(item: Mapping[str, Any]) -> int:
    """An item's share of a unit's checksum (the sums of both sides match when every item
    does)."""
    return int(digest(item)[:12], 16)


def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: from_wire(v) for k, v in item.items()}


@dataclass
class Part:
    """One page's counts and notes (at most ``limit`` of each kind)."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: dict[str, list[Any]] = field(default_factory=dict)
    derived: list[tuple[WireItem, WireItem]] = field(default_factory=list)
    limit: int = EXAMPLES

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value

    def note(self, name: str, value: Any) -> None:
        mine = self.notes.setdefault(name, [])
        if len(mine) < self.limit:
            mine.append(value)


class _Kind:
    """What the copy, the verification and the scan for extras share: no carry, no settle."""

    def new_part(self) -> Part:
        return Part()

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        return {}

    def end_page(self, part: Part) -> Operation[None]:
        return
        yield  # a generator: nothing to send

    def settle(self, part: Part, recovered: dict[str, Any]) -> Operation[None]:
        recovered.clear()
        return
        yield  # a generator: nothing to send

    def counts(self, part: Part) -> dict[str, int]:
        return dict(part.counts)

    def notes(self, part: Part) -> dict[str, list[Any]]:
        return {k: v for k, v in part.notes.items() if v}

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        pass


class CopyKind(_Kind):
    """What the copy does with each source item: derive it, put it if nothing is there."""

    def __init__(self, ctx: Context, destination: Table, budget: RateBudget | None) -> None:
        self.ctx = ctx
        self.destination = destination
        self.budget = budget

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        planned: dict[str, Any] = {}
        for item in items:
            derived = derive_item(self.destination, item).item
            if derived is not None:
                planned[digest(key_of(self.destination, derived))] = 1
        return planned

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("copied", 0))

    def visit(self, part: Part, item: WireItem, recovered: dict[str, Any]) -> Operation[bool]:
        part.add("read")
        derived = derive_item(self.destination, item)
        if derived.item is None:
            part.add("unmatched")
            part.note("unmatched", [json_av(_plain(item)), derived.reason])
            return False
        if derived.entity is None:
            part.add("as_stored")
        new = derived.item
        if key_of(self.destination, new) != key_of(self.destination, item):
            part.add("key_moved")  # a new key format (dual writes cannot apply)
        if self.budget is not None:
            yield from self.budget.take_write(estimate_write(self.destination, None, new).total)
        params = {
            "TableName": self.destination.name,
            "Item": new,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": self.destination.partition_key.name},
        }
        try:
            yield from call(self.ctx, "PutItem", params, (self.destination,))
        except ConditionFailedError:
            mine = recovered.pop(digest(key_of(self.destination, new)), None) is not None
            part.add("copied" if mine else "present")
            return mine
        except ValidationError as exc:  # refused before sending (too large, say)
            part.add("failed")
            part.note("failed", [json_av(_plain(key_of(self.destination, new))), str(exc)])
            return False
        part.add("copied")
        return True


def _finding(part: Part, kind: str, key: WireItem) -> None:
    """Keep a finding's key in the unit's notes, unless it is too long (its count says it)."""
    if len(json.dumps(json_av(key))) <= FINDING_BYTES:
        part.note(kind, key)


def moved_from(source: Table, item: Mapping[str, Any], derived: Mapping[str, Any]) -> bool:
    """Whether the derivation changed the item's source key attributes: its destination item
    then no longer carries the key it has in the source."""
    return digest(key_of(source, derived)) != digest(key_of(source, item))


class _Comparing(_Kind):
    """What the verification and the scan for extras share: they read both tables and keep
    the keys of what they find in the unit's notes, up to `FINDINGS` of each kind."""

    note_limit = FINDINGS

    def __init__(self, ctx: Context, source: Table, destination: Table) -> None:
        self.ctx = ctx
        self.source = source
        self.destination = destination

    def new_part(self) -> Part:
        return Part(limit=FINDINGS)


class VerifyKind(_Comparing):
    """What the verification does with each source item: derive it, compare with the
    destination (read a page at a time). The source keys of the items missing or different are
    kept in the unit's notes, up to `FINDINGS` of each; ``moved`` counts the items whose
    derivation changed their source key."""

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("missing", 0) + counts.get("different", 0))

    def visit(self, part: Part, item: WireItem, recovered: dict[str, Any]) -> Operation[bool]:
        part.add("source")
        derived = derive_item(self.destination, item).item
        if derived is None:
            part.add("unmatched")
        else:
            part.derived.append((key_of(self.source, item), derived))
            part.add("source_checksum", checksum(derived))
            if moved_from(self.source, item, derived):
                part.add("moved")
        return False
        yield  # a generator: the destination is read per page, in end_page

    def end_page(self, part: Part) -> Operation[None]:
        if not part.derived:
            return
        keys = [key_of(self.destination, d) for _, d in part.derived]
        unique = list({digest(k): k for k in keys}.values())
        read = yield from read_keys(
            self.ctx, self.destination, unique, extra={"ConsistentRead": True}
        )
        found = {digest(key_of(self.destination, i)): i for i in read.items.values()}
        for (source_key, derived), key in zip(part.derived, keys, strict=True):
            there = found.get(digest(key))
            if there is not None:
                part.add("destination_checksum", checksum(there))
            outcome = (
                "missing"
                if there is None
                else ("matched" if same_item(there, derived) else "different")
            )
            part.add(outcome)
            if outcome != "matched":
                _finding(part, outcome, source_key)
        part.derived.clear()


class ExtraKind(_Comparing):
    """What the scan of the destination does: find items no source item derives.

    Each destination item is looked for in the source (consistently, a page at a time) at the
    source key it carries: it is accounted for when the source item there derives it. An item
    whose derivation changed its source key is found in ``moved`` (the digests of such derived
    keys) instead. The others are extra; their keys are kept in the unit's notes, up to
    `FINDINGS`.
    """

    def __init__(
        self, ctx: Context, source: Table, destination: Table, moved: frozenset[str]
    ) -> None:
        super().__init__(ctx, source, destination)
        self.moved = moved

    def changed(self, counts: Mapping[str, int]) -> int:
        return int(counts.get("extra", 0))

    def visit(self, part: Part, item: WireItem, recovered: dict[str, Any]) -> Operation[bool]:
        part.add("destination")
        part.derived.append((key_of(self.source, item), key_of(self.destination, item)))
        return False
        yield  # a generator: the source is read per page, in end_page

    def end_page(self, part: Part) -> Operation[None]:
        if not part.derived:
            return
        width = len(_primary(self.source))
        carried = {digest(k): k for k, _ in part.derived if len(k) == width}
        found: dict[str, WireItem] = {}
        if carried:
            read = yield from read_keys(
                self.ctx, self.source, list(carried.values()), extra={"ConsistentRead": True}
            )
            found = {digest(key_of(self.source, i)): i for i in read.items.values()}
        for source_key, key in part.derived:
            name = digest(key)
            item = found.get(digest(source_key))
            derived = derive_item(self.destination, item).item if item is not None else None
            if derived is not None and digest(key_of(self.destination, derived)) == name:
                continue
            if name in self.moved:
                continue
            part.add("extra")
            _finding(part, "extra", key)
        part.derived.clear()
