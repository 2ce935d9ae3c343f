"""The query planner: fit every candidate index, choose the cheapest exact one, build the plan."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    cast,
)

from lsiorm._conditions import (
    And,
    BeginsWith,
    Between,
    Compare,
    Condition,
    FieldCondition,
    Operator,
    Or,
    Placeholders,
)
from lsiorm._model.entity import (
    Entity,
    EntityMeta,
    meta_of,
)
from lsiorm._model.schema import GlobalIndex, LocalIndex, Table
from lsiorm._model.wire import to_wire
from lsiorm._query.collection import Unit, foreign_types, interval_of, plan_collections
from lsiorm._query.cursor import CursorShape, _canonical
from lsiorm._query.exactness import intruders, sparse_fields, type_filter_text
from lsiorm._query.keyrange import _KEY_OPERATORS, _describe_ops, _Fit, _fit, _Valid
from lsiorm._query.plan import (
    Candidate,
    IndexChoice,
    PlannedRequest,
    PlannedRequests,
    QueryPlan,
    ReadOptions,
)
from lsiorm._query.projection import (
    _covered,
    _filter_fields,
    _index_kind,
    _key_attrs,
    _projected,
    _projection_names,
    _recoverable,
)
from lsiorm._requests.items import compile_entity_condition
from lsiorm.errors import QueryPlanError

if TYPE_CHECKING:
    from lsiorm._query.values import Query

    pass


@dataclass
class _Option:
    """One candidate index with its per-entity fits and what reading from it costs."""

    index: LocalIndex | GlobalIndex | None
    order: int
    fits: list[_Fit]
    problem: str | None = None
    rule: str = ""
    score: int = 0
    absorbed: list[str] = field(default_factory=list)
    unabsorbed: dict[str, str] = field(default_factory=dict)
    inexact: dict[str, str] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    #: Per entity, the optional key fields whose None leaves matching items out of the index.
    sparse: dict[str, list[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.index.name if self.index is not None else "table"

    @property
    def covers(self) -> bool:
        return not self.fetched and not self.unavailable


# Rules of candidates that serve the partition but fail for another reason, in the order
# their error is preferred over the generic "query.no-index".
_SOFT_RULES: Final = (
    "query.sparse-index",
    "query.type-not-projected",
    "query.gsi-consistent-read",
    "query.gsi-projection",
    "query.filter-not-projected",
)


class _QueryPlanner:
    def __init__(self, q: Query[Any], count: bool) -> None:
        self.q = q
        self.count = count
        self.metas = [meta_of(cls) for cls in q.entities]
        self.table = self.metas[0].table
        self.conds: dict[str, list[Operator]] = {}
        for c in q.conditions:
            self.conds.setdefault(c.field, []).append(c.op)
        self.needed: tuple[str, ...] | None = None if count else q.fields
        self.valid = _Valid()
        #: Per where() field no ready index answers, the pending slot's index that would.
        self.pending_notes: tuple[str, ...] = ()
        self.filter_fields = _filter_fields(q.filter_condition)
        self.collection_notes: tuple[str, ...] = ()

    def plan(self) -> QueryPlan:
        self._check_conditions()
        options = [self._option(index, n) for n, index in enumerate(self._indexes())]
        best = self._choose(options)
        candidates = self._candidates(options, best)
        return self._build(best, candidates)

    def _indexes(self) -> list[LocalIndex | GlobalIndex | None]:
        if self.q.index_forced:
            return [self.table.index(self.q.index) if self.q.index is not None else None]
        return [None, *self.table.local_indexes, *self.table.global_indexes]

    def _check_conditions(self) -> None:
        for meta in self.metas:
            for name, ops in self.conds.items():
                meta.check_field(name)
                if name not in meta.key_fields:
                    raise QueryPlanError(
                        "query.where-non-key",
                        f"{meta.cls.__name__}.{name} is in no key template, so no index can use "
                        f"it; put it in filter() instead of where().",
                    )
                for op in ops:
                    ok = isinstance(op, (Between, BeginsWith)) or (
                        isinstance(op, Compare) and op.op in _KEY_OPERATORS
                    )
                    if not ok:
                        raise QueryPlanError(
                            "query.where-operator",
                            f"where() takes =, <, <=, >, >=, between and begins_with; put "
                            f"{op!r} on {name} in filter().",
                        )

    def _wanted(self, meta: EntityMeta) -> list[str]:
        if self.count:
            return []
        return list(self.needed) if self.needed is not None else list(meta.attributes)

    def _option(self, index: LocalIndex | GlobalIndex | None, order: int) -> _Option:
        fits = [_fit(meta, self.table, index, self.conds, self.valid) for meta in self.metas]
        option = _Option(index, order, fits)
        broken = next((f for f in fits if f.problem is not None), None)
        if broken is not None:
            option.problem = broken.problem
            option.rule = broken.rule
            return option
        pending = _pending_slot(self.metas, self.table, index, self.q.index_forced)
        if pending is not None:
            option.problem, option.rule = pending, "query.slot-pending"
            # What it would answer once ready: named when no ready index answers it.
            absorbed = set.intersection(*(f.absorbed for f in fits))
            option.absorbed = [n for n in self.conds if n in absorbed]
            return option
        if self._exactness(option):
            return option
        absorbed = set.intersection(*(f.absorbed for f in fits))
        option.absorbed = [n for n in self.conds if n in absorbed]
        option.score = len(option.absorbed)
        for f in fits:
            option.unabsorbed.update({k: v for k, v in f.unabsorbed.items() if k not in absorbed})
            option.inexact.update(f.inexact)
        for name in self.conds:
            if name not in absorbed and name not in option.unabsorbed:
                option.unabsorbed[name] = f"{name} is absorbed for some entities only"
        kind = _index_kind(index)
        if kind == "global" and self.q.consistent_read:
            option.problem = "consistent reads are not available on a global secondary index"
            option.rule = "query.gsi-consistent-read"
            return option
        projected = _projected(self.table, index)
        filter_fields = self.filter_fields
        if self.q.fallback:
            filter_fields = filter_fields | set(option.unabsorbed)
        if projected is not None and filter_fields:
            lacking = sorted(
                {
                    m.attributes[f]
                    for m in self.metas
                    for f in filter_fields
                    if f in m.attributes and m.attributes[f] not in projected
                }
            )
            if lacking:
                option.problem = (
                    f"the filter reads {', '.join(lacking)}, which the index does not project "
                    "(a filter cannot fetch from the table)"
                )
                option.rule = "query.filter-not-projected"
                return option
        for meta in self.metas:
            fields, attrs = _covered(meta, self.table, index, self._wanted(meta))
            if not fields:
                continue
            if kind == "local":
                option.fetched.extend(a for a in attrs if a not in option.fetched)
            else:
                option.unavailable.extend(f for f in fields if f not in option.unavailable)
        if option.unavailable and self.q.missing == "error":
            option.problem = (
                f"it does not project {', '.join(option.unavailable)}; use hydrate(), "
                "partial() or select()"
            )
            option.rule = "query.gsi-projection"
        return option

    def _exactness(self, option: _Option) -> bool:
        """Set the option's problem when it could miss matching items or cannot tell types apart.

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
            option.problem = (
                f"{name} items whose {' or '.join(fields)} is None are not in it (a sparse "
                "index); require them with a where() or filter() condition, or name it with using()"
            )
            option.rule = "query.sparse-index"
            return True
        projected = _projected(self.table, index)
        if projected is None or self.table.type_attribute in projected:
            return False
        for fit in option.fits:
            peers = [
                f.meta.cls
                for f in option.fits
                if f.partitions == fit.partitions and f.sort == fit.sort
            ]
            for partition in fit.partitions:
                foreign = intruders(self.table, index, partition, fit.sort, peers)
                if foreign and fit.empty is None:
                    option.problem = _type_not_projected(self.table, index, foreign)
                    option.rule = "query.type-not-projected"
                    return True
        return False

    def _choose(self, options: list[_Option]) -> _Option:
        usable = [o for o in options if o.problem is None]
        if not usable:
            raise self._no_index(options)
        best = max(usable, key=lambda o: (o.score, o.covers, o.index is None, -o.order))
        self.pending_notes = tuple(
            f"{o.label} would answer {', '.join(n for n in o.absorbed if n in best.unabsorbed)}, "
            f"but {o.problem}"
            for o in options
            if o.rule == "query.slot-pending" and any(n in best.unabsorbed for n in o.absorbed)
        )
        if best.unabsorbed and not self.q.fallback:
            pending = next(
                (
                    o
                    for o in options
                    if o.rule == "query.slot-pending"
                    and any(n in best.unabsorbed for n in o.absorbed)
                ),
                None,
            )
            if pending is not None:
                raise self._pending(best, pending)
            sparse = next((o for o in options if o.rule == "query.sparse-index"), None)
            note = "" if sparse is None else f" ({sparse.label} is not used: {sparse.problem}.)"
            raise self._unabsorbed(best, usable, note)
        return best

    def _no_index(self, options: list[_Option]) -> QueryPlanError:
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

    def _pending(self, best: _Option, pending: _Option) -> QueryPlanError:
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

    def _unabsorbed(self, best: _Option, usable: list[_Option], note: str) -> QueryPlanError:
        # An index whose keys hold the field but cannot bound it exactly explains more than
        # the winner of the tie, whose keys may not hold the field at all.
        for option in [best, *usable]:
            inexact = {n: why for n, why in option.inexact.items() if n in best.unabsorbed}
            if inexact:
                name, why = next(iter(inexact.items()))
                return QueryPlanError(
                    "query.inexact-range",
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

    def _candidates(self, options: list[_Option], best: _Option) -> tuple[Candidate, ...]:
        out = []
        for o in options:
            out.append(
                Candidate(
                    o.index.name if o.index is not None else None,
                    _index_kind(o.index),
                    None if o.problem is not None else o.score,
                    o is best,
                    _reason(o, best),
                )
            )
        return tuple(out)

    def _build(self, best: _Option, candidates: tuple[Candidate, ...]) -> QueryPlan:
        q, table, index = self.q, self.table, best.index
        pk_attr, sk_attr = table.index_key_attributes(index)
        empty = next((f.empty for f in best.fits if f.empty is not None), None)
        fallback = {n: ops for n, ops in self.conds.items() if n in best.unabsorbed}
        if empty is None:
            empty = next(
                (why for fit in best.fits if (why := _empty_filter(fit.meta, fallback))), None
            )
        if empty is None:
            empty = next(
                (why for fit in best.fits if (why := _empty_bool(fit.meta, fallback))), None
            )
        kind = _index_kind(index)
        projected = _projected(table, index)
        type_available = projected is None or table.type_attribute in projected
        fetching = bool(best.fetched)

        selected = None if self.count else q.fields
        requests: list[PlannedRequest] = []
        grouped: dict[str, tuple[dict[str, Any], list[type[Entity]], list[str]]] = {}
        first_text: tuple[str | None, str | None, dict[str, str], dict[str, Any]] | None = None
        units: list[Unit] = []
        fit_of: dict[type[Entity], _Fit] = {}
        for fit in best.fits:
            fit_of.setdefault(fit.meta.cls, fit)
            for n, partition in enumerate(fit.partitions):
                label = fit.meta.cls.__name__
                if fit.shard_field is not None:
                    label += f" {fit.shard_field}={n + 1}"
                units.append(Unit(fit.meta, n, partition, fit.sort, label))

        def filter_of(meta: EntityMeta) -> Condition | None:
            """The filter one type's requests carry: open ends, fallbacks, then the user's."""
            parts: list[Condition] = []
            if empty is None:
                fit = fit_of[meta.cls]
                for name, ops in {**fit.residual, **fallback}.items():
                    parts.extend(_filter_conditions(meta, name, ops))
            if q.filter_condition is not None:
                parts.append(q.filter_condition)
            if not parts:
                return None
            return parts[0] if len(parts) == 1 else And(tuple(parts))

        groups = plan_collections(
            table,
            pk_attr,
            sk_attr,
            units,
            type_available,
            lambda metas: _same_filter(metas, filter_of),
        )
        collection_notes = [g.note for g in groups if g.note]
        type_lines: list[str] = []
        type_filtered = False
        # Requests are grouped by their canonical text; one request needs no grouping.
        single = len(groups) == 1
        for group in groups:
            meta = group.units[0].meta
            partition = group.units[0].partition
            classes = [u.meta.cls for u in group.units]
            names_text = "+".join(c.__name__ for c in classes)
            ph = Placeholders()
            key_text = f"{ph.name(pk_attr)} = {ph.value(to_wire(partition))}"
            if group.sort is not None:
                assert sk_attr is not None
                key_text += " AND " + group.sort.text(ph.name(sk_attr), ph)
            filter_text = None
            condition = filter_of(meta)
            if condition is not None:
                filter_text = compile_entity_condition(meta, condition, ph)
            # The same template-shape test that grouped the units decides the type filter.
            interval = interval_of(group.sort, True)
            foreign = (
                [
                    meta_of(c).type_name
                    for c in foreign_types(table, pk_attr, sk_attr, partition, interval, classes)
                ]
                if empty is None
                else []
            )
            wanted = group.type_filter
            if foreign and wanted is None:
                if not type_available:
                    raise QueryPlanError(
                        "query.type-not-projected",
                        f"Index {index.name if index else 'table'} cannot serve this query of "
                        f"{names_text}: {_type_not_projected(table, index, foreign)}.",
                        table=table.name,
                    )
                wanted = tuple(classes)
            if wanted is not None:
                type_filtered = True
                type_text = type_filter_text(table, wanted, ph)
                filter_text = (
                    type_text if filter_text is None else f"({filter_text}) AND {type_text}"
                )
                if len(classes) == 1:
                    type_lines.append(
                        f"{names_text}: filtered on the type attribute ({table.type_attribute}) "
                        f"because items of {', '.join(foreign)} can share its key range"
                    )
            elif len(classes) == 1 and empty is None and _shares_index(table, index, classes):
                type_lines.append(
                    f"{names_text}: exact by the key condition (no other type's keys in it)"
                )
            params: dict[str, Any] = {"TableName": table.name}
            if index is not None:
                params["IndexName"] = index.name
            params["KeyConditionExpression"] = key_text
            if filter_text is not None:
                params["FilterExpression"] = filter_text
            if self.count:
                params["Select"] = "COUNT"
            else:
                attrs: list[str] | None = []
                for unit in group.units:
                    more = _projection_attrs(
                        unit.meta, table, index, selected, type_available or fetching
                    )
                    attrs = None if attrs is None or more is None else [*attrs, *more]
                if attrs is not None:
                    params["ProjectionExpression"] = _projection_names(
                        list(dict.fromkeys(attrs)), ph
                    )
                elif fetching and kind == "local":
                    params["Select"] = "ALL_ATTRIBUTES"
            if not q.forward:
                params["ScanIndexForward"] = False
            if q.consistent_read:
                params["ConsistentRead"] = True
            ph.into(params)
            if first_text is None:
                first_text = (key_text, filter_text, dict(ph.names), dict(ph.values))
            label = group.units[0].label if len(classes) == 1 else names_text
            signature = "" if single else _canonical(params)
            if signature in grouped:
                grouped[signature][1].extend(classes)
            else:
                grouped[signature] = (params, classes, [label])
        has_filter = (
            q.filter_condition is not None
            or bool(fallback)
            or type_filtered
            or any(fit.residual for fit in best.fits)
        )
        for params, classes, labels in grouped.values():
            limit = q.request_limit
            if q.max_items is not None and not has_filter:
                limit = min(limit or q.max_items, q.max_items)
            requests.append(
                PlannedRequest(
                    params,
                    tuple(classes),
                    labels[0] if len(classes) == 1 else "+".join(c.__name__ for c in classes),
                    None if self.count else limit,
                )
            )
        assert first_text is not None
        first_key, first_filter, names, values = first_text
        fallback_text = tuple(_describe_ops(n, ops) for n, ops in fallback.items())
        final = tuple(requests) if empty is None else ()
        return QueryPlan(
            "Query",
            q.entities,
            IndexChoice(
                table,
                index,
                candidates,
                projection=_projection_of(final, names),
                fetched=tuple(best.fetched) if not self.count else (),
                unavailable=tuple(best.unavailable) if not self.count else (),
                merge_attribute=sk_attr,
                sparse=tuple(
                    f"{name} items whose {' or '.join(fields)} is None "
                    f"(they are not in {best.label})"
                    for name, fields in best.sparse.items()
                ),
            ),
            ReadOptions.of(q, count=self.count, forward=q.forward),
            PlannedRequests(
                final,
                CursorShape(table.name, index.name if index else None, q.forward, final),
                key_condition=first_key,
                filter=first_filter,
                names=names,
                values=values,
                fallback_filters=fallback_text,
                pending_slots=self.pending_notes,
                has_filter=has_filter,
                empty=empty,
                type_filters=tuple(type_lines),
                residual_filters=tuple(
                    _describe_ops(n, ops) for fit in best.fits for n, ops in fit.residual.items()
                ),
                collection=tuple(collection_notes),
            ),
        )


def _shares_index(
    table: Table, index: LocalIndex | GlobalIndex | None, classes: Sequence[type[Entity]]
) -> bool:
    """Whether another declared type has items in this index (so keys must keep it out)."""
    pk_attr, sk_attr = table.index_key_attributes(index)
    return any(
        cls not in classes
        and pk_attr in (templates := meta_of(cast("type[Entity]", cls)).templates)
        and (sk_attr is None or sk_attr in templates)
        for cls in table.entities.values()
    )


def _same_filter(
    metas: Sequence[EntityMeta], filter_of: Callable[[EntityMeta], Condition | None]
) -> bool:
    """True when every one of ``metas`` sends the same filter text."""
    compiled = set()
    for meta in metas:
        condition = filter_of(meta)
        if condition is None:
            compiled.add("")
            continue
        ph = Placeholders()
        text = compile_entity_condition(meta, condition, ph)
        compiled.add(_canonical({"t": text, "n": ph.names, "v": ph.values}))
    return len(compiled) == 1


def _type_not_projected(
    table: Table, index: LocalIndex | GlobalIndex | None, foreign: Sequence[str]
) -> str:
    return (
        f"items of {', '.join(foreign)} can share its key range and it does not project the "
        f"type attribute {table.type_attribute!r}, so a filter cannot drop them (and count() "
        f"would count them); project {table.type_attribute!r} "
        f"(Projection.include({table.type_attribute!r}, ...)) or query another index"
    )


def _is_bool(meta: EntityMeta, name: str) -> bool:
    annotation = meta.cls.model_fields[name].annotation
    return annotation is bool or (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and bool in typing.get_args(annotation)
    )


def _bool_values(ops: Sequence[Operator]) -> list[bool]:
    """The bool values that satisfy every operator (False < True, as in key order)."""
    out = []
    for value in (False, True):
        ok = True
        for op in ops:
            if isinstance(op, Between):
                ok = ok and op.low <= value <= op.high
            elif isinstance(op, Compare):
                ok = (
                    ok
                    and {
                        "=": value == op.value,
                        "<>": value != op.value,
                        "<": value < op.value,
                        "<=": value <= op.value,
                        ">": value > op.value,
                        ">=": value >= op.value,
                    }[op.op]
                )
        if ok:
            out.append(value)
    return out


def _empty_bool(meta: EntityMeta, fallback: Mapping[str, Sequence[Operator]]) -> str | None:
    for name, ops in fallback.items():
        if _is_bool(meta, name) and not _bool_values(ops):
            return f"{_describe_ops(name, ops)} leaves no value"
    return None


def _filter_conditions(meta: EntityMeta, name: str, ops: Sequence[Operator]) -> list[Condition]:
    """Return a key condition as filter conditions DynamoDB accepts.

    DynamoDB compares bool values only with = and <>, so a range on a bool becomes the
    equalities it allows (a None value matches neither).
    """
    if not _is_bool(meta, name):
        return [FieldCondition(name, op) for op in ops]
    values = _bool_values(ops)
    equalities: list[Condition] = [FieldCondition(name, Compare("=", v)) for v in values]
    return [equalities[0] if len(equalities) == 1 else Or(tuple(equalities))]


def _pending_slot(metas: Sequence[EntityMeta], table: Any, index: Any, forced: bool) -> str | None:
    """Why an index the planner would pick by itself is not ready, or None."""
    if forced or index is None:
        return None
    for meta in metas:
        for attr in table.index_key_attributes(index):
            if attr in meta.pending:
                return (
                    f"{meta.cls.__name__} marks {attr} pending (not backfilled yet); "
                    f"use using({index.name!r}) to query it anyway"
                )
    return None


def _empty_filter(meta: EntityMeta, fallback: Mapping[str, Sequence[Operator]]) -> str | None:
    """Return why fallback conditions match nothing, if a between() has its bounds reversed.

    DynamoDB refuses such a BETWEEN in a filter, so the plan must not send it.
    """
    for name, ops in fallback.items():
        for op in ops:
            if isinstance(op, Between):
                low = _order_key(meta, name, meta.validate_field(name, op.low))
                high = _order_key(meta, name, meta.validate_field(name, op.high))
                if low > high:
                    return f"{_describe_ops(name, [op])} leaves no value"
    return None


def _order_key(meta: EntityMeta, name: str, value: Any) -> Any:
    """Return a value comparable in key order: its key text when an S template encodes it."""
    for tpl in meta.templates.values():
        for slot in tpl.slots:
            if slot.field == name and slot.codec is not None and not tpl.is_direct:
                return slot.codec.encode(value)
    return value


def _projection_attrs(
    meta: EntityMeta,
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    selected: Sequence[str] | None,
    with_type: bool,
) -> list[str] | None:
    """Return the attributes to name in ProjectionExpression, or None for the default.

    Key attributes are always named (cursors and decoding need them); a selected field that
    the index key text already holds is parsed from it instead of being named, so an LSI does
    not fetch it.
    """
    if selected is None:
        return None
    projected = _projected(table, index)
    keys = sorted(_key_attrs(table, index))
    recoverable = _recoverable(meta, set(keys))
    attrs: list[str] = []
    for name in selected:
        attr = meta.attributes[name]
        if projected is None or attr in projected:
            attrs.append(attr)
        elif name not in recoverable and isinstance(index, LocalIndex):
            attrs.append(attr)  # DynamoDB fetches it from the table
    attrs.extend(keys)
    if with_type:
        attrs.append(table.type_attribute)
    return list(dict.fromkeys(attrs))


def _projection_of(
    requests: Sequence[PlannedRequest], names: Mapping[str, str]
) -> tuple[str, ...] | None:
    if not requests:
        return None
    text = requests[0].params.get("ProjectionExpression")
    if text is None:
        return None
    return tuple(names.get(part, part) for part in text.split(", "))


def _reason(o: _Option, best: _Option) -> str:
    if o.problem is not None:
        return f"cannot serve: {o.problem}"
    absorbed = f"absorbs {o.score} condition{'s' if o.score != 1 else ''}" + (
        f" ({', '.join(o.absorbed)})" if o.absorbed else ""
    )
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
