"""Item collections: which entity types a key range can hold, and when one Query reads several.

Every entity type declared on a table is known (``Table.entities``), and so is the shape of
each key template (`lsiorm._model.keyspace`). So for any key condition lsiorm can tell
which types may have items inside it:

- a query of one type whose range also holds another type's items (a hierarchy such as
  ``ORDER#{order_id}`` and ``ORDER#{order_id}#ITEM#{line:03d}``) filters on the type attribute,
  so results and counts hold only the requested type;
- a query of several types in one partition sends one Query over the smallest range holding
  all of their ranges when no other item can lie inside it, or when every other type inside it
  would be read by the separate Queries anyway; otherwise it sends one Query per type.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lsiorm._model.codec import MAX_CHAR
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.keyspace import shape_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import to_wire
from lsiorm._query.keyrange import SortCondition, predecessor

__all__ = [
    "Group",
    "Interval",
    "Unit",
    "condition_of",
    "foreign_types",
    "interval_of",
    "plan_collections",
    "strays",
]

#: An inclusive range of sort key text; None where the sort key is a Number or Binary.
Interval = tuple[str, str]

_WHOLE: Interval = ("", MAX_CHAR)


def interval_of(sort: SortCondition | None) -> Interval | None:
    """Return the key text a sort condition admits (None: not a string sort key)."""
    if sort is None:
        return _WHOLE
    texts: list[str] = []
    for operand in sort.operands:
        if not isinstance(operand, dict) or "S" not in operand:
            return None
        texts.append(operand["S"])
    first = texts[0]
    if sort.op == "=":
        return first, first
    if sort.op == "BETWEEN":
        return first, texts[1]
    if sort.op == "begins_with":
        return first, first + MAX_CHAR
    if sort.op == "<=":
        return "", first
    if sort.op == "<":
        return ("", predecessor(first)) if first else ("\x01", "")
    if sort.op == ">=":
        return first, MAX_CHAR
    if sort.op == ">":
        return first + "\x00", MAX_CHAR
    return None


def condition_of(interval: Interval) -> SortCondition | None:
    """Return the sort condition that admits exactly ``interval``."""
    low, high = interval
    if (low, high) == _WHOLE:
        return None
    if low == high:
        return SortCondition("=", (to_wire(low),))
    if low and high == low + MAX_CHAR:
        return SortCondition("begins_with", (to_wire(low),))
    if not low:
        return SortCondition("<=", (to_wire(high),))
    return SortCondition("BETWEEN", (to_wire(low), to_wire(high)))


def _may_hold(
    meta: EntityMeta[Entity],
    pk_attr: str,
    sk_attr: str | None,
    partition: Any,
    interval: Interval | None,
) -> bool:
    """False only when ``meta`` provably has no item in this partition and range."""
    # Only a text partition is matched against the partition key's shape; the answer for any
    # other is the same as for None, so the cache keeps text partitions only.
    text = partition if isinstance(partition, str) else None
    return _may_hold_cached(meta.cls, pk_attr, sk_attr, text, interval)


@lru_cache(maxsize=8192)
def _may_hold_cached(
    cls: type[Entity],
    pk_attr: str,
    sk_attr: str | None,
    partition: str | None,
    interval: Interval | None,
) -> bool:
    meta = meta_of(cls)
    # While the type is re-keyed, its items may still have keys of the old form too.
    forms = [meta] if meta.old_form is None else [meta, meta.old_form]
    return any(_form_may_hold(m, pk_attr, sk_attr, partition, interval) for m in forms)


def _form_may_hold(
    meta: EntityMeta[Entity],
    pk_attr: str,
    sk_attr: str | None,
    partition: str | None,
    interval: Interval | None,
) -> bool:
    pk_tpl = meta.templates.get(pk_attr)
    if pk_tpl is None:
        return False
    if sk_attr is not None and sk_attr not in meta.templates:
        return False  # the item is not in this index at all
    pk_shape = shape_of(pk_tpl)
    if pk_shape is not None and partition is not None and not pk_shape.matches(partition):
        return False
    if sk_attr is None:
        return True
    sk_shape = shape_of(meta.templates[sk_attr])
    if sk_shape is None or interval is None:
        return True
    return sk_shape.may_hold(*interval)


def foreign_types(
    table: Table,
    pk_attr: str,
    sk_attr: str | None,
    partition: Any,
    interval: Interval | None,
    requested: Sequence[type[Entity]],
) -> list[type[Entity]]:
    """Return the other declared types that may have items in this partition and range."""
    out: list[type[Entity]] = []
    for found in table.entities.values():
        cls = typing.cast("type[Entity]", found)
        if cls in requested:
            continue
        if _may_hold(meta_of(cls), pk_attr, sk_attr, partition, interval):
            out.append(cls)
    return out


def strays(
    meta: EntityMeta[Entity],
    pk_attr: str,
    sk_attr: str | None,
    partition: Any,
    own: Interval,
    hull: Interval,
) -> bool:
    """True when ``meta`` may have items inside ``hull`` but outside its own range ``own``.

    Such items would fail the type's own key condition, so one Query over the hull would
    return them by mistake.
    """
    low, high = hull
    if low < own[0] and _may_hold(meta, pk_attr, sk_attr, partition, (low, predecessor(own[0]))):
        return True
    return own[1] < high and _may_hold(meta, pk_attr, sk_attr, partition, (own[1] + "\x00", high))


@dataclass(frozen=True)
class Unit:
    """One entity type's key condition in one partition (one shard of a sharded index)."""

    meta: EntityMeta[Entity]
    shard: int
    partition: Any
    sort: SortCondition | None
    label: str


