"""Conditions on model fields, as immutable values, and their compilation to expressions.

A condition is written in model-field terms::

    where(replies=gt(5), subject=begins_with("How"))
    cond("replies") > 5            # the same thing as a value
    (cond("tags").exists()) | (cond("replies") == 0)

Compilation never splices user text into an expression: every attribute name becomes ``#nK`` and
every value ``:vK`` through one `Placeholders` allocator per request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from lsiorm.errors import ValidationError

__all__ = [
    "And",
    "Attr",
    "BeginsWith",
    "Between",
    "Compare",
    "Condition",
    "Contains",
    "Exists",
    "FieldCondition",
    "In",
    "Not",
    "NotExists",
    "Operator",
    "Or",
    "Placeholders",
    "all_of",
    "any_of",
    "begins_with",
    "between",
    "compile_stored",
    "cond",
    "contains",
    "eq",
    "exists",
    "field_conditions",
    "ge",
    "gt",
    "is_in",
    "le",
    "lt",
    "ne",
    "not_exists",
    "where",
]


# -- operators: what is applied to one field ---------------------------------------------------


@dataclass(frozen=True)
class Compare:
    """``field <op> value`` with op one of = <> < <= > >=."""

    op: str
    value: Any


@dataclass(frozen=True)
class Between:
    """``low <= field <= high`` (inclusive at both ends, as in DynamoDB)."""

    low: Any
    high: Any


@dataclass(frozen=True)
class BeginsWith:
    """The field's string value starts with ``prefix`` (an AttributeValue, in a condition on
    stored attributes: see `compile_stored`)."""

    prefix: Any


@dataclass(frozen=True)
class Exists:
    """The attribute is present."""


@dataclass(frozen=True)
class NotExists:
    """The attribute is absent."""


@dataclass(frozen=True)
class In:
    """The field equals one of ``values``."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class Contains:
    """A string contains a substring, or a set/list contains an element."""

    value: Any


Operator = Compare | Between | BeginsWith | Exists | NotExists | In | Contains
"""What a keyword condition applies to its field: `gt(5)`, `between(a, b)`, ..."""


def eq(value: Any) -> Compare:
    """Return the operator ``= value``."""
    return Compare("=", value)


def ne(value: Any) -> Compare:
    """Return the operator ``<> value``."""
    return Compare("<>", value)


def lt(value: Any) -> Compare:
    """Return the operator ``< value``."""
    return Compare("<", value)


def le(value: Any) -> Compare:
    """Return the operator ``<= value``."""
    return Compare("<=", value)


def gt(value: Any) -> Compare:
    """Return the operator ``> value``."""
    return Compare(">", value)


def ge(value: Any) -> Compare:
    """Return the operator ``>= value``."""
    return Compare(">=", value)


def between(low: Any, high: Any) -> Between:
    """Return the inclusive range operator."""
    return Between(low, high)


def begins_with(prefix: str) -> BeginsWith:
    """Return the string-prefix operator."""
    return BeginsWith(prefix)


def exists() -> Exists:
    """Return the attribute-present operator."""
    return Exists()


def not_exists() -> NotExists:
    """Return the attribute-absent operator."""
    return NotExists()


def is_in(*values: Any) -> In:
    """Return the membership operator."""
    return In(tuple(values))


def contains(value: Any) -> Contains:
    """Return the contains operator."""
    return Contains(value)


# -- conditions: trees of field operators ------------------------------------------------------


class _Combinable:
    def __and__(self, other: Condition) -> And:
        return And((cast("Condition", self), other))

    def __or__(self, other: Condition) -> Or:
        return Or((cast("Condition", self), other))

    def __invert__(self) -> Not:
        return Not(cast("Condition", self))


@dataclass(frozen=True)
class FieldCondition(_Combinable):
    """One operator applied to one model field."""

    field: str
    op: Operator


