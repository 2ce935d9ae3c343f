"""Queries of multi-attribute indexes: fit the conditions, write the key condition.

DynamoDB reads a multi-attribute index key in order. A Query needs an equality on every
partition attribute; then it may use the sort attributes from the left, with an equality on
each one it uses but the last, which may take one range (<, <=, >, >=, between) or, on text,
begins_with. A ``where()`` condition on a later sort attribute, after one without an equality,
cannot be part of the key condition: the planner refuses it before anything is sent
(``query.multi-key-order``), or filters it when the query allows a filter fallback.

The key attributes hold the fields' own values, natively typed, so a key condition built from
them is exact as it stands: no encoding, no namespace, no widened range. Nothing in the key
keeps one entity type's items apart from another's, so a query whose index other types bind
too filters on the type attribute (their declarations made sure the index projects it).

DynamoDB accepts no empty string or binary value in a key condition, and stores none in a key,
so a condition that needs one is decided here: ``= ""`` matches nothing, ``> ""`` everything.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import InitVar, dataclass
from typing import Any

from lsiorm._conditions import BeginsWith, Between, Compare, Operator
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.indexes import GlobalIndex
from lsiorm._model.multikey import binds_index, holds_text, is_multi_key, key_field, key_wire
from lsiorm._model.schema import Table
from lsiorm._model.wire import from_wire
from lsiorm._query.collection import Group, Unit
from lsiorm._query.keyrange import (
    IndexFit,
    SortCondition,
    Validator,
    closed_bound,
    describe_ops,
    predecessor,
)
from lsiorm.errors import QueryPlanError

__all__ = [
    "MultiKeyCondition",
    "describe_key",
    "filtered_keys",
    "fit_multi_key",
    "foreign_types",
    "group_units",
]


@dataclass(frozen=True)
class MultiKeyCondition:
    """The key condition of a multi-attribute index.

    ``equal`` holds (attribute, wire value) for every partition attribute, then for the
    leading sort attributes, in key order; ``last`` the one condition on the next sort
    attribute, if any.
    """

    equal: tuple[tuple[str, Any], ...]
    last: tuple[str, SortCondition] | None = None


class _Nothing(Exception):
    """The conditions provably match no item."""


def fit_multi_key(
    meta: EntityMeta[Entity],
    table: Table,
    index: GlobalIndex,
    conds: Mapping[str, Sequence[Operator]],
    valid: Validator,
) -> IndexFit:
    """Return how a multi-attribute index serves ``conds`` for one entity."""
    return _Fit(meta, table, index, conds, valid).fit()


@dataclass(eq=False, repr=False)
class _Fit:
    """One entity's conditions fitted to one multi-attribute index."""

    meta: EntityMeta[Entity]
    table: InitVar[Table]
    index: GlobalIndex
    conds: Mapping[str, Sequence[Operator]]
    valid: Validator

    def __post_init__(self, table: Table) -> None:
        self.out = IndexFit(self.meta)
        self.fields = {a: key_field(self.meta, a) for a in table.index_key_names(self.index)}
        self.equal: list[tuple[str, Any]] = []

    def fit(self) -> IndexFit:
        fit = self.out
        unbound = [a for a, f in self.fields.items() if f is None]
        if unbound:
            fit.problem = (
                f"{self.meta.cls.__name__} binds no field to {', '.join(unbound)}, so its items "
                "are not in it"
            )
            fit.rule = "query.no-template"
            return fit
        partition = [a.name for a in self.index.partition_attributes]
        missing = [self._field(a) for a in partition if not self._equality(a)]
        if missing:
            fit.problem = (
                f"its partition key attributes ({', '.join(partition)}) each need an equality, "
                f"and {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} none"
            )
            fit.rule = "query.partition-fields"
            return fit
        last = self._sort()
        fit.partitions = [MultiKeyCondition(tuple(self.equal), last)]
        bound = set(self.fields.values())
        for name in self.conds:
            if name not in bound:
                fit.unabsorbed[name] = f"{name} is not part of this index's keys"
        return fit

    def _field(self, attr: str) -> str:
        field = self.fields[attr]
        assert field is not None
        return field

    def _equality(self, attr: str) -> bool:
        """Take the equality on an attribute's field into the key condition, if it has one."""
        name = self._field(attr)
        ops = self.conds.get(name)
        if not ops or not all(isinstance(op, Compare) and op.op == "=" for op in ops):
            return False
        values: list[Any] = []
        for op in ops:
            value = key_wire(
                self.meta, attr, self.valid(self.meta, name, typing.cast("Compare", op).value)
            )
            if value not in values:
                values.append(value)
        self.out.absorbed.add(name)
        if len(values) > 1:
            self.out.empty = f"{describe_ops(name, ops)} leaves no value"
        elif _blank(values[0]):
            self.out.empty = f"no item has an empty {attr!r}: DynamoDB stores no empty key value"
        self.equal.append((attr, values[0]))
        return True

    def _sort(self) -> tuple[str, SortCondition] | None:
        """Take the sort attributes from the left: equalities, then at most one other condition.

        Conditions on the sort attributes after that go to ``out_of_order``.
        """
        sort = [a.name for a in self.index.sort_attributes]
        last: tuple[str, SortCondition] | None = None
        stop = len(sort)
        why = ""
        for n, attr in enumerate(sort):
            name = self._field(attr)
            if self._equality(attr):
                continue
            stop = n + 1
            ops = self.conds.get(name)
            if not ops:
                stop, why = n, f"needs an equality on {name} ({attr}) before it"
                break
            self.out.absorbed.add(name)
            why = f"follows {name} ({attr}), which has a range, not an equality"
            try:
                condition = self._range(attr, name, ops)
            except _Nothing as nothing:
                self.out.empty = str(nothing)
                condition = None
            last = None if condition is None else (attr, condition)
            break
        for k, attr in enumerate(sort[stop:], start=stop + 1):
            name = self._field(attr)
            if name in self.conds:
                reason = (
                    f"{name} is sort attribute {k} of {self.index.name} ({attr}) and {why}; "
                    "DynamoDB reads the sort attributes from the left, with an equality on each "
                    "one used but the last"
                )
                self.out.out_of_order[name] = reason
                self.out.unabsorbed[name] = reason
        return last

    def _range(self, attr: str, name: str, ops: Sequence[Operator]) -> SortCondition | None:
        """The one condition on the last sort attribute used (None: it bounds nothing)."""
        meta = self.meta
        prefixes = [op for op in ops if isinstance(op, BeginsWith)]
        if prefixes and not holds_text(meta, attr):
            raise QueryPlanError(
                "query.begins-with-type",
                f"begins_with needs a text field, but {meta.cls.__name__}.{name} is stored in "
                f"{attr!r} as another type; use a range instead.",
            )
        if not prefixes:
            return self._bounds(attr, name, ops)
        first = prefixes[0]
        rest = [op for op in ops if op is not first]
        if rest:
            self._residual(attr, name, rest)
        prefix = key_wire(meta, attr, first.prefix) if first.prefix else None
        if prefix is None:
            return None  # every stored text begins with ""
        return SortCondition("begins_with", (prefix,))

    def _bounds(self, attr: str, name: str, ops: Sequence[Operator]) -> SortCondition | None:
        """Ranges on one attribute as one key condition.

        Bounds are compared as the stored key values (text, number, bytes), in DynamoDB's
        order; a BETWEEN cannot leave out an end, so an exclusive end of a two-sided range is
        closed on the key's neighbour where there is one (`_between`).
        """
        lower: _End | None = None
        upper: _End | None = None
        for raw, inclusive, is_lower in _ends(ops):
            value = self.valid(self.meta, name, raw)
            wire = key_wire(self.meta, attr, value)
            end = _End(from_wire(wire), wire, inclusive, value)
            if is_lower:
                if lower is None or end.key > lower.key or (end.key == lower.key and not inclusive):
                    lower = end
            elif upper is None or end.key < upper.key or (end.key == upper.key and not inclusive):
                upper = end
        described = describe_ops(name, ops)
        if lower is not None and _blank(lower.wire):
            lower = None  # every stored key value is above the empty one
        if upper is not None and _blank(upper.wire):
            raise _Nothing(f"{described} leaves no value a key can hold")
        if lower is None or upper is None:
            one = lower or upper
            if one is None:
                return None
            op = (">" if one is lower else "<") + ("=" if one.inclusive else "")
            return SortCondition(op, (one.wire,))
        if lower.key > upper.key or (
            lower.key == upper.key and not (lower.inclusive and upper.inclusive)
        ):
            raise _Nothing(f"{described} leaves no value")
        if lower.key == upper.key:
            return SortCondition("=", (lower.wire,))
        return self._between(attr, name, lower, upper, described)

    def _between(
        self, attr: str, name: str, lower: _End, upper: _End, described: str
    ) -> SortCondition:
        """Two ends as a BETWEEN: an exclusive end closed on its neighbour (`_closed`), or,
        where the key has none, filtered exactly on the field's own attribute."""
        free = holds_text(self.meta, attr)
        lower = _closed(lower, is_lower=True, free_text=free)
        upper = _closed(upper, is_lower=False, free_text=free)
        if lower.key > upper.key:
            raise _Nothing(f"{described} leaves no value")
        if lower.key == upper.key and lower.inclusive and upper.inclusive:
            return SortCondition("=", (lower.wire,))
        open_ends: list[Operator] = []
        if not lower.inclusive:
            open_ends.append(Compare(">", lower.value))
        if not upper.inclusive:
            open_ends.append(Compare("<", upper.value))
        if open_ends:
            self._residual(attr, name, open_ends)
        return SortCondition("BETWEEN", (lower.wire, upper.wire))

    def _residual(self, attr: str, name: str, ops: Sequence[Operator]) -> None:
        """Filter what the key condition cannot say, exactly, on the field's stored attribute.

        DynamoDB filters on no key attribute of the index it reads, so a field stored as the
        key attribute itself cannot be filtered: such a range is refused.
        """
        meta = self.meta
        stored = meta.attributes[name]
        if stored == attr:
            raise QueryPlanError(
                "query.inexact-range",
                f"{describe_ops(name, ops)} on {meta.cls.__name__} cannot be exact on "
                f"{self.index.name}: a key condition takes one bound of each kind and inclusive "
                f"ends only, and DynamoDB does not filter on {attr!r}, a key attribute of the "
                "index; it holds text of any kind, which has no greatest value below an "
                "exclusive end. Write the range with inclusive ends (between(low, high), high "
                "the greatest text you want), or with a single bound.",
            )
        projected = meta.table.projected_attributes(self.index)
        if projected is not None and stored not in projected and stored != attr:
            raise QueryPlanError(
                "query.filter-not-projected",
                f"{describe_ops(name, ops)} on {meta.cls.__name__} must be filtered after the "
                f"key condition on {attr!r}, on the field's attribute {stored!r}, which index "
                f"{self.index.name} does not project; give a single bound, or project {stored!r}.",
            )
        self.out.residual[name] = list(ops)


