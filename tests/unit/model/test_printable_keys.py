"""The printable key style, the default: no key holds a control character, and keys sort exactly.

The proofs of docs/encoding.md, checked by property over arbitrary Unicode strings (surrogates
excluded: UTF-8 cannot carry them) and every template shape of 1 to 4 fields with literals
between them: encoded order is tuple order, compared as UTF-8 bytes (DynamoDB's order); every
key parses back to its values; no key holds a character below U+0020; a begins_with prefix
selects exactly the values that start with it; and the key conditions the planner compiles for
equality on leading fields and a range on the next select exactly the matching keys.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lsiorm import (
    Entity,
    KeyFormat,
    Table,
    begins_with,
    between,
    ge,
    gt,
    key_layout,
    le,
    lt,
    query,
)
from lsiorm._model.codec import MAX_CHAR
from lsiorm._model.declaration import bind_template
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.keyspace import intersection_witness, shape_of
from lsiorm._model.template import KeyTemplate
from lsiorm._model.text_codecs import (
    PlainStrCodec,
    PrintableStrCodec,
    percent_escape,
    percent_unescape,
)
from lsiorm.errors import DeclarationError, KeyEncodingError
from support.oracles import sort_key_selects

UTC = timezone.utc

# Characters around every boundary of the format: the controls, space and the characters up to
# the escape introducer '%' (escaped), the first ones above it, hex digits, separators, the top
# of the BMP, non-ASCII and astral characters, and U+10FFFF (refused).
EDGES = [
    "\x00",
    "\x01",
    "\x1f",
    " ",
    "!",
    '"',
    "#",
    "$",
    "%",
    "&",
    "'",
    "0",
    "2",
    "5",
    "A",
    "F",
    ":",
    "a",
    "é",
    "\ud7ff",
    "\ue000",
    "\uffff",
    "\U0001f600",
    "\U0010fffe",
]
edge_text = st.lists(st.sampled_from(EDGES), max_size=5).map("".join)
any_text = st.text(st.characters(exclude_categories=("Cs",)))
texts = st.one_of(edge_text, any_text)
# With U+10FFFF too: the one character a key value may not hold (key.reserved-char).
texts_or_reserved = st.one_of(texts, texts.map(lambda t: t + MAX_CHAR))


@given(texts, texts)
def test_the_escape_keeps_order_and_prefixes_in_utf8_bytes(a: str, b: str) -> None:
    ea, eb = percent_escape(a), percent_escape(b)
    assert percent_unescape(ea) == a
    assert (ea.encode() < eb.encode()) == (a.encode() < b.encode()) == (a < b)
    assert eb.startswith(ea) == b.startswith(a)
    assert all(c >= "%" for c in ea)  # so '#', ' ', '!', '"', '$' sort below all of it


@pytest.mark.parametrize(
    "text", ["%", "%2", "%26", "%2g", "%2a", "a b", "#", "%7F", "%%25", "\x00"]
)
def test_only_text_the_escape_writes_unescapes(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        percent_unescape(text)


class Tricky(str, Enum):
    """Values that are prefixes of each other and hold escaped and control characters."""

    EMPTY = ""
    A = "a"
    A_SPACE = "a b"
    A_HASH = "a#"
    HASH = "#"
    PERCENT = "%"
    NUL = "\x00"
    E = "é"
    FACE = "\U0001f600"


class Hue(str, Enum):
    """Values the printable style stores as they are before '#' (they sort above it)."""

    BLUE = "blue"
    RED = "red"
    REDDISH = "reddish"


class Probe(Entity):
    """Every kind of key field, four of each, for templates drawn by the tests."""

    s0: str = ""
    s1: str = ""
    s2: str = ""
    s3: str = ""
    i0: int = 0
    i1: int = 0
    i2: int = 0
    i3: int = 0
    d0: Decimal = Decimal(0)
    d1: Decimal = Decimal(0)
    d2: Decimal = Decimal(0)
    d3: Decimal = Decimal(0)
    t0: datetime = datetime(2000, 1, 1, tzinfo=UTC)
    t1: datetime = datetime(2000, 1, 1, tzinfo=UTC)
    t2: datetime = datetime(2000, 1, 1, tzinfo=UTC)
    t3: datetime = datetime(2000, 1, 1, tzinfo=UTC)
    e0: Tricky = Tricky.A
    e1: Tricky = Tricky.A
    e2: Tricky = Tricky.A
    e3: Tricky = Tricky.A
    h0: Hue = Hue.RED
    h1: Hue = Hue.RED
    h2: Hue = Hue.RED
    h3: Hue = Hue.RED
    u0: uuid.UUID = uuid.UUID(int=0)
    u1: uuid.UUID = uuid.UUID(int=0)
    u2: uuid.UUID = uuid.UUID(int=0)
    u3: uuid.UUID = uuid.UUID(int=0)


SPECS = {"s": "", "i": ":04d", "d": ":07.2f", "t": "", "e": "", "h": "", "u": ""}
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "s": texts_or_reserved,
    "i": st.integers(-9999, 9999),
    "d": st.decimals(min_value=-9999, max_value=9999, places=2, allow_nan=False),
    "t": st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ),
    "e": st.sampled_from(Tricky),
    "h": st.sampled_from(Hue),
    "u": st.uuids(),
}
# Literals: '#' (the usual separator, which ends escaped text), the other characters below '%'
# that do too, separators that cannot (':', '-', '/', '%', a letter: an added '#' ends the
# text), none at all (a field right after another) and longer ones.
LITERALS = ["", "#", "#X#", " ", "!", '"', "$", "%", ":", "-", "/", "~", "é", "a", "#a#"]


def _order(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


Shape = tuple[KeyTemplate, tuple[str, ...]]


@st.composite
def shapes(draw: st.DrawFn, text_at: int | None = None) -> Shape:
    """A printable template of 1 to 4 fields with literals around them, and its field names
    (with a str field at position ``text_at`` when it is given, and exists)."""
    count = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.sampled_from(sorted(SPECS)), min_size=count, max_size=count))
    if text_at is not None:
        kinds[min(text_at, count - 1)] = "s"
    literals = draw(st.lists(st.sampled_from(LITERALS), min_size=count + 1, max_size=count + 1))
    names = tuple(f"{kind}{n}" for n, kind in enumerate(kinds))
    source = literals[0] + "".join(
        f"{{{name}{SPECS[name[0]]}}}{literal}"
        for name, literal in zip(names, literals[1:], strict=True)
    )
    return bind_template(Probe, "SK", "S", source, "printable"), names


@settings(max_examples=500)
@given(shapes(), st.data())
def test_keys_sort_as_tuples_parse_back_and_hold_no_control_character(
    shape: Shape, data: st.DataObject
) -> None:
    template, names = shape
    x = {name: data.draw(VALUES[name[0]]) for name in names}
    y = {name: data.draw(VALUES[name[0]]) for name in names}
    if data.draw(st.booleans()):
        # Share the leading fields, so that the comparison is decided further on.
        shared = data.draw(st.integers(0, len(names)))
        y = {**y, **{name: x[name] for name in names[:shared]}}
    keys = []
    for values in (x, y):
        if any(isinstance(v, str) and MAX_CHAR in v for v in values.values()):
            with pytest.raises(KeyEncodingError) as refused:
                template.render(values)
            assert refused.value.rule == "key.reserved-char"
            return
        keys.append(template.render(values))
    kx, ky = keys
    tx = tuple(_order(x[name]) for name in names)
    ty = tuple(_order(y[name]) for name in names)
    assert (kx.encode("utf-8") < ky.encode("utf-8")) == (tx < ty)
    assert (kx == ky) == (tx == ty)
    assert template.parse(kx) == x
    assert template.parse(ky) == y
    for key in (kx, ky):
        assert not any(char < " " for char in key), key
        shape_ = shape_of(template)
        assert shape_ is not None
        assert shape_.matches(key)


@given(st.integers(0, 3).flatmap(lambda k: shapes(text_at=k)), st.data())
def test_begins_with_on_a_partial_composite_selects_exactly_the_values_with_that_prefix(
    shape: Shape, data: st.DataObject
) -> None:
    template, names = shape
    k = data.draw(st.sampled_from([k for k, name in enumerate(names) if name[0] == "s"]))
    field = names[k]
    drawn = {**VALUES, "s": texts}  # U+10FFFF is refused: see the test above
    x = {name: data.draw(drawn[name[0]]) for name in names}
    y = {name: data.draw(drawn[name[0]]) for name in names}
    y = {**y, **{name: x[name] for name in names[:k]}}  # equal leading fields
    prefix = data.draw(st.sampled_from([x[field], y[field], ""]))
    prefix = prefix[: data.draw(st.integers(0, len(prefix)))] + data.draw(
        st.sampled_from(["", "", "#", " ", "%", "a"])
    )
    codec = template.slots[k].codec
    assert codec is not None
    wanted = template.prefix(x, k) + codec.validate_prefix(prefix)
    for values in (x, y):
        key = template.render(values)
        assert key.startswith(wanted) == values[field].startswith(prefix), (key, wanted)


def test_the_terminator_is_the_separator_where_it_sorts_below_the_escape() -> None:
    forms = {}
    for literal in ["#", " ", "!", '"', "$", ":", "-", "%", "a", ""]:
        template = bind_template(Probe, "SK", "S", f"{{s0}}{literal}{{i1:04d}}", "printable")
        forms[literal] = template.render({"s0": "a b#", "i1": 7})
    assert forms == {
        "#": "a%20b%23#0007",
        " ": "a%20b%23 0007",
        "!": "a%20b%23!0007",
        '"': 'a%20b%23"0007',
        "$": "a%20b%23$0007",
        ":": "a%20b%23#:0007",  # ':' cannot end escaped text: '#' is written before it
        "-": "a%20b%23#-0007",
        "%": "a%20b%23#%0007",
        "a": "a%20b%23#a0007",
        "": "a%20b%23#0007",  # another field follows directly
    }


def test_ids_slugs_emails_dates_and_uuids_are_stored_as_they_are() -> None:
    template = bind_template(
        Probe, "SK", "S", "ORDER#{s0}#ITEM#{i1:03d}#{s2}#{t3:s}#{u0}", "printable"
    )
    values = {
        "s0": "A03",
        "i1": 1,
        "s2": "ann.smith+dynamo@example.com",
        "t3": datetime(2024, 5, 1, 12, tzinfo=UTC),
        "u0": uuid.UUID("3b53690a-1464-6e57-e3b9-9c58cae64fa6"),
    }
    assert template.render(values) == (
        "ORDER#A03#ITEM#001#ann.smith+dynamo@example.com#2024-05-01T12:00:00Z#"
        "3b53690a-1464-6e57-e3b9-9c58cae64fa6"
    )


# -- entities: declaration, layout, hierarchies --------------------------------------------------

table = Table("PrintableKeys", "PK", "SK")


class Order(Entity, table=table, keys={"PK": "C#{customer}", "SK": "ORDER#{order_id}"}):
    customer: str
    order_id: str


class OrderItem(
    Entity, table=table, keys={"PK": "C#{customer}", "SK": "ORDER#{order_id}#ITEM#{line:03d}"}
):
    customer: str
    order_id: str
    line: int


class Walk(
    Entity,
    table=table,
    keys={"PK": "W#{customer}", "SK": "W#{a}:{n:03d}#{b} {c}{d}$%{e}"},
):
    customer: str
    a: str
    n: int
    b: str
    c: str
    d: Hue
    e: str


def test_a_new_users_first_hierarchy_key_holds_no_control_character() -> None:
    item = OrderItem(customer="c1", order_id="A03", line=1).to_item()
    assert (item["PK"], item["SK"]) == ("C#c1", "ORDER#A03#ITEM#001")
    assert Order(customer="c1", order_id="A03").to_item()["SK"] == "ORDER#A03"
    spaced = OrderItem(customer="c 1", order_id="a#b %", line=2).to_item()
    assert (spaced["PK"], spaced["SK"]) == ("C#c%201", "ORDER#a%23b%20%25#ITEM#002")


def test_hierarchies_stay_apart() -> None:
    order, item = meta_of(Order).templates["SK"], meta_of(OrderItem).templates["SK"]
    assert intersection_witness(order, item) is None
    shape = shape_of(order)
    assert shape is not None
    # No order's key lies among an order's items: ORDER#A03#... holds a '#' no value holds.
    assert not shape.may_hold("ORDER#A03#", "ORDER#A03#" + MAX_CHAR)


@given(st.lists(texts, min_size=1, max_size=5), texts)
def test_an_order_and_its_items_are_read_together_and_nothing_else(
    order_ids: list[str], wanted: str
) -> None:
    assume(not any(MAX_CHAR in o for o in [*order_ids, wanted]))
    plan = query(Order, OrderItem).where(customer="c", order_id=wanted).plan()
    for request in plan.requests:
        for order_id in {*order_ids, wanted}:
            for key in (
                Order(customer="c", order_id=order_id).to_item()["SK"],
                OrderItem(customer="c", order_id=order_id, line=3).to_item()["SK"],
            ):
                if sort_key_selects(request.params, key):
                    assert order_id == wanted, (order_id, key, request.params)
    reached = [
        key
        for key in (
            Order(customer="c", order_id=wanted).to_item()["SK"],
            OrderItem(customer="c", order_id=wanted, line=3).to_item()["SK"],
        )
        if any(sort_key_selects(r.params, key) for r in plan.requests)
    ]
    assert len(reached) == 2


def _walk(values: dict[str, Any]) -> Walk:
    return Walk(customer="w", **values)


walk_values = st.fixed_dictionaries(
    {
        "a": edge_text,
        "n": st.integers(-999, 999),
        "b": edge_text,
        "c": edge_text,
        "d": st.sampled_from(Hue),
        "e": edge_text,
    }
)
WALK_FIELDS = ("a", "n", "b", "c", "d", "e")


def _ops(a: Any, b: Any, text: bool) -> list[tuple[Any, Any]]:
    ops: list[tuple[Any, Any]] = [
        (a, lambda v: v == a),
        (lt(a), lambda v: v < a),
        (le(a), lambda v: v <= a),
        (gt(a), lambda v: v > a),
        (ge(a), lambda v: v >= a),
        (between(min(a, b), max(a, b)), lambda v: min(a, b) <= v <= max(a, b)),
    ]
    if text:
        ops.append((begins_with(a), lambda v: v.startswith(a)))
    return ops


@given(st.lists(walk_values, min_size=1, max_size=6), st.integers(0, 5), st.data())
def test_key_conditions_on_leading_equalities_and_a_range_are_exact(
    stored: list[dict[str, Any]], k: int, data: st.DataObject
) -> None:
    # Equality on the first k fields, a condition on the next: ':' (an added '#'), ' ' and
    # '$' follow the text fields, and 'd' (a Hue, stored as it is) follows 'c' directly.
    anchor = stored[0]
    field = WALK_FIELDS[k]
    other = data.draw(st.sampled_from(stored))[field]
    a = data.draw(st.sampled_from([anchor[field], other]))
    b = data.draw(st.sampled_from([anchor[field], other]))
    text = isinstance(a, str) and not isinstance(a, Enum)
    if text and data.draw(st.booleans()):
        a = a[: data.draw(st.integers(0, len(a)))]
    leading = {name: anchor[name] for name in WALK_FIELDS[:k]}
    for condition, check in _ops(a, b, text):
        plan = query(Walk).where(customer="w", **leading, **{field: condition}).plan()
        assert not plan.fallback_filters
        matching = [
            v for v in stored if all(v[n] == anchor[n] for n in leading) and check(v[field])
        ]
        if plan.empty is not None:
            assert matching == []
            continue
        (request,) = plan.requests
        assert "FilterExpression" not in request.params
        for values in stored:
            key = _walk(values).to_item()["SK"]
            want = values in matching
            assert sort_key_selects(request.params, key) == want, (condition, values, key)


def test_key_layout_shows_each_templates_stored_form_and_an_example() -> None:
    text = str(key_layout(Walk))
    assert text.splitlines()[:3] == [
        "Key layout of Walk",
        "  PK 'W#{customer}'",
        "    e.g. 'W#a%20b' (customer='a b')",
    ]
    assert "    stored as 'W#{a}#:{n:03d}#{b} {c}#{d}$%{e}'" in text
    assert "    e.g. 'W#a%20b#:007#a%20b a%20b#blue$%a%20b' (a='a b', n=7, b='a b', c='a b'" in text
    forms = {f.field: (f.form, f.style) for f in key_layout(Walk).fields if f.attribute == "SK"}
    assert forms == {
        "a": ("escaped", "printable"),
        "n": ("fixed-width", "printable"),
        "b": ("escaped", "printable"),
        "c": ("escaped", "printable"),
        "d": ("plain", "printable"),
        "e": ("escaped", "printable"),
    }
    why = {f.field: f.why for f in key_layout(Walk).fields if f.attribute == "SK"}
    assert "lsiorm ends the text with '#'" in why["c"]  # d follows directly
    assert "escaped text never holds ' '" in why["b"]
    assert "lsiorm writes '#' before ':'" in why["a"]
    assert "sort above '$'" in why["d"]


def test_explain_shows_the_stored_form_and_an_example() -> None:
    explained = str(query(OrderItem).where(customer="c", order_id="A03").explain())
    assert (
        "OrderItem SK 'ORDER#{order_id}#ITEM#{line:03d}' e.g. 'ORDER#a%20b#ITEM#007' "
        "(order_id='a b', line=7)"
    ) in explained
    assert "OrderItem.order_id in SK: escaped, its text is unconstrained" in explained


Slug = Annotated[str, KeyFormat(alphabet="a-z0-9-")]


def test_types_that_prove_plain_text_exact_are_stored_as_they_are() -> None:
    typed = Table("PrintableTyped", "PK", "SK")

    class Card(
        Entity,
        table=typed,
        keys={"PK": "B#{board}", "SK": "S#{status}:{kind}#{slug}#{note}#{last}"},
    ):
        board: Slug
        status: Hue
        kind: Literal["bug", "task"]
        slug: Slug
        note: Literal["a\x00", "b"]  # a control character: escaped, never stored as it is
        last: Literal["x y", "z"]  # ends its template, no control character: as it is

    item = Card(board="web", status=Hue.RED, kind="bug", slug="login-1", note="a\x00", last="x y")
    assert item.to_item()["SK"] == "S#red:bug#login-1#a%00#x y"
    codecs = {s.field: s.codec for s in meta_of(Card).templates["SK"].slots}
    assert [type(codecs[n]).__name__ for n in ("kind", "slug", "last")] == ["PlainStrCodec"] * 3
    assert isinstance(codecs["note"], PrintableStrCodec)
    assert isinstance(codecs["status"].inner, PlainStrCodec)  # type: ignore[union-attr]
    with pytest.raises(KeyEncodingError) as refused:
        Card.model_construct(
            board="web", status=Hue.RED, kind="bug", slug="Login", note="b", last="z"
        ).to_item()
    assert refused.value.rule == "key.outside-alphabet"


def test_one_index_holds_one_key_format() -> None:
    mixed = Table("PrintableMixed", "PK", "SK")

    class New(Entity, table=mixed, keys={"PK": "N#{a}", "SK": "N#{b}#{n:02d}"}):
        a: str
        b: str
        n: int

    with pytest.raises(DeclarationError) as refused:

        class Old(Entity, table=mixed, key_style="readable", keys={"PK": "O#{a}", "SK": "O#{b}"}):
            a: str
            b: str

    assert refused.value.rule == "template.mixed-formats"
    assert "key_style='readable'" in str(refused.value)
    with pytest.raises(DeclarationError) as refused:

        class PerField(Entity, table=mixed, keys={"PK": "F#{a}", "SK": "F#{b}"}):
            a: str
            b: Annotated[str, KeyFormat(style="exact")]

    assert refused.value.rule == "template.mixed-formats"

    # Plain text (another tool's) and fixed-width fields go with either format.
    class Loose(Entity, table=mixed, key_style="plain", keys={"PK": "L#{a}", "SK": "L#{b}"}):
        a: str
        b: str

    class Fixed(Entity, table=mixed, key_style="exact", keys={"PK": "X", "SK": "X#{n:04d}"}):
        n: int

    assert set(mixed.entities) == {"New", "Loose", "Fixed"}


def test_a_table_an_earlier_release_wrote_keeps_its_style_by_declaring_it() -> None:
    for style, key in [("readable", "ORDER#A03\x00#ITEM#001"), ("exact", "ORDER#A03\x00#ITEM#001")]:
        kept = Table(f"Kept{style}", "PK", "SK", key_style=style)  # type: ignore[arg-type]

        class Line(Entity, table=kept, keys={"PK": "C#{c}", "SK": "ORDER#{o}#ITEM#{n:03d}"}):
            c: str
            o: str
            n: int

        assert Line(c="c", o="A03", n=1).to_item()["SK"] == key


def test_a_field_that_is_the_key_attribute_holds_its_value_as_it_is() -> None:
    own = Table("PrintableOwnKey", "user", "sk")

    class User(Entity, table=own, keys={"user": "{user}", "sk": "U#{name}"}):
        user: str
        name: Annotated[str, KeyFormat(style="plain")]

    item = User(user="ann smith", name="a#b").to_item()
    assert (item["user"], item["sk"]) == ("ann smith", "U#a#b")
    whys = {f.field: (f.style, f.why) for f in key_layout(User).fields}
    assert whys["user"] == (
        "plain",
        "the field is the key attribute itself (stored under its name), so the key holds its "
        "value as it is, as other tools read it",
    )
    assert whys["name"] == ("plain", "it ends its template")  # its own plain style, its own why
    assert User.model_validate(item).user == "ann smith"
