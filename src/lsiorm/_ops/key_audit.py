"""Key audit: does every stored item carry the key attributes its current declaration derives?

An entity's keys are derived from its fields by templates. When a template changes (a wider
number, a renamed namespace, a new encoding) or an entity starts using a new index slot, items
written before keep their old keys. `check_item_keys` compares one stored item with what
the declaration derives today, attribute by attribute: the primary key, every LSI and GSI key
attribute, and the type attribute. `audit_keys` does it for a partition or a whole table,
in parallel scan segments, read-only, priced first by the capacity model.

The scanning machinery (`scan_items`) is shared with the backfill and relief jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from lsiorm._model.capacity import ReadEstimate, read_units
from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import build_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import AttributeValue, WireItem, from_wire, to_wire
from lsiorm._ops.audit import measure_collection
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.resumable import DONE, JobProgress, Ledger, Position
from lsiorm._ops.steps import Gather, Operation
from lsiorm.errors import LsiormError, ValidationError

__all__ = [
    "DONE",
    "AttributeTally",
    "EntityKeyAudit",
    "ItemKeyCheck",
    "JobProgress",
    "KeyAuditReport",
    "KeyProblem",
    "Position",
    "ScanSpec",
    "WireItem",
    "audit_keys",
    "check_item_keys",
    "derived_keys",
    "price_scan",
    "scan_items",
]

ProblemKind = Literal["stale", "missing", "extra"]
"""How a stored key attribute differs: another value, absent, or present but not derived."""
P = TypeVar("P")


@dataclass(frozen=True)
class KeyProblem:
    """One key attribute of a stored item that differs from what the declaration derives.

    ``kind`` is ``"stale"`` (stored, but another value), ``"missing"`` (derived, not stored) or
    ``"extra"`` (stored, but the declaration derives none). Values are Python values.
    """

    attribute: str
    kind: ProblemKind
    stored: Any
    expected: Any


@dataclass(frozen=True)
class ItemKeyCheck:
    """The result of checking one stored item against its entity's declaration."""

    entity: type[Entity]
    stored_key: WireItem
    expected: WireItem
    problems: tuple[KeyProblem, ...]
    #: Whether every differing key attribute holds what the entity's ``rekeying_from`` style
    #: derives: an item still in the key form it had before (lsiorm 0.2's, say).
    old_form: bool = False

    @property
    def current(self) -> bool:
        """Whether every key attribute is what the declaration derives."""
        return not self.problems

    @property
    def moves(self) -> bool:
        """Whether the primary key itself changes (a rewrite is then a move)."""
        table = meta_of(self.entity).table
        primary = {table.partition_key.name, *([table.sort_key.name] if table.sort_key else [])}
        return any(p.attribute in primary for p in self.problems)


def key_attribute_names(table: Table) -> tuple[str, ...]:
    """Every attribute a declaration derives: all key attributes, then the type attribute."""
    return (*table.key_attributes, table.type_attribute)


def derived_keys(entity: Entity) -> WireItem:
    """The key attributes and type attribute the declaration derives for an entity (wire)."""
    meta = meta_of(entity)
    item = build_item(entity)
    return {name: to_wire(item[name]) for name in key_attribute_names(meta.table) if name in item}


def _same(a: AttributeValue, b: AttributeValue) -> bool:
    return a == b or from_wire(a) == from_wire(b)


