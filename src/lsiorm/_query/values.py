"""Queries and scans as immutable values, and the builder methods that make new ones.

Nothing here does I/O. `query` and `scan` build values; ``plan()`` hands a value to
its planner, ``explain()`` prints the plan.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from typing_extensions import Self

from lsiorm._conditions import And, Condition, FieldCondition, as_operator
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._query.explain import Explanation, sample_estimate
from lsiorm._query.plan import MissingMode, QueryPlan, ScanProgress
from lsiorm._query.planner import plan_query
from lsiorm._query.scan_planner import plan_scan
from lsiorm.errors import QueryPlanError, ValidationError

E = TypeVar("E", bound=Entity)
E1 = TypeVar("E1", bound=Entity)
E2 = TypeVar("E2", bound=Entity)
E3 = TypeVar("E3", bound=Entity)
_V = TypeVar("_V")


def _evolve(value: _V, **changes: Any) -> _V:
    """Return a copy of a frozen query value with some fields changed.

    ``dataclasses.replace`` runs the generated ``__init__`` over every field; Query and Scan
    have no ``__post_init__`` or slots, so copying the instance dict gives the same value.
    """
    new = object.__new__(type(value))
    new.__dict__.update(value.__dict__)
    new.__dict__.update(changes)
    return new


def _as_conditions(conditions: Iterable[Condition], fields: Mapping[str, Any]) -> list[Condition]:
    out = list(conditions)
    out.extend(FieldCondition(name, as_operator(value)) for name, value in fields.items())
    return out


def _positive(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(
            "query.limit", f"{what} needs a whole number of at least 1, got {value!r}."
        )
    return value


def _check_fields(entities: Sequence[type[Entity]], names: Iterable[str]) -> None:
    for cls in entities:
        meta = meta_of(cls)
        for name in names:
            meta.check_field(name)


class _Reader(abc.ABC, Generic[E]):
    """The builder methods Query and Scan share; each returns a new value."""

    entities: tuple[type[Entity], ...]
    filter_condition: Condition | None

    @abc.abstractmethod
    def plan(self, *, count: bool = False) -> QueryPlan:
        """Return the plan: the chosen index, the exact requests and why; no I/O."""

    def filter(self, *conditions: Condition, **fields: Any) -> Self:
        """Add a filter, evaluated after the read (dropped items still cost read capacity)."""
        return _evolve(self, filter_condition=_and(self.filter_condition, conditions, fields))

    def select(self, *fields: str) -> Self:
        """Return only these fields; results are partial models (see `missing_fields`)."""
        _check_fields(self.entities, fields)
        return _evolve(self, fields=tuple(dict.fromkeys(fields)))

    def limit(self, count: int) -> Self:
        """Return at most ``count`` items in all."""
        return _evolve(self, max_items=_positive(count, "limit()"))

    def page_size(self, count: int) -> Self:
        """Ask DynamoDB to evaluate at most ``count`` items per request (its ``Limit``)."""
        return _evolve(self, request_limit=_positive(count, "page_size()"))

    def consistent(self, enabled: bool = True) -> Self:
        """Use strongly consistent reads (base table and LSIs only)."""
        return _evolve(self, consistent_read=enabled)

    def after(self, cursor: str | None) -> Self:
        """Resume after the page whose ``cursor`` this is (None starts from the beginning)."""
        return _evolve(self, cursor=cursor)

    def hydrate(self) -> Self:
        """Read fields a GSI does not project from the base table (BatchGetItem)."""
        return _evolve(self, missing="hydrate")

    def partial(self) -> Self:
        """Return fields a GSI does not project as missing, in partial models."""
        return _evolve(self, missing="partial")

    def explain(
        self, *, count: bool = False, sample: Iterable[Entity] | None = None
    ) -> Explanation:
        """Return the plan in a printable form, without I/O.

        With ``sample`` (entities the query is expected to match), the explanation also gives
        the capacity model's read cost of a page of them.
        """
        plan = self.plan(count=count)
        return Explanation(plan, sample_estimate(plan, sample))

    def compile_all(self, *, count: bool = False) -> list[dict[str, Any]]:
        """Return the parameters of every first request (one per shard, entity or segment)."""
        return [r.first_params() for r in self.plan(count=count).requests]


@dataclass(frozen=True)
class Query(_Reader[E]):
    """A query over one partition of one table or index; every method returns a new value."""

    entities: tuple[type[Entity], ...]
    conditions: tuple[FieldCondition, ...] = ()
    filter_condition: Condition | None = None
    fields: tuple[str, ...] | None = None
    forward: bool = True
    max_items: int | None = None
    request_limit: int | None = None
    consistent_read: bool = False
    index: str | None = None
    index_forced: bool = False
    fallback: bool = False
    cursor: str | None = None
    missing: MissingMode = "error"

    def where(self, *conditions: Condition, **fields: Any) -> Query[E]:
        """Add key conditions on template fields; a bare value means equality."""
        added: list[FieldCondition] = []
        for item in _as_conditions(conditions, fields):
            added.extend(_key_parts(item))
        return _evolve(self, conditions=(*self.conditions, *added))

    def descending(self) -> Query[E]:
        """Return items in descending sort-key order."""
        return _evolve(self, forward=False)

    def ascending(self) -> Query[E]:
        """Return items in ascending sort-key order (the default)."""
        return _evolve(self, forward=True)

    def using(self, index: str | None) -> Query[E]:
        """Force an index by name, or the base table with None; it must serve the query."""
        return _evolve(self, index=index, index_forced=True)

    def allow_filter_fallback(self) -> Query[E]:
        """Let key conditions no index answers exactly become a key range plus a filter."""
        return _evolve(self, fallback=True)

    def plan(self, *, count: bool = False) -> QueryPlan:
        """Return the plan: the chosen index, the exact requests and why; no I/O."""
        return plan_query(self, count)

    def compile(self, *, count: bool = False) -> dict[str, Any]:
        """Return the exact parameters of the one Query request this query sends first."""
        return self.plan(count=count).single_request()


@dataclass(frozen=True)
class Scan(_Reader[E]):
    """A scan of a whole table or index, optionally split into parallel segments."""

    entities: tuple[type[Entity], ...]
    filter_condition: Condition | None = None
    fields: tuple[str, ...] | None = None
    max_items: int | None = None
    request_limit: int | None = None
    consistent_read: bool = False
    index: str | None = None
    total_segments: int = 1
    cursor: str | None = None
    missing: MissingMode = "error"
    on_progress: Callable[[ScanProgress], None] | None = field(default=None, compare=False)

    def using(self, index: str | None) -> Scan[E]:
        """Scan this index instead of the base table (None: the base table)."""
        return _evolve(self, index=index)

    def segments(self, count: int) -> Scan[E]:
        """Split the scan into ``count`` segments, read concurrently by the async driver."""
        return _evolve(self, total_segments=_positive(count, "segments()"))

    def progress(self, callback: Callable[[ScanProgress], None] | None) -> Scan[E]:
        """Call ``callback`` after every page read by any segment."""
        return _evolve(self, on_progress=callback)

    def plan(self, *, count: bool = False) -> QueryPlan:
        """Return the plan of this scan; no I/O."""
        return plan_scan(self, count)


def _key_parts(condition: Condition) -> list[FieldCondition]:
    if isinstance(condition, FieldCondition):
        return [condition]
    if isinstance(condition, And):
        return [part for item in condition.items for part in _key_parts(item)]
    raise QueryPlanError(
        "query.where-operator",
        "where() takes conditions joined by AND only; put OR and NOT conditions in filter().",
    )


def _and(
    current: Condition | None, conditions: Sequence[Condition], fields: Mapping[str, Any]
) -> Condition | None:
    parts = ([current] if current is not None else []) + _as_conditions(conditions, fields)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


@overload
def query(entity: type[E], /) -> Query[E]: ...
@overload
def query(first: type[E1], second: type[E2], /) -> Query[E1 | E2]: ...
@overload
def query(first: type[E1], second: type[E2], third: type[E3], /) -> Query[E1 | E2 | E3]: ...
@overload
def query(*entities: type[Entity]) -> Query[Entity]: ...
def query(*entities: type[Entity]) -> Query[Any]:
    """Start a query for items of these entity classes (one partition they share)."""
    return Query(_bound(entities))


@overload
def scan(entity: type[E], /) -> Scan[E]: ...
@overload
def scan(first: type[E1], second: type[E2], /) -> Scan[E1 | E2]: ...
@overload
def scan(*entities: type[Entity]) -> Scan[Entity]: ...
def scan(*entities: type[Entity]) -> Scan[Any]:
    """Start a scan for items of these entity classes; it reads the whole table or index."""
    return Scan(_bound(entities))


def _bound(entities: Sequence[type[Entity]]) -> tuple[type[Entity], ...]:
    if not entities:
        raise ValidationError(
            "query.no-entity", "query() and scan() need at least one entity class."
        )
    metas = [meta_of(cls) for cls in entities]
    tables = {id(m.table) for m in metas}
    if len(tables) > 1:
        names = ", ".join(f"{m.cls.__name__} ({m.table.name})" for m in metas)
        raise QueryPlanError(
            "query.mixed-tables",
            f"One query reads one table, but these entities span several: {names}.",
        )
    return tuple(dict.fromkeys(entities))
