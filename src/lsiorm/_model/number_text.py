"""DynamoDB number text: the canonical text of a number in range, its value and its size."""

from __future__ import annotations

import math
from decimal import Context, Decimal
from typing import Final

from lsiorm.errors import ValidationError

#: DynamoDB numbers have at most 38 significant digits.
MAX_DIGITS: Final = 38
_MAX_ADJUSTED_EXPONENT: Final = 125
_MIN_ADJUSTED_EXPONENT: Final = -130
# Fractions whose first significant digit lies further right than this are written as "dE-x"
# rather than with a long run of zeros after the point.
_MIN_PLAIN_ADJUSTED_EXPONENT: Final = -20
#: Every int of smaller magnitude has at most 38 digits, so it is in range without further checks.
INT_FAST_LIMIT: Final = 10**MAX_DIGITS


def _not_finite(value: object) -> ValidationError:
    return ValidationError("number.not-finite", f"DynamoDB numbers must be finite, got {value!r}.")


def _out_of_range(value: object) -> ValidationError:
    return ValidationError(
        "number.range",
        f"{value!r} is outside DynamoDB's number limits (at most 38 significant digits, "
        "magnitude between 1E-130 and 9.9999999999999999999999999999999999999E+125).",
    )


def decimal_text(value: Decimal) -> str:
    """Return the canonical number text of a Decimal, refusing NaN, infinities and range."""
    sign, digit_tuple, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # "n", "N" or "F": NaN, sNaN or Infinity
        raise _not_finite(value)
    digits = "".join(map(str, digit_tuple))
    significant = digits.rstrip("0")
    if not significant:
        return "0"
    exponent += len(digits) - len(significant)
    count = len(significant)
    adjusted = exponent + count - 1
    if count > MAX_DIGITS or adjusted > _MAX_ADJUSTED_EXPONENT or adjusted < _MIN_ADJUSTED_EXPONENT:
        raise _out_of_range(value)
    if exponent >= 0:
        text = significant + "0" * exponent
    elif adjusted >= 0:
        text = significant[: adjusted + 1] + "." + significant[adjusted + 1 :]
    elif adjusted >= _MIN_PLAIN_ADJUSTED_EXPONENT:
        text = "0." + "0" * (-adjusted - 1) + significant
    else:
        fraction = "." + significant[1:] if count > 1 else ""
        text = f"{significant[0]}{fraction}E{adjusted}"
    return "-" + text if sign else text


def int_text(value: int) -> str:
    """Return the canonical number text of an int, refusing one out of range."""
    if -INT_FAST_LIMIT < value < INT_FAST_LIMIT:
        return str(value)
    return decimal_text(Decimal(value))


def float_text(value: float) -> str:
    """Return the canonical number text of a float (its shortest repr), refusing NaN and inf."""
    if not math.isfinite(value):
        raise _not_finite(value)
    text = float.__repr__(value)
    if "e" in text:
        return decimal_text(Decimal(text))
    # Without an exponent, repr has at most 17 significant digits and a magnitude in
    # [1e-4, 1e16), always in range; only a ".0" tail needs removing.
    if text.endswith(".0"):
        text = text[:-2]
        return "0" if text == "-0" else text
    return text


# Numbers DynamoDB can store, for stepping to a neighbour. Its subnormals (adjusted exponent
# below -130) are not storable: a step that lands on one goes on to zero or to 1E-130.
_STORABLE: Final = Context(
    prec=MAX_DIGITS, Emax=_MAX_ADJUSTED_EXPONENT, Emin=_MIN_ADJUSTED_EXPONENT, traps=[]
)
_SMALLEST: Final = Decimal(f"1E{_MIN_ADJUSTED_EXPONENT}")


def adjacent_number(text: str, *, above: bool) -> str | None:
    """Return the next number DynamoDB can store above (or below) a stored number's text.

    No stored number lies strictly between the two, so ``> x`` selects what ``>= adjacent``
    does. None when ``text`` is the largest (or smallest) number in range.
    """
    value = Decimal(text)
    step = _STORABLE.next_plus(value) if above else _STORABLE.next_minus(value)
    if step.is_infinite():
        return None
    if step and step.adjusted() < _MIN_ADJUSTED_EXPONENT:
        # Below 1E-130 in magnitude only zero is storable: from zero the step goes on to
        # +-1E-130, towards zero it lands on zero.
        away = (step > 0) == above
        step = (_SMALLEST if above else -_SMALLEST) if away else Decimal(0)
    return decimal_text(step)


def number_from_text(text: str) -> int | Decimal:
    """Return the value of DynamoDB number text: an int when it has no point or exponent."""
    if "." in text or "e" in text or "E" in text:
        return Decimal(text)
    return int(text)


def number_size(text: str) -> int:
    """Return the bytes DynamoDB counts for a number given as text.

    DynamoDB stores a number as base-100 digits aligned on the decimal point (two decimal
    digits per byte), plus one byte, plus one more for a negative number.
    """
    negative = text.startswith("-")
    mantissa = text.lstrip("+-")
    exponent = 0
    cut = max(mantissa.find("e"), mantissa.find("E"))
    if cut >= 0:
        exponent = int(mantissa[cut + 1 :])
        mantissa = mantissa[:cut]
    point = mantissa.find(".")
    whole = len(mantissa) if point < 0 else point
    digits = mantissa.replace(".", "")
    significant = digits.lstrip("0")
    # The power of ten of the first and of the last significant digit.
    top = whole - 1 + exponent - (len(digits) - len(significant))
    significant = significant.rstrip("0")
    if not significant:
        return 1
    bottom = top - len(significant) + 1
    return top // 2 - bottom // 2 + 2 + negative


def int_size(text: str) -> int:
    """Return `number_size` of an int's text (no point, exponent or leading zeros), faster."""
    negative = text[0] == "-"
    digits = text[1:] if negative else text
    significant = digits.rstrip("0")
    if not significant:
        return 1
    top = len(digits) - 1
    bottom = len(digits) - len(significant)
    return top // 2 - bottom // 2 + 2 + negative