def check_item_keys(
    table: Table, item: Mapping[str, AttributeValue], only: Iterable[type[Entity]] | None = None
) -> ItemKeyCheck | None:
    """Check one stored item (wire form); None when it is of no declared type (or not in only).

    Raises `ValidationError` when the item cannot be decoded as its type.
    """
    try:
        entity = decode_stored(table, item, only)
    except LsiormError:
        raise
    except Exception as exc:  # pydantic's own ValidationError: the stored fields are invalid
        raise ValidationError(
            "audit.undecodable",
            f"A stored item of table {table.name!r} cannot be decoded as its type: {exc}",
            table=table.name,
        ) from exc
    if entity is None:
        return None
    expected = derived_keys(entity)
    problems: list[KeyProblem] = []
    for name in key_attribute_names(table):
        stored, derived = item.get(name), expected.get(name)
        if stored is None and derived is None:
            continue
        if stored is None:
            assert derived is not None
            problems.append(KeyProblem(name, "missing", None, from_wire(derived)))
        elif derived is None:
            problems.append(KeyProblem(name, "extra", from_wire(stored), None))
        elif not _same(stored, derived):
            problems.append(KeyProblem(name, "stale", from_wire(stored), from_wire(derived)))
    primary = [table.partition_key.name, *([table.sort_key.name] if table.sort_key else [])]
    stored_key = {name: dict(item[name]) for name in primary if name in item}
    old_form = bool(problems) and _in_old_form(entity, problems)
    return ItemKeyCheck(type(entity), stored_key, expected, tuple(problems), old_form)


def _in_old_form(entity: Entity, problems: Iterable[KeyProblem]) -> bool:
    """Whether the differing key attributes hold what the ``rekeying_from`` style derives."""
    old = meta_of(entity).old_form
    if old is None:
        return False
    values = {name: getattr(entity, name) for name in type(entity).model_fields}
    derived = {**old.key(values), **old.index_keys(values)}
    return all(p.stored is not None and derived.get(p.attribute) == p.stored for p in problems)


# -- scanning -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanSpec:
    """What to read: a whole table in ``segments`` parallel segments, or one partition.

    ``entity`` narrows the read to one entity type (a filter on the type attribute; the read
    still costs what it scans). ``partition`` is a partition key value (Python or wire).
    """

    table: Table
    entity: type[Entity] | None = None
    partition: Any = None
    segments: int = 1
    consistent: bool = False
    page_size: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.segments <= 1_000_000:
            raise ValidationError(
                "scan.segments",
                f"segments is {self.segments}; a scan has 1 to 1,000,000 segments.",
                table=self.table.name,
            )

    @property
    def parallel(self) -> int:
        """The number of segments actually read (a partition is one query)."""
        return 1 if self.partition is not None else self.segments

    def params(self) -> dict[str, Any]:
        """The Query or Scan parameters, without the segment."""
        table = self.table
        params: dict[str, Any] = {"TableName": table.name}
        names: dict[str, str] = {}
        values: dict[str, AttributeValue] = {}
        if self.partition is not None:
            pk = table.partition_key
            av: AttributeValue = (
                dict(self.partition)
                if isinstance(self.partition, Mapping)
                else to_wire(self.partition)
            )
            if list(av) != [pk.type]:
                raise ValidationError(
                    "audit.key-type",
                    f"The partition key {pk.name!r} of table {table.name!r} has type {pk.type}, "
                    f"but the job was given {self.partition!r}.",
                    table=table.name,
                )
            params["KeyConditionExpression"] = "#pk = :pk"
            names["#pk"], values[":pk"] = pk.name, av
        if self.entity is not None:
            names["#type"] = table.type_attribute
            meta = meta_of(self.entity)
            if meta.typed:
                params["FilterExpression"] = "#type = :type"
                values[":type"] = {"S": meta.type_name}
            else:  # its keys tell its items from other untyped types' (see check_item_keys)
                params["FilterExpression"] = "attribute_not_exists(#type)"
        if names:
            params["ExpressionAttributeNames"] = names
        if values:
            params["ExpressionAttributeValues"] = values
        if self.consistent:
            params["ConsistentRead"] = True
        if self.page_size is not None:
            params["Limit"] = self.page_size
        return params


