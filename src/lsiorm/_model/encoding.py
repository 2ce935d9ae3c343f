"""Order-preserving encoding of single field values into key strings, and back.

Every codec maps values to text whose order (as Python ``str``, which for valid Unicode is also
UTF-8 byte order, the order DynamoDB uses) is exactly the order of the values, and equal text to
equal values only. The formats below are the storage format: changing one changes stored keys.
"""

from __future__ import annotations

import abc
import math
import re
import struct
import types
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Final, Literal, NewType, Union, get_args, get_origin

import pydantic

from lsiorm.errors import DeclarationError, KeyEncodingError

__all__ = [
    "MAX_CHAR",
    "BoolCodec",
    "DateCodec",
    "DatetimeCodec",
    "DecimalCodec",
    "EnumCodec",
    "FloatCodec",
    "IntCodec",
    "KeyCodec",
    "KeyFormat",
    "StrCodec",
    "UUIDCodec",
    "codec_for",
]

#: A Unicode noncharacter, never allowed inside a str value; query bounds append it as the
#: upper sentinel, so it must sort above every character a value may hold.
MAX_CHAR: Final = "\U0010ffff"

#: A character class as sorted, disjoint, inclusive code point ranges.
CharSet = tuple[tuple[int, int], ...]
#: One step of a key's shape: ``("one", chars)`` one character of the class, ``("opt", chars)``
#: at most one, ``("star", chars)`` any number. A codec's tokens describe a superset of the
#: texts it writes; :mod:`lsiorm._model.keyspace` reasons about key ranges with them.
Token = tuple[str, CharSet]

ANY_KEY_CHAR: Final[CharSet] = ((0, 0x10FFFE),)
_DIGITS: Final[CharSet] = ((0x30, 0x39),)
_HEX: Final[CharSet] = ((0x30, 0x39), (0x61, 0x66))


def chars(text: str) -> CharSet:
    """Return the class of exactly the characters of ``text``."""
    return tuple((ord(c), ord(c)) for c in sorted(set(text)))


def _shape(pattern: str) -> list[Token]:
    """Tokens of a fixed layout: ``9`` a digit, ``f`` a hex digit, anything else itself."""
    out: list[Token] = []
    for c in pattern:
        out.append(("one", _DIGITS if c == "9" else _HEX if c == "f" else chars(c)))
    return out


_SUPPORTED: Final = (
    "str, int, bool, float, Decimal, datetime (timezone-aware), date, UUID, Enum subclasses "
    "and Literal of strings or ints, each optionally wrapped in Optional[...] or Annotated[...]"
)


@dataclass(frozen=True)
class KeyFormat:
    """The key format spec of a field, as in ``Annotated[int, KeyFormat("06d")]``.

    It means the same as writing the spec in the template (``{replies:06d}``); when both are
    given they must agree.
    """

    spec: str


