"""Tests of lsiorm.encoding: order, round trips, prefix freedom and every error rule."""

from __future__ import annotations

import enum
import re
import sys
import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from decimal import Context, Decimal
from typing import Annotated, Any, Literal, NewType, Optional, Union

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table, dry_run_put
from lsiorm._model.codec import MAX_CHAR, KeyCodec
from lsiorm._model.encoding import KeyFormat, codec_for
from lsiorm._model.fixed_codecs import BoolCodec, UUIDCodec
from lsiorm._model.number_codecs import DecimalCodec, FloatCodec, IntCodec
from lsiorm._model.text_codecs import EnumCodec, PlainStrCodec, StrCodec
from lsiorm._model.time_codecs import DateCodec, DatetimeCodec
from lsiorm.errors import DeclarationError, KeyEncodingError


class Status(str, enum.Enum):
    OPEN = "open"
    CLOSED = "closed"
    ARCHIVED = "archived"
    ÉTÉ = "été"


class Level(enum.IntEnum):
    LOW = -50
    MID = 0
    HIGH = 7
    TOP = 99


class Ratio(enum.Enum):
    HALF = Decimal("0.5")
    THIRD = Decimal("0.33")
    NONE = Decimal("-1")


if sys.version_info >= (3, 11):

    class Colour(enum.StrEnum):
        RED = "red"
        BLUE = "blue"
        GREEN = "green"

else:

    class Colour(str, enum.Enum):
        RED = "red"
        BLUE = "blue"
        GREEN = "green"


def _identity(value: Any) -> Any:
    return value


def _enum_value(member: Any) -> Any:
    return member.value


def assert_laws(codec: KeyCodec, a: Any, b: Any, key: Callable[[Any], Any] = _identity) -> None:
    """Check round trip, order and (when claimed) prefix freedom on one pair of values."""
    ea, eb = codec.encode(a), codec.encode(b)
    assert isinstance(ea, str)
    assert isinstance(eb, str)
    assert codec.decode(ea) == a
    assert codec.decode(eb) == b
    ka, kb = key(a), key(b)
    assert (ka < kb) == (ea < eb)
    assert (ka == kb) == (ea == eb)
    assert (ka < kb) == (ea.encode("utf-8") < eb.encode("utf-8"))
    assert (ka == kb) == (ea.encode("utf-8") == eb.encode("utf-8"))
    if codec.prefix_free and ea != eb:
        assert not eb.startswith(ea)
        assert not ea.startswith(eb)
        low, high = min(ea, eb), max(ea, eb)
        # What prefix freedom buys: a bound stays exact when more template text follows.
        assert low + MAX_CHAR < high
        assert (low + MAX_CHAR).encode("utf-8") < high.encode("utf-8")


# Wide enough that normalize() never rounds the values drawn here.
_EXACT = Context(prec=100)


def fixed_decimals(int_digits: int, scale: int) -> st.SearchStrategy[Decimal | int]:
    """Decimals that fit ``int_digits`` integer digits and ``scale`` decimals, in many spellings."""
    limit = 10 ** (int_digits + scale) - 1
    spelled = st.builds(
        lambda m, extra: Decimal(f"{m * 10**extra}E-{scale + extra}"),
        st.integers(-limit, limit),
        st.integers(0, 3),
    )
    return st.one_of(
        spelled,
        spelled.map(lambda d: d.normalize(_EXACT)),
        st.sampled_from([Decimal("-0"), Decimal("-0.000"), Decimal("0E+3")]),
        st.integers(-(10**int_digits) + 1, 10**int_digits - 1),
    )


def fixed_floats(int_digits: int, scale: int) -> st.SearchStrategy[float]:
    limit = 10 ** (int_digits + scale) - 1
    return st.integers(-limit, limit).map(lambda m: float(Decimal(f"{m}E-{scale}")))


minute_offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
any_offsets = st.timedeltas(
    min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)
).map(timezone)


