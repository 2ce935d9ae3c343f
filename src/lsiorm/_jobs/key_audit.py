"""Key audit: does every stored item carry the key attributes its current declaration derives?

`audit_keys` runs the pure check of one item (`lsiorm._model.key_check.check_item_keys`) over
a partition or a whole table, in parallel scan segments, read-only, priced first by the
capacity model, and adds the checks up per entity type and attribute (`KeyAuditReport`).

The audit runs on the job engine (`lsiorm._jobs.engine`) like every key job: in units,
here or on an executor; read-only, it keeps its ledger in this process unless it runs on an
executor or is given a ledger table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsiorm._jobs.engine import LEDGER_ITEMS, JobRun
from lsiorm._jobs.resumable import JobProgress
from lsiorm._jobs.scans import priced_scan
from lsiorm._model.capacity import ReadEstimate
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.key_check import ItemKeyCheck, KeyProblem, check_item_keys
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire, to_wire
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    from lsiorm._jobs.budget import RateBudget
    from lsiorm._jobs.options import JobOptions

__all__ = [
    "AttributeTally",
    "AuditKind",
    "EntityKeyAudit",
    "JobProgress",
    "KeyAuditReport",
    "WireItem",
    "audit_keys",
    "audit_report",
]

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
    price given before reading; ``dry_run`` reports read nothing. ``ledger_items`` counts the
    items of lsiorm's job ledger in the table's reserved partition, left out of the rest.
    """

    table: str
    estimate: ReadEstimate
    dry_run: bool = False
    scanned: int = 0
    other: int = 0
    undecodable: int = 0
    entities: dict[str, EntityKeyAudit] = field(default_factory=dict)
    elapsed: float = 0.0
    #: The run in the ledger that read it.
    job: str | None = None
    ledger_items: int = 0

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
            + (
                f" ({self.ledger_items} items of lsiorm's job ledger, left out)"
                if self.ledger_items
                else ""
            )
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


class AuditKind:
    """What the audit does with each item of a page: check it, count it (no request)."""

    def __init__(self, table: Table, entity: type[Entity] | None, examples: int) -> None:
        self.table = table
        self.only = (entity,) if entity is not None else None
        self.examples = examples

    def new_part(self) -> KeyAuditReport:
        return KeyAuditReport(self.table.name, ReadEstimate(self.table.name, 0.0))

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        return {}  # read-only

    def visit(
        self, part: KeyAuditReport, item: WireItem, recovered: dict[str, Any]
    ) -> Operation[bool]:
        part.scanned += 1
        try:
            check = check_item_keys(self.table, item, self.only)
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
        if len(audit.examples) < self.examples:
            audit.examples.append(check)
        return True
        yield  # a generator that yields nothing: auditing an item sends no request

    def end_page(self, part: KeyAuditReport) -> Operation[None]:
        return
        yield  # nothing is sent at the end of a page

    def settle(self, part: KeyAuditReport, recovered: dict[str, Any]) -> Operation[None]:
        return
        yield  # nothing was written, so nothing is left to settle

    def counts(self, part: KeyAuditReport) -> dict[str, int]:
        counts = {"scanned": part.scanned, "other": part.other, "undecodable": part.undecodable}
        for name, audit in part.entities.items():
            counts[f"items:{name}"] = audit.items
            counts[f"current:{name}"] = audit.current
            if audit.old_form:
                counts[f"old_form:{name}"] = audit.old_form
            for attribute, tally in audit.attributes.items():
                for kind in ("stale", "missing", "extra"):
                    if getattr(tally, kind):
                        counts[f"{kind}:{name}:{attribute}"] = getattr(tally, kind)
        return counts

    def notes(self, part: KeyAuditReport) -> dict[str, list[Any]]:
        examples = [
            [
                name,
                check.stored_key,
                [[p.attribute, p.kind, _wire(p.stored), _wire(p.expected)] for p in check.problems],
            ]
            for name, audit in part.entities.items()
            for check in audit.examples
        ]
        return {"examples": examples} if examples else {}

    def changed(self, counts: Mapping[str, int]) -> int:
        return sum(v for k, v in counts.items() if k.startswith("items:")) - sum(
            v for k, v in counts.items() if k.startswith("current:")
        )

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        pass