def scan_items(
    ctx: Context,
    spec: ScanSpec,
    visit: Callable[[P, WireItem], Operation[object]],
    ledger: Ledger[Any, P],
    *,
    concurrency: int = 8,
) -> Operation[None]:
    """Read every item of ``spec`` and run ``visit(part, item)`` on each; segments in parallel.

    Each segment resumes from ``ledger.positions``; it counts a page into a part of its own
    (``ledger.new_part()``) and hands the part to ``ledger.page_done`` once every item of the
    page has been visited. The segments share nothing else, so the sync driver runs them in
    threads (and the async one interleaves them).
    """
    operation = "Query" if spec.partition is not None else "Scan"
    base = spec.params()
    start = dict(ledger.positions)

    def segment(number: int) -> Operation[None]:
        position = start.get(number)
        if position == DONE:
            return
        params = dict(base)
        if spec.parallel > 1:
            params["Segment"], params["TotalSegments"] = number, spec.parallel
        if isinstance(position, Mapping):
            params["ExclusiveStartKey"] = dict(position)
        while True:
            response = yield from call(ctx, operation, params, (spec.table,))
            part = ledger.new_part()
            items = response.get("Items") or ()
            for item in items:
                yield from visit(part, item)
            last = response.get("LastEvaluatedKey")
            read = int(response.get("ScannedCount", len(items)))
            ledger.page_done(number, dict(last) if last else DONE, part, read)
            if not last:
                return
            params = {**params, "ExclusiveStartKey": last}

    segments = tuple(segment(n) for n in range(spec.parallel))
    yield Gather(segments, limit=concurrency, threads=True)


def price_scan(ctx: Context, spec: ScanSpec) -> Operation[tuple[ReadEstimate, int | None]]:
    """Price reading ``spec`` with the capacity model; return the price and an item count.

    A whole table is priced from DescribeTable, without reading it: TableSizeBytes rounded up
    to 4 KB, halved unless consistent, and ItemCount (DynamoDB refreshes both about every six
    hours, so the price is an estimate). A partition is a query that reads only its item
    collection, which DescribeTable says nothing about: it is measured by reading it once, in
    the job's own pages, so its price (and its item count) is exact, and costs what it says.
    """
    if spec.partition is not None:
        size, price = yield from measure_collection(
            ctx, spec.table, spec.partition, page_size=spec.page_size, consistent=spec.consistent
        )
        return price, size.items
    described = yield from call(ctx, "DescribeTable", {"TableName": spec.table.name}, (spec.table,))
    live = described.get("Table") or {}
    size_bytes = int(live.get("TableSizeBytes") or 0)
    count = live.get("ItemCount")
    units = read_units(size_bytes, consistent=spec.consistent)
    return ReadEstimate(spec.table.name, units), (int(count) if count is not None else None)


def target_of(target: Table | type[Entity]) -> tuple[type[Entity] | None, Table]:
    """Split a job's target into (entity class or None, table)."""
    if isinstance(target, Table):
        return None, target
    return target, meta_of(target).table


# -- the audit ------------------------------------------------------------------------------


@dataclass
class AttributeTally:
    """Counts of one attribute's problems within one entity type."""

    stale: int = 0
    missing: int = 0
    extra: int = 0

    @property
    def total(self) -> int:
        """All problems of this attribute."""
        return self.stale + self.missing + self.extra


@dataclass
class EntityKeyAudit:
    """The audit of one entity type: items seen, items current, problems per attribute."""

    entity: str
    items: int = 0
    current: int = 0
    attributes: dict[str, AttributeTally] = field(default_factory=dict)
    examples: list[ItemKeyCheck] = field(default_factory=list)
    #: Stale items whose keys are those of the entity's ``rekeying_from`` style.
    old_form: int = 0

    @property
    def stale_items(self) -> int:
        """Items with at least one problem."""
        return self.items - self.current


