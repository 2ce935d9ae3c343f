"""Choosing a key field's order-preserving codec from its declared type: codec_for, KeyFormat."""

from __future__ import annotations

import types
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Final, Literal, NewType, Union, get_args, get_origin

import pydantic

from lsiorm._model.codec import MAX_CHAR, KeyCodec
from lsiorm._model.fixed_codecs import BoolCodec, UUIDCodec
from lsiorm._model.number_codecs import DecimalCodec, FloatCodec, IntCodec
from lsiorm._model.text_codecs import EnumCodec, StrCodec
from lsiorm._model.time_codecs import DateCodec, DatetimeCodec
from lsiorm.errors import DeclarationError, KeyEncodingError

# lsiorm 0.1's ``lsiorm.encoding`` gives this module (see lsiorm._compat): the names it exported
# stay importable from here until that path goes.
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
    metadata (a `KeyFormat` in it counts like one inside ``Annotated``), ``terminated``
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