@dataclass(frozen=True)
class _End:
    """One end of a range: the stored key value (compared), its wire form, the field value."""

    key: Any
    wire: Any
    inclusive: bool
    value: Any


def _closed(end: _End, *, is_lower: bool, free_text: bool) -> _End:
    """An exclusive end as the inclusive end that admits the same values, where one exists.

    The least text above ``v`` is ``v`` followed by U+0000; below ``v``, key text (a date's,
    a datetime's, a UUID's: never U+10FFFF) reaches at most its predecessor, and so does text
    ending in U+0000. A number's neighbour is the next number the key holds (the next int
    for an int field), bytes' the next byte string (`closed_bound`). Free text another tool
    may have written (``free_text``) has no such neighbour below it: that end stays exclusive.
    """
    if end.inclusive:
        return end
    ((tag, raw),) = end.wire.items()
    wire: Any
    if tag == "S" and is_lower:
        wire = {"S": raw + "\x00"}
    elif tag == "S" and raw.endswith("\x00"):
        wire = {"S": raw[:-1]}
    elif tag == "S" and not free_text:
        wire = {"S": predecessor(raw)}
    elif tag in ("N", "B"):
        wire = closed_bound(end.value, lambda _: end.wire, inclusive=False, above=is_lower)
    else:
        wire = None
    if wire is None:
        return end
    return _End(from_wire(wire), wire, True, end.value)