@dataclass
class KeyAuditReport:
    """What `Session.audit_keys` found, per entity type and per attribute.

    ``other`` counts items of no declared type (or of a type not audited); ``undecodable``
    the items whose type is declared but whose fields do not validate. ``estimate`` is the
    price given before reading; ``dry_run`` reports read nothing.
    """

    table: str
    estimate: ReadEstimate
    dry_run: bool = False
    scanned: int = 0
    other: int = 0
    undecodable: int = 0
    entities: dict[str, EntityKeyAudit] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def stale_items(self) -> int:
        """Items, of every audited type, with at least one problem."""
        return sum(e.stale_items for e in self.entities.values())

    def add(self, part: KeyAuditReport, examples: int) -> None:
        """Add the counts of a part (one page of one segment); keep up to ``examples`` each."""
        self.scanned += part.scanned
        self.other += part.other
        self.undecodable += part.undecodable
        for name, seen in part.entities.items():
            audit = self.entities.setdefault(name, EntityKeyAudit(name))
            audit.items += seen.items
            audit.current += seen.current
            audit.old_form += seen.old_form
            for attribute, tally in seen.attributes.items():
                mine = audit.attributes.setdefault(attribute, AttributeTally())
                mine.stale += tally.stale
                mine.missing += tally.missing
                mine.extra += tally.extra
            audit.examples.extend(seen.examples[: max(0, examples - len(audit.examples))])

    @property
    def clean(self) -> bool:
        """Whether every audited item is current (and every one could be decoded)."""
        return not self.dry_run and self.stale_items == 0 and self.undecodable == 0

    def __str__(self) -> str:
        lines = [f"Key audit of table {self.table!r}: priced at {self.estimate}"]
        if self.dry_run:
            lines.append("dry run: nothing was read")
            return "\n".join(lines)
        lines.append(
            f"{self.scanned} items read in {self.elapsed:.1f} s; {self.stale_items} stale, "
            f"{self.other} of other types, {self.undecodable} undecodable"
        )
        for audit in self.entities.values():
            old = f" ({audit.old_form} in the key form before re-keying)" if audit.old_form else ""
            lines.append(f"  {audit.entity}: {audit.items} items, {audit.stale_items} stale{old}")
            for name, tally in audit.attributes.items():
                lines.append(
                    f"    {name}: {tally.stale} stale, {tally.missing} missing, {tally.extra} extra"
                )
            for example in audit.examples:
                what = "; ".join(
                    f"{p.attribute} {p.kind}: {p.stored!r} -> {p.expected!r}"
                    for p in example.problems
                )
                key = {k: from_wire(v) for k, v in example.stored_key.items()}
                lines.append(f"    e.g. {key}: {what}")
        if self.clean:
            lines.append("nothing is stale")
        return "\n".join(lines)


def audit_keys(
    ctx: Context,
    target: Table | type[Entity],
    *,
    partition: Any = None,
    segments: int = 4,
    examples: int = 3,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Operation[KeyAuditReport]:
    """Read a partition or the whole table and compare every item's keys with its declaration.

    ``target`` is a table (every declared type) or one entity class. The read is priced first
    (``report.estimate``); ``dry_run`` stops there. Read-only.
    """
    entity, table = target_of(target)
    spec = ScanSpec(table, entity, partition, segments, page_size=page_size)
    estimate, total = yield from price_scan(ctx, spec)
    report = KeyAuditReport(table.name, estimate, dry_run=dry_run)
    if dry_run:
        return report
    only = (entity,) if entity is not None else None

    def visit(part: KeyAuditReport, item: WireItem) -> Operation[bool]:
        part.scanned += 1
        try:
            check = check_item_keys(table, item, only)
        except ValidationError:
            part.undecodable += 1
            return False
        if check is None:
            part.other += 1
            return False
        name = meta_of(check.entity).type_name
        audit = part.entities.get(name)
        if audit is None:
            audit = part.entities[name] = EntityKeyAudit(name)
        audit.items += 1
        if check.current:
            audit.current += 1
            return False
        audit.old_form += check.old_form
        for problem in check.problems:
            tally = audit.attributes.setdefault(problem.attribute, AttributeTally())
            setattr(tally, problem.kind, getattr(tally, problem.kind) + 1)
        if len(audit.examples) < examples:
            audit.examples.append(check)
        return True
        yield  # a generator that yields nothing: auditing an item sends no request

    ledger: Ledger[KeyAuditReport, KeyAuditReport] = Ledger(
        report,
        new_part=lambda: KeyAuditReport(table.name, estimate),
        merge=lambda whole, part: whole.add(part, examples),
        changed=lambda whole: whole.stale_items,
        segments=spec.parallel,
        total=total,
        progress=progress,
        clock=clock,
        name=f"key audit of {table.name}",
    )
    yield from scan_items(ctx, spec, visit, ledger)
    report.elapsed = ledger.elapsed
    return report