def aware_datetimes(
    zones: st.SearchStrategy[timezone], unit: int = 1
) -> st.SearchStrategy[datetime]:
    return st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones
    ).map(lambda d: d.replace(microsecond=d.microsecond - d.microsecond % unit))


strings = st.one_of(
    st.text(st.characters(codec="utf-8")),
    st.text(st.characters(min_codepoint=0x80, codec="utf-8")),
    st.text(st.characters(min_codepoint=0xE000, codec="utf-8")),
    st.text(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFD, codec="utf-8")),
    st.text(st.sampled_from("a\x00\x7f\u00e9\uffff\U00010000\U0001f600")),
).filter(lambda s: "#" not in s and MAX_CHAR not in s)

Case = tuple[str, Callable[[], KeyCodec], st.SearchStrategy[Any], Callable[[Any], Any]]


def decimal_case(name: str, spec: str, int_digits: int, scale: int) -> Case:
    """A Decimal codec with this format spec, over values that fit it exactly."""
    return (
        name,
        lambda: codec_for(Decimal, spec=spec, field_name="p"),
        fixed_decimals(int_digits, scale),
        _identity,
    )


CASES: list[Case] = [
    ("int-1", lambda: codec_for(int, spec="1d", field_name="n"), st.integers(-9, 9), _identity),
    (
        "int-6",
        lambda: codec_for(int, spec="06d", field_name="n"),
        st.integers(-(10**6) + 1, 10**6 - 1),
        _identity,
    ),
    (
        "int-30",
        lambda: codec_for(Annotated[int, KeyFormat("030d")], field_name="n"),
        st.integers(-(10**30) + 1, 10**30 - 1),
        _identity,
    ),
    decimal_case("decimal-08.2f", "08.2f", 5, 2),
    decimal_case("decimal-03.0f", "03.0f", 3, 0),
    decimal_case("decimal-06.4f", "6.4f", 1, 4),
    decimal_case("decimal-040.10f", "040.10f", 29, 10),
    (
        "float-bits",
        lambda: codec_for(float, field_name="x"),
        st.floats(allow_nan=False, allow_infinity=False),
        _identity,
    ),
    (
        "float-012.3f",
        lambda: codec_for(float, spec="012.3f", field_name="x"),
        fixed_floats(8, 3),
        _identity,
    ),
    (
        "datetime-us",
        lambda: codec_for(datetime, field_name="at"),
        aware_datetimes(any_offsets),
        _identity,
    ),
    (
        "datetime-ms",
        lambda: codec_for(datetime, spec="ms", field_name="at"),
        aware_datetimes(minute_offsets, 1000),
        _identity,
    ),
    (
        "datetime-s",
        lambda: codec_for(pydantic.AwareDatetime, spec="s", field_name="at"),
        aware_datetimes(minute_offsets, 1_000_000),
        _identity,
    ),
    ("date", lambda: codec_for(date, field_name="day"), st.dates(), _identity),
    ("bool", lambda: codec_for(bool, field_name="flag"), st.booleans(), _identity),
    ("uuid", lambda: codec_for(uuid.UUID, field_name="id"), st.uuids(), _identity),
    (
        "str",
        lambda: codec_for(str, field_name="name", terminated=True),
        strings,
        _identity,
    ),
    (
        "literal",
        lambda: codec_for(Literal["b", "a", "ab", "é"], field_name="kind"),
        st.sampled_from(["b", "a", "ab", "é"]),
        _identity,
    ),
    (
        "str-enum",
        lambda: codec_for(Status, field_name="status", terminated=True),
        st.sampled_from(list(Status)),
        _enum_value,
    ),
    (
        "strenum",
        lambda: codec_for(Optional[Colour], field_name="colour"),  # noqa: UP045
        st.sampled_from(list(Colour)),
        _enum_value,
    ),
    (
        "int-enum",
        lambda: codec_for(Level, spec="02d", field_name="level"),
        st.sampled_from(list(Level)),
        _enum_value,
    ),
    (
        "decimal-enum",
        lambda: codec_for(Ratio, spec="05.2f", field_name="ratio"),
        st.sampled_from(list(Ratio)),
        _enum_value,
    ),
]


