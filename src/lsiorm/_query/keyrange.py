"""Key ranges: how an index's key templates bound field conditions exactly, entity by entity.

`fit_index` returns the partition values and the sort condition one index gives one
entity's ``where()`` conditions, and which conditions it absorbs; `.compile` writes them.

Exact key conditions rest on three facts. Key text of S templates compares as Python ``str``
(code-point order, which is UTF-8 byte order for valid Unicode). `MAX_CHAR` can never occur
in key text, so every key beginning with ``P`` is below ``P + MAX_CHAR``. Namespaces of entities
that can share a partition are prefix-free (checked when classes are declared), so a bound built
inside one namespace never reaches another entity's items.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, cast

from lsiorm._conditions import (
    BeginsWith,
    Between,
    Compare,
    Operator,
)
from lsiorm._model.codec import MAX_CHAR, KeyCodec
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import MAX_SORT_KEY_BYTES, EntityMeta
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.number_text import adjacent_number, int_text
from lsiorm._model.schema import Table
from lsiorm._model.shards import shard_of
from lsiorm._model.template import FieldSlot, KeyTemplate
from lsiorm._model.text_codecs import EnumCodec, PlainStrCodec, PrintableStrCodec, StrCodec
from lsiorm._model.wire import to_wire
from lsiorm._requests.items import encode_value
from lsiorm.errors import QueryPlanError, ValidationError

KEY_OPERATORS: Final = frozenset({"=", "<", "<=", ">", ">="})

# The last code point below the surrogate block; a decremented character never lands inside it.
_BEFORE_SURROGATES: Final = 0xD7FF
_SURROGATES: Final = range(0xD800, 0xE000)


@dataclass(frozen=True)
class SortCondition:
    """The sort-key part of a key condition: ``op`` over wire values."""

    op: str  # "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
    operands: tuple[Any, ...]


class _Empty(Exception):
    """The conditions provably match no item."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def predecessor(text: str) -> str:
    """Return the greatest string below ``text`` that no key starting with ``text`` reaches.

    Every key below ``text`` that does not start with it is at most this value. A text ending
    in U+0000 (a str field's terminator) has no character below its last one: every string
    below it is at most the text without that character.
    """
    if text[-1] == "\x00":
        return text[:-1]
    code = ord(text[-1]) - 1
    if code in _SURROGATES:
        code = _BEFORE_SURROGATES
    return text[:-1] + chr(code) + MAX_CHAR


def _is_str_codec(codec: KeyCodec) -> bool:
    inner = codec.inner if isinstance(codec, EnumCodec) else codec
    return isinstance(inner, (StrCodec, PlainStrCodec, PrintableStrCodec))


def needs_check(tpl: KeyTemplate, slot: FieldSlot) -> bool:
    """Whether key text alone cannot tell this field's value exactly (plain style only).

    So when a plain value may hold the separator that follows it (``a#b`` then ``#``), or a
    transform folds several values onto one text: a condition on the field then also reads
    its stored attribute.
    """
    return slot.field in tpl.ambiguous_fields


def _plain_range(meta: EntityMeta[Entity], tpl: KeyTemplate, name: str) -> str:
    text = (
        f"{meta.cls.__name__}.{name} has the plain key style, whose text in template "
        f"{tpl.source!r} does not sort as its values do (an unpadded number, or text that a "
        "separator may end early)"
    )
    if name in meta.key_only_fields:  # no filter can check it: the planner says what can
        return text
    return (
        f"{text}; give it the printable key style (the default) and backfill the keys (see "
        "docs/encoding.md), or use filter()"
    )