class KeyCodec(abc.ABC):
    """Encode the values of one field into key text that sorts as the values do, and back."""

    python_type: type
    #: True when no encoding is a proper prefix of another, so a range over this field stays
    #: exact when more template text follows it.
    prefix_free: bool
    #: The normalised format spec in use ("" when the codec takes none).
    spec: str
    field_name: str

    @abc.abstractmethod
    def encode(self, value: Any) -> str:
        """Return the key text of ``value``; raise KeyEncodingError naming the rule it breaks."""

    def decode(self, text: str) -> Any:
        """Return the value whose encoding is ``text``; raise KeyEncodingError if there is none.

        Only the exact text :meth:`encode` produces is accepted, so decoding is the inverse of
        encoding and never guesses.
        """
        canonical: str | None = None
        value: Any = None
        if isinstance(text, str):
            try:
                value = self._parse(text)
                canonical = self.encode(value)
            except (ValueError, OverflowError):
                canonical = None
        if canonical is None or canonical != text:
            raise KeyEncodingError(
                "key.malformed",
                f"{text!r} is not a key encoding of field {self.field_name!r} ({self!r}).",
            )
        return value

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text for a begins_with ``prefix`` on this field."""
        raise KeyEncodingError(
            "key.begins-with-type",
            f"begins_with needs a str field, but field {self.field_name!r} holds "
            f"{self.python_type.__name__} values.",
        )

    def tokens(self) -> list[Token]:
        """Return the shape of every text this codec writes (a superset is allowed)."""
        return [("star", ANY_KEY_CHAR)]

    @abc.abstractmethod
    def _parse(self, text: str) -> Any:
        """Return the value ``text`` spells; may raise ValueError on text that spells none."""

    def _type_error(self, value: Any, expected: str) -> KeyEncodingError:
        return KeyEncodingError(
            "key.type",
            f"Field {self.field_name!r} needs {expected}, got {type(value).__name__} {value!r}.",
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r})"


def _not_finite(field_name: str, value: Any) -> KeyEncodingError:
    return KeyEncodingError(
        "key.not-finite", f"Field {field_name!r} cannot hold {value!r} in a key: it is not finite."
    )


# A DynamoDB sort key holds at most 1024 bytes; wider formats could never be stored.
_MAX_WIDTH: Final = 1024

_INT_SPEC: Final = re.compile(r"0?([1-9][0-9]*)d")


class IntCodec(KeyCodec):
    """Signed integers in a fixed number of digits N, from the spec ``0Nd`` (``Nd`` means the same).

    Format: n >= 0 is ``format(n, "0Nd")``, exactly N ASCII digits (42 with N=6 is ``000042``).
    n < 0 is ``"-"`` followed by ``10**N + n`` zero-padded to N digits (-5 is ``-999995``,
    -999999 is ``-000001``); ``"-"`` sorts below the digits, so negatives come first and in order.
    Values with ``abs(n) >= 10**N`` are refused (``key.int-overflow``), never written longer.
    """

    python_type = int
    prefix_free = True

    def __init__(self, spec: str, *, field_name: str = "value") -> None:
        match = _INT_SPEC.fullmatch(spec)
        if match is None or int(match.group(1)) > _MAX_WIDTH:
            raise DeclarationError(
                "template.int-width",
                f"Int field {field_name!r} needs a fixed digit count so its keys sort by value: "
                f"write {{{field_name}:06d}} in the template or annotate the field with "
                f'Annotated[int, KeyFormat("06d")], at most {_MAX_WIDTH} digits'
                + (f" (got spec {spec!r})." if spec else "."),
            )
        self.field_name = field_name
        self.width = int(match.group(1))
        self.spec = f"0{self.width}d"
        self._limit: int = 10**self.width
        self._text = re.compile(rf"-?[0-9]{{{self.width}}}")

    def encode(self, value: Any) -> str:
        """Return the key text of the int ``value``."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._type_error(value, "an int")
        n = int(value)
        if not -self._limit < n < self._limit:
            raise KeyEncodingError(
                "key.int-overflow",
                f"Field {self.field_name!r} value {n} needs more than {self.width} digits; "
                f"widen its format (for example {{{self.field_name}:0{len(str(abs(n)))}d}}).",
            )
        if n >= 0:
            return str(n).zfill(self.width)
        return "-" + str(self._limit + n).zfill(self.width)

    def tokens(self) -> list[Token]:
        """An optional ``-`` and ``width`` digits."""
        return [("opt", chars("-")), *_shape("9" * self.width)]

    def _parse(self, text: str) -> int:
        if self._text.fullmatch(text) is None:
            raise ValueError(text)
        if text[0] == "-":
            return int(text[1:]) - self._limit
        return int(text)


_FIXED_SPEC: Final = re.compile(r"0?([1-9][0-9]*)\.([0-9]+)f")


