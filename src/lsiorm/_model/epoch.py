"""Epoch seconds: a datetime stored as a DynamoDB number, the form DynamoDB's TTL reads."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Annotated, Any, Final

from pydantic import BeforeValidator, PlainSerializer

__all__ = [
    "EPOCH",
    "MAX_EPOCH_SECONDS",
    "MIN_EPOCH_SECONDS",
    "EpochSeconds",
    "EpochSecondsMarker",
    "epoch_seconds",
    "from_epoch_seconds",
    "is_epoch_seconds",
    "to_epoch_datetime",
]

EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SECOND: Final = timedelta(seconds=1)
#: The epoch seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range of datetime.
MIN_EPOCH_SECONDS: Final = -62135596800
MAX_EPOCH_SECONDS: Final = 253402300799
_NUMBER_TEXT: Final = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")


class EpochSecondsMarker:
    """Marks a field annotated with `EpochSeconds` (lsiorm looks for it in the metadata)."""

    def __repr__(self) -> str:
        return "EpochSecondsMarker()"


_MARKER: Final = EpochSecondsMarker()


def from_epoch_seconds(seconds: int | float | Decimal) -> datetime:
    """Return the aware UTC datetime of ``seconds`` since the Unix epoch, truncated to the second.

    Truncation is toward the past (``floor``), so ``-0.5`` is one second before the epoch, as
    the datetime ``1969-12-31T23:59:59.500Z`` truncated to its second is.
    """
    if isinstance(seconds, bool):
        raise ValueError("a bool is not a number of seconds")
    try:
        whole = int(Decimal(seconds).to_integral_value(rounding=ROUND_FLOOR))
    except (InvalidOperation, ValueError, OverflowError):
        raise ValueError(f"{seconds!r} is not a finite number of seconds") from None
    if not MIN_EPOCH_SECONDS <= whole <= MAX_EPOCH_SECONDS:
        raise ValueError(
            f"{seconds!r} seconds since the Unix epoch is outside the years 1 to 9999 "
            "that a datetime can hold"
        )
    return EPOCH + timedelta(seconds=whole)


def to_epoch_datetime(value: Any) -> datetime:
    """Return ``value`` as an aware UTC datetime truncated to the second; raise ValueError.

    Accepts an aware datetime, or the number of seconds since the Unix epoch as an int, float,
    Decimal or number text (what a DynamoDB stream or another writer stores). Other text is
    read as ISO 8601 and must carry a time zone. A naive datetime is refused: its time zone is
    ambiguous, so the instant it stands for (and the time an item would expire) is unknown.
    """
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return from_epoch_seconds(value)
    if isinstance(value, str):
        if _NUMBER_TEXT.fullmatch(value):
            return from_epoch_seconds(Decimal(value.strip()))
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{value!r} is neither a number of seconds since the Unix epoch nor an "
                "ISO 8601 datetime"
            ) from None
    if not isinstance(value, datetime):
        raise ValueError(
            f"expected an aware datetime or a number of seconds since the Unix epoch, got "
            f"{type(value).__name__}"
        )
    if value.utcoffset() is None:
        raise ValueError(
            f"the naive datetime {value.isoformat()} has no time zone, so the instant it "
            "stands for is ambiguous; give it one (for example tzinfo=timezone.utc)"
        )
    try:
        utc = value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside the years 1 to 9999 in UTC") from None
    return utc.replace(microsecond=0)


def epoch_seconds(value: Any) -> int:
    """Return the whole seconds since the Unix epoch of a value `EpochSeconds` accepts."""
    return (to_epoch_datetime(value) - EPOCH) // _SECOND


EpochSeconds = Annotated[
    datetime,
    BeforeValidator(to_epoch_datetime),
    PlainSerializer(epoch_seconds, return_type=int),
    _MARKER,
]
"""A datetime stored as a DynamoDB number: whole seconds since the Unix epoch.

This is the form DynamoDB's time to live reads (it ignores text), so annotate a table's
``ttl_attribute`` field with it: ``expires_at: EpochSeconds``. A field takes an aware
datetime, or a number of seconds since the epoch (int, float or Decimal, as a stream or
another writer stores it). A naive datetime is refused, since its time zone is ambiguous.
The value reads back as an aware datetime in UTC; anything finer than a second is dropped
(truncated toward the past) when the value is validated, so what is stored is what reads
back. ``model_dump()`` gives the stored int.
"""


def is_epoch_seconds(metadata: Any) -> bool:
    """Whether a field's pydantic metadata says the field is `EpochSeconds`."""
    return any(item is _MARKER for item in metadata)
