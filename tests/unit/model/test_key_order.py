"""Composite keys sort as tuples of their field values, over adversarial strings.

DynamoDB compares String keys by their UTF-8 bytes (code-point order). Every test here compares
both the Python ``str`` order and the UTF-8 byte order of rendered keys with the order of the
value tuples.
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table, begins_with, between, ge, gt, le, lt, query
from lsiorm._model.codec import MAX_CHAR
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.keyspace import intersection_witness, shape_of
from lsiorm._model.text_codecs import TERMINATOR, StrCodec, escape_text, unescape_text
from lsiorm.errors import DeclarationError
from support.models import declare_shop, shop_table
from support.oracles import sort_key_selects
from support.strategies import LOWEST_CHARS

# Characters below, equal to and just above every separator used here, the escape and
# terminator themselves, the top of the BMP, non-ASCII and astral characters.
_TRICKY = [
    *LOWEST_CHARS,
    '"',
    "#",
    "$",
    ":",
    ";",
    "-",
    ".",
    "_",
    "a",
    "b",
    "é",
    "\ud7ff",
    "\ue000",
    "\uffff",
    "\U0001f600",
    "\U0010fffe",
]
adversarial = st.lists(st.sampled_from(_TRICKY), max_size=4).map("".join)
any_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=MAX_CHAR))
strings = st.one_of(adversarial, any_text)

table = Table("KeyOrder", partition_key="PK", sort_key="SK")

UTC = timezone.utc


class Row(
    Entity,
    table=table,
    keys={"PK": "P#{p}", "SK": "R#{a}#{n:03d}:{b}!{price:08.2f}{at}{c}"},
):
    p: str
    a: str
    n: int
    b: str
    price: Decimal
    at: datetime
    c: str


_FIELDS = ("a", "n", "b", "price", "at", "c")
rows = st.fixed_dictionaries(
    {
        "a": strings,
        "n": st.integers(-999, 999),
        "b": strings,
        "price": st.decimals(-99999, 99999, places=2, allow_nan=False),
        "at": st.datetimes(
            min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
        ),
        "c": strings,
    }
)


def _key(values: dict[str, Any]) -> str:
    return meta_of(Row).templates["SK"].render(values)


def _tuple(values: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(values[name] for name in _FIELDS)


@given(rows, rows)
def test_keys_sort_as_tuples(x: dict[str, Any], y: dict[str, Any]) -> None:
    kx, ky = _key(x), _key(y)
    tx, ty = _tuple(x), _tuple(y)
    assert (kx < ky) == (tx < ty)
    assert (kx == ky) == (tx == ty)
    assert (kx.encode("utf-8") < ky.encode("utf-8")) == (tx < ty)


@given(rows, st.data())
def test_keys_sort_as_tuples_when_fields_share_a_head(x: dict[str, Any], data: Any) -> None:
    # Random pairs rarely share a first field; here the first fields differ only at the end.
    y = dict(x)
    name = data.draw(st.sampled_from(["a", "b", "c"]))
    y[name] = x[name] + data.draw(adversarial)
    kx, ky = _key(x), _key(y)
    assert (kx < ky) == (_tuple(x) < _tuple(y))
    assert (kx.encode("utf-8") < ky.encode("utf-8")) == (_tuple(x) < _tuple(y))


@given(rows)
def test_render_parse_round_trip(x: dict[str, Any]) -> None:
    template = meta_of(Row).templates["SK"]
    text = _key(x)
    assert template.parse(text) == x
    shape = shape_of(template)
    assert shape is not None
    assert shape.matches(text)
    assert MAX_CHAR not in text


@given(strings, strings)
def test_terminated_str_is_prefix_free_and_ordered(a: str, b: str) -> None:
    codec = StrCodec(terminated=True)
    ea, eb = codec.encode(a), codec.encode(b)
    assert codec.decode(ea) == a
    assert (ea < eb) == (a < b)
    assert (ea.encode("utf-8") < eb.encode("utf-8")) == (a < b)
    if a != b:
        assert not eb.startswith(ea)
        assert not ea.startswith(eb)
    assert ea.count(TERMINATOR) == 1
    assert ea.endswith(TERMINATOR)


@given(strings, strings)
def test_escaping_keeps_order_and_prefixes(a: str, b: str) -> None:
    ea, eb = escape_text(a), escape_text(b)
    assert unescape_text(ea) == a
    assert (ea < eb) == (a < b)
    assert eb.startswith(ea) == b.startswith(a)
    assert TERMINATOR not in ea


@given(
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."))
)
def test_readable_text_is_written_as_itself(text: str) -> None:
    assert StrCodec(terminated=True).encode(text) == text + TERMINATOR
    assert StrCodec().encode(text) == text


# -- key ranges on a str field followed by more template ---------------------------------------


class Step(Entity, table=table, keys={"PK": "P#{p}", "SK": "S#{name}#{n:03d}"}):
    p: str
    name: str
    n: int


def _ops(a: str, b: str) -> list[tuple[Any, Any]]:
    return [
        (lt(a), lambda v: v < a),
        (le(a), lambda v: v <= a),
        (gt(a), lambda v: v > a),
        (ge(a), lambda v: v >= a),
        (between(a, b), lambda v: a <= v <= b),
        (begins_with(a), lambda v: v.startswith(a)),
    ]


@given(st.lists(strings, min_size=1, max_size=6), strings, strings, st.integers(0, 999))
def test_ranges_on_a_str_field_before_more_template_are_exact(
    stored: list[str], a: str, b: str, n: int
) -> None:
    template = meta_of(Step).templates["SK"]
    for operator, check in _ops(a, b):
        plan = query(Step).where(p="x", name=operator).plan()
        assert not plan.fallback_filters
        if plan.empty is not None:
            assert not any(check(v) for v in stored)
            continue
        (request,) = plan.requests
        assert "FilterExpression" not in request.params
        for value in stored:
            key = template.render({"name": value, "n": n})
            assert sort_key_selects(request.params, key) == check(value), (operator, value)


# -- which templates may hold which keys --------------------------------------------------------


@given(rows, strings, strings)
def test_may_hold_never_misses_a_key(x: dict[str, Any], low: str, high: str) -> None:
    shape = shape_of(meta_of(Row).templates["SK"])
    assert shape is not None
    key = _key(x)
    for lo, hi in [(low, high), (key[: len(low) % (len(key) + 1)], high), (low, key), (key, key)]:
        if lo <= key <= hi:
            assert shape.may_hold(lo, hi), (lo, hi, key)


@pytest.mark.parametrize(("style", "terminator"), [("printable", ""), ("readable", TERMINATOR)])
def test_may_hold_proves_hierarchies_apart(style: str, terminator: str) -> None:
    # An order's sort key, and its items' under it: ORDER#o1 and ORDER#o1#ITEM#001 (printable),
    # ORDER#o1 and ORDER#o1\x00#ITEM#001 (readable).
    table = Table(f"shop_apart_{style}", "PK", "SK", key_style=style)  # type: ignore[arg-type]
    shop = declare_shop(table)
    order_template = meta_of(shop["Order"]).templates["SK"]
    item_template = meta_of(shop["OrderItem"]).templates["SK"]
    order_shape = shape_of(order_template)
    item_shape = shape_of(item_template)
    assert order_shape is not None
    assert item_shape is not None
    item_prefix = "ORDER#o1" + terminator + "#ITEM#"
    assert item_template.render({"order_id": "o1", "line": 1}) == item_prefix + "001"
    assert not order_shape.may_hold(item_prefix, item_prefix + MAX_CHAR)
    assert not item_shape.may_hold("ORDER#o1", "ORDER#o1")
    assert item_shape.may_hold("ORDER#", "ORDER#" + MAX_CHAR)
    assert order_shape.may_hold("ORDER#", "ORDER#" + MAX_CHAR)
    assert intersection_witness(order_template, item_template) is None


@pytest.mark.parametrize(
    ("mine", "theirs", "style"),
    [
        ("A#{x}", "A#{y}", "printable"),
        ("A#{n:03d}", "A#{y}", "printable"),
        # Readable text may hold '#', so {x} may write B#..., and T#05.
        ("A#{x}", "A#B#{y}", "readable"),
        ("{x}", "T#{n:02d}", "readable"),
    ],
)
def test_templates_that_can_write_the_same_key_are_refused(
    mine: str, theirs: str, style: str
) -> None:
    shared = Table("KeyOrderClash", partition_key="PK", sort_key="SK", key_style=style)  # type: ignore[arg-type]

    class First(Entity, table=shared, keys={"PK": "P", "SK": mine}):
        x: str = ""
        n: int = 0

    with pytest.raises(DeclarationError) as caught:

        class Second(Entity, table=shared, keys={"PK": "P", "SK": theirs}):
            y: str = ""
            n: int = 0

    assert caught.value.rule == "template.namespace-overlap"
    assert "overwrite" in str(caught.value)


@pytest.mark.parametrize(("mine", "theirs"), [("A#{x}", "A#B#{y}"), ("{x}", "T#{n:02d}")])
def test_printable_text_never_holds_the_separator_so_such_templates_are_apart(
    mine: str, theirs: str
) -> None:
    shared = Table("KeyOrderApart", partition_key="PK", sort_key="SK")

    class First(Entity, table=shared, keys={"PK": "P", "SK": mine}):
        x: str = ""
        n: int = 0

    class Second(Entity, table=shared, keys={"PK": "P", "SK": theirs}):
        y: str = ""
        n: int = 0

    first, second = meta_of(First).templates["SK"], meta_of(Second).templates["SK"]
    assert intersection_witness(first, second) is None
    assert First(x="B#1").to_item()["SK"] == mine.replace("{x}", "B%231")


@pytest.mark.parametrize("style", ["printable", "readable"])
@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("A#{x}", "A#{x}#{n:02d}", False),
        ("A#{x}", "A#B{x}", True),
        ("A#{x}#{n:02d}", "A#{x}#{n:03d}", False),
        ("A#{x}#{n:02d}", "A#{x}#{y}", True),
        ("{n:02d}", "{x}", True),
        ("{n:02d}#", "{x}", None),  # only where {x} may hold '#': readable
        ("{n:02d}", "{x}#", False),
    ],
)
def test_intersection_witness_is_a_key_of_both(
    a: str, b: str, overlap: bool | None, style: str
) -> None:
    from lsiorm._model.declaration import bind_template

    class Probe(Entity):
        x: str
        y: str
        n: int

    if overlap is None:
        overlap = style == "readable"
    ta = bind_template(Probe, "SK", "S", a, style)  # type: ignore[arg-type]
    tb = bind_template(Probe, "SK", "S", b, style)  # type: ignore[arg-type]
    witness = intersection_witness(ta, tb)
    assert (witness is not None) == overlap
    if witness is not None:
        for template in (ta, tb):
            shape = shape_of(template)
            assert shape is not None
            assert shape.matches(witness)


def test_hierarchy_declarations() -> None:
    table = shop_table()
    declare_shop(table)  # orders next to their items: allowed

    class Place(Entity, table=table, keys={"PK": "MAP#{city}", "SK": "{district}:{street}"}):
        city: str
        district: str
        street: str

    class Area(Entity, table=table, keys={"PK": "MAP#{city}", "SK": "{district}"}):
        city: str
        district: str

    # A district key can never equal a street key: the street key holds a terminator.
    with pytest.raises(DeclarationError) as caught:

        class Clash(Entity, table=table, keys={"PK": "MAP#{city}", "SK": "{name}:x"}):
            city: str
            name: str

    assert caught.value.rule == "template.namespace-overlap"
    assert "Place" in str(caught.value)
    assert "query(Clash)" in str(caught.value)
    assert {"Place", "Area"} <= set(table.entities)