class _FixedPoint:
    """The fixed-point layout shared by Decimal and float fields with a ``0W.Sf`` spec."""

    def __init__(self, spec: str, field_name: str, kind: str) -> None:
        match = _FIXED_SPEC.fullmatch(spec)
        width = int(match.group(1)) if match else 0
        scale = int(match.group(2)) if match else 0
        int_digits = width - scale - 1 if scale else width
        if match is None or int_digits < 1 or width > _MAX_WIDTH:
            raise DeclarationError(
                "template.decimal-format",
                f"{kind} field {field_name!r} needs a fixed-point format such as "
                f'{{{field_name}:010.2f}} or Annotated[..., KeyFormat("010.2f")] (total width '
                "including the point, then decimals), with at least one integer digit and at "
                f"most {_MAX_WIDTH} characters" + (f"; got spec {spec!r}." if spec else "."),
            )
        self.field_name = field_name
        self.scale = scale
        self.int_digits = int_digits
        self.spec = f"0{width}.{scale}f"
        self._digits = int_digits + scale
        self._limit: int = 10**self._digits
        point = rf"\.[0-9]{{{scale}}}" if scale else ""
        self._text = re.compile(rf"(-?)([0-9]{{{int_digits}}}){point}")

    def scaled(self, value: Decimal) -> int:
        """Return ``value * 10**scale`` as an exact int, refusing values that do not fit."""
        if not value.is_finite():
            raise _not_finite(self.field_name, value)
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)  # finite values have an int exponent
        used = len(digits)
        while used and digits[used - 1] == 0:
            used -= 1
        if used == 0:
            return 0
        exponent += len(digits) - used
        if exponent + self.scale < 0:
            raise KeyEncodingError(
                "key.decimal-scale",
                f"Field {self.field_name!r} value {value} has more than {self.scale} decimal "
                f"places; round it or widen the format {self.spec!r}.",
            )
        if used + exponent > self.int_digits:
            raise KeyEncodingError(
                "key.decimal-overflow",
                f"Field {self.field_name!r} value {value} has more than {self.int_digits} "
                f"integer digits; widen the format {self.spec!r}.",
            )
        magnitude: int = int("".join(map(str, digits[:used]))) * 10 ** (exponent + self.scale)
        return -magnitude if sign else magnitude

    def text(self, scaled: int) -> str:
        """Return the key text of the scaled integer ``scaled``."""
        if scaled >= 0:
            sign, body = "", str(scaled).zfill(self._digits)
        else:
            sign, body = "-", str(self._limit + scaled).zfill(self._digits)
        if self.scale:
            body = f"{body[: self.int_digits]}.{body[self.int_digits :]}"
        return sign + body

    def tokens(self) -> list[Token]:
        """An optional ``-``, the integer digits, and the point and decimals if any."""
        body = "9" * self.int_digits + ("." + "9" * self.scale if self.scale else "")
        return [("opt", chars("-")), *_shape(body)]

    def parse(self, text: str) -> Decimal:
        """Return the Decimal that ``text`` spells, with exactly ``scale`` decimal places."""
        match = self._text.fullmatch(text)
        if match is None:
            raise ValueError(text)
        scaled = int(text[len(match.group(1)) :].replace(".", ""))
        if match.group(1):
            scaled -= self._limit
        # The string constructor is exact; arithmetic would round to the context precision.
        return Decimal(f"{scaled}E-{self.scale}")


class DecimalCodec(KeyCodec):
    """Decimals in fixed point, from the spec ``0W.Sf``: W characters with the point, S decimals.

    Format: a value >= 0 is exactly ``format(value, "0W.Sf")`` (Decimal("12.5") with ``08.2f``
    is ``00012.50``). A value < 0 is scaled to the integer ``m = value * 10**S``, which with
    D = W - 1 digits (W when S is 0) becomes ``10**D + m`` zero-padded to D digits, with the
    point put back at the same place and ``"-"`` in front (-0.01 with ``08.2f`` is
    ``-99999.99``); -0 is written as 0. Values needing more than S decimal places
    (``key.decimal-scale``) or more integer digits than fit (``key.decimal-overflow``) are
    refused, as are NaN and infinities (``key.not-finite``). Plain ints are accepted too.
    """

    python_type = Decimal
    prefix_free = True

    def __init__(self, spec: str, *, field_name: str = "value") -> None:
        self._fixed = _FixedPoint(spec, field_name, "Decimal")
        self.field_name = field_name
        self.spec = self._fixed.spec

    def encode(self, value: Any) -> str:
        """Return the key text of the Decimal (or int) ``value``."""
        if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
            raise self._type_error(value, "a Decimal")
        return self._fixed.text(self._fixed.scaled(Decimal(value)))

    def _parse(self, text: str) -> Decimal:
        return self._fixed.parse(text)

    def tokens(self) -> list[Token]:
        """The fixed-point layout."""
        return self._fixed.tokens()


_SIGN_BIT: Final = 1 << 63
_ALL_BITS: Final = (1 << 64) - 1
_HEX16: Final = re.compile(r"[0-9a-f]{16}")


