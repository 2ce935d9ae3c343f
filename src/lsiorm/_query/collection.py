"""Item collections: which entity types a key range can hold, and when one Query reads several.

Every entity type declared on a table is known (``Table.entities``), and so is the shape of
each key template (:mod:`lsiorm._model.keyspace`). So for any key condition lsiorm can tell
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

from lsiorm._model.encoding import MAX_CHAR
from lsiorm._model.entity import Entity, EntityMeta, meta_of
from lsiorm._model.keyspace import shape_of
from lsiorm._model.schema import Table
from lsiorm._model.wire import to_wire
from lsiorm._query.keyrange import SortCondition, predecessor

__all__ = ["Interval", "condition_of", "foreign_types", "interval_of", "strays"]

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
    meta: EntityMeta, pk_attr: str, sk_attr: str | None, partition: Any, interval: Interval | None
) -> bool:
    """False only when ``meta`` provably has no item in this partition and range."""
    if not isinstance(partition, str):
        return _may_hold_uncached(meta, pk_attr, sk_attr, partition, interval)
    return _may_hold_cached(meta.cls, pk_attr, sk_attr, partition, interval)


@lru_cache(maxsize=8192)
def _may_hold_cached(
    cls: type[Entity], pk_attr: str, sk_attr: str | None, partition: str, interval: Interval | None
) -> bool:
    return _may_hold_uncached(meta_of(cls), pk_attr, sk_attr, partition, interval)


def _may_hold_uncached(
    meta: EntityMeta, pk_attr: str, sk_attr: str | None, partition: Any, interval: Interval | None
) -> bool:
    pk_tpl = meta.templates.get(pk_attr)
    if pk_tpl is None:
        return False
    if sk_attr is not None and sk_attr not in meta.templates:
        return False  # the item is not in this index at all
    pk_shape = shape_of(pk_tpl)
    if pk_shape is not None and isinstance(partition, str) and not pk_shape.matches(partition):
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
    meta: EntityMeta,
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

    meta: EntityMeta
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
    same_filter: typing.Callable[[Sequence[EntityMeta]], bool],
) -> list[Group]:
    """Group the units into requests: as few as the key ranges allow, exact in every case.

    Units of one partition whose ranges are neighbours join one request when no type holds
    items inside the joined range that the separate requests would not read anyway; a request
    whose range holds other types' items filters on the type attribute (when the index holds
    it; otherwise the decoder drops them by their key text).
    """

    def interval(unit: Unit) -> Interval | None:
        return _WHOLE if sk_attr is None else interval_of(unit.sort)

    def foreign(iv: Interval | None, partition: Any, classes: list[type[Entity]]) -> set[type]:
        return set(foreign_types(table, pk_attr, sk_attr, partition, iv, classes))

    partitions: dict[tuple[int, str], list[int]] = {}
    for n, unit in enumerate(units):
        key = (unit.shard, repr(to_wire(unit.partition)))
        partitions.setdefault(key, []).append(n)
    clusters: list[tuple[int, Group]] = []
    for members in partitions.values():
        ranged = [(n, interval(units[n])) for n in members]
        if len(members) == 1 or any(iv is None for _, iv in ranged):
            for n, iv in ranged:
                clusters.append(
                    (
                        n,
                        _alone(
                            units[n], foreign(iv, units[n].partition, [units[n].meta.cls]), type_ok
                        ),
                    )
                )
            continue
        ordered = sorted(ranged, key=lambda item: typing.cast("Interval", item[1]))
        current: list[tuple[int, Interval]] = []
        current_hull: Interval | None = None
        current_foreign: set[type] = set()
        done: list[tuple[list[tuple[int, Interval]], Interval, set[type], str]] = []
        for n, iv in ordered:
            assert iv is not None
            unit = units[n]
            mine = foreign(iv, unit.partition, [unit.meta.cls])
            if current_hull is None:
                current, current_hull, current_foreign = [(n, iv)], iv, mine
                continue
            hull = (min(current_hull[0], iv[0]), max(current_hull[1], iv[1]))
            joined = [*current, (n, iv)]
            classes = [units[m].meta.cls for m, _ in joined]
            outside = [
                units[m].meta.cls.__name__
                for m, own in joined
                if strays(units[m].meta, pk_attr, sk_attr, unit.partition, own, hull)
            ]
            others = foreign(hull, unit.partition, classes)
            # Types inside the ranges themselves are read by the separate Queries too; one
            # Query reads more only where the gap between the ranges holds other types' keys.
            gap: set[type] = set()
            if iv[0] > current_hull[1]:
                gap = foreign(
                    (current_hull[1] + "\x00", predecessor(iv[0])), unit.partition, classes
                )
            why = ""
            if outside:
                why = f"a range holding both would also hold {', '.join(outside)} items outside "
                why += "their own key condition"
            elif not same_filter([units[m].meta for m, _ in joined]):
                why = "their filters differ"
            elif gap:
                names = ", ".join(sorted(c.__name__ for c in gap))
                why = f"a range holding both would also read {names} items"
            elif others and not type_ok:
                why = "the index does not project the type attribute to filter other types out"
            if why:
                done.append((current, current_hull, current_foreign, why))
                current, current_hull, current_foreign = [(n, iv)], iv, mine
            else:
                current, current_hull, current_foreign = joined, hull, others
        assert current_hull is not None
        done.append((current, current_hull, current_foreign, ""))
        for n_done, (cluster, hull, others, why) in enumerate(done):
            if len(cluster) == 1:
                ((n, iv),) = cluster
                group = _alone(
                    units[n], foreign(iv, units[n].partition, [units[n].meta.cls]), type_ok
                )
                if why or n_done:
                    reason = why or done[n_done - 1][3]
                    head = group.note or units[n].meta.cls.__name__
                    group = Group(
                        group.units,
                        group.sort,
                        group.type_filter,
                        f"{head}; a Query of its own, as {reason}",
                    )
                clusters.append((n, group))
                continue
            members_units = tuple(units[n] for n, _ in sorted(cluster))
            classes = [u.meta.cls for u in members_units]
            if others:
                note = (
                    f"one Query for {_names(classes)} over their joined range, filtered on the "
                    f"type attribute to drop {', '.join(sorted(c.__name__ for c in others))} "
                    "items, which separate Queries would read as well"
                )
            else:
                note = (
                    f"one Query for {_names(classes)}: no other type has keys in their joined range"
                )
            clusters.append(
                (
                    min(n for n, _ in cluster),
                    Group(
                        members_units, condition_of(hull), tuple(classes) if others else None, note
                    ),
                )
            )
    clusters.sort(key=lambda item: item[0])
    return [group for _, group in clusters]


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
