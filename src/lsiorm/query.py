"""Queries and scans as immutable values: index choice, exact key conditions, cursors, explain().

Nothing here does I/O. :func:`query` and :func:`scan` build values; :meth:`Query.plan` turns one
into a :class:`QueryPlan` (the index, the exact request parameters, why each index won or lost);
:mod:`lsiorm.query_ops` runs a plan.

Exact key conditions rest on three facts. Key text of S templates compares as Python ``str``
(code-point order, which is UTF-8 byte order for valid Unicode). :data:`MAX_CHAR` can never occur
in key text, so every key beginning with ``P`` is below ``P + MAX_CHAR``. Namespaces of entities
that can share a partition are prefix-free (checked when classes are declared), so a bound built
inside one namespace never reaches another entity's items.
"""

from __future__ import annotations

import abc
import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Generic,
    Literal,
    TypeAlias,
    TypeVar,
    cast,
    overload,
)

from typing_extensions import Self

from .capacity import ReadEstimate, estimate_query
from .conditions import (
    And,
    BeginsWith,
    Between,
    Compare,
    Condition,
    FieldCondition,
    Not,
    Operator,
    Placeholders,
    as_operator,
)
from .crud import compile_entity_condition, encode_value
from .encoding import MAX_CHAR, EnumCodec, KeyCodec, StrCodec
from .entity import (
    Entity,
    EntityMeta,
    Shard,
    json_default,
    meta_of,
    shard_of,
    shard_value,
    wire_item,
)
from .errors import QueryPlanError, ValidationError
from .schema import GlobalIndex, LocalIndex, Table
from .template import FieldSlot, KeyTemplate
from .wire import to_wire

if TYPE_CHECKING:
    from .query_ops import ScanProgress

__all__ = [
    "Candidate",
    "Explanation",
    "MissingMode",
    "Query",
    "QueryPlan",
    "Request",
    "Scan",
    "Shard",
    "decode_cursor",
    "encode_cursor",
    "missing_fields",
    "query",
    "scan",
    "shard_value",
]

E = TypeVar("E", bound=Entity)
E1 = TypeVar("E1", bound=Entity)
E2 = TypeVar("E2", bound=Entity)
E3 = TypeVar("E3", bound=Entity)
_V = TypeVar("_V")

MissingMode = Literal["error", "hydrate", "partial"]
"""What to do with fields a GSI does not project: refuse, read base items, or mark them missing."""

#: Key of the set of missing fields in a partial model's ``__dict__`` (see :func:`missing_fields`).
MISSING_KEY: Final = "__lsiorm_missing__"

# The last code point below the surrogate block; a decremented character never lands inside it.
_BEFORE_SURROGATES: Final = 0xD7FF
_SURROGATES: Final = range(0xD800, 0xE000)


def missing_fields(entity: Entity) -> frozenset[str]:
    """Return the fields a partial result does not carry (empty for a complete entity).

    Reading a missing field raises AttributeError; lsiorm never fills one with a default.
    """
    missing = entity.__dict__.get(MISSING_KEY)
    return missing if isinstance(missing, frozenset) else frozenset()


# -- the query and scan values -----------------------------------------------------------------

_KEY_OPERATORS: Final = frozenset({"=", "<", "<=", ">", ">="})


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
        for name in names:
            if name not in cls.model_fields:
                raise ValidationError(
                    "field.unknown",
                    f"{cls.__name__} has no field {name!r}; fields are "
                    f"{', '.join(cls.model_fields)}.",
                )


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
        """Return only these fields; results are partial models (see :func:`missing_fields`)."""
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
        return Explanation(plan, _estimate(plan, sample))

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
        return _QueryPlanner(self, count).plan()

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
        return _ScanPlanner(self, count).plan()


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


# -- plans -------------------------------------------------------------------------------------


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
class Request:
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
    requests: tuple[Request, ...]
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


@dataclass(frozen=True)
class Explanation:
    """A plan that prints itself: ``print(q.explain())``; ``.plan`` holds the data.

    ``estimate`` is the read cost the capacity model gives for the sample items passed to
    ``explain(sample=...)`` (None without a sample).
    """

    plan: QueryPlan
    estimate: ReadEstimate | None = None

    def __str__(self) -> str:
        return _render(self.plan, self.estimate)


def _estimate(plan: QueryPlan, sample: Iterable[Entity] | None) -> ReadEstimate | None:
    """Return the capacity model's read cost of one page that matches the sample items."""
    if sample is None or plan.count:
        return None
    items = [wire_item(e) for e in sample]
    return estimate_query(
        plan.table,
        plan.index,
        items,
        consistent=plan.consistent,
        attributes=plan.projection or (),
        select="ALL_ATTRIBUTES" if plan.projection is None and plan.fetched else None,
    )