class FloatCodec(KeyCodec):
    """Finite floats, either as ordered IEEE-754 bits (no spec) or in fixed point (``0W.Sf``).

    Format without a spec: 16 lowercase hex digits of the 64-bit pattern of the value with the
    sign bit flipped when the value is >= 0 and all bits flipped when it is < 0, after -0.0 is
    made 0.0 (1.0 is ``bff0000000000000``). With a ``0W.Sf`` spec: the :class:`DecimalCodec`
    format of ``Decimal(repr(value))``; a float whose shortest repr needs more than S decimals is
    refused (``key.decimal-scale``). NaN and infinities are refused (``key.not-finite``). Ints
    that a float represents exactly are accepted too.
    """

    python_type = float
    prefix_free = True

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        self._fixed = _FixedPoint(spec, field_name, "Float") if spec else None
        self.field_name = field_name
        self.spec = self._fixed.spec if self._fixed else ""

    def encode(self, value: Any) -> str:
        """Return the key text of the float ``value``."""
        number = self._as_float(value)
        if not math.isfinite(number):
            raise _not_finite(self.field_name, value)
        number += 0.0  # makes -0.0 into 0.0, so equal values get equal text
        if self._fixed is not None:
            return self._fixed.text(self._fixed.scaled(Decimal(repr(number))))
        (bits,) = struct.unpack(">Q", struct.pack(">d", number))
        bits = bits ^ _ALL_BITS if bits & _SIGN_BIT else bits | _SIGN_BIT
        return f"{bits:016x}"

    def tokens(self) -> list[Token]:
        """16 hex digits, or the fixed-point layout."""
        return self._fixed.tokens() if self._fixed is not None else _shape("f" * 16)

    def _as_float(self, value: Any) -> float:
        if isinstance(value, float):
            return float(value)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                number = float("nan")
            if number == value:
                return number
            raise self._type_error(value, "a float (this int has no exact float value)")
        raise self._type_error(value, "a float")

    def _parse(self, text: str) -> float:
        if self._fixed is not None:
            return float(self._fixed.parse(text))
        if _HEX16.fullmatch(text) is None:
            raise ValueError(text)
        bits = int(text, 16)
        bits = bits ^ _SIGN_BIT if bits & _SIGN_BIT else bits ^ _ALL_BITS
        number: float = struct.unpack(">d", struct.pack(">Q", bits))[0]
        return number


_DATETIME_DIGITS: Final = {"us": 6, "ms": 3, "s": 0}


class DatetimeCodec(KeyCodec):
    """Timezone-aware datetimes, as UTC text of a fixed precision.

    Format: ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC for spec ``us`` (the default, always six
    fraction digits), ``YYYY-MM-DDTHH:MM:SS.fffZ`` for ``ms`` and ``YYYY-MM-DDTHH:MM:SSZ`` for
    ``s``. Keys sort by instant, so the same instant in any zone has the same key. Naive values
    (``key.naive-datetime``), values finer than the precision (``key.datetime-precision``, never
    truncated) and values whose UTC time falls outside years 1-9999 (``key.datetime-range``) are
    refused. Decoding gives an aware datetime in UTC.
    """

    python_type = datetime
    prefix_free = True

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        normal = spec or "us"
        if normal not in _DATETIME_DIGITS:
            raise DeclarationError(
                "template.datetime-format",
                f"Datetime field {field_name!r} has format spec {spec!r}; use 'us' (the "
                "default), 'ms' or 's' for the precision of its keys.",
            )
        self.field_name = field_name
        self.spec = normal
        self.digits = _DATETIME_DIGITS[normal]
        self._unit = 10 ** (6 - self.digits)
        fraction = rf"\.([0-9]{{{self.digits}}})" if self.digits else "()"
        self._text = re.compile(
            r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})" + fraction + "Z"
        )

    def encode(self, value: Any) -> str:
        """Return the key text of the aware datetime ``value``."""
        if not isinstance(value, datetime):
            raise self._type_error(value, "a datetime")
        if value.utcoffset() is None:
            raise KeyEncodingError(
                "key.naive-datetime",
                f"Field {self.field_name!r} got the naive datetime {value!r}; key datetimes "
                "must be timezone-aware so they sort by instant.",
            )
        try:
            utc = value.astimezone(timezone.utc)
        except OverflowError:
            raise KeyEncodingError(
                "key.datetime-range",
                f"Field {self.field_name!r} value {value.isoformat()} is outside years 1-9999 "
                "in UTC.",
            ) from None
        # Checked in UTC: a zone offset may itself carry microseconds.
        if utc.microsecond % self._unit:
            raise KeyEncodingError(
                "key.datetime-precision",
                f"Field {self.field_name!r} value {value.isoformat()} is finer than the key "
                f"precision {self.spec!r}; round it first or use a finer format.",
            )
        text = (
            f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
            f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
        )
        if self.digits:
            text += "." + f"{utc.microsecond:06d}"[: self.digits]
        return text + "Z"

    def tokens(self) -> list[Token]:
        """The fixed ``YYYY-MM-DDTHH:MM:SS[.fff]Z`` layout."""
        return _shape(
            "9999-99-99T99:99:99" + ("." + "9" * self.digits if self.digits else "") + "Z"
        )

    def _parse(self, text: str) -> datetime:
        match = self._text.fullmatch(text)
        if match is None:
            raise ValueError(text)
        year, month, day, hour, minute, second = map(int, match.groups()[:6])
        micro = int(match.group(7)) * self._unit if match.group(7) else 0
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone.utc)