def _ends(ops: Sequence[Operator]) -> list[tuple[Any, bool, bool]]:
    """Each operator as (raw value, inclusive, lower end?) bounds."""
    out: list[tuple[Any, bool, bool]] = []
    for op in ops:
        if isinstance(op, Between):
            out += [(op.low, True, True), (op.high, True, False)]
        elif isinstance(op, Compare) and op.op == "=":
            out += [(op.value, True, True), (op.value, True, False)]
        elif isinstance(op, Compare):
            out.append((op.value, op.op.endswith("="), op.op.startswith(">")))
    return out


def _blank(wire: Any) -> bool:
    """Whether a wire value is the empty string or bytes, which no key holds."""
    ((tag, raw),) = wire.items()
    return tag in ("S", "B") and len(raw) == 0


def filtered_keys(
    metas: Sequence[EntityMeta[Entity]], index: object, fields: Iterable[str]
) -> list[str]:
    """Return the key attributes of a multi-attribute index that a filter on ``fields`` names.

    Fields stored under a key attribute's name are that attribute; DynamoDB refuses a filter on
    a key attribute of the index a Query reads.
    """
    if not is_multi_key(index):
        return []
    keys = set(metas[0].table.index_key_names(index))
    wanted = set(fields)
    return sorted({m.attributes[f] for m in metas for f in wanted if f in m.attributes} & keys)


