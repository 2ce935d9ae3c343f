"""Index choice: fit every index to a query, keep the exact ones, pick the cheapest, say why.

Each index (the base table first, then the LSIs and GSIs in declared order) becomes an
`IndexOption`: how it fits every entity's conditions (`.keyrange`), whether it
could miss or mix up items (`.exactness`) and what reading from it costs (fetches from
the table, fields it does not project). The option that absorbs the most ``where()``
conditions wins; ties go to an index that needs no fetch, then the table, then the index
declared first. When none can serve, the error names the most telling reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, cast

from lsiorm._conditions import Operator
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, key_only_answer
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.multikey import is_multi_key
from lsiorm._model.schema import Table
from lsiorm._query.exactness import (
    intruders,
    sparse_fields,
    type_not_projected,
    untyped_separation,
)
from lsiorm._query.keyrange import IndexFit, Validator, fit_index
from lsiorm._query.multikey import filtered_keys, fit_multi_key
from lsiorm._query.plan import Candidate, QuerySource
from lsiorm._query.projection import (
    filter_field_names,
    index_kind,
    type_projected,
    uncovered,
    unprojected_filter_attributes,
)
from lsiorm.errors import QueryPlanError

__all__ = ["IndexOption", "IndexPick", "choose_index"]


@dataclass
class IndexOption:
    """One candidate index with its per-entity fits and what reading from it costs."""

    index: LocalIndex | GlobalIndex | None
    order: int
    fits: list[IndexFit]
    problem: str | None = None
    rule: str = ""
    score: int = 0
    absorbed: list[str] = field(default_factory=list)
    unabsorbed: dict[str, str] = field(default_factory=dict)
    inexact: dict[str, str] = field(default_factory=dict)
    #: Conditions a multi-attribute index's key condition cannot reach in order, with why.
    out_of_order: dict[str, str] = field(default_factory=dict)
    inexact_rules: dict[str, str] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    #: Per entity, the optional key fields whose None leaves matching items out of the index.
    sparse: dict[str, list[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The index name, or ``table`` for the base table."""
        return self.index.name if self.index is not None else "table"

    @property
    def covers(self) -> bool:
        """True when the index returns every wanted field without a fetch."""
        return not self.fetched and not self.unavailable

    def refuse(self, rule: str, problem: str) -> IndexOption:
        """Mark this index as unable to serve the query, with the rule and the reason."""
        self.rule, self.problem = rule, problem
        return self


@dataclass(frozen=True)
class IndexPick:
    """The winning option, every candidate with its reason, and notes on pending slots."""

    best: IndexOption
    candidates: tuple[Candidate, ...]
    #: Per where() field no ready index answers, the pending slot's index that would.
    pending_notes: tuple[str, ...]


# Rules of candidates that serve the partition but fail for another reason, in the order
# their error is preferred over the generic "query.no-index".
_SOFT_RULES: Final = (
    "query.plain-ambiguous",
    "query.sparse-index",
    "query.filter-on-key",
    "query.type-not-projected",
    "query.gsi-consistent-read",
    "query.gsi-projection",
    "query.filter-not-projected",
)


def choose_index(
    source: QuerySource,
    metas: Sequence[EntityMeta[Entity]],
    conds: Mapping[str, Sequence[Operator]],
    count: bool,
) -> IndexPick:
    """Return the cheapest index that answers the query exactly; raise when none can."""
    return _Chooser(source, metas, conds, count).pick()