_DATE_TEXT: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


def _no_spec(kind: str, spec: str, field_name: str) -> None:
    if spec:
        raise DeclarationError(
            "template.format-spec",
            f"{kind} field {field_name!r} takes no format spec, got {spec!r}.",
        )


class DateCodec(KeyCodec):
    """Dates (not datetimes), as ``YYYY-MM-DD``."""

    python_type = date
    prefix_free = True

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        _no_spec("Date", spec, field_name)
        self.field_name = field_name
        self.spec = ""

    def encode(self, value: Any) -> str:
        """Return the key text of the date ``value``."""
        if not isinstance(value, date) or isinstance(value, datetime):
            raise self._type_error(value, "a date")
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"

    def tokens(self) -> list[Token]:
        """The fixed ``YYYY-MM-DD`` layout."""
        return _shape("9999-99-99")

    def _parse(self, text: str) -> date:
        match = _DATE_TEXT.fullmatch(text)
        if match is None:
            raise ValueError(text)
        return date(*map(int, match.groups()))


class BoolCodec(KeyCodec):
    """Booleans, as ``0`` (False) and ``1`` (True)."""

    python_type = bool
    prefix_free = True

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        _no_spec("Bool", spec, field_name)
        self.field_name = field_name
        self.spec = ""

    def encode(self, value: Any) -> str:
        """Return the key text of the bool ``value``."""
        if not isinstance(value, bool):
            raise self._type_error(value, "a bool")
        return "1" if value else "0"

    def tokens(self) -> list[Token]:
        """One of ``0`` and ``1``."""
        return [("one", chars("01"))]

    def _parse(self, text: str) -> bool:
        if text not in ("0", "1"):
            raise ValueError(text)
        return text == "1"


class UUIDCodec(KeyCodec):
    """UUIDs, in the canonical lowercase 36-character form (``8-4-4-4-12`` hex digits)."""

    python_type = uuid.UUID
    prefix_free = True

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        _no_spec("UUID", spec, field_name)
        self.field_name = field_name
        self.spec = ""

    def encode(self, value: Any) -> str:
        """Return the key text of the UUID ``value``."""
        if not isinstance(value, uuid.UUID):
            raise self._type_error(value, "a UUID")
        return str(value)

    def tokens(self) -> list[Token]:
        """The fixed ``8-4-4-4-12`` hex layout."""
        return _shape("ffffffff-ffff-ffff-ffff-ffffffffffff")

    def _parse(self, text: str) -> uuid.UUID:
        return uuid.UUID(text)


#: Ends a str field that more template text follows; sorts below every other key character.
TERMINATOR: Final = "\x00"
#: Starts the two-character escape of U+0000 (``\x01\x01``) and U+0001 (``\x01\x02``).
ESCAPE: Final = "\x01"
_ESCAPES: Final = {"\x00": "\x01\x01", "\x01": "\x01\x02"}
_UNESCAPES: Final = {"\x01": "\x00", "\x02": "\x01"}
_NEEDS_ESCAPE: Final = re.compile("[\x00\x01]")


def escape_text(text: str) -> str:
    """Return ``text`` with U+0000 and U+0001 escaped (the only characters that change)."""
    if "\x00" not in text and "\x01" not in text:
        return text
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], text)


def unescape_text(text: str) -> str:
    """Invert :func:`escape_text`; raise ValueError on text it cannot have produced."""
    if "\x00" in text:
        raise ValueError(text)
    if "\x01" not in text:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == ESCAPE:
            found = _UNESCAPES.get(text[pos + 1 : pos + 2])
            if found is None:
                raise ValueError(text)
            out.append(found)
            pos += 2
        else:
            out.append(char)
            pos += 1
    return "".join(out)