@pytest.mark.parametrize(
    ("make", "values", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@given(data=st.data())
def test_codec_laws(
    make: Callable[[], KeyCodec],
    values: st.SearchStrategy[Any],
    key: Callable[[Any], Any],
    data: st.DataObject,
) -> None:
    codec = make()
    a = data.draw(values, label="a")
    b = data.draw(st.one_of(values, st.just(a)), label="b")
    assert_laws(codec, a, b, key)


@pytest.mark.parametrize(
    ("codec", "prefix_free"),
    [
        (codec_for(str, field_name="s"), False),
        (codec_for(str, field_name="s", terminated=True), True),
        (codec_for(Status, field_name="s", terminated=True), True),
        (codec_for(Literal["x"], field_name="s"), False),
        (codec_for(Status, field_name="s"), False),
        (codec_for(int, spec="06d", field_name="n"), True),
        (codec_for(Level, spec="02d", field_name="n"), True),
        (codec_for(float, field_name="x"), True),
        (codec_for(datetime, field_name="t"), True),
    ],
)
def test_prefix_free_flag(codec: KeyCodec, prefix_free: bool) -> None:
    assert codec.prefix_free is prefix_free


@pytest.mark.parametrize("width", [1, 3, 6])
def test_int_limits(width: int) -> None:
    codec = IntCodec(f"0{width}d", field_name="n")
    top, bottom = 10**width - 1, -(10**width - 1)
    assert codec.encode(top) == "9" * width
    assert codec.encode(bottom) == "-" + "0" * (width - 1) + "1"
    assert codec.decode(codec.encode(top)) == top
    assert codec.decode(codec.encode(bottom)) == bottom
    for beyond in (top + 1, bottom - 1, 10 ** (width + 5)):
        with pytest.raises(KeyEncodingError) as caught:
            codec.encode(beyond)
        assert caught.value.rule == "key.int-overflow"
        assert f"more than {width} digits" in str(caught.value)


@given(st.integers(0, 10**6 - 1))
def test_int_non_negative_matches_format(n: int) -> None:
    assert IntCodec("06d").encode(n) == format(n, "06d")


def test_int_known_encodings() -> None:
    codec = codec_for(int, spec="06d", field_name="words")
    assert "parrot:words:" + codec.encode(5) == "parrot:words:000005"
    assert codec.encode(42) == "000042"
    assert codec.encode(-5) == "-999995"
    assert codec.encode(-999999) == "-000001"
    assert codec.decode("-999995") == -5


@given(fixed_decimals(5, 2))
def test_decimal_non_negative_matches_format(value: Decimal | int) -> None:
    codec = DecimalCodec("08.2f")
    if isinstance(value, Decimal) and value >= 0:
        assert codec.encode(value) == format(value.copy_abs(), "08.2f")


@given(fixed_decimals(5, 2))
def test_decimal_encodings_have_one_length_per_sign(value: Decimal | int) -> None:
    text = DecimalCodec("08.2f").encode(value)
    assert len(text) == (9 if value < 0 else 8)
    assert text[-3] == "."


def test_decimal_known_encodings() -> None:
    codec = DecimalCodec("08.2f", field_name="price")
    assert codec.encode(Decimal("12.5")) == "00012.50"
    assert codec.encode(Decimal("1.230")) == "00001.23"
    assert codec.encode(Decimal("-0.01")) == "-99999.99"
    assert codec.encode(Decimal("-99999.99")) == "-00000.01"
    assert codec.encode(Decimal("-0.00")) == codec.encode(Decimal(0)) == "00000.00"
    assert codec.encode(Decimal("99999.99")) == "99999.99"
    assert codec.decode("00012.50") == Decimal("12.5")
    assert codec.spec == "08.2f"
    assert DecimalCodec("5.0f").encode(Decimal("-3")) == "-99997"


def test_float_known_encodings() -> None:
    codec = FloatCodec()
    assert codec.encode(-0.0) == codec.encode(0.0) == "8000000000000000"
    assert codec.encode(1.0) == "bff0000000000000"
    assert codec.encode(3) == codec.encode(3.0)
    fixed = FloatCodec("08.2f")
    assert fixed.encode(12.5) == "00012.50"
    assert fixed.encode(-0.01) == "-99999.99"
    assert fixed.decode("-99999.99") == -0.01


@given(instant=aware_datetimes(st.just(timezone.utc)), zones=st.lists(any_offsets, min_size=2))
def test_datetime_same_instant_same_key(instant: datetime, zones: list[timezone]) -> None:
    codec = DatetimeCodec()
    texts = {codec.encode(instant.astimezone(zone)) for zone in zones}
    assert texts == {codec.encode(instant)}
    decoded = codec.decode(texts.pop())
    assert decoded == instant
    assert decoded.tzinfo is timezone.utc


def test_datetime_known_encodings() -> None:
    paris_summer = timezone(timedelta(hours=2))
    value = datetime(2024, 7, 1, 14, 30, 5, 120000, tzinfo=paris_summer)
    assert DatetimeCodec().encode(value) == "2024-07-01T12:30:05.120000Z"
    assert DatetimeCodec("ms").encode(value) == "2024-07-01T12:30:05.120Z"
    assert DatetimeCodec("s").encode(value.replace(microsecond=0)) == "2024-07-01T12:30:05Z"
    assert DatetimeCodec("").spec == DatetimeCodec("us").spec == "us"
    early = datetime(5, 1, 1, tzinfo=timezone.utc)
    assert DatetimeCodec().encode(early) == "0005-01-01T00:00:00.000000Z"


def test_simple_known_encodings() -> None:
    assert DateCodec().encode(date(33, 2, 3)) == "0033-02-03"
    assert BoolCodec().encode(False) == "0"
    assert BoolCodec().encode(True) == "1"
    value = uuid.UUID("0123ABCD-0000-4000-8000-00000000FFFF")
    assert UUIDCodec().encode(value) == "0123abcd-0000-4000-8000-00000000ffff"


@given(strings, strings)
def test_str_range_under_max_char(prefix: str, rest: str) -> None:
    codec = StrCodec(terminated=True)
    low = codec.validate_prefix(prefix)
    value = codec.encode(prefix + rest)
    assert low <= value < low + MAX_CHAR
    assert low.encode("utf-8") <= value.encode("utf-8") < (low + MAX_CHAR).encode("utf-8")


def test_str_subclass_encodes_as_plain_str() -> None:
    text = codec_for(str, field_name="s").encode(Status.OPEN)
    assert text == "open"
    assert type(text) is str


def test_enum_decodes_to_member_and_orders_by_value() -> None:
    codec = codec_for(Status, field_name="status")
    assert isinstance(codec, EnumCodec)
    assert codec.decode("closed") is Status.CLOSED
    assert codec.python_type is Status
    ordered = sorted(Status, key=codec.encode)
    assert [m.value for m in ordered] == sorted(m.value for m in Status)
    levels = codec_for(Level, spec="2d", field_name="level")
    assert levels.encode(Level.LOW) == "-50"
    assert levels.spec == "02d"
    assert levels.decode("07") is Level.HIGH
    assert codec_for(Colour, field_name="c").validate_prefix("re") == "re"


def test_literal_is_a_str_codec() -> None:
    # Last in a template, a closed set without control characters is plain text by default.
    codec = codec_for(Literal["thread", "reply", None], field_name="kind")
    assert isinstance(codec, PlainStrCodec)
    assert codec.python_type is str
    assert codec.decode("reply") == "reply"
    exact = codec_for(Literal["thread", "reply", None], field_name="kind", style="exact")
    assert isinstance(exact, StrCodec)
    assert exact.decode("reply") == "reply"


UserId = NewType("UserId", int)


class _Model(pydantic.BaseModel):
    plain: Annotated[int, KeyFormat("06d")]
    optional: Optional[Annotated[int, KeyFormat("4d")]] = None  # noqa: UP045
    union: Annotated[Decimal, KeyFormat("07.2f")] | None = None
    when: pydantic.AwareDatetime | None = None
    day: pydantic.PastDate | None = None


@pytest.mark.parametrize(
    ("name", "spec", "codec_type", "codec_spec"),
    [
        ("plain", "", IntCodec, "06d"),
        ("plain", "6d", IntCodec, "06d"),
        ("optional", "", IntCodec, "04d"),
        ("union", "", DecimalCodec, "07.2f"),
        ("when", "ms", DatetimeCodec, "ms"),
        ("day", "", DateCodec, ""),
    ],
)
def test_codec_for_pydantic_fields(
    name: str, spec: str, codec_type: type[KeyCodec], codec_spec: str
) -> None:
    info = _Model.model_fields[name]
    codec = codec_for(info.annotation, spec=spec, metadata=info.metadata, field_name=name)
    assert type(codec) is codec_type
    assert codec.spec == codec_spec


def test_codec_for_unwraps_newtype_and_pipe_union() -> None:
    assert isinstance(codec_for(UserId, spec="05d", field_name="u"), IntCodec)
    assert isinstance(codec_for(uuid.UUID | None, field_name="u"), UUIDCodec)
    assert isinstance(codec_for(Union[None, bool], field_name="u"), BoolCodec)  # noqa: UP007


def _raises(error: type[Exception], rule: str, call: Callable[[], Any]) -> Exception:
    with pytest.raises(error) as caught:
        call()
    assert getattr(caught.value, "rule", None) == rule
    assert f"[rule: {rule}]" in str(caught.value)
    return caught.value


class _Other(pydantic.BaseModel):
    x: int


class _Mixed(enum.Enum):
    A = 1
    B = "b"


class _Tupled(enum.Enum):
    A = (1, 2)


class _Small(enum.IntEnum):
    A = 5
    B = 500


NO_ENCODING: list[Any] = [
    list[int],
    dict[str, int],
    bytes,
    Any,
    object,
    set[str],
    Union[int, str],  # noqa: UP007
    Optional[Union[int, str]],  # noqa: UP007, UP045
    int | str | None,
    _Other,
    pydantic.NaiveDatetime,
    Optional[pydantic.NaiveDatetime],  # noqa: UP045
    Literal[1, "a"],
    Literal[True],
    _Mixed,
    _Tupled,
    Annotated[list[str], KeyFormat("06d")],
]


@pytest.mark.parametrize("annotation", NO_ENCODING, ids=repr)
def test_no_encoding(annotation: Any) -> None:
    error = _raises(
        DeclarationError,
        "template.no-encoding",
        lambda: codec_for(annotation, field_name="the_field"),
    )
    assert "'the_field'" in str(error)


def test_naive_datetime_says_why() -> None:
    call = lambda: codec_for(Optional[pydantic.NaiveDatetime], field_name="t")  # noqa: E731, UP045
    assert "timezone-aware" in str(_raises(DeclarationError, "template.no-encoding", call))


def test_no_encoding_names_type_and_supported() -> None:
    message = str(
        _raises(DeclarationError, "template.no-encoding", lambda: codec_for(bytes, field_name="f"))
    )
    assert "bytes" in message
    for name in ("str", "int", "Decimal", "datetime", "UUID", "Enum"):
        assert name in message
    message = str(
        _raises(DeclarationError, "template.no-encoding", lambda: codec_for(_Other, field_name="f"))
    )
    assert "_Other" in message


DECLARATION_ERRORS: list[tuple[str, Callable[[], Any]]] = [
    ("template.int-width", lambda: codec_for(int, field_name="n")),
    ("template.int-width", lambda: codec_for(int, spec="x", field_name="n")),
    ("template.int-width", lambda: codec_for(int, spec="00d", field_name="n")),
    ("template.int-width", lambda: codec_for(int, spec="06.2f", field_name="n")),
    ("template.int-width", lambda: codec_for(Level, field_name="n")),
    ("template.int-width", lambda: codec_for(int, spec="01025d", field_name="n")),
    ("template.int-width", lambda: codec_for(Literal[1, 2], field_name="n")),
    ("template.decimal-format", lambda: codec_for(Decimal, field_name="p")),
    ("template.decimal-format", lambda: codec_for(Decimal, spec="06d", field_name="p")),
    ("template.decimal-format", lambda: codec_for(Decimal, spec="03.2f", field_name="p")),
    ("template.decimal-format", lambda: codec_for(float, spec="6d", field_name="x")),
    ("template.decimal-format", lambda: codec_for(Decimal, spec="1025.2f", field_name="x")),
    ("template.datetime-format", lambda: codec_for(datetime, spec="ns", field_name="t")),
    ("template.format-spec", lambda: codec_for(str, spec="06d", field_name="s")),
    ("template.format-spec", lambda: codec_for(date, spec="s", field_name="d")),
    ("template.format-spec", lambda: codec_for(bool, spec="1d", field_name="b")),
    ("template.format-spec", lambda: codec_for(uuid.UUID, spec="x", field_name="u")),
    (
        "template.format-conflict",
        lambda: codec_for(int, spec="06d", metadata=[KeyFormat("08d")], field_name="n"),
    ),
    (
        "template.format-conflict",
        lambda: codec_for(Annotated[int, KeyFormat("06d")], spec="05d", field_name="n"),
    ),
    (
        "template.format-conflict",
        lambda: codec_for(datetime, spec="ms", metadata=[KeyFormat("s")], field_name="t"),
    ),
    ("template.unencodable-value", lambda: codec_for(_Small, spec="02d", field_name="s")),
]


@pytest.mark.parametrize(("rule", "call"), DECLARATION_ERRORS)
def test_declaration_errors(rule: str, call: Callable[[], Any]) -> None:
    _raises(DeclarationError, rule, call)


def test_int_width_message_says_what_to_write() -> None:
    message = str(
        _raises(
            DeclarationError, "template.int-width", lambda: codec_for(int, field_name="replies")
        )
    )
    assert "{replies:06d}" in message
    assert 'KeyFormat("06d")' in message


def test_agreeing_specs_are_fine() -> None:
    codec = codec_for(
        Annotated[int, KeyFormat("6d")], spec="06d", metadata=[KeyFormat("06d")], field_name="n"
    )
    assert codec.spec == "06d"
    assert codec_for(datetime, spec="us", metadata=[KeyFormat("us")], field_name="t").spec == "us"


_aware = timezone(timedelta(hours=-3))
_int6 = IntCodec("06d", field_name="n")
_dec = DecimalCodec("08.2f", field_name="p")
_float = FloatCodec(field_name="x")
_float_fixed = FloatCodec("08.2f", field_name="x")
_str = StrCodec(field_name="name", terminated=True)

ENCODE_ERRORS: list[tuple[str, KeyCodec, Any]] = [
    ("key.type", _int6, "5"),
    ("key.type", _int6, True),
    ("key.type", _int6, 1.0),
    ("key.type", _int6, Decimal(1)),
    ("key.type", _dec, 1.5),
    ("key.type", _dec, "1.5"),
    ("key.type", _dec, False),
    ("key.type", _float, True),
    ("key.type", _float, Decimal("1.5")),
    ("key.type", _float, 2**60 + 1),
    ("key.type", _float, 10**400),
    ("key.type", DatetimeCodec(), date(2020, 1, 1)),
    ("key.type", DatetimeCodec(), "2020-01-01T00:00:00Z"),
    ("key.type", DateCodec(), datetime(2020, 1, 1, tzinfo=timezone.utc)),
    ("key.type", BoolCodec(), 1),
    ("key.type", UUIDCodec(), "0123abcd-0000-4000-8000-00000000ffff"),
    ("key.type", _str, 5),
    ("key.type", _str, b"x"),
    ("key.type", codec_for(Status, field_name="s"), "open"),
    ("key.type", codec_for(Level, spec="02d", field_name="l"), 7),
    ("key.type", codec_for(Level, spec="02d", field_name="l"), Colour.RED),
    ("key.int-overflow", _int6, 1_000_000),
    ("key.int-overflow", _int6, -1_000_000),
    ("key.decimal-scale", _dec, Decimal("1.234")),
    ("key.decimal-scale", _dec, Decimal("-0.001")),
    ("key.decimal-scale", _float_fixed, 0.125),
    ("key.decimal-scale", _float_fixed, 1e-10),
    ("key.decimal-overflow", _dec, Decimal("100000")),
    ("key.decimal-overflow", _dec, Decimal("-100000.00")),
    ("key.decimal-overflow", _dec, Decimal("1E+5")),
    ("key.decimal-overflow", _dec, 10**5),
    ("key.decimal-overflow", _float_fixed, 1e300),
    ("key.not-finite", _dec, Decimal("NaN")),
    ("key.not-finite", _dec, Decimal("sNaN")),
    ("key.not-finite", _dec, Decimal("-Infinity")),
    ("key.not-finite", _float, float("nan")),
    ("key.not-finite", _float, float("inf")),
    ("key.not-finite", _float_fixed, float("-inf")),
    ("key.naive-datetime", DatetimeCodec(), datetime(2020, 1, 1)),
    ("key.datetime-precision", DatetimeCodec("ms"), datetime(2020, 1, 1, 0, 0, 0, 1500, _aware)),
    ("key.datetime-precision", DatetimeCodec("s"), datetime(2020, 1, 1, 0, 0, 0, 1000, _aware)),
    (
        "key.datetime-precision",
        DatetimeCodec("s"),
        datetime(2020, 1, 1, tzinfo=timezone(timedelta(microseconds=1))),
    ),
    ("key.datetime-range", DatetimeCodec(), datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))),
    ("key.datetime-range", DatetimeCodec(), datetime(9999, 12, 31, 23, tzinfo=_aware)),
    ("key.reserved-char", _str, "a" + MAX_CHAR),
    ("key.invalid-unicode", _str, "a\ud800b"),
    ("key.invalid-unicode", _str, "\udfff"),
]


