"""Tests of lsiorm.wire: Python <-> AttributeValue conversion, number text, item sizes."""

from __future__ import annotations

import math
import uuid
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum, IntEnum
from fractions import Fraction
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from hypothesis import assume, given
from hypothesis import strategies as st

from lsiorm._model.wire import (
    MAX_ITEM_BYTES,
    attribute_value_size,
    from_wire,
    item_from_wire,
    item_size,
    item_to_wire,
    number_to_wire,
    to_wire,
)
from lsiorm.errors import ValidationError
from support.strategies import finite_floats, in_dynamo_range, items, numbers, texts, values


def shape(value: Any) -> Any:
    """Tag every value with its kind so == also compares types (True == 1 in plain Python)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | Decimal):
        return ("num", Decimal(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, list):
        return ("list", tuple(shape(v) for v in value))
    if isinstance(value, dict):
        return ("map", frozenset((k, shape(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return ("set", frozenset(shape(v) for v in value))
    raise AssertionError(f"unexpected {type(value)}")


_put_item_shape = (
    botocore.session.get_session().get_service_model("dynamodb").operation_model("PutItem")
).input_shape


def assert_botocore_accepts(item: dict[str, Any]) -> None:
    report = ParamValidator().validate({"TableName": "t", "Item": item}, _put_item_shape)
    assert not report.has_errors(), report.generate_report()


# Round trips ----------------------------------------------------------------------------------


@given(values)
def test_round_trip_keeps_value_and_kind(value: Any) -> None:
    assert shape(from_wire(to_wire(value))) == shape(value)


@given(items)
def test_item_round_trip_and_botocore_accepts_the_wire_form(item: dict[str, Any]) -> None:
    wire = item_to_wire(item)
    assert_botocore_accepts(wire)
    assert shape(item_from_wire(wire)) == shape(item)


@given(finite_floats.filter(in_dynamo_range))
def test_float_round_trip(f: float) -> None:
    text = to_wire(f)["N"]
    assert Decimal(text) == Decimal(repr(f))
    back = from_wire({"N": text})
    assert isinstance(back, int | Decimal)
    assert float(back) == f


@given(finite_floats.filter(lambda f: not in_dynamo_range(f)))
def test_float_out_of_range(f: float) -> None:
    with pytest.raises(ValidationError) as info:
        to_wire(f)
    assert info.value.rule == "number.range"


@given(numbers)
def test_number_text_is_canonical(n: int | Decimal) -> None:
    text = number_to_wire(n)
    assert number_to_wire(Decimal(text)) == text
    assert Decimal(text) == n
    assert "+" not in text
    if n == int(n):
        assert text == str(int(n))
        assert type(from_wire({"N": text})) is int


@given(finite_floats.filter(in_dynamo_range))
def test_equal_numbers_of_any_type_give_the_same_text(f: float) -> None:
    assert number_to_wire(f) == number_to_wire(Decimal(repr(f)))
    # Below 2**53 an integral float's repr spells its exact integer value.
    if f.is_integer() and abs(f) < 2**53:
        assert number_to_wire(f) == number_to_wire(int(f))


def test_from_wire_each_type() -> None:
    assert from_wire({"S": "x"}) == "x"
    n = from_wire({"N": "12"})
    assert n == 12
    assert type(n) is int
    for text in ("12.5", "1E+3", "1e3", "-0.5"):
        d = from_wire({"N": text})
        assert type(d) is Decimal
        assert d == Decimal(text)
    assert from_wire({"B": b"\x00\xff"}) == b"\x00\xff"
    assert from_wire({"BOOL": False}) is False
    assert from_wire({"NULL": True}) is None
    assert from_wire({"L": [{"S": "a"}, {"N": "1.5"}, {"BOOL": True}]}) == [
        "a",
        Decimal("1.5"),
        True,
    ]
    assert from_wire({"M": {"k": {"N": "2"}, "m": {"M": {}}}}) == {"k": 2, "m": {}}
    assert from_wire({"SS": ["a", "b"]}) == {"a", "b"}
    assert from_wire({"NS": ["1", "2.5"]}) == {1, Decimal("2.5")}
    assert from_wire({"BS": [b"a"]}) == {b"a"}


# to_wire examples -----------------------------------------------------------------------------


class Colour(str, Enum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class Pair(Enum):
    ORIGIN = (0, 0)


def test_to_wire_scalars() -> None:
    assert to_wire("x") == {"S": "x"}
    assert to_wire(True) == {"BOOL": True}
    assert to_wire(0) == {"N": "0"}
    assert to_wire(None) == {"NULL": True}
    assert to_wire(bytearray(b"ab")) == {"B": b"ab"}
    assert to_wire(memoryview(b"ab")) == {"B": b"ab"}
    assert type(to_wire(bytearray(b"ab"))["B"]) is bytes
    assert to_wire((1, "a")) == {"L": [{"N": "1"}, {"S": "a"}]}


def test_to_wire_dates_uuids_and_enums() -> None:
    aware = datetime(2024, 1, 2, 3, 4, 5, 600, tzinfo=timezone(timedelta(hours=2)))
    assert to_wire(aware) == {"S": "2024-01-02T01:04:05.000600Z"}  # UTC, fixed precision
    assert to_wire(date(2024, 1, 2)) == {"S": "2024-01-02"}
    assert to_wire(time(3, 4, 5)) == {"S": "03:04:05"}
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert to_wire(u) == {"S": "12345678-1234-5678-1234-567812345678"}
    assert to_wire(Colour.RED) == {"S": "red"}
    assert to_wire(Level.HIGH) == {"N": "3"}
    assert to_wire(Pair.ORIGIN) == {"L": [{"N": "0"}, {"N": "0"}]}


@given(
    a=st.datetimes(timezones=st.timezones()),
    b=st.datetimes(timezones=st.timezones()),
)
def test_stored_datetimes_sort_as_instants(a: datetime, b: datetime) -> None:
    try:
        ta, tb = to_wire(a)["S"], to_wire(b)["S"]
    except (OverflowError, ValueError):
        return  # outside years 1..9999 once in UTC
    assert (ta < tb) == (a < b)
    assert (ta == tb) == (a == b)


def test_sets() -> None:
    assert to_wire({"b", "a"}) == {"SS": ["a", "b"]}
    assert to_wire(frozenset({2, Decimal("1.5")})) == {"NS": ["1.5", "2"]}
    assert to_wire({b"y", b"x"}) == {"BS": [b"x", b"y"]}
    assert to_wire(set()) == {"L": []}
    assert from_wire(to_wire(set())) == []
    # Colour.RED and "red" are distinct set members with one wire form.
    assert to_wire({Colour.RED, "red"}) == {"SS": ["red"]}
    assert to_wire({uuid.UUID(int=1)}) == {"SS": [str(uuid.UUID(int=1))]}


def test_number_text_examples() -> None:
    cases = {
        "12.5": Decimal("12.500"),
        "0": Decimal("-0.00"),
        "100000": Decimal("1E+5"),
        "-0.0012": Decimal("-0.00120"),
        "1.5E-25": Decimal("1.5E-25"),
        "1E-130": Decimal("1E-130"),
        "0.00000000000000000001": Decimal("1E-20"),
        "0.00001": 1e-05,
        "1": 1.0,
        "-2": -2,
    }
    for text, value in cases.items():
        assert number_to_wire(value) == text, value
    assert number_to_wire(-0.0) == "0"
    assert number_to_wire(Decimal("9.9999999999999999999999999999999999999E+125")) == "9" * 38 + (
        "0" * 88
    )
    assert number_to_wire(Decimal("1." + "0" * 60)) == "1"


# Errors ---------------------------------------------------------------------------------------


def rule_of(call: Any, *args: Any) -> str:
    with pytest.raises(ValidationError) as info:
        call(*args)
    return info.value.rule


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity")],
)
def test_not_finite(value: Any) -> None:
    assert rule_of(number_to_wire, value) == "number.not-finite"
    assert rule_of(to_wire, [value]) == "number.not-finite"


@pytest.mark.parametrize(
    "value",
    [
        10**38 + 1,
        -(10**126),
        pytest.param(10**5000, id="10**5000"),
        Decimal("1E+126"),
        Decimal("1E-131"),
        Decimal("-1.00000000000000000000000000000000000001"),
        5e-324,
        1e300,
    ],
)
def test_number_range(value: Any) -> None:
    assert rule_of(number_to_wire, value) == "number.range"
    assert rule_of(to_wire, {"n": value}) == "number.range"


@pytest.mark.parametrize("value", [{"a", 1}, {b"a", "a"}, {1, b"1"}, {"a", True}])
def test_mixed_set(value: Any) -> None:
    assert rule_of(to_wire, value) == "wire.mixed-set"


class NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> None:
        return None


@pytest.mark.parametrize("value", [datetime(2024, 1, 2), datetime(2024, 1, 2, tzinfo=NoOffset())])
def test_naive_datetime(value: datetime) -> None:
    assert rule_of(to_wire, value) == "wire.naive-datetime"
    assert rule_of(item_to_wire, {"at": [value]}) == "wire.naive-datetime"


@pytest.mark.parametrize("value", [object(), 1j, {True}, {None}, range(3)])
def test_unsupported_type(value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        to_wire(value)
    assert info.value.rule == "wire.unsupported-type"
    element = next(iter(value)) if isinstance(value, set) else value
    assert type(element).__qualname__ in str(info.value)


@pytest.mark.parametrize("value", [True, "12", None])
def test_number_to_wire_refuses_non_numbers(value: Any) -> None:
    assert rule_of(number_to_wire, value) == "wire.unsupported-type"


def test_non_string_key() -> None:
    assert rule_of(to_wire, {1: "a"}) == "wire.non-string-key"
    assert rule_of(item_to_wire, {("a",): 1}) == "wire.non-string-key"


@pytest.mark.parametrize(
    "av",
    [{"X": 1}, {"L": [{"S": "a"}, {"Z": 1}]}, {"M": {"k": {"SSS": []}}}, {"M": {"k": {"X": 1}}}],
)
def test_unknown_type(av: dict[str, Any]) -> None:
    assert rule_of(from_wire, av) == "wire.unknown-type"
    assert rule_of(attribute_value_size, av) == "wire.unknown-type"
    assert rule_of(item_from_wire, {"a": av}) == "wire.unknown-type"
    assert rule_of(item_size, {"a": av}) == "wire.unknown-type"


@pytest.mark.parametrize("av", [{}, {"S": "a", "N": "1"}, {"N": "abc"}, {"L": ["not an av"]}])
def test_malformed(av: Any) -> None:
    assert rule_of(from_wire, av) == "wire.malformed"
    assert rule_of(item_from_wire, {"a": av}) == "wire.malformed"


# Sizes ----------------------------------------------------------------------------------------


def test_max_item_bytes() -> None:
    assert MAX_ITEM_BYTES == 409_600


def test_size_of_scalars() -> None:
    # "héllo" is 6 UTF-8 bytes; name "name" is 4.
    assert item_size({"name": {"S": "héllo"}}) == 10
    assert item_size({"b": {"B": b"\x00\x01\x02"}}) == 4
    assert item_size({"t": {"BOOL": False}, "n": {"NULL": True}}) == 4
    assert item_size({"ss": {"SS": ["a", "é"]}}) == 2 + 1 + 2
    assert item_size({"bs": {"BS": [b"ab", b"c"]}}) == 2 + 3


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("123.4500", 4),  # digits 12345: ceil(5/2) + 1
        ("-0.00120", 3),  # one base-100 digit (12), plus 1, plus 1 for the sign
        ("1000", 2),  # digits 1
        ("1234", 3),  # digits 1234
        ("0", 1),  # no significant digit
        ("1.5E-25", 2),
        ("9" * 38, 20),
    ],
)
def test_size_of_numbers(text: str, size: int) -> None:
    assert attribute_value_size({"N": text}) == size
    assert item_size({"num": {"N": text}}) == 3 + size
    assert attribute_value_size({"NS": [text, text]}) == 2 * size


def test_size_of_nested_map() -> None:
    av = {"M": {"ab": {"S": "xyz"}, "c": {"BOOL": True}, "e": {"M": {}}}}
    # 3 + (2 + 3 + 1) + (1 + 1 + 1) + (1 + 3 + 1)
    assert attribute_value_size(av) == 17
    assert item_size({"m": av}) == 18


def test_size_of_list() -> None:
    av = {"L": [{"N": "12"}, {"NULL": True}, {"L": []}, {"S": "ü"}]}
    # 3 + (2 + 1) + (1 + 1) + (3 + 1) + (2 + 1)
    assert attribute_value_size(av) == 15
    assert item_size({"list": av}) == 19


@given(items, items)
def test_item_size_is_additive(a: dict[str, Any], b: dict[str, Any]) -> None:
    b = {k: v for k, v in b.items() if k not in a}
    wa, wb = item_to_wire(a), item_to_wire(b)
    assert item_size({**wa, **wb}) == item_size(wa) + item_size(wb)
    assert item_size(wa) == sum(len(k.encode()) + attribute_value_size(v) for k, v in wa.items())


@given(values, values)
def test_list_and_map_sizes_add_one_byte_per_element(x: Any, y: Any) -> None:
    ax, ay = to_wire(x), to_wire(y)
    sx, sy = attribute_value_size(ax), attribute_value_size(ay)
    assert attribute_value_size({"L": [ax, ay]}) == 3 + sx + 1 + sy + 1
    assert attribute_value_size({"M": {"k": ax, "kk": ay}}) == 3 + (1 + sx + 1) + (2 + sy + 1)


@given(texts)
def test_string_size_is_utf8_length(s: str) -> None:
    assert attribute_value_size({"S": s}) == len(s.encode("utf-8"))
    assert item_size({s or "x": {"S": s}}) == len((s or "x").encode()) + len(s.encode())


@given(numbers)
def test_number_size_does_not_depend_on_notation(n: int | Decimal) -> None:
    d = Decimal(n)
    assume(d != 0)
    # Independent oracle: scale by powers of 100 to an integer, drop trailing zero pairs, and
    # count the base-100 digits that remain (DynamoDB's measured storage rule).
    magnitude, scale = Fraction(d.copy_abs()), 0  # exact; abs() would round to 28 digits
    while (magnitude * 100**scale).denominator != 1:
        scale += 1
    m = int(magnitude * 100**scale)
    while m % 100 == 0:
        m //= 100
    pairs = 0
    while m:
        m //= 100
        pairs += 1
    expected = pairs + 1 + (1 if d < 0 else 0)
    for text in (number_to_wire(n), str(d), f"{d:E}", f"{d:e}"):
        assert attribute_value_size({"N": text}) == expected, text