class StrCodec(KeyCodec):
    """Strings: the text itself, with U+0000 and U+0001 escaped, then a terminator when more
    template follows.

    Format: every character stands for itself except U+0000, written ``\\x01\\x01``, and
    U+0001, written ``\\x01\\x02``. A field followed by more template text (``terminated``)
    then ends with U+0000, which sorts below every character the escaped text can hold; so
    ``"ab"`` (``ab\\x00``) sorts before ``"ab!"`` (``ab!\\x00``) whatever literal follows, and
    no encoding is a prefix of another. A field that ends its template carries no terminator,
    so its key text is the value itself unless the value holds U+0000 or U+0001.

    Refused: text holding :data:`MAX_CHAR` (``key.reserved-char``) or a lone surrogate, which
    UTF-8 cannot carry (``key.invalid-unicode``). The empty string is allowed; the template
    decides whether an empty key is.
    """

    python_type = str

    def __init__(
        self, spec: str = "", *, field_name: str = "value", terminated: bool = False
    ) -> None:
        _no_spec("Str", spec, field_name)
        self.field_name = field_name
        self.spec = ""
        self.terminated = terminated
        self.prefix_free = terminated

    def encode(self, value: Any) -> str:
        """Return the key text of the str ``value``."""
        text = escape_text(self._checked(value, "value"))
        return text + TERMINATOR if self.terminated else text

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text every value starting with ``prefix`` starts with."""
        return escape_text(self._checked(prefix, "begins_with prefix"))

    def _checked(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self._type_error(value, "a str")
        text = value if type(value) is str else str.__str__(value)
        if text.isascii():  # no surrogate, no U+10FFFF
            return text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyEncodingError(
                "key.invalid-unicode",
                f"Field {self.field_name!r} {what} {text!r} holds a lone surrogate, which "
                "UTF-8 cannot encode.",
            ) from None
        if MAX_CHAR in text:
            raise KeyEncodingError(
                "key.reserved-char",
                f"Field {self.field_name!r} {what} {text!r} holds U+10FFFF, which lsiorm "
                "reserves as the upper bound of key ranges.",
            )
        return text

    def tokens(self) -> list[Token]:
        """Any key characters but U+0000, then U+0000 when terminated."""
        body: list[Token] = [("star", ((1, 0x10FFFE),))]
        return [*body, ("one", chars(TERMINATOR))] if self.terminated else body

    def _parse(self, text: str) -> str:
        if self.terminated:
            if not text.endswith(TERMINATOR):
                raise ValueError(text)
            text = text[:-1]
        return unescape_text(text)

    def __repr__(self) -> str:
        return f"StrCodec(terminated={self.terminated!r})"


class EnumCodec(KeyCodec):
    """Enum members, as the encoding of their value; keys sort in the order of the values.

    The type of the members' values (all the same) picks the inner codec, so an int-valued enum
    needs a width like an int field. Only members are accepted; decoding gives the member.
    """

    def __init__(self, enum_type: type[Enum], inner: KeyCodec) -> None:
        self.python_type = enum_type
        self.enum_type = enum_type
        self.inner = inner
        self.field_name = inner.field_name
        self.prefix_free = inner.prefix_free
        self.spec = inner.spec

    def encode(self, value: Any) -> str:
        """Return the key text of the member ``value``."""
        if not isinstance(value, self.enum_type):
            raise self._type_error(value, f"a {self.enum_type.__name__} member")
        return self.inner.encode(value.value)

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text of a begins_with ``prefix``; only str-valued enums allow one."""
        return self.inner.validate_prefix(prefix)

    def tokens(self) -> list[Token]:
        """The tokens of the inner codec."""
        return self.inner.tokens()

    def _parse(self, text: str) -> Enum:
        return self.enum_type(self.inner.decode(text))

    def __repr__(self) -> str:
        return f"EnumCodec({self.python_type.__name__}, {self.inner!r})"


_Factory = Callable[[str, str, bool], KeyCodec]

_FACTORIES: Final[dict[Any, _Factory]] = {
    str: lambda spec, name, terminated: StrCodec(spec, field_name=name, terminated=terminated),
    int: lambda spec, name, _: IntCodec(spec, field_name=name),
    bool: lambda spec, name, _: BoolCodec(spec, field_name=name),
    float: lambda spec, name, _: FloatCodec(spec, field_name=name),
    Decimal: lambda spec, name, _: DecimalCodec(spec, field_name=name),
    datetime: lambda spec, name, _: DatetimeCodec(spec, field_name=name),
    date: lambda spec, name, _: DateCodec(spec, field_name=name),
    uuid.UUID: lambda spec, name, _: UUIDCodec(spec, field_name=name),
}