@pytest.mark.parametrize(("rule", "codec", "value"), ENCODE_ERRORS)
def test_encode_errors(rule: str, codec: KeyCodec, value: Any) -> None:
    error = _raises(KeyEncodingError, rule, lambda: codec.encode(value))
    assert repr(codec.field_name) in str(error)


@pytest.mark.parametrize(
    ("rule", "prefix"),
    [
        ("key.reserved-char", MAX_CHAR),
        ("key.invalid-unicode", "\ud83d"),
        ("key.type", 3),
    ],
)
def test_validate_prefix_errors(rule: str, prefix: Any) -> None:
    _raises(KeyEncodingError, rule, lambda: _str.validate_prefix(prefix))


def test_empty_str_and_prefix_allowed() -> None:
    assert _str.encode("") == "\x00"
    assert _str.validate_prefix("") == ""
    assert _str.validate_prefix("ab\U0001f600") == "ab\U0001f600"


@pytest.mark.parametrize(
    "codec",
    [
        _int6,
        _dec,
        _float,
        DatetimeCodec(),
        DateCodec(),
        BoolCodec(),
        UUIDCodec(),
        codec_for(Level, spec="02d", field_name="l"),
    ],
    ids=repr,
)
def test_validate_prefix_needs_str_field(codec: KeyCodec) -> None:
    _raises(KeyEncodingError, "key.begins-with-type", lambda: codec.validate_prefix("0"))