def foreign_types(
    table: Table, index: GlobalIndex, requested: Sequence[type[Entity]]
) -> list[type[Entity]]:
    """Return the other declared types that bind the index, so their items can be read."""
    out: list[type[Entity]] = []
    for found in table.entities.values():
        cls = typing.cast("type[Entity]", found)
        if cls not in requested and binds_index(meta_of(cls), index):
            out.append(cls)
    return out


def group_units(
    units: Sequence[Unit], same_filter: Callable[[Sequence[EntityMeta[Entity]]], bool]
) -> list[Group]:
    """Join the units that send the same key condition and filter into one request each."""
    groups: list[list[Unit]] = []
    for unit in units:
        for members in groups:
            joined = [*members, unit]
            if members[0].partition == unit.partition and same_filter([m.meta for m in joined]):
                members.append(unit)
                break
        else:
            groups.append([unit])
    out: list[Group] = []
    for members in groups:
        names = "+".join(m.meta.cls.__name__ for m in members)
        note = f"one Query for {names}: the same key condition" if len(members) > 1 else ""
        out.append(Group(tuple(members), None, None, note))
    return out


def describe_key(fit: IndexFit, index: GlobalIndex) -> tuple[str, ...]:
    """Say, per key attribute of the index, how the key condition uses it and why."""
    condition = fit.partitions[0] if fit.partitions else None
    if not isinstance(condition, MultiKeyCondition):
        return ()
    meta = fit.meta
    equal = dict(condition.equal)
    partition = {a.name for a in index.partition_attributes}
    lines: list[str] = []
    for n, attr in enumerate(meta.table.index_key_names(index)):
        name = key_field(meta, attr)
        role = "partition" if attr in partition else f"sort {n - len(partition) + 1}"
        head = f"{attr} ({role}, {meta.cls.__name__}.{name}): "
        if attr in equal:
            lines.append(head + "equality")
        elif condition.last is not None and condition.last[0] == attr:
            lines.append(head + f"{condition.last[1].op}, the last sort attribute used")
        elif name in fit.out_of_order:
            lines.append(
                head + "not in the key condition: " + fit.out_of_order[name].split("; ")[0]
            )
        elif name in fit.absorbed:
            lines.append(head + "its condition bounds no stored value, so none is sent")
        else:
            lines.append(head + "not used (no condition)")
    return tuple(lines)
