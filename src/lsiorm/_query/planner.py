"""The query planner: choose the index, group the requests, hand each to the compiler.

`plan_query` checks the ``where()`` conditions, lets `.index_choice` pick the index,
then decides the requests: one per partition and shard, joined or kept apart by item
collection (`.collection`), each with the filter that keeps it exact (fallbacks, open
ends, other types). `.compile` writes every request; requests that compile to the same
parameters are sent once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from lsiorm._conditions import (
    And,
    BeginsWith,
    Between,
    Compare,
    Condition,
    Operator,
    Placeholders,
)
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.multikey import is_multi_key
from lsiorm._model.protection import check_where_field
from lsiorm._model.schema import Table
from lsiorm._query.collection import Group, Unit, foreign_types, interval_of, plan_collections
from lsiorm._query.compile import (
    CompiledRequest,
    RequestChoice,
    compile_request,
    filter_text,
    first_page_limit,
)
from lsiorm._query.cursor import canonical_json
from lsiorm._query.exactness import KeyPrefixes, type_not_projected, untyped_separation
from lsiorm._query.fallback import empty_reason, filter_conditions
from lsiorm._query.index_choice import IndexPick, choose_index
from lsiorm._query.keyrange import KEY_OPERATORS, IndexFit, Validator, describe_ops, fit_index
from lsiorm._query.multikey import describe_key, group_units
from lsiorm._query.multikey import foreign_types as multi_key_types
from lsiorm._query.plan import (
    IndexChoice,
    PlannedRequest,
    PlannedRequests,
    QueryPlan,
    QuerySource,
    ReadOptions,
    RequestShape,
)
from lsiorm._query.projection import named_attributes, type_projected
from lsiorm._query.rekeying import FormCheck, form_check
from lsiorm.errors import QueryPlanError

__all__ = ["plan_query"]


def plan_query(source: QuerySource, count: bool) -> QueryPlan:
    """Return the plan of a query: the index chosen, the exact requests, and why."""
    metas = [meta_of(cls) for cls in source.entities]
    conds: dict[str, list[Operator]] = {}
    for c in source.conditions:
        conds.setdefault(c.field, []).append(c.op)
    _check_conditions(metas, conds)
    pick = choose_index(source, metas, conds, count)
    return _Requests(source, count, metas[0].table, pick, conds).plan()


def _check_conditions(
    metas: Sequence[EntityMeta[Entity]], conds: Mapping[str, list[Operator]]
) -> None:
    for meta in metas:
        for name, ops in conds.items():
            meta.check_field(name)
            check_where_field(meta, name, ops)
            if name not in meta.key_fields:
                raise QueryPlanError(
                    "query.where-non-key",
                    f"{meta.cls.__name__}.{name} is in no key template, so no index can use "
                    f"it; put it in filter() instead of where().",
                )
            for op in ops:
                ok = isinstance(op, (Between, BeginsWith)) or (
                    isinstance(op, Compare) and op.op in KEY_OPERATORS
                )
                if not ok:
                    raise QueryPlanError(
                        "query.where-operator",
                        f"where() takes =, <, <=, >, >=, between and begins_with; put "
                        f"{op!r} on {name} in filter().",
                    )


def _plain_checks(fits: Sequence[IndexFit]) -> tuple[str, ...]:
    """The key conditions also checked on stored attributes, or on decrypted values (a
    beacon's, whose value is not shown)."""
    return tuple(
        dict.fromkeys(
            f"{n} = ... (by its beacon; each candidate is decrypted and compared)"
            if n in fit.meta.protected
            else describe_ops(n, ops)
            for fit in fits
            for n, ops in fit.checked.items()
        )
    )


def _decrypted_checks(fits: Sequence[IndexFit]) -> tuple[tuple[type[Entity], str, Any], ...]:
    """The equalities on encrypted fields read by their beacon: (entity, field, value)."""
    return tuple(
        (fit.meta.cls, n, fit.meta.validate_field(n, cast("Compare", op).value))
        for fit in fits
        for n, ops in fit.checked.items()
        if n in fit.meta.protected
        for op in ops
    )


@dataclass(frozen=True)
class _Sent:
    """One compiled request, the entity types whose items it reads, and how it keeps others out."""

    compiled: CompiledRequest
    classes: tuple[type[Entity], ...]
    label: str
    #: True when the request filters on the type attribute.
    type_filtered: bool = False
    #: For a one-type request on an index other types share: how it stays exact.
    type_line: str = ""
    #: While types are re-keyed: which rows the request keeps, by the form of their keys.
    forms: tuple[FormCheck, ...] = ()


class _Requests:
    """The requests of a query on its chosen index, and the plan that holds them."""

    def __init__(
        self,
        q: QuerySource,
        count: bool,
        table: Table,
        pick: IndexPick,
        conds: Mapping[str, list[Operator]],
    ) -> None:
        self.q = q
        self.conds = conds
        self.pick = pick
        self.best = pick.best
        self.table = table
        self.index = self.best.index
        #: A multi-attribute index: its key condition and grouping are `.multikey`'s.
        self.multi = self.index if is_multi_key(self.index) else None
        self.pk_attr, self.sk_attr = (
            ("", None) if self.multi is not None else table.index_key_attributes(self.index)
        )
        self.options = ReadOptions.of(q, count=count, forward=q.forward)
        self.fallback = {n: ops for n, ops in conds.items() if n in self.best.unabsorbed}
        self.empty = empty_reason(self.best.fits, self.fallback)
        self.type_ok = type_projected(table, self.index)
        self.fit_of: dict[type[Entity], IndexFit] = {}
        for fit in self.best.fits:
            self.fit_of.setdefault(fit.meta.cls, fit)

    def _groups(self) -> tuple[list[Group], tuple[str, ...]]:
        """The units joined into requests, and the attributes their pages merge by."""
        if self.multi is not None:
            groups = group_units(self._units(), self._same_filter)
            return groups, tuple(a.name for a in self.multi.sort_attributes)
        groups = plan_collections(
            self.table, self.pk_attr, self.sk_attr, self._units(), self.type_ok, self._same_filter
        )
        return groups, (self.sk_attr,) if self.sk_attr is not None else ()

    def plan(self) -> QueryPlan:
        groups, merge = self._groups()
        sent = [self._with_forms(self._request(group)) for group in groups]
        old_forms = self._old_form_requests()
        sent.extend(old_forms)
        first = sent[0].compiled
        best, options = self.best, self.options
        has_filter = (
            self.q.filter_condition is not None
            or bool(self.fallback)
            or any(s.type_filtered or s.forms for s in sent)
            or any(fit.residual or fit.checked for fit in best.fits)
        )
        limit = first_page_limit(options, has_filter)
        requests = tuple(
            PlannedRequest(s.compiled.params, s.classes, s.label, limit, s.forms)
            for s in _merge_identical(sent)
        )
        final = requests if self.empty is None else ()
        return QueryPlan(
            "Query",
            self.q.entities,
            IndexChoice(
                self.table,
                self.index,
                self.pick.candidates,
                projection=first.projection if final else None,
                fetched=tuple(best.fetched) if not options.count else (),
                unavailable=tuple(best.unavailable) if not options.count else (),
                merge_attributes=merge,
                sparse=tuple(
                    f"{name} items whose {' or '.join(fields)} is None "
                    f"(they are not in {best.label})"
                    for name, fields in best.sparse.items()
                ),
            ),
            options,
            PlannedRequests(
                final,
                RequestShape(self.table.name, _name(self.index), self.q.forward, final),
                key_condition=first.key_condition,
                filter=first.filter,
                names=first.names,
                values=first.values,
                fallback_filters=tuple(describe_ops(n, ops) for n, ops in self.fallback.items()),
                pending_slots=self.pick.pending_notes,
                has_filter=has_filter,
                empty=self.empty,
                type_filters=tuple(s.type_line for s in sent if s.type_line),
                residual_filters=tuple(
                    dict.fromkeys(
                        describe_ops(n, ops) for fit in best.fits for n, ops in fit.residual.items()
                    )
                ),
                plain_checks=_plain_checks(best.fits),
                decrypted_checks=_decrypted_checks(best.fits),
                collection=(
                    *(g.note for g in groups if g.note),
                    *(
                        f"{s.label}: reads the items whose keys are still in the "
                        f"{meta_of(s.classes[0]).rekeying_from!r} style (rekeying_from), "
                        "merged by the keys they will have"
                        for s in old_forms
                    ),
                ),
                key_use=describe_key(best.fits[0], self.multi) if self.multi else (),
                closed_ends=tuple(text for fit in best.fits for text in fit.closed),
            ),
        )

    def _units(self) -> list[Unit]:
        """One unit per entity and partition (a sharded GSI has one partition per shard)."""
        units: list[Unit] = []
        for fit in self.best.fits:
            for n, partition in enumerate(fit.partitions):
                label = fit.meta.cls.__name__
                if fit.shard_field is not None:
                    label += f" {fit.shard_field}={n + 1}"
                units.append(Unit(fit.meta, n, partition, fit.sort, label))
        return units

    def _filter_of(self, meta: EntityMeta[Entity], fit: IndexFit | None = None) -> Condition | None:
        """The filter one type's requests carry: open ends, fallbacks, then the user's."""
        parts: list[Condition] = []
        if self.empty is None:
            fit = fit or self.fit_of[meta.cls]
            for name, ops in {**fit.checked, **fit.residual, **self.fallback}.items():
                if name in meta.protected:
                    continue  # a beacon: checked on the decrypted value (decrypted_checks)
                parts.extend(filter_conditions(meta, name, ops))
        if self.q.filter_condition is not None:
            parts.append(self.q.filter_condition)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def _same_filter(self, metas: Sequence[EntityMeta[Entity]]) -> bool:
        """True when every one of ``metas`` sends the same filter text."""
        compiled = set()
        for meta in metas:
            condition = self._filter_of(meta)
            if condition is None:
                compiled.add("")
                continue
            ph = Placeholders()
            text = filter_text("Query", self.table, meta, condition, None, ph)
            compiled.add(canonical_json({"t": text, "n": ph.names, "v": ph.values}))
        return len(compiled) == 1

    def _request(self, group: Group) -> _Sent:
        """Compile one group's request, filtered to its types when other types share its range."""
        meta = group.units[0].meta
        classes = [u.meta.cls for u in group.units]
        names = "+".join(c.__name__ for c in classes)
        foreign = self._foreign(group, classes)
        types = group.type_filter
        if foreign and types is None and self.type_ok:
            types = tuple(classes)
        prefixes: KeyPrefixes = ()
        if types is not None:
            others = [cast("type[Entity]", self.table.entities[n]) for n in foreign]
            separated = untyped_separation(self.table, self.index, "Query", types, others)
            if isinstance(separated, str):
                raise QueryPlanError(
                    "query.untyped-types",
                    f"Index {self.best.label} cannot serve this query of {names}: {separated}.",
                    table=self.table.name,
                )
            prefixes = separated
        choice = RequestChoice(
            meta,
            self._filter_of(meta),
            types,
            self._projection(group),
            fetch=bool(self.best.fetched),
            partition=group.units[0].partition,
            sort=group.sort,
            prefixes=prefixes,
        )
        compiled = compile_request("Query", self.table, self.index, choice, self.options)
        if foreign and types is None:
            raise QueryPlanError(
                "query.type-not-projected",
                f"Index {self.best.label} cannot serve this query of {names}: "
                f"{type_not_projected(self.table, self.index, foreign)}.",
                table=self.table.name,
            )
        label = group.units[0].label if len(classes) == 1 else names
        line = self._type_line(classes, foreign, types)
        return _Sent(compiled, tuple(classes), label, types is not None, line)

    def _with_forms(self, sent: _Sent) -> _Sent:
        """A request that reads types being re-keyed keeps their new-form rows only."""
        keys = (self.pk_attr, self.sk_attr)
        checks = (form_check(meta_of(c), keys, keep_old=False) for c in sent.classes)
        forms = tuple(c for c in checks if c is not None)
        return replace(sent, forms=forms) if forms else sent

    def _old_form_requests(self) -> list[_Sent]:
        """For each type being re-keyed whose index keys differ: its old form's key range."""
        out: list[_Sent] = []
        if self.empty is not None:
            return out
        for fit in self.best.fits:
            meta = fit.meta
            check = form_check(meta, (self.pk_attr, self.sk_attr), keep_old=True)
            old_meta = meta.old_form
            if check is None or old_meta is None:
                continue
            old = fit_index(old_meta, self.table, self.index, self.conds, Validator())
            _same_answer(fit, old)
            if old.empty is not None:
                continue
            with_type = self.type_ok or bool(self.best.fetched)
            attrs = named_attributes(
                [meta], self.table, self.index, self.options.selected, with_type
            )
            sort_alike = self.sk_attr is None or self.sk_attr not in meta.old_templates
            for n, partition in enumerate(old.partitions):
                if sort_alike and partition in fit.partitions:
                    continue  # the same partition, keys of one form: the new request reads it
                label = f"{meta.cls.__name__} old key form"
                if old.shard_field is not None:
                    label += f" {old.shard_field}={n + 1}"
                choice = RequestChoice(
                    meta,
                    self._filter_of(meta, old),
                    (meta.cls,) if self.type_ok else None,
                    None if self.options.count or attrs is None else tuple(attrs),
                    fetch=bool(self.best.fetched),
                    partition=partition,
                    sort=old.sort,
                )
                compiled = compile_request("Query", self.table, self.index, choice, self.options)
                out.append(_Sent(compiled, (meta.cls,), label, self.type_ok, "", (check,)))
        return out

    def _foreign(self, group: Group, classes: list[type[Entity]]) -> list[str]:
        """The other types whose keys can lie in the group's range (the same test that grouped)."""
        if self.empty is not None:
            return []
        if self.multi is not None:
            found = multi_key_types(self.table, self.multi, classes)
            return [meta_of(c).type_name for c in found]
        interval = interval_of(group.sort)
        found = foreign_types(
            self.table, self.pk_attr, self.sk_attr, group.units[0].partition, interval, classes
        )
        return [meta_of(c).type_name for c in found]

    def _projection(self, group: Group) -> tuple[str, ...] | None:
        if self.options.count:
            return None
        with_type = self.type_ok or bool(self.best.fetched)
        attrs = named_attributes(
            [u.meta for u in group.units], self.table, self.index, self.options.selected, with_type
        )
        return None if attrs is None else tuple(attrs)

    def _type_line(
        self,
        classes: list[type[Entity]],
        foreign: list[str],
        types: tuple[type[Entity], ...] | None,
    ) -> str:
        """Say how a one-type request keeps other types out: a type filter or its key range."""
        if len(classes) != 1:
            return ""
        name = classes[0].__name__
        if types is not None:
            how = (
                f"the type attribute ({self.table.type_attribute})"
                if meta_of(classes[0]).typed
                else f"the absence of the type attribute ({self.table.type_attribute})"
            )
            return (
                f"{name}: filtered on {how} because items of {', '.join(foreign)} can share "
                "its key range"
            )
        if self.empty is None and _shares_index(self.table, self.index, classes):
            return f"{name}: exact by the key condition (no other type's keys in it)"
        return ""


def _same_answer(new: IndexFit, old: IndexFit) -> None:
    """Refuse a query the old key form of a type being re-keyed cannot answer as the new does."""
    if old.problem is None and old.absorbed == new.absorbed and not old.inexact:
        return
    name = new.meta.cls.__name__
    raise QueryPlanError(
        "query.rekeying-form",
        f"{name} is being re-keyed (rekeying_from={new.meta.rekeying_from!r}), and the key form "
        f"its items had before cannot answer this query's conditions exactly on this index "
        f"({old.problem or '; '.join(old.inexact.values()) or 'it absorbs other conditions'}). "
        "Backfill the keys and remove rekeying_from, or move those conditions to filter().",
        table=new.meta.table.name,
    )


def _merge_identical(sent: Sequence[_Sent]) -> list[_Sent]:
    """Send requests with the same parameters once, for all of their entity types.

    Requests that keep rows by the form of their keys stay apart: each keeps other rows.
    """
    if len(sent) == 1:
        return list(sent)
    merged: dict[tuple[str, tuple[FormCheck, ...]], _Sent] = {}
    for s in sent:
        signature = (canonical_json(s.compiled.params), s.forms)
        same = merged.get(signature)
        if same is None:
            merged[signature] = s
        else:
            classes = (*same.classes, *s.classes)
            label = "+".join(c.__name__ for c in classes)
            merged[signature] = replace(same, classes=classes, label=label)
    return list(merged.values())


def _shares_index(
    table: Table, index: LocalIndex | GlobalIndex | None, classes: Sequence[type[Entity]]
) -> bool:
    """Whether another declared type has items in this index (so keys must keep it out)."""
    if is_multi_key(index):
        return bool(multi_key_types(table, index, classes))
    pk_attr, sk_attr = table.index_key_attributes(index)
    return any(
        cls not in classes
        and pk_attr in (templates := meta_of(cast("type[Entity]", cls)).templates)
        and (sk_attr is None or sk_attr in templates)
        for cls in table.entities.values()
    )


def _name(index: LocalIndex | GlobalIndex | None) -> str | None:
    return index.name if index is not None else None