MALFORMED: list[tuple[KeyCodec, Any]] = [
    (_int6, "42"),
    (_int6, "0000042"),
    (_int6, "+00042"),
    (_int6, " 00042"),
    (_int6, "-000000"),
    (_int6, "\uff10\uff10\uff10\uff10\uff14\uff12"),
    (_int6, 42),
    (_dec, "0012.50"),
    (_dec, "00012.5"),
    (_dec, "00012,50"),
    (_dec, "-00000.00"),
    (_dec, ""),
    (_float, "BFF0000000000000"),
    (_float, "7fffffffffffffff"),
    (_float, "fff0000000000000"),
    (_float, "0x3ff00000000000"),
    (_float_fixed, "-00000.00"),
    (FloatCodec("025.20f"), "0000.10000000000000000555"),
    (DatetimeCodec(), "2020-01-01T00:00:00Z"),
    (DatetimeCodec(), "2020-02-30T00:00:00.000000Z"),
    (DatetimeCodec(), "2020-01-01T00:00:00.000000+00:00"),
    (DatetimeCodec("s"), "2020-01-01T00:00:00.000Z"),
    (DateCodec(), "2020-1-01"),
    (DateCodec(), "20200101"),
    (BoolCodec(), "2"),
    (BoolCodec(), "true"),
    (UUIDCodec(), "0123ABCD-0000-4000-8000-00000000FFFF"),
    (UUIDCodec(), "{0123abcd-0000-4000-8000-00000000ffff}"),
    (UUIDCodec(), "0123abcd000040008000000000000fff"),
    (_str, "a#b"),
    (_str, MAX_CHAR),
    (codec_for(Status, field_name="s"), "pending"),
    (codec_for(Level, spec="02d", field_name="l"), "08"),
]