def _cost_rule(plan: QueryPlan) -> str:
    """Describe, without data, how DynamoDB will charge this query's reads."""
    half = "" if plan.consistent else ", halved (eventually consistent)"
    what = "items" if plan.index is None else f"{plan.index.name} entries (+ keys)"
    rule = f"{what} summed per page, rounded up to 4 KB: 1 read unit per 4 KB{half}"
    if plan.fetched:
        rule += "; plus each matched item read whole from the table, rounded up to 4 KB alone"
    return rule


# -- cursors -----------------------------------------------------------------------------------

CursorState: TypeAlias = Literal["done"] | dict[str, Any] | None
"""Where one request stands: not started, finished, or the key to start after."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=json_default)


@dataclass(frozen=True)
class _Shape:
    """A plan's table, index, direction and requests: what its cursors must match.

    The fingerprint is computed on first use: most plans never make or read a cursor.
    """

    table: str
    index: str | None
    forward: bool
    requests: tuple[Request, ...]

    @cached_property
    def fingerprint(self) -> str:
        shape = [
            self.table,
            self.index,
            self.forward,
            [{k: v for k, v in r.params.items() if k != "Limit"} for r in self.requests],
        ]
        return hashlib.sha256(_canonical(shape).encode()).hexdigest()[:24]


def encode_cursor(fingerprint: str, states: Sequence[CursorState]) -> str:
    """Return the opaque cursor of a position in a plan's requests."""
    body = _canonical({"v": 1, "f": fingerprint, "s": [_key_out(s) for s in states]})
    return base64.urlsafe_b64encode(body.encode()).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, fingerprint: str, size: int) -> list[CursorState]:
    """Return the per-request positions of a cursor made by a plan with this fingerprint."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        ok = isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("s"), list)
    except (ValueError, UnicodeError, binascii.Error):
        ok = False
    if not ok:
        raise ValidationError("cursor.malformed", "This cursor was not made by lsiorm.")
    if data.get("f") != fingerprint or len(data["s"]) != size:
        raise ValidationError(
            "cursor.mismatch",
            "This cursor belongs to another query: its table, index, conditions or order "
            "differ from this one's.",
        )
    return [_key_in(s) for s in data["s"]]


def _key_out(state: CursorState) -> Any:
    if state is None or state == "done":
        return state
    assert isinstance(state, dict)
    return {
        k: ({"B64": base64.b64encode(v["B"]).decode()} if "B" in v else v) for k, v in state.items()
    }


def _key_in(state: Any) -> CursorState:
    if state is None or state == "done":
        return cast("CursorState", state)
    if not isinstance(state, dict):
        raise ValidationError("cursor.malformed", "This cursor was not made by lsiorm.")
    return {
        k: ({"B": base64.b64decode(v["B64"])} if isinstance(v, dict) and "B64" in v else v)
        for k, v in state.items()
    }


# -- key conditions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _SortCondition:
    """The sort-key part of a key condition: ``op`` over wire values."""

    op: str  # "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
    operands: tuple[Any, ...]

    def text(self, name: str, ph: Placeholders) -> str:
        vals = [ph.value(v) for v in self.operands]
        if self.op == "BETWEEN":
            return f"{name} BETWEEN {vals[0]} AND {vals[1]}"
        if self.op == "begins_with":
            return f"begins_with({name}, {vals[0]})"
        return f"{name} {self.op} {vals[0]}"


class _Empty(Exception):
    """The conditions provably match no item."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _pred(text: str) -> str:
    """Return the greatest string below ``text`` that no key starting with ``text`` reaches.

    Every key below ``text`` that does not start with it is at most this value.
    """
    code = ord(text[-1]) - 1
    if code in _SURROGATES:
        code = _BEFORE_SURROGATES
    return text[:-1] + chr(code) + MAX_CHAR


def _is_str_codec(codec: KeyCodec) -> bool:
    if isinstance(codec, EnumCodec):
        return isinstance(codec.inner, StrCodec)
    return isinstance(codec, StrCodec)


def _bounds(
    op: Operator, meta: EntityMeta, slot: FieldSlot, prefix: str, exact_var: bool, valid: _Valid
) -> tuple[str, str]:
    """Return the inclusive key interval [lo, hi] of one operator on field ``slot``.

    ``prefix`` is the key text before the field; ``exact_var`` means the field is the last
    segment of a variable-width (not prefix-free) template, so key text ends with the value.
    """
    codec = slot.codec
    assert codec is not None

    def enc(value: Any) -> str:
        return codec.encode(valid(meta, slot.field, value))

    lo, hi = prefix, prefix + MAX_CHAR
    if isinstance(op, BeginsWith):
        if not _is_str_codec(codec):
            raise QueryPlanError(
                "query.begins-with-type",
                f"begins_with needs a str field, but {meta.cls.__name__}.{slot.field} is encoded "
                f"by {codec!r}; use a range instead.",
            )
        text = prefix + codec.validate_prefix(op.prefix)
        return text, text + MAX_CHAR
    if isinstance(op, Between):
        return _lower(enc(op.low), True, prefix, exact_var), _upper(
            enc(op.high), True, prefix, exact_var
        )
    assert isinstance(op, Compare)
    value = enc(op.value)
    if op.op == "=":
        return _lower(value, True, prefix, exact_var), _upper(value, True, prefix, exact_var)
    if op.op in (">", ">="):
        return _lower(value, op.op == ">=", prefix, exact_var), hi
    return lo, _upper(value, op.op == "<=", prefix, exact_var)