class _Chooser:
    def __init__(
        self,
        q: QuerySource,
        metas: Sequence[EntityMeta[Entity]],
        conds: Mapping[str, Sequence[Operator]],
        count: bool,
    ) -> None:
        self.q = q
        self.metas = metas
        self.table = metas[0].table
        self.conds = conds
        self.count = count
        self.valid = Validator()
        self.filter_fields = filter_field_names(q.filter_condition)

    def pick(self) -> IndexPick:
        options = [self._option(index, n) for n, index in enumerate(self._indexes())]
        best, notes = self._choose(options)
        candidates = tuple(
            Candidate(
                o.index.name if o.index is not None else None,
                index_kind(o.index),
                None if o.problem is not None else o.score,
                o is best,
                _reason(o, best),
            )
            for o in options
        )
        return IndexPick(best, candidates, notes)

    def _indexes(self) -> list[LocalIndex | GlobalIndex | None]:
        if self.q.index_forced:
            return [self.table.index(self.q.index) if self.q.index is not None else None]
        return [None, *self.table.local_indexes, *self.table.global_indexes]

    # -- one option

    def _option(self, index: LocalIndex | GlobalIndex | None, order: int) -> IndexOption:
        if is_multi_key(index):
            fits = [fit_multi_key(m, self.table, index, self.conds, self.valid) for m in self.metas]
        else:
            fits = [fit_index(m, self.table, index, self.conds, self.valid) for m in self.metas]
        option = IndexOption(index, order, fits)
        broken = next((f for f in fits if f.problem is not None), None)
        if broken is not None:
            assert broken.problem is not None
            return option.refuse(broken.rule, broken.problem)
        unchecked = next((f for f in fits if set(f.checked) & f.meta.key_only_fields), None)
        if unchecked is not None:
            names = ", ".join(sorted(set(unchecked.checked) & unchecked.meta.key_only_fields))
            return option.refuse(
                "query.plain-ambiguous",
                f"{unchecked.meta.cls.__name__}'s plain key text may hold the separator after "
                f"{names}, and its items do not store {names} to check it. "
                f"{key_only_answer(unchecked.meta, names)}",
            )
        pending = _pending_slot(self.metas, self.table, index, self.q.index_forced)
        if pending is not None:
            # What it would answer once ready: named when no ready index answers it.
            option.absorbed = self._absorbed(option)
            return option.refuse("query.slot-pending", pending)
        refusal = self._inexact(option)
        if refusal is None:
            self._absorb(option)
            refusal = self._unreadable(option)
        elif refusal[0] == "query.sparse-index":
            # What it would answer if it held every item: named when no other index answers it.
            option.absorbed = self._absorbed(option)
        if refusal is not None:
            return option.refuse(*refusal)
        self._cover(option)
        if option.unavailable and self.q.missing == "error":
            return option.refuse(
                "query.gsi-projection",
                f"it does not project {', '.join(option.unavailable)}; use hydrate(), "
                "partial() or select()",
            )
        return option

    def _absorbed(self, option: IndexOption) -> list[str]:
        """The where() fields every entity's key condition answers, in the order written."""
        absorbed = set.intersection(*(f.absorbed for f in option.fits))
        return [n for n in self.conds if n in absorbed]

    def _absorb(self, option: IndexOption) -> None:
        option.absorbed = self._absorbed(option)
        option.score = len(option.absorbed)
        absorbed = set(option.absorbed)
        for f in option.fits:
            option.unabsorbed.update({k: v for k, v in f.unabsorbed.items() if k not in absorbed})
            option.inexact.update(f.inexact)
            option.out_of_order.update(
                {k: v for k, v in f.out_of_order.items() if k not in absorbed}
            )
            option.inexact_rules.update(f.inexact_rules)
        for name in self.conds:
            if name not in absorbed and name not in option.unabsorbed:
                option.unabsorbed[name] = f"{name} is absorbed for some entities only"

    def _inexact(self, option: IndexOption) -> tuple[str, str] | None:
        """Return why the option could miss matching items or cannot tell types apart.

        A forced index (``using()``) may be sparse on purpose: the plan then says which items
        it cannot see.
        """
        index = option.index
        for meta in self.metas:
            fields = sparse_fields(meta, self.table, index, self.conds, self.q.filter_condition)
            if fields:
                option.sparse[meta.cls.__name__] = fields
        if option.sparse and not self.q.index_forced:
            name, fields = next(iter(option.sparse.items()))
            return "query.sparse-index", (
                f"{name} items whose {' or '.join(fields)} is None are not in it (a sparse "
                "index); require them with a where() or filter() condition, or name it with using()"
            )
        if type_projected(self.table, index):
            return self._untyped_apart(option)
        for fit in option.fits:
            peers = [
                f.meta.cls
                for f in option.fits
                if f.partitions == fit.partitions and f.sort == fit.sort
            ]
            for partition in fit.partitions:
                foreign = intruders(self.table, index, partition, fit.sort, peers)
                if foreign and fit.empty is None:
                    return "query.type-not-projected", type_not_projected(
                        self.table, index, foreign
                    )
        return None

    def _untyped_apart(self, option: IndexOption) -> tuple[str, str] | None:
        """Return why a filter cannot keep untyped entities' items from others in the range."""
        for fit in option.fits:
            if fit.meta.typed or fit.empty is not None:
                continue
            peers = [f.meta.cls for f in option.fits if f.partitions == fit.partitions]
            for partition in fit.partitions:
                names = intruders(self.table, option.index, partition, fit.sort, peers)
                foreign = [cast("type[Entity]", self.table.entities[n]) for n in names]
                why = untyped_separation(self.table, option.index, "Query", peers, foreign)
                if isinstance(why, str):
                    return "query.untyped-types", why
        return None

    def _unreadable(self, option: IndexOption) -> tuple[str, str] | None:
        """Return why the index cannot read this query: a consistent GSI read, a filter."""
        if index_kind(option.index) == "global" and self.q.consistent_read:
            return (
                "query.gsi-consistent-read",
                "consistent reads are not available on a global secondary index",
            )
        fields = self.filter_fields | {n for fit in option.fits for n in fit.checked}
        if self.q.fallback:
            fields = fields | set(option.unabsorbed)
        keys = filtered_keys(self.metas, option.index, fields)
        if keys:
            return "query.filter-on-key", (
                f"a filter would read {', '.join(keys)}, key attributes of the index, and "
                "DynamoDB does not filter on the key attributes of the index it reads; put "
                "such a condition in where(), in key order"
            )
        lacking = unprojected_filter_attributes(self.metas, self.table, option.index, fields)
        if lacking:
            return "query.filter-not-projected", (
                f"the filter reads {', '.join(lacking)}, which the index does not project "
                "(a filter cannot fetch from the table)"
            )
        return None

    def _cover(self, option: IndexOption) -> None:
        """Record what the index does not return: fetched by an LSI, unavailable from a GSI."""
        local = index_kind(option.index) == "local"
        for meta in self.metas:
            fields, attrs = uncovered(meta, self.table, option.index, self._wanted(meta))
            if local:
                option.fetched.extend(a for a in attrs if a not in option.fetched)
            else:
                option.unavailable.extend(f for f in fields if f not in option.unavailable)

    def _wanted(self, meta: EntityMeta[Entity]) -> list[str]:
        if self.count:
            return []
        return list(self.q.fields) if self.q.fields is not None else list(meta.attributes)

    # -- the choice

    def _choose(self, options: list[IndexOption]) -> tuple[IndexOption, tuple[str, ...]]:
        usable = [o for o in options if o.problem is None]
        if not usable:
            raise self._no_index(options)
        best = max(usable, key=lambda o: (o.score, o.covers, o.index is None, -o.order))
        waiting = [
            o
            for o in options
            if o.rule == "query.slot-pending" and any(n in best.unabsorbed for n in o.absorbed)
        ]
        notes = tuple(
            f"{o.label} would answer {', '.join(n for n in o.absorbed if n in best.unabsorbed)}, "
            f"but {o.problem}"
            for o in waiting
        )
        key_only = _key_only(best)
        if key_only is not None:  # no filter can check it, fallback or not
            raise self._key_only(best, usable, *key_only)
        if best.unabsorbed and not self.q.fallback:
            if waiting:
                raise self._pending(best, waiting[0])
            sparse = next(
                (
                    o
                    for o in options
                    if o.rule == "query.sparse-index"
                    and any(n in best.unabsorbed for n in o.absorbed)
                ),
                None,
            )
            note = "" if sparse is None else f" ({sparse.label} is not used: {sparse.problem}.)"
            raise self._unabsorbed(best, usable, note)
        return best, notes

    def _no_index(self, options: list[IndexOption]) -> QueryPlanError:
        names = ", ".join(e.__name__ for e in self.q.entities)
        lines = "; ".join(f"{o.label}: {o.problem}" for o in options)
        rules = {o.rule for o in options}
        if self.q.index_forced:
            option = options[0]
            return QueryPlanError(
                option.rule if option.rule != "query.partition-fields" else "query.forced-index",
                f"Index {option.label} cannot serve this query of {names}: {option.problem}.",
                table=self.table.name,
            )
        for rule in _SOFT_RULES:
            if rule in rules:
                return QueryPlanError(
                    rule,
                    f"No index can serve this query of {names}: {lines}.",
                    table=self.table.name,
                )
        return QueryPlanError(
            "query.no-index",
            f"No index can serve this query of {names} without a scan: {lines}. Add equality "
            "conditions on those fields, or use scan() explicitly.",
            table=self.table.name,
        )

    def _pending(self, best: IndexOption, pending: IndexOption) -> QueryPlanError:
        """The only index that answers a where() condition is on a slot still marked pending."""
        names = ", ".join(n for n in pending.absorbed if n in best.unabsorbed)
        return QueryPlanError(
            "query.unabsorbed",
            f"Only index {pending.label} answers the where() condition on {names}, and "
            f"{pending.problem} (the planner does not pick it by itself until its items are "
            f"backfilled and the slot is marked ready). Or move the condition to filter(), or "
            f"call allow_filter_fallback() to filter it after reading "
            f"{'the table' if best.index is None else 'index ' + best.label}.",
            table=self.table.name,
        )

    def _key_only(
        self, best: IndexOption, usable: list[IndexOption], meta: EntityMeta[Entity], name: str
    ) -> QueryPlanError:
        """A where() condition no key condition answers, on a field kept only in keys."""
        found = _reason_in(best, usable, "inexact")
        rule, why = "query.key-only-field", f"{name} is not part of {best.label}'s key"
        if found is not None and found[1] == name:
            rule = found[0].inexact_rules.get(name, "query.inexact-range")
            why = f"the range on {name} cannot be exact on {found[0].label}: {found[2]}"
        answer = key_only_answer(meta, name)
        return QueryPlanError(rule, f"{why[0].upper()}{why[1:]}. {answer}.", table=self.table.name)

    def _unabsorbed(
        self, best: IndexOption, usable: list[IndexOption], note: str
    ) -> QueryPlanError:
        # An index whose keys hold the field but cannot bound it exactly explains more than
        # the winner of the tie, whose keys may not hold the field at all.
        found = _reason_in(best, usable, "out_of_order")
        if found is not None:
            option, name, why = found
            return QueryPlanError(
                "query.multi-key-order",
                f"The condition on {name} cannot be part of the key condition of "
                f"{option.label}: {why}. Add an equality on the sort attributes before it, "
                f"move it to filter(), or call allow_filter_fallback().{note}",
                table=self.table.name,
            )
        found = _reason_in(best, usable, "inexact")
        if found is not None:
            option, name, why = found
            return QueryPlanError(
                option.inexact_rules.get(name, "query.inexact-range"),
                f"The range on {name} cannot be exact on {option.label}: {why}. Or call "
                f"allow_filter_fallback() to read the key range and filter it.{note}",
                table=self.table.name,
            )
        detail = "; ".join(best.unabsorbed.values())
        return QueryPlanError(
            "query.unabsorbed",
            f"No index answers every where() condition in its key condition (best: "
            f"{best.label}; {detail}). Move those conditions to filter(), or call "
            f"allow_filter_fallback().{note}",
            table=self.table.name,
        )