@dataclass(frozen=True)
class Group:
    """One request: the units it reads, its sort condition and the types it must filter to."""

    units: tuple[Unit, ...]
    sort: SortCondition | None
    #: The types a FilterExpression on the type attribute keeps (None: no type filter).
    type_filter: tuple[type[Entity], ...] | None
    note: str


def _names(classes: Sequence[type[Entity]]) -> str:
    return "+".join(c.__name__ for c in classes)


def plan_collections(
    table: Table,
    pk_attr: str,
    sk_attr: str | None,
    units: Sequence[Unit],
    type_ok: bool,
    same_filter: typing.Callable[[Sequence[EntityMeta[Entity]]], bool],
) -> list[Group]:
    """Group the units into requests: as few as the key ranges allow, exact in every case.

    Units of one partition whose ranges are neighbours join one request when no type holds
    items inside the joined range that the separate requests would not read anyway; a request
    whose range holds other types' items filters on the type attribute (when the index holds
    it; otherwise the decoder drops them by their key text).
    """
    return _Grouping(table, pk_attr, sk_attr, units, type_ok, same_filter).groups()


@dataclass
class _Run:
    """Neighbouring units of one partition, in key order, that one request can read."""

    members: list[tuple[int, Interval]]
    hull: Interval
    #: Other types with keys inside the hull.
    others: set[type]
    #: Why the next unit does not join this run ("" for the last run).
    why: str = ""


