"""Plans: the index chosen, the exact requests, and why each candidate won or lost.

A `QueryPlan` holds three smaller values, each built in one place: the
`IndexChoice` (where it reads and what that index returns), the `ReadOptions`
(what the caller asked for beyond the conditions) and the `PlannedRequests` (what is
sent). The plan's flat attributes (``plan.index_name``, ``plan.requests``, ``plan.consistent``,
...) read through to them.

The planners read a query or a scan through the protocols `QuerySource` and
`ScanSource`, so the values sit below everything that plans, compiles or prints them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, Protocol

from lsiorm._conditions import Condition, FieldCondition
from lsiorm._model.entity import Entity
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.schema import Table
from lsiorm._query.cursor import fingerprint
from lsiorm._query.rekeying import FormCheck
from lsiorm.errors import QueryPlanError

MissingMode = Literal["error", "hydrate", "partial"]
"""What to do with fields a GSI does not project: refuse, read base items, or mark them missing."""


@dataclass(frozen=True)
class ScanProgress:
    """Progress of one scan segment, reported after each page it reads."""

    segment: int
    total_segments: int
    pages: int
    scanned: int
    returned: int
    done: bool


@dataclass(frozen=True)
class Candidate:
    """One index considered for a query, with the one-line reason it won or lost."""

    index: str | None
    kind: Literal["table", "local", "global"]
    score: int | None
    chosen: bool
    reason: str

    @property
    def label(self) -> str:
        """The index name, or ``table`` for the base table."""
        return self.index if self.index is not None else "table"


@dataclass(frozen=True)
class PlannedRequest:
    """One request a plan sends (more pages follow with ExclusiveStartKey)."""

    params: dict[str, Any]
    entities: tuple[type[Entity], ...]
    label: str = ""
    #: ``Limit`` of the first page (None: none is sent).
    limit: int | None = None
    #: While entities are re-keyed: which rows this request keeps, by the form of their keys.
    forms: tuple[FormCheck, ...] = ()

    def first_params(self) -> dict[str, Any]:
        """Return the exact parameters of this request's first page."""
        params = dict(self.params)
        if self.limit is not None:
            params["Limit"] = self.limit
        return params


@dataclass(frozen=True)
class IndexChoice:
    """Where a plan reads: the table, the index chosen and why, and what that index returns."""

    table: Table
    index: LocalIndex | GlobalIndex | None
    candidates: tuple[Candidate, ...]
    #: Attributes named in ProjectionExpression (None: every attribute the index returns).
    projection: tuple[str, ...] | None = None
    #: Attributes DynamoDB fetches from the base table for each item (LSI queries).
    fetched: tuple[str, ...] = ()
    #: Fields the index cannot return (GSI), handled by the read options' ``missing_mode``.
    unavailable: tuple[str, ...] = ()
    #: The sort key attributes by which several requests are merged (in key order).
    merge_attributes: tuple[str, ...] = ()
    #: Items a forced sparse index cannot see (their optional key fields are None).
    sparse: tuple[str, ...] = ()

    @property
    def merge_attribute(self) -> str | None:
        """The sort key attribute by which several requests are merged (None: several or none)."""
        return self.merge_attributes[0] if len(self.merge_attributes) == 1 else None

    @property
    def index_name(self) -> str | None:
        """The name of the chosen index (None: the base table)."""
        return self.index.name if self.index is not None else None

    @property
    def key_attributes(self) -> tuple[str, ...]:
        """The attributes of a key in this table or index (an ExclusiveStartKey's attributes)."""
        keys = [*self.table.index_key_names(None)]
        if self.index is not None:
            keys.extend(self.table.index_key_names(self.index))
        return tuple(dict.fromkeys(keys))


class ReadSource(Protocol):
    """What a query or a scan value says about how to read (see `ReadOptions.of`)."""

    @property
    def entities(self) -> tuple[type[Entity], ...]: ...
    @property
    def filter_condition(self) -> Condition | None: ...
    @property
    def fields(self) -> tuple[str, ...] | None: ...
    @property
    def max_items(self) -> int | None: ...
    @property
    def request_limit(self) -> int | None: ...
    @property
    def consistent_read(self) -> bool: ...
    @property
    def cursor(self) -> str | None: ...
    @property
    def missing(self) -> MissingMode: ...
    @property
    def index(self) -> str | None: ...


class QuerySource(ReadSource, Protocol):
    """What the query planner reads of a query value (`lsiorm.Query` is one)."""

    @property
    def conditions(self) -> tuple[FieldCondition, ...]: ...
    @property
    def forward(self) -> bool: ...
    @property
    def index_forced(self) -> bool: ...
    @property
    def fallback(self) -> bool: ...


class ScanSource(ReadSource, Protocol):
    """What the scan planner reads of a scan value (`lsiorm.Scan` is one)."""

    @property
    def total_segments(self) -> int: ...
    @property
    def on_progress(self) -> Callable[[ScanProgress], None] | None: ...