# Pydantic's constrained date and datetime types appear as these classes in FieldInfo.annotation.
_PYDANTIC_ALIASES: Final[dict[Any, type]] = {
    pydantic.AwareDatetime: datetime,
    pydantic.PastDatetime: datetime,
    pydantic.FutureDatetime: datetime,
    pydantic.PastDate: date,
    pydantic.FutureDate: date,
}


def codec_for(
    annotation: Any,
    *,
    spec: str = "",
    metadata: Sequence[Any] = (),
    field_name: str,
    terminated: bool = False,
) -> KeyCodec:
    """Return the codec for a key field declared with ``annotation``.

    ``spec`` is the format spec written in the template, ``metadata`` the field's pydantic
    metadata (a :class:`KeyFormat` in it counts like one inside ``Annotated``), ``terminated``
    whether more template text follows the field (a str field then ends with a terminator).
    Raises DeclarationError when the type has no encoding, the spec does not fit the type, or
    two specs disagree.
    """
    specs: list[str] = [spec] if spec else []
    base = _unwrap(annotation, specs)
    specs.extend(item.spec for item in metadata if isinstance(item, KeyFormat) and item.spec)

    if get_origin(base) is Literal:
        values = [value for value in get_args(base) if value is not None]
        kinds = {type(value) for value in values}
        if len(kinds) != 1 or not kinds <= {str, int}:
            raise _no_encoding(field_name, annotation)
        codec = _with_spec(_FACTORIES[kinds.pop()], specs, field_name, terminated)
        _check_values(codec, values, "Literal")
        return codec
    base = _PYDANTIC_ALIASES.get(base, base)
    if base is pydantic.NaiveDatetime:
        why = "key datetimes must be timezone-aware (use AwareDatetime or datetime)"
        raise _no_encoding(field_name, annotation, why)
    if isinstance(base, type) and issubclass(base, Enum):
        kinds = {type(member.value) for member in base}
        kind = kinds.pop() if len(kinds) == 1 else None
        if kind not in _FACTORIES:
            why = f"the values of {base.__name__} must all have one type, a supported key type"
            raise _no_encoding(field_name, annotation, why)
        codec = EnumCodec(base, _with_spec(_FACTORIES[kind], specs, field_name, terminated))
        _check_values(codec.inner, [member.value for member in base], base.__name__)
        return codec
    factory = _FACTORIES.get(base)
    if factory is None:
        raise _no_encoding(field_name, annotation)
    return _with_spec(factory, specs, field_name, terminated)


def _unwrap(annotation: Any, specs: list[str]) -> Any:
    """Strip Optional, Annotated and NewType; collect the KeyFormat specs met on the way."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extras = get_args(annotation)
            specs.extend(item.spec for item in extras if isinstance(item, KeyFormat) and item.spec)
        elif origin is Union or origin is types.UnionType:
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        elif isinstance(annotation, NewType):
            annotation = annotation.__supertype__
        else:
            return annotation


def _with_spec(factory: _Factory, specs: list[str], field_name: str, terminated: bool) -> KeyCodec:
    codecs = [factory(spec, field_name, terminated) for spec in specs or [""]]
    normal = {codec.spec for codec in codecs}
    if len(normal) > 1:
        raise DeclarationError(
            "template.format-conflict",
            f"Field {field_name!r} has disagreeing key formats {sorted(set(specs))!r} "
            "(template spec and KeyFormat); give one, or make them equal.",
        )
    return codecs[0]


def _check_values(codec: KeyCodec, values: Sequence[Any], where: str) -> None:
    for value in values:
        try:
            codec.encode(value)
        except KeyEncodingError as error:
            reason = str(error).rsplit(" [rule:", 1)[0]
            raise DeclarationError(
                "template.unencodable-value",
                f"Field {codec.field_name!r}: {where} value {value!r} cannot be a key: {reason}",
            ) from None


def _no_encoding(field_name: str, annotation: Any, why: str = "") -> DeclarationError:
    shown = annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)
    return DeclarationError(
        "template.no-encoding",
        f"Field {field_name!r} of type {shown.replace('typing.', '')} has no key encoding"
        + (f": {why}" if why else f"; supported types are {_SUPPORTED}")
        + ".",
    )