@dataclass(frozen=True)
class And(_Combinable):
    """All of the conditions hold."""

    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Or(_Combinable):
    """At least one of the conditions holds."""

    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not(_Combinable):
    """The condition does not hold."""

    item: Condition


Condition = FieldCondition | And | Or | Not
"""A condition: one operator on one field, or conditions joined by and, or, not."""


@dataclass(frozen=True, eq=False)
class Attr:
    """A reference to a model field, for operator-style conditions: ``cond("replies") > 5``."""

    name: str

    # Any keeps these overrides compatible with object.__eq__ for type checkers.
    def __eq__(self, value: object) -> Any:
        return FieldCondition(self.name, Compare("=", value))

    def __ne__(self, value: object) -> Any:
        return FieldCondition(self.name, Compare("<>", value))

    def __lt__(self, value: Any) -> FieldCondition:
        return FieldCondition(self.name, Compare("<", value))

    def __le__(self, value: Any) -> FieldCondition:
        return FieldCondition(self.name, Compare("<=", value))

    def __gt__(self, value: Any) -> FieldCondition:
        return FieldCondition(self.name, Compare(">", value))

    def __ge__(self, value: Any) -> FieldCondition:
        return FieldCondition(self.name, Compare(">=", value))

    def __hash__(self) -> int:
        return hash(("Attr", self.name))

    def between(self, low: Any, high: Any) -> FieldCondition:
        """Return ``low <= field <= high``."""
        return FieldCondition(self.name, Between(low, high))

    def begins_with(self, prefix: str) -> FieldCondition:
        """Return ``field`` starts with ``prefix``."""
        return FieldCondition(self.name, BeginsWith(prefix))

    def exists(self) -> FieldCondition:
        """Return ``field`` is present."""
        return FieldCondition(self.name, Exists())

    def not_exists(self) -> FieldCondition:
        """Return ``field`` is absent."""
        return FieldCondition(self.name, NotExists())

    def is_in(self, *values: Any) -> FieldCondition:
        """Return ``field`` is one of values."""
        return FieldCondition(self.name, In(tuple(values)))

    def contains(self, value: Any) -> FieldCondition:
        """Return ``field`` contains value."""
        return FieldCondition(self.name, Contains(value))


def cond(name: str) -> Attr:
    """Return a field reference for operator-style conditions."""
    return Attr(name)


def where(**fields: Any) -> Condition:
    """Return the conjunction of keyword conditions; a bare value means equality."""
    items = tuple(FieldCondition(k, as_operator(v)) for k, v in fields.items())
    if not items:
        raise ValidationError("condition.empty", "where() needs at least one field condition.")
    return items[0] if len(items) == 1 else And(items)


def all_of(*conditions: Condition) -> Condition:
    """Return the conjunction of conditions."""
    return conditions[0] if len(conditions) == 1 else And(tuple(conditions))


def any_of(*conditions: Condition) -> Condition:
    """Return the disjunction of conditions."""
    return conditions[0] if len(conditions) == 1 else Or(tuple(conditions))


_OPERATOR_TYPES = (Compare, Between, BeginsWith, Exists, NotExists, In, Contains)


def as_operator(value: Any) -> Operator:
    """Return value as an operator; a plain value means equality."""
    if isinstance(value, _OPERATOR_TYPES):
        return value
    return Compare("=", value)


def field_conditions(condition: Condition | None) -> Iterator[FieldCondition]:
    """Yield every field condition of a condition tree, left to right, through And, Or and Not.

    The one walker over condition trees: code that needs the fields a condition names (or the
    ones it applies a given operator to) filters what this yields.
    """
    if condition is None:
        return
    if isinstance(condition, FieldCondition):
        yield condition
    elif isinstance(condition, Not):
        yield from field_conditions(condition.item)
    else:
        for item in condition.items:
            yield from field_conditions(item)


# -- compilation -------------------------------------------------------------------------------


