"""Whether a stored number fits its field exactly: floats that hold it, ints without a fraction.

A DynamoDB number holds up to 38 significant digits; a float holds about 16. Pydantic turns
any number into a float, rounding silently, so a float field would read ``1000000000000000000002.5``
as ``1e21``, and a read-then-put would write the rounded value back. lsiorm refuses instead:
a number read into a float position (a field, or an element of a list, set, tuple, dict or
nested model) must round-trip, that is, the float's shortest text must be the same number
(`number_text.float_text`). A field annotated ``Annotated[float, LossyFloat]`` accepts the
rounding. An int position refuses a number with a fraction, as a typed error too.

The checks run on decoded values (`wire.from_wire`: ints and Decimals), before pydantic sees
them, and on condition values given for a field.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from pydantic import BaseModel

from lsiorm.errors import NumberPrecisionError

__all__ = [
    "LossyFloat",
    "NumberCheck",
    "check_float",
    "check_int",
    "check_values",
    "exact_float",
    "field_checks",
    "number_check",
]

NumberCheck = Callable[[Any, str], None]
"""Checks a decoded value (named by its path, for the error) and raises on a number that does
not fit."""


class LossyFloat:
    """Marks a float field that may round the numbers it reads: ``Annotated[float, LossyFloat]``.

    Without it, reading a number a float cannot hold exactly (more than about 16 significant
    digits) raises `NumberPrecisionError`; with it, the float nearest to the number is read,
    and a later write stores that float.
    """

    def __repr__(self) -> str:
        return "LossyFloat()"


#: Exactly representable: at most 15 significant digits (a float holds any such number), well
#: inside the float range. Their text is at most 15 characters without an exponent.
_SHORT: Final = 15


def exact_float(text: str, path: str) -> float:
    """Return the float of number text, or raise when the float is not the same number."""
    value = float(text)
    if len(text) <= _SHORT and "E" not in text and "e" not in text:
        return value
    if not _is_number(value, Decimal(text)):
        raise _inexact(path, text, value)
    return value


def _inexact(path: str, text: str, value: float) -> NumberPrecisionError:
    return NumberPrecisionError(
        "number.inexact-float",
        f"{path} is a float, which cannot hold the stored number {text} exactly (it would read "
        f"as {value!r}); declare it Decimal to keep every digit, or "
        "Annotated[float, LossyFloat] to accept the rounding.",
        field=path,
        value=text,
    )


def check_float(value: Any, path: str) -> None:
    """Raise unless a number (int, Decimal or number text) read into a float round-trips."""
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            return  # not a number: pydantic says why
    if isinstance(value, Decimal):
        if not value.is_finite():
            return
    elif type(value) is not int or -(2**53) <= value <= 2**53:
        return  # a float, a small int, or not a number at all
    rounded = float(value)
    if not _is_number(rounded, Decimal(value)):
        raise _inexact(path, str(value), rounded)


def _is_number(rounded: float, number: Decimal) -> bool:
    """Whether the float is exactly the number: its shortest text (Python's repr, which reads
    back as the same float) is the same number. A float may round past DynamoDB's largest
    number, so no DynamoDB number text is made of it."""
    return Decimal(repr(rounded)) == number


def check_int(value: Any, path: str) -> None:
    """Raise when a Decimal read into an int has a fraction."""
    if isinstance(value, Decimal) and value.is_finite() and value != value.to_integral_value():
        raise NumberPrecisionError(
            "number.not-an-int",
            f"{path} is an int, which cannot hold the stored number {value} (it has a "
            "fraction); declare it Decimal or float.",
            field=path,
            value=str(value),
        )


def _is_marker(item: object) -> bool:
    return item is LossyFloat or isinstance(item, LossyFloat)


def _check_of(annotation: Any, depth: int) -> NumberCheck | None:
    if depth > 8:
        return None  # a recursive model: its deeper levels are left to pydantic
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        if any(_is_marker(m) for m in args[1:]):
            return None
        return _check_of(args[0], depth)
    if origin is typing.Union or origin is types.UnionType:
        real = [a for a in args if a is not type(None)]
        return _check_of(real[0], depth) if len(real) == 1 else None
    if annotation is float:
        return check_float
    if annotation is int:
        return check_int
    if origin in (list, set, frozenset) or (origin is tuple and args[-1:] == (Ellipsis,)):
        return _each(_check_of(args[0], depth + 1)) if args else None
    if origin is tuple:
        return _positions([_check_of(a, depth + 1) for a in args])
    if origin is dict and len(args) == 2:
        return _values(_check_of(args[1], depth + 1))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation, depth + 1)
    return None


def _each(inner: NumberCheck | None) -> NumberCheck | None:
    if inner is None:
        return None

    def check(value: Any, path: str) -> None:
        if isinstance(value, (list, set, frozenset, tuple)):
            for n, element in enumerate(value):
                inner(element, f"{path}[{n}]")

    return check


def _positions(inners: list[NumberCheck | None]) -> NumberCheck | None:
    if not any(inners):
        return None

    def check(value: Any, path: str) -> None:
        if isinstance(value, (list, tuple)):
            for n, (element, inner) in enumerate(zip(value, inners, strict=False)):
                if inner is not None:
                    inner(element, f"{path}[{n}]")

    return check


def _values(inner: NumberCheck | None) -> NumberCheck | None:
    if inner is None:
        return None

    def check(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, element in value.items():
                inner(element, f"{path}[{key!r}]")

    return check


def _model(cls: type[BaseModel], depth: int) -> NumberCheck | None:
    checks = _field_checks(cls, depth)
    if not checks:
        return None

    def check(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, (name, inner) in checks.items():
                if key in value:
                    inner(value[key], f"{path}.{name}")

    return check


def _field_checks(cls: type[BaseModel], depth: int) -> dict[str, tuple[str, NumberCheck]]:
    """Input key (field name and alias) -> (field name, check), for the fields that need one."""
    checks: dict[str, tuple[str, NumberCheck]] = {}
    for name, info in cls.model_fields.items():
        if any(_is_marker(m) for m in info.metadata):
            continue
        inner = _check_of(info.annotation, depth)
        if inner is not None:
            for key in dict.fromkeys((name, info.alias or name)):
                checks[key] = (name, inner)
    return checks


def number_check(annotation: Any) -> NumberCheck | None:
    """Return the check of a value of this type (a document path's), or None if none is needed."""
    return _check_of(annotation, 0)


def field_checks(cls: type[BaseModel]) -> dict[str, tuple[str, NumberCheck]]:
    """Return, by input key (field name and alias), the path and check of each field that
    needs one; a path reads ``Model.field``."""
    return {
        key: (f"{cls.__name__}.{name}", check)
        for key, (name, check) in _field_checks(cls, 0).items()
    }


def check_values(checks: Mapping[str, tuple[str, NumberCheck]], values: Mapping[str, Any]) -> None:
    """Check the decoded values of a model's input keys (`field_checks`)."""
    for key, (path, check) in checks.items():
        value = values.get(key)
        if value is not None:
            check(value, path)