def _validate(op: Operator, meta: EntityMeta, slot: FieldSlot) -> None:
    """Check an operator's values against the field even when no key range is built from them."""
    codec = slot.codec
    assert codec is not None
    if isinstance(op, BeginsWith):
        codec.validate_prefix(op.prefix)
    elif isinstance(op, Between):
        codec.encode(meta.validate_field(slot.field, op.low))
        codec.encode(meta.validate_field(slot.field, op.high))
    elif isinstance(op, Compare):
        codec.encode(meta.validate_field(slot.field, op.value))


def _lower(encoded: str, inclusive: bool, prefix: str, exact_var: bool) -> str:
    if inclusive:
        return prefix + encoded
    if exact_var:
        # The least string above ``encoded`` is ``encoded + U+0000``.
        return prefix + encoded + "\x00"
    return prefix + encoded + MAX_CHAR


def _upper(encoded: str, inclusive: bool, prefix: str, exact_var: bool) -> str:
    if inclusive:
        return prefix + encoded if exact_var else prefix + encoded + MAX_CHAR
    if exact_var:
        if encoded == "":
            raise _Empty("no string sorts below the empty string")
        if encoded[-1] == "\x00":
            # No string lies strictly between ``s`` and ``s + U+0000``.
            return prefix + encoded[:-1]
    return _pred(prefix + encoded)


def _single_eq(ops: Sequence[Operator] | None) -> bool:
    return ops is not None and len(ops) == 1 and isinstance(ops[0], Compare) and ops[0].op == "="


def _equalities(
    meta: EntityMeta, name: str, ops: Sequence[Operator] | None, valid: Any
) -> list[Any] | None:
    """Return the distinct validated values when every operator is an equality, else None."""
    if not ops or not all(isinstance(op, Compare) and op.op == "=" for op in ops):
        return None
    distinct: list[Any] = []
    for op in ops:
        value = valid(meta, name, cast("Compare", op).value)
        if value not in distinct:
            distinct.append(value)
    return distinct


def _describe_ops(name: str, ops: Sequence[Operator]) -> str:
    parts = []
    for op in ops:
        if isinstance(op, Compare):
            parts.append(f"{name} {op.op} {op.value!r}")
        elif isinstance(op, Between):
            parts.append(f"{name} between {op.low!r} and {op.high!r}")
        elif isinstance(op, BeginsWith):
            parts.append(f"{name} begins_with {op.prefix!r}")
        else:
            parts.append(f"{name} {op!r}")
    return " and ".join(parts)


class _Valid:
    """Validates condition values for one plan, each value once per entity and field.

    Every index option of a plan validates the same operator values again; the result is
    reused only for the very same value object, so it cannot stand for another value.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[type[Entity], str, int], tuple[Any, Any]] = {}

    def __call__(self, meta: EntityMeta, name: str, value: Any) -> Any:
        key = (meta.cls, name, id(value))
        hit = self._seen.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        checked = meta.validate_field(name, value)
        self._seen[key] = (value, checked)
        return checked


@dataclass
class _Fit:
    """How one index serves one entity's conditions."""

    meta: EntityMeta
    problem: str | None = None
    rule: str = ""
    absorbed: set[str] = field(default_factory=set)
    unabsorbed: dict[str, str] = field(default_factory=dict)
    inexact: dict[str, str] = field(default_factory=dict)
    partitions: list[Any] = field(default_factory=list)
    sort: _SortCondition | None = None
    empty: str | None = None
    shard_field: str | None = None