@dataclass
class Placeholders:
    """Allocates ``#nK`` and ``:vK`` placeholders for one request; names are reused.

    ``prefix`` replaces both letters (``Placeholders(prefix="u")`` allocates ``#uK`` and
    ``:uK``), for a part that is joined onto a request another allocator built (a guard added
    to a user's write), so that their placeholders cannot meet.
    """

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    _by_name: dict[str, str] = field(default_factory=dict)
    prefix: str | None = None

    def name(self, attribute: str) -> str:
        """Return the placeholder of an attribute name (the same one each time)."""
        ph = self._by_name.get(attribute)
        if ph is None:
            ph = f"#{self.prefix or 'n'}{len(self._by_name)}"
            self._by_name[attribute] = ph
            self.names[ph] = attribute
        return ph

    def value(self, wire_value: Any) -> str:
        """Return a fresh placeholder for a wire-format AttributeValue."""
        ph = f":{self.prefix or 'v'}{len(self.values)}"
        self.values[ph] = wire_value
        return ph

    def into(self, params: dict[str, Any]) -> dict[str, Any]:
        """Add ExpressionAttributeNames/Values to request params when there are any."""
        if self.names:
            params["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            params["ExpressionAttributeValues"] = dict(self.values)
        return params


ValueEncoder = Callable[[str, Any], Any]
"""Turns (field name, python value) into a wire AttributeValue; raises on a bad value."""


def compile_condition(
    condition: Condition,
    ph: Placeholders,
    *,
    attribute_of: Callable[[str], str],
    encode: ValueEncoder,
) -> str:
    """Return expression text for a condition, allocating placeholders in ``ph``.

    ``attribute_of`` maps a model field to its attribute name (and rejects unknown fields).
    """
    if isinstance(condition, And):
        return " AND ".join(
            _group(compile_condition(c, ph, attribute_of=attribute_of, encode=encode), c)
            for c in condition.items
        )
    if isinstance(condition, Or):
        return " OR ".join(
            _group(compile_condition(c, ph, attribute_of=attribute_of, encode=encode), c)
            for c in condition.items
        )
    if isinstance(condition, Not):
        inner = compile_condition(condition.item, ph, attribute_of=attribute_of, encode=encode)
        return f"NOT ({inner})"
    name = ph.name(attribute_of(condition.field))
    op = condition.op

    def val(v: Any) -> str:
        return ph.value(encode(condition.field, v))

    if isinstance(op, Compare) and op.value is None and op.op in ("=", "<>"):
        # None is absence: "= None" holds for a missing attribute (and for a NULL one, as
        # older versions stored None), "<> None" for any other value.
        null = ph.value({"S": "NULL"})
        if op.op == "=":
            return f"(attribute_not_exists({name}) OR attribute_type({name}, {null}))"
        return f"(attribute_exists({name}) AND NOT attribute_type({name}, {null}))"
    if isinstance(op, Compare):
        if op.op in _ORDERING:
            wire = encode(condition.field, op.value)
            _check_operand(condition.field, op.op, wire, _SCALARS)
            return f"{name} {op.op} {ph.value(wire)}"
        return f"{name} {op.op} {val(op.value)}"
    if isinstance(op, Between):
        low, high = encode(condition.field, op.low), encode(condition.field, op.high)
        _check_operand(condition.field, "BETWEEN", low, _SCALARS)
        _check_operand(condition.field, "BETWEEN", high, _SCALARS)
        _check_between(condition.field, low, high)
        return f"{name} BETWEEN {ph.value(low)} AND {ph.value(high)}"
    if isinstance(op, BeginsWith):
        wire = encode(condition.field, op.prefix)
        _check_operand(condition.field, "begins_with", wire, ("S", "B"))
        return f"begins_with({name}, {ph.value(wire)})"
    if isinstance(op, Exists):
        return f"attribute_exists({name})"
    if isinstance(op, NotExists):
        return f"attribute_not_exists({name})"
    if isinstance(op, In):
        if not op.values:
            raise ValidationError("condition.in-empty", "is_in() needs at least one value.")
        if len(op.values) > 100:
            raise ValidationError(
                "condition.in-too-many", "DynamoDB allows at most 100 values in an IN condition."
            )
        return f"{name} IN ({', '.join(val(v) for v in op.values)})"
    if isinstance(op, Contains):
        return f"contains({name}, {val(op.value)})"
    raise ValidationError("condition.operator", f"Unknown operator {op!r}.")


_ORDERING = frozenset({"<", "<=", ">", ">="})
_SCALARS = ("S", "N", "B")
_TYPE_NAMES = {
    "S": "a string",
    "N": "a number",
    "B": "binary",
    "BOOL": "a bool",
    "NULL": "None",
    "L": "a list",
    "M": "a map",
    "SS": "a string set",
    "NS": "a number set",
    "BS": "a binary set",
}


def compile_stored(condition: Condition, ph: Placeholders) -> str:
    """Return expression text for a condition on stored attributes, with wire values.

    The fields of ``condition`` are attribute names as stored (``"PK"``, ``"state"``) and its
    values are AttributeValues already (``{"S": "USER#1"}``): lsiorm's own requests (the key
    jobs' reads and guards, the ledger's) are written this way, where no entity declares the
    attributes. Operand checks apply as for entity conditions.
    """
    return compile_condition(condition, ph, attribute_of=_as_stored, encode=_as_wire)


def _as_stored(attribute: str) -> str:
    return attribute


def _as_wire(_attribute: str, wire: Any) -> Any:
    return wire


def _tag(wire: Any) -> str:
    return next(iter(wire)) if isinstance(wire, Mapping) and len(wire) == 1 else "?"


def _check_operand(field: str, operator: str, wire: Any, allowed: tuple[str, ...]) -> None:
    """Refuse, before any request, an operand type DynamoDB refuses for this operator.

    DynamoDB orders (<, <=, >, >=, BETWEEN) strings, numbers and binary only, and begins_with
    takes a string or binary prefix; a bool compares with = and <> alone.
    """
    tag = _tag(wire)
    if tag in allowed:
        return
    what = _TYPE_NAMES.get(tag, "this type")
    if tag == "BOOL":
        raise ValidationError(
            "condition.bool-operator",
            f"The condition on {field!r} applies {operator} to a bool; DynamoDB compares bool "
            "values only with = and <> (use eq() or ne()).",
        )
    raise ValidationError(
        "condition.operand-type",
        f"The condition on {field!r} applies {operator} to {what}; DynamoDB accepts only "
        f"{' or '.join(_TYPE_NAMES[t] for t in allowed)} there.",
    )


def _check_between(field: str, low: Any, high: Any) -> None:
    """Refuse a BETWEEN whose bounds differ in type or are reversed, as DynamoDB does."""
    lt, ht = _tag(low), _tag(high)
    if lt != ht:
        raise ValidationError(
            "condition.operand-type",
            f"between() on {field!r} has bounds of different types ({_TYPE_NAMES.get(lt, lt)} "
            f"and {_TYPE_NAMES.get(ht, ht)}); DynamoDB refuses that.",
        )
    lo, hi = low[lt], high[ht]
    if lt == "N":
        try:
            reversed_ = Decimal(lo) > Decimal(hi)
        except InvalidOperation:
            return
    elif lt == "S":
        reversed_ = lo > hi
    else:
        reversed_ = bytes(lo) > bytes(hi)
    if reversed_:
        raise ValidationError(
            "condition.between-order",
            f"between() on {field!r} has its lower bound above its upper bound; DynamoDB "
            "refuses such a BETWEEN (swap the bounds).",
        )


def _group(text: str, c: Condition) -> str:
    return f"({text})" if isinstance(c, (And, Or)) else text
