"""Key codecs of time: aware datetimes as UTC text of a fixed precision, and dates."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from typing import Any, Final

from lsiorm._model.codec import KeyCodec, Token, UnformattedCodec, layout_tokens
from lsiorm.errors import DeclarationError, KeyEncodingError

_DATETIME_DIGITS: Final = {"us": 6, "ms": 3, "s": 0}


def utc_instant(codec: KeyCodec, value: Any) -> datetime:
    """Return an aware datetime in UTC; refuse other values, naive ones and years past 1-9999."""
    if not isinstance(value, datetime):
        raise codec.type_error(value, "a datetime")
    if value.utcoffset() is None:
        raise KeyEncodingError(
            "key.naive-datetime",
            f"Field {codec.field_name!r} got the naive datetime {value!r}; key datetimes "
            "must be timezone-aware so they sort by instant.",
        )
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise KeyEncodingError(
            "key.datetime-range",
            f"Field {codec.field_name!r} value {value.isoformat()} is outside years 1-9999 in UTC.",
        ) from None


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
    fixed_width = True

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
        utc = utc_instant(self, value)
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
        return layout_tokens(
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


class DateCodec(UnformattedCodec):
    """Dates (not datetimes), as ``YYYY-MM-DD``."""

    kind = "Date"
    python_type = date
    prefix_free = True
    fixed_width = True

    def encode(self, value: Any) -> str:
        """Return the key text of the date ``value``."""
        if not isinstance(value, date) or isinstance(value, datetime):
            raise self.type_error(value, "a date")
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"

    def tokens(self) -> list[Token]:
        """The fixed ``YYYY-MM-DD`` layout."""
        return layout_tokens("9999-99-99")

    def _parse(self, text: str) -> date:
        match = _DATE_TEXT.fullmatch(text)
        if match is None:
            raise ValueError(text)
        return date(*map(int, match.groups()))


# The directives of a format whose text sorts as the instants do: biggest unit first, each of
# fixed width, in this order (a leading part of it), with any literal text between them.
_ORDERED_DIRECTIVES: Final = ("%Y", "%m", "%d", "%H", "%M", "%S", "%f")
_DIRECTIVE: Final = re.compile(r"%.")


def _fixed_big_endian(fmt: str) -> bool:
    """Whether ``fmt`` writes UTC instants in text that sorts as they do."""
    directives = _DIRECTIVE.findall(fmt)
    if tuple(directives) != _ORDERED_DIRECTIVES[: len(directives)] or not directives:
        return False
    # Each directive is of fixed width (years before 1000 are refused), so the literal text
    # between them stays at the same place in every key.
    return "%" not in "".join(_DIRECTIVE.split(fmt))


class PlainDatetimeCodec(KeyCodec):
    """Timezone-aware datetimes written with a ``strftime`` format, in UTC (the plain key style).

    For keys other tools wrote, like PynamoDB's ``%Y-%m-%dT%H:%M:%S.%f+0000``. Text read with
    the format gives an instant in UTC (text with an offset is converted); only the exact text
    the format writes for that instant is accepted. A value the format cannot write exactly
    (finer than its smallest unit, ``key.datetime-precision``) or before year 1000
    (``key.datetime-range``) is refused. The text sorts as the instants do (``ordered``) when
    the format is ``%Y``, ``%m``, ``%d``, ``%H``, ``%M``, ``%S``, ``%f`` in that order (a
    leading part of it) with any literal text between them; any other format answers
    equality only.
    """

    python_type = datetime

    def __init__(self, fmt: str, *, field_name: str = "value") -> None:
        if not isinstance(fmt, str) or not _DIRECTIVE.search(fmt):
            raise DeclarationError(
                "template.datetime-format",
                f"Datetime field {field_name!r} has datetime_format {fmt!r}; give a strftime "
                "format such as '%Y-%m-%dT%H:%M:%S.%f+0000'.",
            )
        self.field_name = field_name
        self.spec = ""
        self.format = fmt
        self.ordered = _fixed_big_endian(fmt)
        self.prefix_free = self.ordered

    def text_form(self) -> tuple[Any, ...]:
        """The class and the format."""
        return (*super().text_form(), self.format)

    def encode(self, value: Any) -> str:
        """Return the key text of the aware datetime ``value``."""
        utc = utc_instant(self, value)
        if utc.year < 1000:
            raise KeyEncodingError(
                "key.datetime-range",
                f"Field {self.field_name!r} value {value.isoformat()} is before year 1000, "
                "which its datetime_format cannot write in four digits.",
            )
        text = utc.strftime(self.format)
        try:
            back = self._parse(text)
        except ValueError:
            back = None
        if back != utc:
            raise KeyEncodingError(
                "key.datetime-precision",
                f"Field {self.field_name!r} value {value.isoformat()} cannot be written "
                f"exactly with the format {self.format!r}; round it first.",
            )
        return text

    def _parse(self, text: str) -> datetime:
        parsed = datetime.strptime(text, self.format)
        if parsed.utcoffset() is None:
            return parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc)
