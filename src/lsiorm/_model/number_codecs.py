"""Key codecs of numbers: ints in a fixed width, decimals and floats in fixed point or bits."""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from typing import Any, Final

from lsiorm._model.codec import KeyCodec, Token, chars, layout_tokens
from lsiorm.errors import DeclarationError, KeyEncodingError


def _placeholder(field_name: str, spec: str) -> str:
    """The template placeholder of a field labelled ``Entity.field`` (or ``field``) with
    ``spec``: what the user writes in a key template, ``{field:06d}``."""
    return "{" + field_name.rsplit(".", 1)[-1] + ":" + spec + "}"


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
    fixed_width = True

    def __init__(self, spec: str, *, field_name: str = "value") -> None:
        match = _INT_SPEC.fullmatch(spec)
        if match is None or int(match.group(1)) > _MAX_WIDTH:
            raise DeclarationError(
                "template.int-width",
                f"Integer field {field_name!r} needs a fixed digit count so its keys sort by "
                f"value: write {_placeholder(field_name, '06d')} in the template or annotate the "
                f'field with Annotated[int, KeyFormat("06d")], at most {_MAX_WIDTH} digits'
                + (f" (got spec {spec!r})" if spec else "")
                + ". Keys another tool wrote unpadded (ORDER#17) are declared with "
                'key_style="plain" (see the existing tables guide).',
            )
        self.field_name = field_name
        self.width = int(match.group(1))
        self.spec = f"0{self.width}d"
        self._limit: int = 10**self.width
        self._text = re.compile(rf"-?[0-9]{{{self.width}}}")

    def encode(self, value: Any) -> str:
        """Return the key text of the int ``value``."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.type_error(value, "an int")
        n = int(value)
        if not -self._limit < n < self._limit:
            raise KeyEncodingError(
                "key.int-overflow",
                f"Field {self.field_name!r} value {n} needs more than {self.width} digits; "
                f"widen its format (for example "
                f"{_placeholder(self.field_name, f'0{len(str(abs(n)))}d')}).",
            )
        if n >= 0:
            return str(n).zfill(self.width)
        return "-" + str(self._limit + n).zfill(self.width)

    def tokens(self) -> list[Token]:
        """An optional ``-`` and ``width`` digits."""
        return [("opt", chars("-")), *layout_tokens("9" * self.width)]

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
                f"{_placeholder(field_name, '010.2f')} or Annotated[..., "
                'KeyFormat("010.2f")] (total width including the point, then decimals), with '
                "at least one integer digit and at "
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
        return [("opt", chars("-")), *layout_tokens(body)]

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
    fixed_width = True

    def __init__(self, spec: str, *, field_name: str = "value") -> None:
        self._fixed = _FixedPoint(spec, field_name, "Decimal")
        self.field_name = field_name
        self.spec = self._fixed.spec

    def encode(self, value: Any) -> str:
        """Return the key text of the Decimal (or int) ``value``."""
        if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
            raise self.type_error(value, "a Decimal")
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
    made 0.0 (1.0 is ``bff0000000000000``). With a ``0W.Sf`` spec: the `DecimalCodec`
    format of ``Decimal(repr(value))``; a float whose shortest repr needs more than S decimals is
    refused (``key.decimal-scale``). NaN and infinities are refused (``key.not-finite``). Ints
    that a float represents exactly are accepted too.
    """

    python_type = float
    prefix_free = True
    fixed_width = True

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
        return self._fixed.tokens() if self._fixed is not None else layout_tokens("f" * 16)

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
            raise self.type_error(value, "a float (this int has no exact float value)")
        raise self.type_error(value, "a float")

    def _parse(self, text: str) -> float:
        if self._fixed is not None:
            return float(self._fixed.parse(text))
        if _HEX16.fullmatch(text) is None:
            raise ValueError(text)
        bits = int(text, 16)
        bits = bits ^ _SIGN_BIT if bits & _SIGN_BIT else bits ^ _ALL_BITS
        number: float = struct.unpack(">d", struct.pack(">Q", bits))[0]
        return number


_PLAIN_INT: Final = re.compile(r"-?(0|[1-9][0-9]*)")


class PlainIntCodec(KeyCodec):
    """Integers as other tools write them: ``str(n)``, no padding (the plain key style).

    Format: the decimal digits with ``-`` in front of a negative value (42 is ``42``, -5 is
    ``-5``). Text does not sort as the numbers do (``10`` sorts before ``9``), so the codec is
    not ``ordered``: equality is exact, ranges are not. ``terminator`` is the first character
    of the literal that follows the field when that character is neither a digit nor ``-``.
    (An int field with a format spec keeps its fixed width in the plain style: `IntCodec`.)
    """

    python_type = int
    ordered = False

    def __init__(self, *, field_name: str = "value", terminator: str | None = None) -> None:
        self.field_name = field_name
        self.spec = ""
        self.terminator = terminator
        self.prefix_free = self.holds_literal = terminator is not None

    def encode(self, value: Any) -> str:
        """Return the key text of the int ``value``."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.type_error(value, "an int")
        text = str(int(value))
        return text if self.terminator is None else text + self.terminator

    def tokens(self) -> list[Token]:
        """An optional ``-``, then digits, then the terminator if any."""
        body: list[Token] = [("opt", chars("-")), ("star", ((0x30, 0x39),))]
        return body if self.terminator is None else [*body, ("one", chars(self.terminator))]

    def _parse(self, text: str) -> int:
        if self.terminator is not None:
            if not text.endswith(self.terminator):
                raise ValueError(text)
            text = text[: -len(self.terminator)]
        if _PLAIN_INT.fullmatch(text) is None:
            raise ValueError(text)
        return int(text)
