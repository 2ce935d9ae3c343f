"""Adoption: does a table that lsiorm did not write hold what its declarations say?

Before lsiorm reads or writes a table that another tool wrote, `adopt` scans it once and
sorts every item: which declared entity it is (by the type attribute, or by the key templates
of the entities declared without one), and whether it *parses* as that entity, that is its
fields validate and every key attribute it stores is the very text the declaration derives
from them. Only then do gets, queries and writes agree with what is stored. Items that no
declaration claims, and items several untyped declarations claim, are counted apart, with
examples and the reason.

The scan is priced first like the key jobs' (`priced_scan`), then read in parallel segments
(`tally_scan`), with the same progress reports; it only reads, so it keeps no ledger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lsiorm._jobs.resumable import JobProgress, counted_as, plain_key
from lsiorm._jobs.scans import priced_scan
from lsiorm._jobs.tally_scan import ScanTally, scan_items
from lsiorm._model.capacity import ReadEstimate
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.item_types import item_types, parses_keys, untyped_entities
from lsiorm._model.key_check import check_item_keys
from lsiorm._model.protection import table_protection
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire
from lsiorm._ops.pipeline import Context
from lsiorm._ops.protection import open_item
from lsiorm._ops.reserved import NAMESPACE, reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm.errors import KeyEncodingError, ProtectionError, ValidationError

__all__ = ["AdoptionExample", "AdoptionReport", "EntityAdoption", "adopt", "classify_item"]


@dataclass(frozen=True)
class AdoptionExample:
    """One item that does not fit, by its primary key (Python values), and why."""

    key: dict[str, Any]
    reason: str

    def __str__(self) -> str:
        return f"{self.key}: {self.reason}"


@dataclass
class EntityAdoption:
    """The items one declared entity claims: how many parse under it, and examples of others."""

    entity: str
    items: int = 0
    parsed: int = 0
    examples: list[AdoptionExample] = field(default_factory=list)

    @property
    def unparsed(self) -> int:
        """Items of this entity that do not parse under its declaration."""
        return self.items - self.parsed


@dataclass
class AdoptionReport:
    """What `Session.adopt` found: per declared entity, items that parse and items that do not;
    items no declaration claims (``unmatched``) and items several claim (``ambiguous``).

    ``other`` counts items of declared entities left out (the target was one entity).
    ``ledger_items`` counts the items of lsiorm's job ledger in the table's reserved partition
    (``~lsiorm#jobs``), left out: they are lsiorm's own, not the table's.
    ``estimate`` is the price given before reading; a ``dry_run`` report read nothing.
    `accounted` is True when every item read is one entity's and parses as it.
    """

    table: str
    estimate: ReadEstimate
    dry_run: bool = False
    scanned: int = 0
    entities: dict[str, EntityAdoption] = field(default_factory=dict)
    unmatched: int = 0
    unmatched_examples: list[AdoptionExample] = field(default_factory=list)
    ambiguous: int = 0
    ambiguous_examples: list[AdoptionExample] = field(default_factory=list)
    other: int = 0
    ledger_items: int = 0
    elapsed: float = 0.0

    @property
    def unparsed(self) -> int:
        """Items, of every entity, that their entity claims but that do not parse."""
        return sum(e.unparsed for e in self.entities.values())

    @property
    def accounted(self) -> bool:
        """Whether every item read is exactly one declared entity's and parses as it."""
        return not self.dry_run and not (self.unparsed or self.unmatched or self.ambiguous)

    def add(self, part: AdoptionReport, examples: int) -> None:
        """Add the counts of a part (one page of one segment); keep up to ``examples`` each."""
        self.scanned += part.scanned
        self.unmatched += part.unmatched
        self.ambiguous += part.ambiguous
        self.other += part.other
        _keep(self.unmatched_examples, part.unmatched_examples, examples)
        _keep(self.ambiguous_examples, part.ambiguous_examples, examples)
        for name, seen in part.entities.items():
            mine = self.entities.setdefault(name, EntityAdoption(name))
            mine.items += seen.items
            mine.parsed += seen.parsed
            _keep(mine.examples, seen.examples, examples)

    def __str__(self) -> str:
        lines = [f"Adoption of table {self.table!r}: priced at {self.estimate}"]
        if self.dry_run:
            lines.append("dry run: nothing was read")
            return "\n".join(lines)
        lines.append(f"{self.scanned} items read in {self.elapsed:.1f} s")
        for seen in self.entities.values():
            lines.append(
                f"  {seen.entity}: {seen.items} items, {seen.parsed} parse, {seen.unparsed} do not"
            )
            lines.extend(f"    e.g. {example}" for example in seen.examples)
        lines.append(f"  matching no declaration: {self.unmatched} items")
        lines.extend(f"    e.g. {example}" for example in self.unmatched_examples)
        lines.append(f"  matching more than one declaration: {self.ambiguous} items")
        lines.extend(f"    e.g. {example}" for example in self.ambiguous_examples)
        if self.other:
            lines.append(f"  of other declared entities (not adopted here): {self.other} items")
        if self.ledger_items:
            lines.append(
                f"  lsiorm's job ledger ({NAMESPACE!r}): {self.ledger_items} items, left out"
            )
        lines.append(
            "every item is accounted for by exactly one entity"
            if self.accounted
            else "some items are not accounted for: see above"
        )
        return "\n".join(lines)


def _keep(mine: list[AdoptionExample], more: list[AdoptionExample], limit: int) -> None:
    mine.extend(more[: max(0, limit - len(mine))])


# -- one item -------------------------------------------------------------------------------


def _unmatched_reason(table: Table, item: Mapping[str, Any]) -> str:
    """Why no declaration claims an item: its type attribute, or the keys no template parses."""
    av = item.get(table.type_attribute)
    if av is not None:
        value = from_wire(av)
        if isinstance(value, str) and value in table.entities:
            return (
                f"its type attribute {table.type_attribute!r} is {value!r}, but that entity is "
                "declared with type_attribute=None (its items carry none)"
            )
        return (
            f"its type attribute {table.type_attribute!r} is {value!r}, which no entity of "
            "the table declares as its type_name"
        )
    untyped = untyped_entities(table)
    if not untyped:
        return (
            f"it has no type attribute {table.type_attribute!r}, and every entity of the table "
            "stores one (declare type_attribute=None on entities whose items carry none)"
        )
    return "it has no type attribute, and " + "; ".join(_mismatch(meta, item) for meta in untyped)


def _mismatch(meta: EntityMeta[EntityModel], item: Mapping[str, Any]) -> str:
    """Say which primary key attribute an untyped entity's templates do not parse."""
    table = meta.table
    for attr in (k for k in table.index_key_attributes(None) if k is not None):
        av = item.get(attr)
        tpl = meta.templates[attr]
        if av is None:
            return f"{meta.cls.__name__} needs {attr!r}, which it lacks"
        if tpl.is_direct:
            if list(av) != [tpl.attribute_type]:
                return f"{attr} is not of type {tpl.attribute_type} as {meta.cls.__name__} needs"
            continue
        try:
            tpl.parse(from_wire(av))
        except (KeyEncodingError, TypeError):
            return (
                f"{attr} {from_wire(av)!r} does not match {meta.cls.__name__}'s template "
                f"{tpl.source!r}"
            )
    return f"{meta.cls.__name__}'s templates parse it"  # pragma: no cover - it would match


def _unparsed_reason(meta: EntityMeta[EntityModel], item: Mapping[str, Any]) -> str | None:
    """Why an item claimed by an entity does not parse as it, or None when it does."""
    for attr, tpl in meta.templates.items():
        av = item.get(attr)
        if av is None or tpl.is_direct or parses_keys(meta, item, (attr,)):
            continue  # (keys still in the old form of a re-keying parse: the audit says stale)
        return f"{attr} {from_wire(av)!r} does not match the template {tpl.source!r}"
    try:
        check = check_item_keys(meta.table, item, (meta.cls,))  # type: ignore[arg-type]
    except ValidationError as error:
        cause = error.__cause__ if error.__cause__ is not None else error
        return f"its fields do not validate: {_first_line(cause)}"
    if check is None:  # pragma: no cover - classify_item found this entity for it
        return "it is not of this entity"
    problems = []
    for problem in check.problems:
        if problem.kind == "stale":
            problems.append(
                f"{problem.attribute} is {problem.stored!r}, the declaration derives "
                f"{problem.expected!r}"
            )
        elif problem.kind == "missing":
            problems.append(
                f"{problem.attribute} is missing, the declaration derives {problem.expected!r}"
            )
        else:
            problems.append(
                f"{problem.attribute} is {problem.stored!r}, the declaration derives none"
            )
    return "; ".join(problems) or None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return " ".join(line.strip() for line in text[:3])


def classify_item(
    table: Table, item: Mapping[str, Any], only: type[Entity] | None = None
) -> tuple[str, type[EntityModel] | None, str | None]:
    """Sort one wire item: (``"entity"``, its class, why it does not parse or None),
    (``"unmatched"``, None, why), (``"ambiguous"``, None, why) or (``"other"``, class, None)
    for an item of a declared entity other than ``only``.
    """
    found = item_types(table, item)
    if not found:
        return "unmatched", None, _unmatched_reason(table, item)
    if len(found) > 1:
        names = ", ".join(cls.__name__ for cls in found)
        return "ambiguous", None, f"it has no type attribute and its keys parse as {names}"
    cls = found[0]
    if only is not None and cls is not only:
        return "other", cls, None
    return "entity", cls, _unparsed_reason(meta_of(cls), item)


def _opened(ctx: Context, table: Table, item: WireItem) -> Operation[tuple[WireItem, str | None]]:
    """An item as stored, with its protected values opened by the session's keyring; or as it
    is with the reason it does not open (a plain value where an encrypted one is declared, a
    value that fails its authentication): such an item does not parse. No reason quotes a
    value."""
    protection = ctx.protection
    specs = table_protection(table)
    if protection is None or not specs:
        return item, None
    try:
        opened = yield from open_item(ctx.retry, protection, table, table.name, item, specs)
    except ProtectionError as error:
        return item, f"a protected value does not open ({error.rule}): {_first_line(error)}"
    return opened, None


# -- the job --------------------------------------------------------------------------------


def adopt(
    ctx: Context,
    target: Table | type[Entity],
    *,
    segments: int = 4,
    examples: int = 3,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Operation[AdoptionReport]:
    """Scan a table (or one entity's items) and sort every item against the declarations.

    The read is priced first (``report.estimate``); ``dry_run`` stops there. Read-only.
    """
    spec, estimate, total = yield from priced_scan(ctx, target, None, segments, page_size)
    entity, table = spec.entity, spec.table
    report = AdoptionReport(table.name, estimate, dry_run=dry_run)
    if dry_run:
        return report
    for cls in table.entities.values():
        if entity is None or cls is entity:
            name = meta_of(cls).type_name
            report.entities[name] = EntityAdoption(name)

    def visit(part: AdoptionReport, item: WireItem) -> Operation[None]:
        part.scanned += 1
        opened, refused = yield from _opened(ctx, table, item)
        kind, cls, reason = classify_item(table, opened, entity)
        if refused is not None and kind == "entity":
            reason = refused
        if kind == "other":
            part.other += 1
            return
        if kind != "entity":
            counted = part.unmatched_examples if kind == "unmatched" else part.ambiguous_examples
            if kind == "unmatched":
                part.unmatched += 1
            else:
                part.ambiguous += 1
            if len(counted) < examples:
                counted.append(AdoptionExample(plain_key(table, item), reason or ""))
            return
        assert cls is not None
        name = meta_of(cls).type_name
        seen = part.entities.setdefault(name, EntityAdoption(name))
        seen.items += 1
        if reason is None:
            seen.parsed += 1
        elif len(seen.examples) < examples:
            seen.examples.append(AdoptionExample(plain_key(table, item), reason))

    tally: ScanTally[AdoptionReport, AdoptionReport] = ScanTally(
        report,
        new_part=lambda: AdoptionReport(table.name, estimate),
        merge=lambda whole, part: whole.add(part, examples),
        changed=lambda whole: whole.unparsed + whole.unmatched + whole.ambiguous,
        segments=spec.parallel,
        total=total,
        progress=progress,
        clock=clock,
        name=f"adoption of {table.name}",
        counted=counted_as("adoption"),
    )
    # The scan reads items as stored; each is opened on its own (`_opened`), so that one whose
    # protected value does not open is counted, with its reason, instead of stopping the job.
    raw = replace(ctx, protection=None)
    yield from scan_items(raw, spec, visit, tally, skip=reserved_partition(table))
    report.elapsed = tally.elapsed
    report.ledger_items = tally.skipped
    return report