def _bounds(
    op: Operator,
    meta: EntityMeta[Entity],
    slot: FieldSlot,
    prefix: str,
    exact_var: bool,
    valid: Validator,
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
        if not codec.admits_prefix(op.prefix):
            raise _Empty(f"no value of {meta.cls.__name__}.{slot.field} starts with {op.prefix!r}")
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


def _validate(op: Operator, meta: EntityMeta[Entity], slot: FieldSlot) -> None:
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
    return predecessor(prefix + encoded)


def _single_eq(ops: Sequence[Operator] | None) -> bool:
    return ops is not None and len(ops) == 1 and isinstance(ops[0], Compare) and ops[0].op == "="


def _equalities(
    meta: EntityMeta[Entity], name: str, ops: Sequence[Operator] | None, valid: Any
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


def describe_ops(name: str, ops: Sequence[Operator]) -> str:
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


class Validator:
    """Validates condition values for one plan, each value once per entity and field.

    Every index option of a plan validates the same operator values again; the result is
    reused only for the very same value object, so it cannot stand for another value.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[type[Entity], str, int], tuple[Any, Any]] = {}

    def __call__(self, meta: EntityMeta[Entity], name: str, value: Any) -> Any:
        key = (meta.cls, name, id(value))
        hit = self._seen.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        checked = meta.validate_field(name, value)
        self._seen[key] = (value, checked)
        return checked


@dataclass
class IndexFit:
    """How one index serves one entity's conditions."""

    meta: EntityMeta[Entity]
    problem: str | None = None
    rule: str = ""
    absorbed: set[str] = field(default_factory=set)
    unabsorbed: dict[str, str] = field(default_factory=dict)
    inexact: dict[str, str] = field(default_factory=dict)
    partitions: list[Any] = field(default_factory=list)
    sort: SortCondition | None = None
    empty: str | None = None
    shard_field: str | None = None
    #: Absorbed conditions the key condition reads too widely, filtered exactly (open ends).
    residual: dict[str, list[Operator]] = field(default_factory=dict)
    #: Conditions on sort attributes of a multi-attribute index that its key condition cannot
    #: reach in order (see `lsiorm._query.multikey`), with why.
    out_of_order: dict[str, str] = field(default_factory=dict)
    #: Absorbed conditions on plain key text that may hold its separator (or folds values),
    #: also checked on the field's stored attribute.
    checked: dict[str, list[Operator]] = field(default_factory=dict)
    #: The rule of each ``inexact`` entry ("query.inexact-range" unless it says another).
    inexact_rules: dict[str, str] = field(default_factory=dict)
    #: Open ends of a two-bound range, closed at the next value the key can hold.
    closed: list[str] = field(default_factory=list)


def fit_index(
    meta: EntityMeta[Entity],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    conds: Mapping[str, Sequence[Operator]],
    valid: Validator,
) -> IndexFit:
    """Return how ``index`` serves ``conds`` for one entity (problem set when it cannot)."""
    fit = IndexFit(meta)
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
            contradiction = f"{describe_ops(name, ops or ())} leaves no value"
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
    _check_plain(fit, pk_tpl, pk_tpl.slots, conds)
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
    fit: IndexFit,
    tpl: KeyTemplate,
    conds: Mapping[str, Sequence[Operator]],
    values: dict[str, Any],
    valid: Validator,
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
    _check_plain(fit, tpl, tpl.slots[:k], conds)
    if k == len(names):
        fit.sort = SortCondition("=", (to_wire(tpl.render(values)),))
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
        # begins_with is exact on any escaped str field: its separator can occur in no value.
        prefixes_only = all(isinstance(op, BeginsWith) for op in ops)
        points = all(_is_point(op) for op in ops)
        if not codec.ordered and not points:
            _inexact(fit, tpl, slot, ops, "query.plain-range", _plain_range(meta, tpl, name))
        elif codec.prefix_free or last or prefixes_only or points:
            # Absorbed even when the range proves empty: that answer is exact too.
            fit.absorbed.add(name)
            if needs_check(tpl, slot):
                fit.checked[name] = list(ops)
            lo, hi = prefix, prefix + MAX_CHAR
            for op in ops:  # the planner let only key operators into where()
                a, b = _bounds(op, meta, slot, prefix, last and not codec.prefix_free, valid)
                lo, hi = max(lo, a), min(hi, b)
            if lo > hi:
                raise _Empty(f"{describe_ops(name, ops)} leaves no value")
            single = ops[0]
            if len(ops) == 1 and isinstance(single, BeginsWith):
                fit.sort = _begins(lo)
            elif lo == "":
                fit.sort = SortCondition("<=", (to_wire(hi),))
            else:
                fit.sort = SortCondition("BETWEEN", (to_wire(lo), to_wire(hi)))
            for later in names[k + 1 :]:
                if later in conds:
                    fit.unabsorbed[later] = (
                        f"{later} follows {name}, which has a range, in template {tpl.source!r}"
                    )
            return
        else:
            why = (
                f"{meta.cls.__name__}.{name} has a variable-length encoding and more of template "
                f"{tpl.source!r} follows it, so a key range over it would also admit keys whose "
                "value only starts like a bound; give the field a fixed-width type or move it "
                "last in the template"
            )
            _inexact(fit, tpl, slot, ops, "query.inexact-range", why)
    fit.sort = _begins(prefix) if prefix else None
    for later in names[k + 1 :]:
        if later in conds and later not in fit.unabsorbed:
            fit.unabsorbed[later] = (
                f"{later} follows {after}, which has no equality, in template {tpl.source!r}"
            )


def _is_point(op: Operator) -> bool:
    """Whether an operator bounds a field to one value or one prefix (exact on plain text)."""
    return isinstance(op, BeginsWith) or (isinstance(op, Compare) and op.op == "=")


def _check_plain(
    fit: IndexFit,
    tpl: KeyTemplate,
    slots: Sequence[FieldSlot],
    conds: Mapping[str, Sequence[Operator]],
) -> None:
    """Check equalities on plain fields whose key text may not tell values apart."""
    for slot in slots:
        ops = conds.get(slot.field)
        if ops and needs_check(tpl, slot):
            fit.checked[slot.field] = list(ops)


def _inexact(
    fit: IndexFit,
    tpl: KeyTemplate,
    slot: FieldSlot,
    ops: Sequence[Operator],
    rule: str,
    why: str,
) -> None:
    """Record that the key text cannot bound the field's operators exactly, and why."""
    for op in ops:
        _validate(op, fit.meta, slot)
    fit.inexact[slot.field] = fit.unabsorbed[slot.field] = why
    fit.inexact_rules[slot.field] = rule


def _begins(prefix: str) -> SortCondition | None:
    return SortCondition("begins_with", (to_wire(prefix),)) if prefix else None


def _fit_direct_range(
    fit: IndexFit, name: str, ops: Sequence[Operator], enc: Callable[[Any], Any]
) -> None:
    """Compile several conditions on a Number or Binary sort key into one key condition.

    The tightest lower and upper bounds make a BETWEEN. A BETWEEN is inclusive, so an open
    (exclusive) end is closed at the next value the key can hold (`_closed_bound`): nothing
    lies in between, and no filter names the key attribute (DynamoDB refuses that).
    """
    lower, upper = _tightest(fit.meta, name, ops)
    fit.absorbed.add(name)
    described = describe_ops(name, ops)
    if lower is None or upper is None:
        if lower is not None:
            fit.sort = SortCondition(">=" if lower[1] else ">", (enc(lower[0]),))
        else:
            assert upper is not None
            fit.sort = SortCondition("<=" if upper[1] else "<", (enc(upper[0]),))
        return
    if lower[0] > upper[0] or (lower[0] == upper[0] and not (lower[1] and upper[1])):
        raise _Empty(f"{described} leaves no value")
    low = closed_bound(lower[0], enc, inclusive=lower[1], above=True)
    high = closed_bound(upper[0], enc, inclusive=upper[1], above=False)
    if low is None or high is None or _wire_order(low) > _wire_order(high):
        raise _Empty(f"{described} leaves no value")
    for (value, inclusive), bound, sign in ((lower, low, ">"), (upper, high, "<")):
        if not inclusive:
            shown = bound["N"] if "N" in bound else repr(bytes(bound["B"]))
            fit.closed.append(f"{name} {sign} {value!r} is read as {name} {sign}= {shown}")
    if _wire_order(low) == _wire_order(high):
        fit.sort = SortCondition("=", (low,))
        return
    fit.sort = SortCondition("BETWEEN", (low, high))


_Bound = tuple[Any, bool]  # (value, inclusive)


def _tightest(
    meta: EntityMeta[Entity], name: str, ops: Sequence[Operator]
) -> tuple[_Bound | None, _Bound | None]:
    """Return the tightest lower and upper bound of several conditions on one field."""
    lower: _Bound | None = None
    upper: _Bound | None = None
    for op in ops:
        if isinstance(op, Between):
            bounds = [(op.low, True, True), (op.high, True, False)]
        elif isinstance(op, Compare) and op.op in KEY_OPERATORS:
            if op.op == "=":
                bounds = [(op.value, True, True), (op.value, True, False)]
            else:
                bounds = [(op.value, op.op.endswith("="), op.op.startswith(">"))]
        else:
            raise QueryPlanError(
                "query.where-operator",
                f"where() takes =, <, <=, >, >=, between and begins_with; put {op!r} on {name} "
                "in filter().",
            )
        for raw, inclusive, is_lower in bounds:
            value = meta.validate_field(name, raw)
            if is_lower:
                if lower is None or value > lower[0] or (value == lower[0] and not inclusive):
                    lower = (value, inclusive)
            elif upper is None or value < upper[0] or (value == upper[0] and not inclusive):
                upper = (value, inclusive)
    return lower, upper


def closed_bound(
    value: Any, enc: Callable[[Any], Any], *, inclusive: bool, above: bool
) -> dict[str, Any] | None:
    """Return the wire bound of an inclusive key range that holds exactly what one bound does.

    An exclusive bound moves to the next value the key can hold past it (above it for a lower
    bound): the next int for an int field, else the next number DynamoDB can store (38
    digits), or the next byte string of a Binary key. None when no such value exists.
    """
    wire: dict[str, Any] = enc(value)
    if inclusive:
        return wire
    if "N" in wire and type(value) is int:
        try:
            return {"N": int_text(value + 1 if above else value - 1)}
        except ValidationError:
            return None  # past DynamoDB's range
    if "N" in wire:
        text = adjacent_number(wire["N"], above=above)
        return None if text is None else {"N": text}
    data = bytes(wire["B"])
    if above:
        return {"B": data + b"\x00"}
    if not data:
        return None
    if data[-1] == 0:
        return {"B": data[:-1]}  # nothing lies between b and b + 00
    tail = b"\xff" * (MAX_SORT_KEY_BYTES - len(data))
    return {"B": data[:-1] + bytes([data[-1] - 1]) + tail}


def _wire_order(av: dict[str, Any]) -> Any:
    return Decimal(av["N"]) if "N" in av else bytes(av["B"])


def _fit_direct(fit: IndexFit, tpl: KeyTemplate, conds: Mapping[str, Sequence[Operator]]) -> None:
    meta = fit.meta
    name = tpl.fields[0]
    ops = conds.get(name)
    if not ops:
        return
    for op in ops:
        if isinstance(op, BeginsWith):
            raise QueryPlanError(
                "query.begins-with-type",
                f"begins_with needs a str field, but {meta.cls.__name__}.{name} is the "
                f"{tpl.attribute_type} key {tpl.attribute!r}.",
            )

    def enc(value: Any) -> Any:
        return encode_value(meta, name, value)

    if len(ops) > 1:
        _fit_direct_range(fit, name, ops, enc)
        return
    op = ops[0]
    fit.absorbed.add(name)
    if isinstance(op, Between):
        low, high = meta.validate_field(name, op.low), meta.validate_field(name, op.high)
        if low > high:
            raise _Empty(f"{name} between {op.low!r} and {op.high!r} leaves no value")
        fit.sort = SortCondition("BETWEEN", (enc(low), enc(high)))
    else:
        assert isinstance(op, Compare)  # the planner let only key operators into where()
        fit.sort = SortCondition(op.op, (enc(op.value),))