def _fit(
    meta: EntityMeta,
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    conds: Mapping[str, Sequence[Operator]],
    valid: _Valid,
) -> _Fit:
    """Return how ``index`` serves ``conds`` for one entity (problem set when it cannot)."""
    fit = _Fit(meta)
    cls_name = meta.cls.__name__
    pk_attr, sk_attr = table.index_key_attributes(index)
    pk_tpl = meta.templates.get(pk_attr)
    sk_tpl = meta.templates.get(sk_attr) if sk_attr is not None else None
    if pk_tpl is None or (sk_attr is not None and sk_tpl is None):
        missing = pk_attr if pk_tpl is None else sk_attr
        fit.problem = f"{cls_name} has no template for {missing!r}, so its items are not in it"
        fit.rule = "query.no-template"
        return fit

    # Partition: every field needs one equality, except a GSI shard, which fans out.
    values: dict[str, Any] = {}
    missing_fields_: list[str] = []
    contradiction: str | None = None
    for name in pk_tpl.fields:
        ops = conds.get(name)
        equal = _equalities(meta, name, ops, valid)
        if equal is not None and len(equal) > 1:
            contradiction = f"{_describe_ops(name, ops or ())} leaves no value"
            values[name] = equal[0]
            fit.absorbed.add(name)
        elif equal is not None:
            values[name] = equal[0]
            fit.absorbed.add(name)
        elif not ops and isinstance(index, GlobalIndex) and shard_of(meta, name) is not None:
            fit.shard_field = name
        else:
            missing_fields_.append(name)
    if missing_fields_:
        fit.problem = (
            f"its partition key {pk_attr!r} (template {pk_tpl.source!r}) needs equality on "
            f"{', '.join(missing_fields_)}"
        )
        fit.rule = "query.partition-fields"
        return fit
    if contradiction is not None:
        fit.empty = contradiction  # two different values for one partition field
    shards: list[int | None] = [None]
    if fit.shard_field is not None:
        shard = shard_of(meta, fit.shard_field)
        assert shard is not None
        shards = list(range(1, shard.count + 1))
    for number in shards:
        rendered = pk_tpl.render(
            values if number is None else {**values, cast("str", fit.shard_field): number}
        )
        if rendered is None or rendered == "":
            # A None field leaves the key out of the item (a sparse index): no item has it.
            fit.empty = f"no item has an empty or missing partition key {pk_attr!r}"
        fit.partitions.append(rendered)

    used = set(pk_tpl.fields)
    if sk_tpl is not None:
        used |= set(sk_tpl.fields)
        try:
            _fit_sort(fit, sk_tpl, conds, values, valid)
        except _Empty as empty:
            fit.empty = empty.why
    for name in conds:
        if name not in used:
            fit.unabsorbed[name] = f"{name} is not part of this index's keys"
    return fit


def _fit_sort(
    fit: _Fit,
    tpl: KeyTemplate,
    conds: Mapping[str, Sequence[Operator]],
    values: dict[str, Any],
    valid: _Valid,
) -> None:
    meta = fit.meta
    if tpl.is_direct:
        _fit_direct(fit, tpl, conds)
        return
    names = tpl.fields
    k = 0
    while k < len(names) and _single_eq(conds.get(names[k])):
        name = names[k]
        if name not in values:
            values[name] = valid(meta, name, cast("Compare", conds[name][0]).value)
        fit.absorbed.add(name)
        k += 1
    if k == len(names):
        fit.sort = _SortCondition("=", (to_wire(tpl.render(values)),))
        return
    prefix = tpl.prefix(values, k)
    name = names[k]
    ops = conds.get(name)
    after = name
    if ops:
        slot = tpl.slots[k]
        codec = slot.codec
        assert codec is not None
        last = tpl.segments[-1] is slot
        # begins_with is exact on any str field: its separator can occur in no value.
        prefixes_only = all(isinstance(op, BeginsWith) for op in ops)
        if codec.prefix_free or last or prefixes_only:
            # Absorbed even when the range proves empty: that answer is exact too.
            fit.absorbed.add(name)
            lo, hi = prefix, prefix + MAX_CHAR
            for op in ops:
                if not isinstance(op, (Compare, Between, BeginsWith)):
                    raise QueryPlanError(
                        "query.where-operator",
                        f"where() takes =, <, <=, >, >=, between and begins_with; "
                        f"put {op!r} on {name} in filter().",
                    )
                a, b = _bounds(op, meta, slot, prefix, last and not codec.prefix_free, valid)
                lo, hi = max(lo, a), min(hi, b)
            if lo > hi:
                raise _Empty(f"{_describe_ops(name, ops)} leaves no value")
            single = ops[0]
            if len(ops) == 1 and isinstance(single, BeginsWith):
                fit.sort = _begins(lo)
            elif lo == "":
                fit.sort = _SortCondition("<=", (to_wire(hi),))
            else:
                fit.sort = _SortCondition("BETWEEN", (to_wire(lo), to_wire(hi)))
            for later in names[k + 1 :]:
                if later in conds:
                    fit.unabsorbed[later] = (
                        f"{later} follows {name}, which has a range, in template {tpl.source!r}"
                    )
            return
        for op in ops:
            _validate(op, meta, slot)
        fit.inexact[name] = (
            f"{meta.cls.__name__}.{name} has a variable-length encoding and more of template "
            f"{tpl.source!r} follows it, so a key range over it would also admit keys whose "
            "value only starts like a bound; give the field a fixed-width type or move it last "
            "in the template"
        )
        fit.unabsorbed[name] = fit.inexact[name]
    fit.sort = _begins(prefix) if prefix else None
    for later in names[k + 1 :]:
        if later in conds and later not in fit.unabsorbed:
            fit.unabsorbed[later] = (
                f"{later} follows {after}, which has no equality, in template {tpl.source!r}"
            )


