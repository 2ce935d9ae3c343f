"""Key ranges on Number and Binary sort keys: two bounds make one exact key condition, no filter.

DynamoDB's key condition takes one comparison or an inclusive BETWEEN on the sort key, and
refuses a filter on a key attribute. An open end of a two-bound range is closed at the next
value the key can hold; these tests check that the compiled key condition selects exactly the
stored keys the conditions do, for every operator pair.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Literal, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, GlobalIndex, KeyAttribute, Projection, Table
from lsiorm._conditions import Compare, ge, gt, le, lt
from lsiorm._model.entity_meta import MAX_SORT_KEY_BYTES, meta_of
from lsiorm._model.number_text import adjacent_number, decimal_text
from lsiorm._model.wire import to_wire
from lsiorm._query.values import query
from support.oracles import COMPARISONS, holds, sort_key_selects
from support.strategies import finite_floats, in_dynamo_range, in_range_decimals

SCALES = Table(
    "Scales",
    "PK",
    "SK",
    global_indexes=[
        GlobalIndex(
            "ByMass", KeyAttribute("Room"), KeyAttribute("Mass", "N"), Projection.keys_only()
        ),
        GlobalIndex("ByExact", KeyAttribute("Room"), KeyAttribute("Exact", "N"), Projection.all()),
        GlobalIndex("ByTag", KeyAttribute("Room"), KeyAttribute("Tag", "B"), Projection.all()),
    ],
)


class Scaled(Entity):
    """An item of the room's scale; each kind is sorted in its own index by one typed field."""

    name: str
    room: str


def _scale_keys(prefix: str, attribute: str, field: str) -> dict[str, str]:
    return {"PK": f"{prefix}#{{name}}", "SK": prefix, "Room": "{room}", attribute: f"{{{field}}}"}


class Weight(Scaled, table=SCALES, keys=_scale_keys("W", "Mass", "mass")):
    mass: float


class Measure(Scaled, table=SCALES, keys=_scale_keys("M", "Exact", "exact")):
    exact: Decimal


class Tagged(Scaled, table=SCALES, keys=_scale_keys("T", "Tag", "tag")):
    tag: bytes


LOWER = (gt, ge)
UPPER = (lt, le)


def _holds(op: Compare, value: Any) -> bool:
    return bool(COMPARISONS[op.op](value, op.value))


def _check(
    cls: type[Entity],
    field: str,
    a: Any,
    b: Any,
    stored: list[Any],
    low: Any,
    high: Any,
) -> None:
    ops = [low(a), high(b)]
    q = query(cls).where(room="r", **{field: ops[0]}).where(**{field: ops[1]})
    plan = q.plan()
    want = [v for v in stored if all(_holds(op, v) for op in ops)]
    if plan.empty is not None:
        assert want == []
        return
    params = q.compile()
    assert "FilterExpression" not in params
    got = [v for v in stored if sort_key_selects(params, to_wire(v))]
    assert got == want, (ops, params["KeyConditionExpression"], params["ExpressionAttributeValues"])


def _floats_near(a: float, b: float) -> list[float]:
    # The bounds themselves and the floats next to them are where an open end matters.
    near = [
        v for x in (a, b) for v in (x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf))
    ]
    return list(filter(in_dynamo_range, near))


def _decimals_near(a: Decimal, b: Decimal) -> list[Decimal]:
    return [a, b, *(Decimal(t) for x in (a, b) for t in _neighbours(decimal_text(x)))]


def _neighbours(text: str) -> list[str]:
    return [t for up in (True, False) if (t := adjacent_number(text, above=up)) is not None]


def _bytes_near(a: bytes, b: bytes) -> list[bytes]:
    return [a, b, a + b"\x00", b[:-1], b + b"\xff", b"\xff" * MAX_SORT_KEY_BYTES]


@pytest.mark.parametrize(
    ("cls", "field", "values", "near"),
    [
        pytest.param(
            Weight, "mass", finite_floats.filter(in_dynamo_range), _floats_near, id="float"
        ),
        pytest.param(Measure, "exact", in_range_decimals, _decimals_near, id="decimal"),
        pytest.param(Tagged, "tag", st.binary(max_size=3), _bytes_near, id="binary"),
    ],
)
@given(data=st.data())
def test_two_bounds_on_a_number_or_binary_key_select_exactly(
    cls: type[Entity],
    field: str,
    values: st.SearchStrategy[Any],
    near: Callable[[Any, Any], list[Any]],
    data: st.DataObject,
) -> None:
    a, b = data.draw(values, label="a"), data.draw(values, label="b")
    stored = data.draw(st.lists(values, max_size=8), label="stored")
    low = data.draw(st.sampled_from(LOWER), label="low")
    high = data.draw(st.sampled_from(UPPER), label="high")
    _check(cls, field, a, b, [*stored, *near(a, b)], low, high)