def _wire(value: Any) -> Any:
    return None if value is None else to_wire(value)


def audit_report(
    report: KeyAuditReport,
    table: Table,
    counts: Mapping[str, int],
    notes: Iterable[Mapping[str, Any]],
    examples: int,
) -> KeyAuditReport:
    """Fill ``report`` with a run's counts and the examples its units kept."""
    report.scanned = counts.get("scanned", 0)
    report.other = counts.get("other", 0)
    report.undecodable = counts.get("undecodable", 0)
    report.ledger_items = counts.get(LEDGER_ITEMS, 0)
    for key, value in sorted(counts.items()):
        what, _, rest = key.partition(":")
        if what in ("items", "current", "old_form"):
            audit = report.entities.setdefault(rest, EntityKeyAudit(rest))
            setattr(audit, what, value)
        elif what in ("stale", "missing", "extra"):
            name, _, attribute = rest.partition(":")
            audit = report.entities.setdefault(name, EntityKeyAudit(name))
            tally = audit.attributes.setdefault(attribute, AttributeTally())
            setattr(tally, what, value)
    for note in notes:
        for name, stored_key, problems in note.get("examples", ()):
            seen = report.entities.get(name)
            entity = table.entities.get(name)
            if seen is None or entity is None or len(seen.examples) >= examples:
                continue
            found = tuple(
                KeyProblem(
                    a, k, None if s is None else from_wire(s), None if e is None else from_wire(e)
                )
                for a, k, s, e in problems
            )
            seen.examples.append(ItemKeyCheck(entity, dict(stored_key), {}, found))
    return report


def audit_keys(
    ctx: Context,
    target: Table | type[Entity],
    options: JobOptions,
    *,
    partition: Any = None,
    segments: int = 4,
    examples: int = 3,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
) -> Operation[KeyAuditReport]:
    """Read a partition or the whole table and compare every item's keys with its declaration.

    ``target`` is a table (every declared type) or one entity class. The read is priced first
    (``report.estimate``); ``dry_run`` stops there. Read-only: its ledger is in this process
    unless ``options`` name an executor or a ledger table.
    """
    spec, estimate, total = yield from priced_scan(ctx, target, partition, segments, page_size)
    entity, table = spec.entity, spec.table
    report = KeyAuditReport(table.name, estimate, dry_run=dry_run)
    if dry_run:
        return report

    def kind_for(ctx: Context, budget: RateBudget) -> AuditKind:
        return AuditKind(table, entity, examples)

    declaration = {
        "kind": "audit",
        "table": ctx.live_name(table),
        "entity": None if entity is None else f"{entity.__module__}:{entity.__qualname__}",
        "entities": sorted(
            f"{cls.__module__}:{cls.__qualname__}" for cls in table.entities.values()
        ),
        "templates": {
            name: {a: t.source for a, t in sorted(meta_of(cls).templates.items())}
            for name, cls in sorted(table.entities.items())
        },
        "partition": None if spec.partition is None else repr(spec.partition),
        "segments": spec.parallel,
        "page_size": page_size,
        "examples": examples,
        **options.declared(),
    }
    run = JobRun(
        declaration, options.units(spec), kind_for, options.pages(spec), options.rate(), total
    )
    ledger = options.ledger_for(
        ctx, table, writes=options.executor is not None or options.ledger is not None
    )
    record, _ = yield from options.run(ctx, ledger, run, progress)
    audit_report(report, table, record.counts(), (u.notes for u in record.units), examples)
    report.elapsed = record.elapsed
    report.job = record.id
    return report