def _begins(prefix: str) -> _SortCondition | None:
    return _SortCondition("begins_with", (to_wire(prefix),)) if prefix else None


def _fit_direct(fit: _Fit, tpl: KeyTemplate, conds: Mapping[str, Sequence[Operator]]) -> None:
    meta = fit.meta
    name = tpl.fields[0]
    ops = conds.get(name)
    if not ops:
        return
    if len(ops) > 1:
        raise QueryPlanError(
            "query.repeated-field",
            f"{name} has several conditions on the number key {tpl.attribute!r}; "
            "give one (use between() for a range).",
        )
    op = ops[0]
    if isinstance(op, BeginsWith):
        raise QueryPlanError(
            "query.begins-with-type",
            f"begins_with needs a str field, but {meta.cls.__name__}.{name} is the "
            f"{tpl.attribute_type} key {tpl.attribute!r}.",
        )

    def enc(value: Any) -> Any:
        return encode_value(meta, name, value)

    fit.absorbed.add(name)
    if isinstance(op, Between):
        low, high = meta.validate_field(name, op.low), meta.validate_field(name, op.high)
        if low > high:
            raise _Empty(f"{name} between {op.low!r} and {op.high!r} leaves no value")
        fit.sort = _SortCondition("BETWEEN", (enc(low), enc(high)))
    elif isinstance(op, Compare) and op.op in _KEY_OPERATORS:
        fit.sort = _SortCondition(op.op, (enc(op.value),))
    else:
        raise QueryPlanError(
            "query.where-operator",
            f"where() takes =, <, <=, >, >=, between and begins_with; put {op!r} on {name} "
            "in filter().",
        )


# -- projection --------------------------------------------------------------------------------


def _index_kind(index: LocalIndex | GlobalIndex | None) -> Literal["table", "local", "global"]:
    if index is None:
        return "table"
    return "local" if isinstance(index, LocalIndex) else "global"


def _projected(table: Table, index: LocalIndex | GlobalIndex | None) -> frozenset[str] | None:
    if index is None:
        return None
    return table.projected_attributes(index)


def _key_attrs(table: Table, index: LocalIndex | GlobalIndex | None) -> set[str]:
    keys = {*table.index_key_attributes(None)}
    if index is not None:
        keys |= {*table.index_key_attributes(index)}
    return {k for k in keys if k is not None}


def _recoverable(meta: EntityMeta, keys: set[str]) -> set[str]:
    """Fields whose values can be parsed back from these key attributes."""
    return {f for attr, tpl in meta.templates.items() if attr in keys for f in tpl.fields}