def _key_only(best: IndexOption) -> tuple[EntityMeta[Entity], str] | None:
    """An entity and a field of a where() condition the chosen index leaves out, which its
    items keep only in their keys (no fallback filter can check it)."""
    for name in best.unabsorbed:
        for fit in best.fits:
            if name in fit.meta.key_only_fields:
                return fit.meta, name
    return None


def _reason_in(
    best: IndexOption, usable: list[IndexOption], kind: Literal["out_of_order", "inexact"]
) -> tuple[IndexOption, str, str] | None:
    """The first option, best first, that says why it leaves one of best's conditions out."""
    for option in [best, *usable]:
        reasons = option.out_of_order if kind == "out_of_order" else option.inexact
        for name, why in reasons.items():
            if name in best.unabsorbed:
                return option, name, why
    return None


def _pending_slot(
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    forced: bool,
) -> str | None:
    """Why an index the planner would pick by itself is not ready, or None."""
    if forced or index is None:
        return None
    for meta in metas:
        for attr in table.index_key_names(index):
            if attr in meta.pending:
                return (
                    f"{meta.cls.__name__} marks {attr} pending (not backfilled yet); "
                    f"use using({index.name!r}) to query it anyway"
                )
    return None


def _reason(o: IndexOption, best: IndexOption) -> str:
    if o.problem is not None:
        return f"cannot serve: {o.problem}"
    absorbed = f"absorbs {o.score} condition{'s' if o.score != 1 else ''}" + (
        f" ({', '.join(o.absorbed)})" if o.absorbed else ""
    )
    if o.out_of_order:
        absorbed += f"; {', '.join(o.out_of_order)} out of key order"
    cost = ""
    if o.fetched:
        cost = f"; fetches {', '.join(o.fetched)} from the table"
    elif o.unavailable:
        cost = f"; does not project {', '.join(o.unavailable)}"
    if o is best:
        return f"chosen: {absorbed}{cost}"
    if o.score < best.score:
        return f"{absorbed}, fewer than {best.label}{cost}"
    if o.covers != best.covers:
        return f"{absorbed}, as many as {best.label}, but {best.label} needs no fetch{cost}"
    if best.index is None:
        return f"{absorbed}, as many as the table, which wins ties{cost}"
    return f"{absorbed}, as many as {best.label}, which is declared first{cost}"