@pytest.mark.parametrize(("codec", "text"), MALFORMED, ids=repr)
def test_decode_refuses_malformed(codec: KeyCodec, text: Any) -> None:
    _raises(KeyEncodingError, "key.malformed", lambda: codec.decode(text))


def _one_field_entity(name: str, field: str, annotation: type, sort_key: str) -> type[Entity]:
    """An entity of one key field, declared at run time (the declaration is under test)."""
    table = Table("HintTable", "PK", "SK")
    keys = {"PK": "X", "SK": sort_key}
    return type(name, (Entity,), {"__annotations__": {field: annotation}}, table=table, keys=keys)


@pytest.mark.parametrize(
    ("annotation", "hinted", "value"),
    [(int, "write ({[^}]+})", 7), (Decimal, "such as ({[^}]+})", Decimal("1.25"))],
)
def test_a_format_hint_is_a_placeholder_that_declares(
    annotation: type, hinted: str, value: Any
) -> None:
    with pytest.raises(DeclarationError) as caught:
        _one_field_entity("Unformatted", "n", annotation, "N#{n}")
    placeholder = re.search(hinted, str(caught.value))
    assert placeholder is not None, str(caught.value)
    formatted = _one_field_entity("Formatted", "n", annotation, "N#" + placeholder.group(1))
    assert dry_run_put(formatted(n=value), assume_new=True).total > 0


def test_the_overflow_hint_is_a_placeholder_that_fits_the_value() -> None:
    narrow = _one_field_entity("Narrow", "seq", int, "S#{seq:04d}")
    with pytest.raises(KeyEncodingError) as caught:
        dry_run_put(narrow(seq=123456), assume_new=True)
    placeholder = re.search(r"for example ({[^}]+})", str(caught.value))
    assert placeholder is not None, str(caught.value)
    wide = _one_field_entity("Wide", "seq", int, "S#" + placeholder.group(1))
    assert dry_run_put(wide(seq=123456), assume_new=True).total > 0