def _covered(
    meta: EntityMeta, table: Table, index: LocalIndex | GlobalIndex | None, fields: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Return (fields the index cannot return, their stored attribute names)."""
    projected = _projected(table, index)
    if projected is None:
        return [], []
    recoverable = _recoverable(meta, _key_attrs(table, index))
    out = [f for f in fields if meta.attributes[f] not in projected and f not in recoverable]
    return out, [meta.attributes[f] for f in out]


def _filter_fields(condition: Condition | None) -> set[str]:
    if condition is None:
        return set()
    if isinstance(condition, FieldCondition):
        return {condition.field}
    if isinstance(condition, Not):
        return _filter_fields(condition.item)
    return {f for c in condition.items for f in _filter_fields(c)}


def _projection_names(attrs: Iterable[str], ph: Placeholders) -> str:
    return ", ".join(ph.name(a) for a in attrs)


# -- the query planner -------------------------------------------------------------------------


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

    @property
    def label(self) -> str:
        return self.index.name if self.index is not None else "table"

    @property
    def covers(self) -> bool:
        return not self.fetched and not self.unavailable


# Rules of candidates that serve the partition but fail for another reason, in the order
# their error is preferred over the generic "query.no-index".
_SOFT_RULES: Final = (
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
        self.filter_fields = _filter_fields(q.filter_condition)

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
                if name not in meta.attributes:  # the model's fields, without a class lookup
                    raise ValidationError(
                        "field.unknown",
                        f"{meta.cls.__name__} has no field {name!r}; fields are "
                        f"{', '.join(meta.cls.model_fields)}.",
                        table=self.table.name,
                    )
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

    def _choose(self, options: list[_Option]) -> _Option:
        usable = [o for o in options if o.problem is None]
        if not usable:
            raise self._no_index(options)
        best = max(usable, key=lambda o: (o.score, o.covers, o.index is None, -o.order))
        if best.unabsorbed and not self.q.fallback:
            raise self._unabsorbed(best, usable)
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

    def _unabsorbed(self, best: _Option, usable: list[_Option]) -> QueryPlanError:
        # An index whose keys hold the field but cannot bound it exactly explains more than
        # the winner of the tie, whose keys may not hold the field at all.
        for option in [best, *usable]:
            inexact = {n: why for n, why in option.inexact.items() if n in best.unabsorbed}
            if inexact:
                name, why = next(iter(inexact.items()))
                return QueryPlanError(
                    "query.inexact-range",
                    f"The range on {name} cannot be exact on {option.label}: {why}. Or call "
                    "allow_filter_fallback() to read the key range and filter it.",
                    table=self.table.name,
                )
        detail = "; ".join(best.unabsorbed.values())
        return QueryPlanError(
            "query.unabsorbed",
            f"No index answers every where() condition in its key condition (best: "
            f"{best.label}; {detail}). Move those conditions to filter(), or call "
            "allow_filter_fallback().",
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
        kind = _index_kind(index)
        projected = _projected(table, index)
        type_available = projected is None or table.type_attribute in projected
        fetching = bool(best.fetched)

        selected = None if self.count else q.fields
        requests: list[Request] = []
        grouped: dict[str, tuple[dict[str, Any], list[type[Entity]], list[str]]] = {}
        first_text: tuple[str | None, str | None, dict[str, str], dict[str, Any]] | None = None
        # Requests are grouped by their canonical text; one request needs no grouping.
        single = sum(len(fit.partitions) for fit in best.fits) == 1
        for fit in best.fits:
            meta = fit.meta
            for n, partition in enumerate(fit.partitions):
                ph = Placeholders()
                key_text = f"{ph.name(pk_attr)} = {ph.value(to_wire(partition))}"
                if fit.sort is not None:
                    assert sk_attr is not None
                    key_text += " AND " + fit.sort.text(ph.name(sk_attr), ph)
                filter_parts = []
                for name, ops in fallback.items():
                    for op in ops:
                        filter_parts.append(FieldCondition(name, op))
                user = q.filter_condition
                conditions: list[Condition] = list(filter_parts)
                if user is not None:
                    conditions.append(user)
                filter_text = None
                if conditions:
                    whole = conditions[0] if len(conditions) == 1 else And(tuple(conditions))
                    filter_text = compile_entity_condition(meta, whole, ph)
                params: dict[str, Any] = {"TableName": table.name}
                if index is not None:
                    params["IndexName"] = index.name
                params["KeyConditionExpression"] = key_text
                if filter_text is not None:
                    params["FilterExpression"] = filter_text
                if self.count:
                    params["Select"] = "COUNT"
                else:
                    attrs = _projection_attrs(
                        meta, table, index, selected, type_available or fetching
                    )
                    if attrs is not None:
                        params["ProjectionExpression"] = _projection_names(attrs, ph)
                    elif fetching and kind == "local":
                        params["Select"] = "ALL_ATTRIBUTES"
                if not q.forward:
                    params["ScanIndexForward"] = False
                if q.consistent_read:
                    params["ConsistentRead"] = True
                ph.into(params)
                if first_text is None:
                    first_text = (key_text, filter_text, dict(ph.names), dict(ph.values))
                label = meta.cls.__name__
                if fit.shard_field is not None:
                    label += f" {fit.shard_field}={n + 1}"
                signature = "" if single else _canonical(params)
                if signature in grouped:
                    grouped[signature][1].append(meta.cls)
                else:
                    grouped[signature] = (params, [meta.cls], [label])
        has_filter = q.filter_condition is not None or bool(fallback)
        for params, classes, labels in grouped.values():
            limit = q.request_limit
            if q.max_items is not None and not has_filter:
                limit = min(limit or q.max_items, q.max_items)
            requests.append(
                Request(
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
            operation="Query",
            table=table,
            entities=q.entities,
            index=index,
            requests=final,
            candidates=candidates,
            key_condition=first_key,
            filter=first_filter,
            names=names,
            values=values,
            projection=_projection_of(final, names),
            fetched=tuple(best.fetched) if not self.count else (),
            unavailable=tuple(best.unavailable) if not self.count else (),
            missing_mode=q.missing,
            selected=selected,
            fallback_filters=fallback_text,
            forward=q.forward,
            max_items=q.max_items,
            request_limit=q.request_limit,
            consistent=q.consistent_read,
            count=self.count,
            merge_attribute=sk_attr,
            empty=empty,
            has_filter=has_filter,
            _shape=_Shape(table.name, index.name if index else None, q.forward, final),
            cursor=q.cursor,
        )


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


def _projection_of(requests: Sequence[Request], names: Mapping[str, str]) -> tuple[str, ...] | None:
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


# -- the scan planner --------------------------------------------------------------------------


class _ScanPlanner:
    def __init__(self, s: Scan[Any], count: bool) -> None:
        self.s = s
        self.count = count
        self.metas = [meta_of(cls) for cls in s.entities]
        self.table = self.metas[0].table

    def plan(self) -> QueryPlan:
        s, table = self.s, self.table
        index = table.index(s.index) if s.index is not None else None
        kind = _index_kind(index)
        if kind == "global" and s.consistent_read:
            raise QueryPlanError(
                "query.gsi-consistent-read",
                f"Consistent reads are not available on global secondary index {s.index!r}.",
                table=table.name,
            )
        projected = _projected(table, index)
        type_available = projected is None or table.type_attribute in projected
        filter_fields = _filter_fields(s.filter_condition)
        if projected is not None and filter_fields:
            lacking = sorted(
                {m.attributes[f] for m in self.metas for f in filter_fields if f in m.attributes}
                - projected
            )
            if lacking:
                raise QueryPlanError(
                    "query.filter-not-projected",
                    f"The filter reads {', '.join(lacking)}, which index {s.index!r} does not "
                    "project (a filter cannot fetch from the table).",
                    table=table.name,
                )
        fetched: list[str] = []
        unavailable: list[str] = []
        for meta in self.metas:
            wanted = [] if self.count else list(s.fields or meta.cls.model_fields)
            fields, attrs = _covered(meta, table, index, wanted)
            if kind == "local":
                fetched.extend(a for a in attrs if a not in fetched)
            else:
                unavailable.extend(f for f in fields if f not in unavailable)
        if unavailable and s.missing == "error":
            raise QueryPlanError(
                "query.gsi-projection",
                f"Index {s.index!r} does not project {', '.join(unavailable)}; use hydrate(), "
                "partial() or select().",
                table=table.name,
            )
        selected = None if self.count else s.fields
        filters = {self._filter(meta, type_available) for meta in self.metas}
        if len(filters) > 1:
            raise QueryPlanError(
                "query.filter-attribute-differs",
                "The filter's fields are stored under different attribute names by these "
                "entities; scan them one at a time.",
                table=table.name,
            )
        ph = Placeholders()
        filter_text = self._filter_into(self.metas[0], type_available, ph)
        params: dict[str, Any] = {"TableName": table.name}
        if index is not None:
            params["IndexName"] = index.name
        if filter_text is not None:
            params["FilterExpression"] = filter_text
        if self.count:
            params["Select"] = "COUNT"
        elif selected is not None:
            named: list[str] = []
            for meta in self.metas:
                more = _projection_attrs(
                    meta, table, index, selected, type_available or bool(fetched)
                )
                named.extend(more or ())
            params["ProjectionExpression"] = _projection_names(dict.fromkeys(named), ph)
        elif fetched:
            params["Select"] = "ALL_ATTRIBUTES"
        if s.consistent_read:
            params["ConsistentRead"] = True
        ph.into(params)
        requests = []
        for segment in range(s.total_segments):
            seg = dict(params)
            if s.total_segments > 1:
                seg["Segment"] = segment
                seg["TotalSegments"] = s.total_segments
            limit = s.request_limit
            if s.max_items is not None and filter_text is None:
                limit = min(limit or s.max_items, s.max_items)
            requests.append(
                Request(seg, s.entities, f"segment {segment}", None if self.count else limit)
            )
        label = index.name if index is not None else None
        return QueryPlan(
            operation="Scan",
            table=table,
            entities=s.entities,
            index=index,
            requests=tuple(requests),
            candidates=(Candidate(label, kind, None, True, "named by scan().using()"),),
            key_condition=None,
            filter=filter_text,
            names=dict(ph.names),
            values=dict(ph.values),
            projection=_projection_of(requests, ph.names),
            fetched=tuple(fetched) if not self.count else (),
            unavailable=tuple(unavailable) if not self.count else (),
            missing_mode=s.missing,
            selected=selected,
            fallback_filters=(),
            forward=True,
            max_items=s.max_items,
            request_limit=s.request_limit,
            consistent=s.consistent_read,
            count=self.count,
            merge_attribute=None,
            empty=None,
            has_filter=filter_text is not None,
            _shape=_Shape(table.name, label, True, tuple(requests)),
            cursor=s.cursor,
            segments=s.total_segments,
            on_progress=s.on_progress,
        )

    def _filter(self, meta: EntityMeta, type_available: bool) -> str:
        ph = Placeholders()
        text = self._filter_into(meta, type_available, ph)
        return _canonical([text, ph.names, ph.values])

    def _filter_into(self, meta: EntityMeta, type_available: bool, ph: Placeholders) -> str | None:
        parts: list[str] = []
        if type_available:
            # Only the requested entity types: other items are neither returned nor counted.
            tname = ph.name(self.table.type_attribute)
            types = [to_wire(m.type_name) for m in self.metas]
            if len(types) == 1:
                parts.append(f"{tname} = {ph.value(types[0])}")
            else:
                parts.append(f"{tname} IN ({', '.join(ph.value(t) for t in types)})")
        if self.s.filter_condition is not None:
            user = compile_entity_condition(meta, self.s.filter_condition, ph)
            parts.append(f"({user})" if parts else user)
        return " AND ".join(parts) if parts else None


# -- explain -----------------------------------------------------------------------------------


def _show_value(av: Mapping[str, Any]) -> str:
    ((tag, raw),) = av.items()
    if tag == "N":
        return str(raw)
    if tag == "S":
        return repr(raw)
    if tag == "B":
        return f"<{len(raw)} bytes>"
    return repr(raw)


def _index_text(plan: QueryPlan) -> str:
    index = plan.index
    if index is None:
        return f"table {plan.table.name!r}"
    kind = "LSI" if isinstance(index, LocalIndex) else "GSI"
    projection = index.projection
    what: str = projection.type
    if projection.type == "INCLUDE":
        what += f" ({', '.join(projection.attributes)})"
    return f"{index.name} ({kind} of {plan.table.name!r}, projects {what})"


_PLACEHOLDER: Final = re.compile(r"[#:][nv][0-9]+")


def _readable(text: str, plan: QueryPlan) -> str:
    """Return expression text with its placeholders replaced by the names and values."""

    def swap(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in plan.names:
            return plan.names[token]
        if token in plan.values:
            return _show_value(plan.values[token])
        return token

    return _PLACEHOLDER.sub(swap, text)


def _projection_text(plan: QueryPlan) -> str:
    if plan.projection is not None:
        return ", ".join(plan.projection)
    select = plan.requests[0].params.get("Select") if plan.requests else None
    if select is not None:
        return f"every attribute (Select={select})"
    if plan.index is None or plan.index.projection.type == "ALL":
        return "every attribute"
    return f"the attributes {plan.index.name} projects"


def _render(plan: QueryPlan, estimate: ReadEstimate | None = None) -> str:
    names = ", ".join(e.__name__ for e in plan.entities)
    what = "Count" if plan.count else plan.operation
    lines = [f"{what} {names}"]
    indent = " " * 14

    def row(label: str, text: str) -> None:
        lines.append(f"  {label:<12}{text}")

    row("index", _index_text(plan))
    if plan.empty is not None:
        row("result", f"empty without a request: {plan.empty}")
    if plan.key_condition is not None:
        row("key", plan.key_condition)
        lines.append(indent + "= " + _readable(plan.key_condition, plan))
    if plan.filter is not None:
        row("filter", plan.filter)
        lines.append(indent + "= " + _readable(plan.filter, plan))
        lines.append(indent + "(applied after the read: items it drops still cost capacity)")
    for text in plan.fallback_filters:
        row("fallback", f"{text} is filtered, not part of the key condition")
    if plan.names:
        row("names", ", ".join(f"{k} = {v}" for k, v in plan.names.items()))
    for n, (k, v) in enumerate(plan.values.items()):
        text = f"{k} = {_show_value(v)}"
        if n == 0:
            row("values", text)
        else:
            lines.append(indent + text)
    if not plan.count:
        row("projection", _projection_text(plan))
        if plan.fetched:
            row(
                "fetched",
                f"{', '.join(plan.fetched)} (not projected; read from the table per item)",
            )
        if plan.unavailable:
            how = {
                "hydrate": "read from the table with BatchGetItem",
                "partial": "left missing in partial results",
                "error": "refused",
            }[plan.missing_mode]
            row("missing", f"{', '.join(plan.unavailable)} (not projected; {how})")
        if plan.selected is not None:
            row("fields", ", ".join(plan.selected))
    order = "ascending" if plan.forward else "descending"
    extras = [order] if plan.operation == "Query" else []
    if plan.max_items is not None:
        extras.append(f"limit {plan.max_items}")
    if plan.request_limit is not None:
        extras.append(f"page size {plan.request_limit}")
    extras.append("strongly consistent" if plan.consistent else "eventually consistent")
    row("read", ", ".join(extras))
    if not plan.count and plan.empty is None:
        row("cost", _cost_rule(plan))
        if estimate is not None:
            lines.append(indent + f"sample estimate: {estimate}")
    if len(plan.requests) > 1:
        merge = (
            f", merged by {plan.merge_attribute}"
            if plan.merge_attribute is not None and plan.operation == "Query"
            else ""
        )
        row(
            "requests", f"{len(plan.requests)} ({', '.join(r.label for r in plan.requests)}){merge}"
        )
    if plan.operation == "Query":
        lines.append("  candidates")
        width = max(len(c.label) for c in plan.candidates)
        for c in plan.candidates:
            mark = "*" if c.chosen else "-"
            lines.append(f"    {mark} {c.label:<{width}}  {c.reason}")
    return "\n".join(lines)