def test_open_ends_are_closed_at_the_next_storable_number() -> None:
    q = query(Weight).where(room="r", mass=gt(1.0)).where(mass=lt(3.0))
    params = q.compile()
    assert params["IndexName"] == "ByMass"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == {"N": "1." + "0" * 36 + "1"}
    assert params["ExpressionAttributeValues"][":v2"] == {"N": "2." + "9" * 37}
    assert "FilterExpression" not in params
    assert "mass > 1.0 is read as mass >= 1.0000000000000000000000000000000000001" in str(
        q.explain()
    )
    # A bound at the end of DynamoDB's range leaves nothing past it.
    top = Decimal("9." + "9" * 37 + "E+125")
    assert query(Measure).where(room="r", exact=gt(top)).where(exact=le(top)).plan().empty


def test_adjacent_numbers_step_over_the_gap_below_1e_130() -> None:
    assert adjacent_number("0", above=True) == "1E-130"
    assert adjacent_number("0", above=False) == "-1E-130"
    assert adjacent_number("1E-130", above=False) == "0"
    assert adjacent_number("-1E-130", above=True) == "0"
    assert adjacent_number("1E-130", above=True) == "1." + "0" * 36 + "1E-130"
    assert adjacent_number("1000", above=False) == "999." + "9" * 35
    assert adjacent_number("9." + "9" * 37 + "E+125", above=True) is None
    assert adjacent_number("-9." + "9" * 37 + "E+125", above=False) is None


@given(value=in_range_decimals, up=st.booleans())
def test_an_adjacent_number_is_storable_and_steps_back(value: Decimal, up: bool) -> None:
    text = decimal_text(value)
    step = adjacent_number(text, above=up)
    if step is None:
        assert value.copy_abs() == Decimal("9." + "9" * 37 + "E+125")  # exact, unlike abs()
        return
    assert decimal_text(Decimal(step)) == step  # storable: in range, at most 38 digits
    assert (Decimal(step) > value) == up
    assert Decimal(step) != value
    assert adjacent_number(step, above=not up) == text


# -- text at the end of a plain-style key ------------------------------------------------------

WORDS = Table("Words", "PK", "SK")


class Word(Entity, table=WORDS, key_style="plain", keys={"PK": "W#{room}", "SK": "WORD#{name}"}):
    room: str
    name: str


class Grade(Entity, table=WORDS, key_style="plain", keys={"PK": "G#{room}", "SK": "GRADE#{name}"}):
    room: str
    name: Literal["", "a", "a#", "a#1", "ab", "b"]


class Badge(Entity, table=WORDS, key_style="plain", keys={"PK": "B#{room}", "SK": "BADGE#{name}"}):
    room: str
    name: Literal["a", "ba", "bb", "c"]  # no value starts another


# Text where one value starts another, separators, and characters around "#".
texts = st.text(alphabet="#a1b\x01\x7f\U0010fffe", max_size=4)
ONE = (lt, le, gt, ge)


def _check_text(cls: type[Entity], ops: list[Any], stored: list[str]) -> None:
    q = query(cls).where(room="r", name=ops[0])
    for op in ops[1:]:
        q = q.where(name=op)
    plan = q.plan()
    want = sorted(v for v in set(stored) if all(holds(op, v) for op in ops))
    if plan.empty is not None:
        assert want == [], (ops, plan.empty)
        return
    params = q.compile()
    assert "FilterExpression" not in params
    literal = meta_of(cls).templates["SK"].source.split("{")[0]
    got = sorted(v for v in set(stored) if sort_key_selects(params, literal + v))
    assert got == want, (ops, params["KeyConditionExpression"], params["ExpressionAttributeValues"])


@given(op=st.sampled_from(ONE), value=texts, stored=st.lists(texts, max_size=8))
def test_one_bound_on_plain_text_that_ends_the_key_selects_exactly(
    op: Any, value: str, stored: list[str]
) -> None:
    # "a" <= "a#1": a bound must not reach the values that merely start with it.
    near = [value, value + "#", value + "#1", value + "\x01", value[:-1]]
    _check_text(Word, [op(value)], [*stored, *near])


@given(a=texts, b=texts, low=st.sampled_from(LOWER), high=st.sampled_from(UPPER))
def test_two_bounds_on_plain_text_that_ends_the_key_select_exactly(
    a: str, b: str, low: Any, high: Any
) -> None:
    near = [x + tail for x in (a, b) for tail in ("", "#", "1", "\x01")]
    _check_text(Word, [low(a), high(b)], near)


@pytest.mark.parametrize("cls", [Grade, Badge])
@pytest.mark.parametrize("op", ONE)
def test_bounds_on_a_closed_set_that_ends_the_key_select_exactly(
    cls: type[Entity], op: Any
) -> None:
    members = list(get_args(cls.model_fields["name"].annotation))
    for value in members:
        _check_text(cls, [op(value)], members)