@dataclass(frozen=True)
class ReadOptions:
    """How a plan reads: order, limits, consistency, counting, segments and missing fields."""

    forward: bool = True
    consistent: bool = False
    max_items: int | None = None
    request_limit: int | None = None
    count: bool = False
    segments: int = 1
    missing_mode: MissingMode = "error"
    #: Fields results carry (None: all fields, as complete entities).
    selected: tuple[str, ...] | None = None
    cursor: str | None = None
    on_progress: Callable[[ScanProgress], None] | None = field(default=None, compare=False)

    @classmethod
    def of(
        cls,
        source: ReadSource,
        *,
        count: bool,
        forward: bool = True,
        segments: int = 1,
        on_progress: Callable[[ScanProgress], None] | None = None,
    ) -> ReadOptions:
        """Return the read options a query or scan value asks for (a count selects nothing)."""
        return cls(
            forward=forward,
            consistent=source.consistent_read,
            max_items=source.max_items,
            request_limit=source.request_limit,
            count=count,
            segments=segments,
            missing_mode=source.missing,
            selected=None if count else source.fields,
            cursor=source.cursor,
            on_progress=on_progress,
        )


@dataclass(frozen=True)
class RequestShape:
    """A plan's table, index, direction and requests: what its cursors must match.

    The fingerprint is computed on first use: most plans never make or read a cursor.
    """

    table: str
    index: str | None
    forward: bool
    requests: tuple[PlannedRequest, ...]

    @cached_property
    def fingerprint(self) -> str:
        """The digest of this shape that cursors carry (see `cursor.fingerprint`)."""
        return fingerprint(self.table, self.index, self.forward, [r.params for r in self.requests])


