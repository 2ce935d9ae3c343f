"""Plans: the index chosen, the exact requests, and why each candidate won or lost."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
)

from lsiorm._model.entity import (
    Entity,
)
from lsiorm._model.schema import GlobalIndex, LocalIndex, Table
from lsiorm._query.cursor import _Shape
from lsiorm.errors import QueryPlanError

if TYPE_CHECKING:
    from lsiorm._query.values import ScanProgress


MissingMode = Literal["error", "hydrate", "partial"]
"""What to do with fields a GSI does not project: refuse, read base items, or mark them missing."""


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

    def first_params(self) -> dict[str, Any]:
        """Return the exact parameters of this request's first page."""
        params = dict(self.params)
        if self.limit is not None:
            params["Limit"] = self.limit
        return params


@dataclass(frozen=True)
class QueryPlan:
    """Everything decided before any I/O: index, requests, projection, decoding, and why."""

    operation: Literal["Query", "Scan"]
    table: Table
    entities: tuple[type[Entity], ...]
    index: LocalIndex | GlobalIndex | None
    requests: tuple[PlannedRequest, ...]
    candidates: tuple[Candidate, ...]
    key_condition: str | None
    filter: str | None
    names: dict[str, str]
    values: dict[str, Any]
    #: Attributes named in ProjectionExpression (None: every attribute the index returns).
    projection: tuple[str, ...] | None
    #: Attributes DynamoDB fetches from the base table for each item (LSI queries).
    fetched: tuple[str, ...]
    #: Fields the index cannot return (GSI), handled by ``missing_mode``.
    unavailable: tuple[str, ...]
    missing_mode: MissingMode
    #: Fields results carry (None: all fields, as complete entities).
    selected: tuple[str, ...] | None
    #: Key conditions evaluated as a filter because no index answers them exactly.
    fallback_filters: tuple[str, ...]
    forward: bool
    max_items: int | None
    request_limit: int | None
    consistent: bool
    count: bool
    #: The sort key attribute by which several requests are merged.
    merge_attribute: str | None
    #: Why the query provably matches nothing (then no request is sent).
    empty: str | None
    has_filter: bool
    #: What the cursor fingerprint covers; fixed when the plan is built.
    _shape: _Shape = field(repr=False)
    cursor: str | None
    segments: int = 1
    #: How the entity types were split into requests, and which requests filter on the type.
    collection: tuple[str, ...] = ()
    on_progress: Callable[[ScanProgress], None] | None = field(default=None, compare=False)

    @property
    def fingerprint(self) -> str:
        """The digest of the plan's request shape that its cursors carry."""
        return self._shape.fingerprint

    @property
    def index_name(self) -> str | None:
        """The name of the chosen index (None: the base table)."""
        return self.index.name if self.index is not None else None

    @property
    def key_attributes(self) -> tuple[str, ...]:
        """The attributes of a key in this table or index (an ExclusiveStartKey's attributes)."""
        keys = [*self.table.index_key_attributes(None)]
        if self.index is not None:
            keys.extend(self.table.index_key_attributes(self.index))
        return tuple(dict.fromkeys(k for k in keys if k is not None))

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