@dataclass(frozen=True)
class _Grouping:
    """The arguments of `plan_collections`, and its steps."""

    table: Table
    pk_attr: str
    sk_attr: str | None
    units: Sequence[Unit]
    type_ok: bool
    same_filter: typing.Callable[[Sequence[EntityMeta[Entity]]], bool]

    def groups(self) -> list[Group]:
        partitions: dict[tuple[int, str], list[int]] = {}
        for n, unit in enumerate(self.units):
            key = (unit.shard, repr(to_wire(unit.partition)))
            partitions.setdefault(key, []).append(n)
        clusters: list[tuple[int, Group]] = []
        for members in partitions.values():
            clusters.extend(self._partition(members))
        clusters.sort(key=lambda item: item[0])
        return [group for _, group in clusters]

    def _interval(self, unit: Unit) -> Interval | None:
        return _WHOLE if self.sk_attr is None else interval_of(unit.sort)

    def _foreign(
        self, iv: Interval | None, partition: Any, classes: list[type[Entity]]
    ) -> set[type]:
        return set(foreign_types(self.table, self.pk_attr, self.sk_attr, partition, iv, classes))

    def _alone(self, n: int, iv: Interval | None) -> Group:
        unit = self.units[n]
        return _alone(unit, self._foreign(iv, unit.partition, [unit.meta.cls]), self.type_ok)

    def _partition(self, members: list[int]) -> list[tuple[int, Group]]:
        """Return the requests of one partition, each with the index of its first unit."""
        ranged = [(n, self._interval(self.units[n])) for n in members]
        if len(members) == 1 or any(iv is None for _, iv in ranged):
            return [(n, self._alone(n, iv)) for n, iv in ranged]
        ordered = sorted(ranged, key=lambda item: typing.cast("Interval", item[1]))
        runs = self._runs([(n, typing.cast("Interval", iv)) for n, iv in ordered])
        return [self._group(runs, k) for k in range(len(runs))]

    def _runs(self, ordered: list[tuple[int, Interval]]) -> list[_Run]:
        """Join each unit, in key order, to the run before it unless that reads other items."""
        runs: list[_Run] = []
        current: _Run | None = None
        for n, iv in ordered:
            unit = self.units[n]
            mine = self._foreign(iv, unit.partition, [unit.meta.cls])
            if current is None:
                current = _Run([(n, iv)], iv, mine)
                continue
            hull = (min(current.hull[0], iv[0]), max(current.hull[1], iv[1]))
            joined = [*current.members, (n, iv)]
            classes = [self.units[m].meta.cls for m, _ in joined]
            others = self._foreign(hull, unit.partition, classes)
            why = self._apart(current, joined, hull, iv, unit.partition, others)
            if why:
                current.why = why
                runs.append(current)
                current = _Run([(n, iv)], iv, mine)
            else:
                current = _Run(joined, hull, others)
        assert current is not None
        runs.append(current)
        return runs

    def _apart(
        self,
        current: _Run,
        joined: list[tuple[int, Interval]],
        hull: Interval,
        iv: Interval,
        partition: Any,
        others: set[type],
    ) -> str:
        """Return why one request over ``hull`` would not be exact ("" when it would be)."""
        outside = [
            self.units[m].meta.cls.__name__
            for m, own in joined
            if strays(self.units[m].meta, self.pk_attr, self.sk_attr, partition, own, hull)
        ]
        if outside:
            return (
                f"a range holding both would also hold {', '.join(outside)} items outside "
                "their own key condition"
            )
        if not self.same_filter([self.units[m].meta for m, _ in joined]):
            return "their filters differ"
        # Types inside the ranges themselves are read by the separate Queries too; one
        # Query reads more only where the gap between the ranges holds other types' keys.
        if iv[0] > current.hull[1]:
            classes = [self.units[m].meta.cls for m, _ in joined]
            gap = self._foreign((current.hull[1] + "\x00", predecessor(iv[0])), partition, classes)
            if gap:
                names = ", ".join(sorted(c.__name__ for c in gap))
                return f"a range holding both would also read {names} items"
        if others and not self.type_ok:
            return "the index does not project the type attribute to filter other types out"
        return ""

    def _group(self, runs: list[_Run], k: int) -> tuple[int, Group]:
        """Return run ``k`` as one request, saying why a lone unit is not joined."""
        run = runs[k]
        if len(run.members) == 1:
            ((n, iv),) = run.members
            group = self._alone(n, iv)
            if run.why or k:
                reason = run.why or runs[k - 1].why
                head = group.note or self.units[n].meta.cls.__name__
                note = f"{head}; a Query of its own, as {reason}"
                group = Group(group.units, group.sort, group.type_filter, note)
            return n, group
        members = tuple(self.units[n] for n, _ in sorted(run.members))
        classes = [u.meta.cls for u in members]
        if run.others:
            note = (
                f"one Query for {_names(classes)} over their joined range, filtered on the "
                f"type attribute to drop {', '.join(sorted(c.__name__ for c in run.others))} "
                "items, which separate Queries would read as well"
            )
        else:
            note = f"one Query for {_names(classes)}: no other type has keys in their joined range"
        type_filter = tuple(classes) if run.others else None
        return min(n for n, _ in run.members), Group(
            members, condition_of(run.hull), type_filter, note
        )


def _alone(unit: Unit, others: set[type], type_ok: bool) -> Group:
    cls = unit.meta.cls
    if not others:
        return Group((unit,), unit.sort, None, "")
    names = ", ".join(sorted(c.__name__ for c in others))
    if not type_ok:
        note = (
            f"{cls.__name__}: its range may also hold {names} items; the index does not project "
            "the type attribute, so they are read and dropped by their key text"
        )
        return Group((unit,), unit.sort, None, note)
    # The planner's per-request type line says why this request is filtered.
    return Group((unit,), unit.sort, (cls,), "")