@dataclass(frozen=True)
class PlannedRequests:
    """What a plan sends: the requests, the expressions of the first, and what shapes them."""

    requests: tuple[PlannedRequest, ...]
    #: What the cursor fingerprint covers; fixed when the plan is built.
    shape: RequestShape = field(repr=False)
    key_condition: str | None = None
    filter: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    #: Key conditions evaluated as a filter because no index answers them exactly.
    fallback_filters: tuple[str, ...] = ()
    #: Indexes that would answer a fallback condition but are on a slot marked pending.
    pending_slots: tuple[str, ...] = ()
    has_filter: bool = False
    #: Why the query provably matches nothing (then no request is sent).
    empty: str | None = None
    #: Per request, how other entity types sharing the index are kept out (key or type filter).
    type_filters: tuple[str, ...] = ()
    #: Open ends of two-bound ranges on Number/Binary sort keys, filtered after a BETWEEN.
    residual_filters: tuple[str, ...] = ()
    #: Key conditions on plain key text also checked on the fields' stored attributes.
    plain_checks: tuple[str, ...] = ()
    #: Equalities on encrypted fields found by their beacon: (entity, field, value), checked
    #: on each decrypted candidate, which is dropped unless equal.
    decrypted_checks: tuple[tuple[type[Entity], str, Any], ...] = field(default=(), repr=False)
    #: Open ends of two-bound ranges on Number/Binary sort keys, closed at the next key value.
    closed_ends: tuple[str, ...] = ()
    #: How the entity types were joined into requests or kept apart, and why.
    collection: tuple[str, ...] = ()
    #: How the key condition uses each attribute of a multi-attribute index, and why.
    key_use: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueryPlan:
    """Everything decided before any I/O: index, requests, projection, decoding, and why."""

    operation: Literal["Query", "Scan"]
    entities: tuple[type[Entity], ...]
    choice: IndexChoice
    options: ReadOptions
    planned: PlannedRequests

    def for_base_items(self) -> QueryPlan:
        """The plan as seen by items read from the base table: nothing is unavailable."""
        return replace(self, choice=replace(self.choice, unavailable=(), index=None))

    # -- the index choice

    @property
    def table(self) -> Table:
        """The table read."""
        return self.choice.table

    @property
    def index(self) -> LocalIndex | GlobalIndex | None:
        """The index read (None: the base table)."""
        return self.choice.index

    @property
    def index_name(self) -> str | None:
        """The name of the chosen index (None: the base table)."""
        return self.choice.index_name

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """Every index considered, with why it won or lost."""
        return self.choice.candidates

    @property
    def projection(self) -> tuple[str, ...] | None:
        """Attributes named in ProjectionExpression (None: all the index returns)."""
        return self.choice.projection

    @property
    def fetched(self) -> tuple[str, ...]:
        """Attributes DynamoDB fetches from the base table for each item (LSI queries)."""
        return self.choice.fetched

    @property
    def unavailable(self) -> tuple[str, ...]:
        """Fields the index cannot return (GSI), handled by ``missing_mode``."""
        return self.choice.unavailable

    @property
    def merge_attribute(self) -> str | None:
        """The sort key attribute by which several requests are merged."""
        return self.choice.merge_attribute

    @property
    def merge_attributes(self) -> tuple[str, ...]:
        """The sort key attributes by which several requests are merged, in key order."""
        return self.choice.merge_attributes

    @property
    def sparse(self) -> tuple[str, ...]:
        """Items a forced sparse index cannot see (their optional key fields are None)."""
        return self.choice.sparse

    @property
    def key_attributes(self) -> tuple[str, ...]:
        """The attributes of a key in this table or index (an ExclusiveStartKey's attributes)."""
        return self.choice.key_attributes

    # -- the read options

    @property
    def forward(self) -> bool:
        """True for ascending sort-key order."""
        return self.options.forward

    @property
    def consistent(self) -> bool:
        """True for strongly consistent reads."""
        return self.options.consistent

    @property
    def max_items(self) -> int | None:
        """The most items to return (None: all)."""
        return self.options.max_items

    @property
    def request_limit(self) -> int | None:
        """The ``Limit`` of each request (None: none)."""
        return self.options.request_limit

    @property
    def count(self) -> bool:
        """True when the plan counts (Select=COUNT) instead of reading items."""
        return self.options.count

    @property
    def segments(self) -> int:
        """The number of parallel scan segments."""
        return self.options.segments

    @property
    def missing_mode(self) -> MissingMode:
        """What to do with fields the index does not project."""
        return self.options.missing_mode

    @property
    def selected(self) -> tuple[str, ...] | None:
        """Fields results carry (None: all fields, as complete entities)."""
        return self.options.selected

    @property
    def cursor(self) -> str | None:
        """The cursor the reading resumes from."""
        return self.options.cursor

    @property
    def on_progress(self) -> Callable[[ScanProgress], None] | None:
        """The scan progress callback."""
        return self.options.on_progress

    # -- the planned requests

    @property
    def requests(self) -> tuple[PlannedRequest, ...]:
        """The requests sent (more pages follow with ExclusiveStartKey)."""
        return self.planned.requests

    @property
    def key_condition(self) -> str | None:
        """The KeyConditionExpression of the first request."""
        return self.planned.key_condition

    @property
    def filter(self) -> str | None:
        """The FilterExpression of the first request."""
        return self.planned.filter

    @property
    def names(self) -> dict[str, str]:
        """The ExpressionAttributeNames of the first request."""
        return self.planned.names

    @property
    def values(self) -> dict[str, Any]:
        """The ExpressionAttributeValues of the first request."""
        return self.planned.values

    @property
    def fallback_filters(self) -> tuple[str, ...]:
        """Key conditions evaluated as a filter because no index answers them exactly."""
        return self.planned.fallback_filters

    @property
    def pending_slots(self) -> tuple[str, ...]:
        """Indexes that would answer a fallback condition but are on a slot marked pending."""
        return self.planned.pending_slots

    @property
    def has_filter(self) -> bool:
        """True when DynamoDB filters items after reading them."""
        return self.planned.has_filter

    @property
    def type_filters(self) -> tuple[str, ...]:
        """Per request, how other entity types sharing the index are kept out."""
        return self.planned.type_filters

    @property
    def residual_filters(self) -> tuple[str, ...]:
        """Open ends of two-bound ranges on multi-attribute sort keys, filtered on the fields'
        stored attributes."""
        return self.planned.residual_filters

    @property
    def closed_ends(self) -> tuple[str, ...]:
        """Open ends of two-bound ranges on Number/Binary sort keys, read as inclusive bounds at
        the next value the key can hold."""
        return self.planned.closed_ends

    @property
    def key_use(self) -> tuple[str, ...]:
        """How the key condition uses each attribute of a multi-attribute index, and why."""
        return self.planned.key_use

    @property
    def plain_checks(self) -> tuple[str, ...]:
        """Key conditions on plain key text also checked on the fields' stored attributes."""
        return self.planned.plain_checks

    @property
    def decrypted_checks(self) -> tuple[tuple[type[Entity], str, Any], ...]:
        """Equalities on encrypted fields read by their beacon, checked after decryption."""
        return self.planned.decrypted_checks

    def kept(self, entity: Entity) -> bool:
        """Whether a decoded result passes every check made after decryption."""
        for cls, name, value in self.planned.decrypted_checks:
            if type(entity) is cls and getattr(entity, name, value) != value:
                return False
        return True

    @property
    def collection(self) -> tuple[str, ...]:
        """How the entity types were joined into requests or kept apart, and why."""
        return self.planned.collection

    @property
    def empty(self) -> str | None:
        """Why the query provably matches nothing (then no request is sent)."""
        return self.planned.empty

    @property
    def fingerprint(self) -> str:
        """The digest of the plan's request shape that its cursors carry."""
        return self.planned.shape.fingerprint

    def single_request(self) -> dict[str, Any]:
        """Return the parameters of the plan's only request; refuse when there are none or many."""
        if self.empty is not None:
            raise QueryPlanError(
                "query.no-request",
                f"This query sends no request: it provably matches nothing ({self.empty}).",
            )
        if len(self.requests) != 1:
            raise QueryPlanError(
                "query.fan-out",
                f"This query sends {len(self.requests)} requests "
                f"({', '.join(r.label for r in self.requests)}); use compile_all().",
            )
        return self.requests[0].first_params()
