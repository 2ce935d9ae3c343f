"""Conversion between plain Python values and DynamoDB's low-level AttributeValue format."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, Final, TypeAlias, TypeVar
from uuid import UUID

from lsiorm._model.number_text import (
    MAX_DIGITS,
    decimal_text,
    float_text,
    int_size,
    int_text,
    number_from_text,
    number_size,
)
from lsiorm.errors import ValidationError

__all__ = [
    "DECODED_TAG",
    "MAX_ITEM_BYTES",
    "AttributeValue",
    "TextError",
    "WireItem",
    "attribute_value_size",
    "from_wire",
    "item_from_wire",
    "item_size",
    "item_to_wire",
    "number_to_wire",
    "same_item",
    "to_wire",
    "to_wire_sized",
]

AttributeValue: TypeAlias = dict[str, Any]
WireItem: TypeAlias = dict[str, AttributeValue]

#: DynamoDB's item size limit, 400 KB with 1 KB = 1024 bytes.
MAX_ITEM_BYTES: Final = 400 * 1024

T = TypeVar("T")
V = TypeVar("V")


def number_to_wire(value: int | float | Decimal) -> str:
    """Return the canonical DynamoDB number text of ``value``.

    Equal numbers give equal text, whatever their Python type: no exponent and no trailing
    fractional zeros, ``"0"`` for every zero, integers in full. Only fractions below 1E-20 in
    magnitude use an exponent (``"1.5E-25"``). Floats are read through ``repr`` so the text is
    the shortest one that converts back to the same float.
    """
    if isinstance(value, bool):
        raise _unsupported(value, "a bool is not a DynamoDB number")
    if isinstance(value, int):
        return int_text(int(value))
    if isinstance(value, float):
        return float_text(float(value))
    if isinstance(value, Decimal):
        return decimal_text(value)
    raise _unsupported(value, "it is not a number")


def _unsupported(value: object, why: str = "") -> ValidationError:
    reason = f": {why}" if why else ""
    return ValidationError(
        "wire.unsupported-type",
        f"Cannot convert a value of type {type(value).__qualname__} to DynamoDB{reason}.",
    )


class TextError(ValidationError):
    """Text that UTF-8 cannot encode (a lone surrogate), met while a value is converted.

    Raised where the value is converted, which does not know where the value sits; the item
    level catches it and names the attribute path (`invalid_text`).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__("item.invalid-unicode", _invalid_text_message("Text", text))


def _invalid_text_message(where: str, text: str) -> str:
    return (
        f"{where} holds {text!r}, with a lone surrogate, which UTF-8 cannot encode: DynamoDB "
        "keeps text as UTF-8, so it would refuse the value or store text that no client reads "
        "back. Replace it before writing (text.encode('utf-8', 'replace').decode() puts a "
        "'?' in its place)."
    )


def valid_text(text: str) -> str:
    """Return ``text`` when UTF-8 can encode it; raise `TextError` for a lone surrogate."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise TextError(text) from None
    return text


def _encode_str(value: str) -> AttributeValue:
    return {"S": value if value.isascii() else valid_text(value)}


def _encode_bool(value: bool) -> AttributeValue:
    return {"BOOL": value}


def _encode_int(value: int) -> AttributeValue:
    return {"N": int_text(value)}


def _encode_float(value: float) -> AttributeValue:
    return {"N": float_text(value)}


def _encode_decimal(value: Decimal) -> AttributeValue:
    return {"N": decimal_text(value)}


def _encode_bytes(value: bytes) -> AttributeValue:
    return {"B": value}


def _encode_buffer(value: bytearray | memoryview) -> AttributeValue:
    return {"B": bytes(value)}


def _encode_none(value: None) -> AttributeValue:
    return {"NULL": True}


def _encode_list(value: Iterable[Any]) -> AttributeValue:
    get = _ENCODERS.get
    out = []
    for element in value:
        encoder = get(type(element))
        out.append(encoder(element) if encoder is not None else _encode_other(element))
    return {"L": out}


def _non_string_name(name: object) -> ValidationError:
    return ValidationError(
        "wire.non-string-key",
        f"DynamoDB map keys and attribute names must be strings, got {name!r}.",
    )


def _encode_fields(value: Mapping[Any, Any]) -> WireItem:
    get = _ENCODERS.get
    out: WireItem = {}
    for name, element in value.items():
        if not isinstance(name, str):
            raise _non_string_name(name)
        encoder = get(type(element))
        out[name if name.isascii() else valid_text(name)] = (
            encoder(element) if encoder is not None else _encode_other(element)
        )
    return out


def _encode_dict(value: Mapping[Any, Any]) -> AttributeValue:
    return {"M": _encode_fields(value)}


_SET_TAGS: Final = {"S": "SS", "N": "NS", "B": "BS"}


def _encode_set(value: set[Any] | frozenset[Any]) -> AttributeValue:
    if not value:
        # DynamoDB has no empty set; an empty list reads back as an empty collection.
        return {"L": []}
    if all(type(element) is str for element in value):
        return {"SS": sorted(valid_text(element) for element in value)}
    tags: set[str] = set()
    members: set[Any] = set()
    for element in value:
        ((tag, member),) = to_wire(element).items()
        tags.add(tag)
        members.add(member)
    if len(tags) > 1:
        kinds = ", ".join(sorted({type(element).__qualname__ for element in value}))
        raise ValidationError(
            "wire.mixed-set",
            f"A DynamoDB set holds one type of string, number or bytes; this one mixes {kinds}.",
        )
    set_tag = _SET_TAGS.get(tags.pop())
    if set_tag is None:
        kind = type(next(iter(value))).__qualname__
        raise ValidationError(
            "wire.unsupported-type",
            f"A DynamoDB set holds only strings, numbers or bytes, not {kind}.",
        )
    # Distinct Python values can share one wire form (1 and 1.0, an enum and its value);
    # DynamoDB rejects duplicates in a set, so members are deduplicated on the wire form.
    return {set_tag: sorted(members)}


def _encode_datetime(value: datetime) -> AttributeValue:
    if value.utcoffset() is None:
        raise ValidationError(
            "wire.naive-datetime",
            f"Datetime {value.isoformat()} has no time zone; store only aware datetimes.",
        )
    # UTC at a fixed precision, like key encodings: stored text then sorts and compares as the
    # instants do, so conditions and filters on datetime fields are exact across offsets.
    utc = value.astimezone(timezone.utc).replace(tzinfo=None)
    return {"S": utc.isoformat(timespec="microseconds") + "Z"}  # isoformat pads years < 1000


def _encode_date_or_time(value: date | time) -> AttributeValue:
    return {"S": value.isoformat()}


def _encode_uuid(value: UUID) -> AttributeValue:
    return {"S": str(value)}


def _encode_other(value: Any) -> AttributeValue:
    """Encode an instance of a subclass of a supported type, or raise."""
    if isinstance(value, Enum):
        return to_wire(value.value)
    if isinstance(value, str):
        return {"S": valid_text(str.__str__(value))}
    if isinstance(value, int):
        return {"N": number_to_wire(value)}
    if isinstance(value, float | Decimal):
        return {"N": number_to_wire(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"B": bytes(value)}
    if isinstance(value, list | tuple):
        return _encode_list(value)
    if isinstance(value, dict):
        return _encode_dict(value)
    if isinstance(value, set | frozenset):
        return _encode_set(value)
    if isinstance(value, datetime):
        return _encode_datetime(value)
    if isinstance(value, date | time):
        return _encode_date_or_time(value)
    if isinstance(value, UUID):
        return _encode_uuid(value)
    raise _unsupported(value)


_ENCODERS: Final[dict[type, Callable[[Any], AttributeValue]]] = {
    str: _encode_str,
    bool: _encode_bool,
    int: _encode_int,
    float: _encode_float,
    Decimal: _encode_decimal,
    bytes: _encode_bytes,
    bytearray: _encode_buffer,
    memoryview: _encode_buffer,
    type(None): _encode_none,
    list: _encode_list,
    tuple: _encode_list,
    dict: _encode_dict,
    set: _encode_set,
    frozenset: _encode_set,
    datetime: _encode_datetime,
    date: _encode_date_or_time,
    time: _encode_date_or_time,
    UUID: _encode_uuid,
}


def to_wire(value: Any) -> AttributeValue:
    """Return the AttributeValue of a plain Python value.

    Sets become SS, NS or BS with sorted, deduplicated members; an empty set becomes an empty
    L, since DynamoDB has no empty set. Datetimes must be aware and are written with
    ISO 8601 text (aware datetimes in UTC with six fractional digits and a ``Z``), as are
    dates and times (``isoformat()``); UUIDs are written as text and enum members as
    their value.
    """
    encoder = _ENCODERS.get(type(value))
    if encoder is not None:
        return encoder(value)
    return _encode_other(value)


def text_at(value: Any) -> tuple[str, str] | None:
    """Where in a Python value a text UTF-8 cannot encode is: (path below it, the text).

    The path is as a document path writes it (``.name``, ``[n]``; a map key that is itself
    such text is named by its place); None when there is none.
    """
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        return None if value.isascii() or _encodes(value) else ("", value)
    if isinstance(value, Mapping):
        for name, element in value.items():
            if isinstance(name, str) and not _encodes(name):
                return (f"[{name!r}]", name)
            inner = text_at(element)
            if inner is not None:
                return (f".{name}{inner[0]}", inner[1])
    elif isinstance(value, list | tuple):
        for n, element in enumerate(value):
            inner = text_at(element)
            if inner is not None:
                return (f"[{n}]{inner[0]}", inner[1])
    elif isinstance(value, set | frozenset):
        for element in value:
            inner = text_at(element)
            if inner is not None:
                return ("", inner[1])
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def invalid_text(
    where: str, value: Any, error: TextError, *, table: str | None = None
) -> ValidationError:
    """The refusal of ``value`` at ``where`` (``Model.path``), naming the path of its text."""
    found = text_at(value)
    path, text = found if found is not None else ("", error.text)
    return ValidationError(
        "item.invalid-unicode", _invalid_text_message(where + path, text), table=table
    )


def item_to_wire(item: Mapping[str, Any]) -> WireItem:
    """Return the wire form of a whole item; every attribute is kept, None becoming NULL."""
    return _encode_fields(item)


def _unknown_tag(tag: object) -> ValidationError:
    return ValidationError("wire.unknown-type", f"{tag!r} is not a DynamoDB attribute type.")


def _malformed(exc: Exception) -> ValidationError:
    return ValidationError("wire.malformed", f"Malformed DynamoDB attribute value ({exc}).")


#: What reading a malformed value raises, decoding it or measuring it.
_DECODE_ERRORS: Final = (ValueError, TypeError, AttributeError, ArithmeticError)
_SIZE_ERRORS: Final = (ValueError, TypeError, AttributeError)


def _read(read: Callable[[V], T], value: V, errors: tuple[type[Exception], ...]) -> T:
    """Return ``read(value)``; what a malformed value raises becomes ``wire.malformed``."""
    try:
        return read(value)
    except ValidationError:
        raise
    except errors as exc:
        raise _malformed(exc) from exc


def _decode(av: Mapping[str, Any]) -> Any:
    ((tag, raw),) = av.items()
    if tag == "S":
        return raw
    if tag == "N":
        return number_from_text(raw)
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise _unknown_tag(tag)
    return decoder(raw)


# _decode_list and _decode_map inline the S and N cases: they are most of the scalars on a page,
# and inlining spares one call per attribute.
def _decode_list(values: Iterable[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    append = out.append
    for av in values:
        ((tag, raw),) = av.items()
        if tag == "S":
            append(raw)
        elif tag == "N":
            append(number_from_text(raw))
        else:
            decoder = _DECODERS.get(tag)
            if decoder is None:
                raise _unknown_tag(tag)
            append(decoder(raw))
    return out


def _decode_map(values: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, av in values.items():
        ((tag, raw),) = av.items()
        if tag == "S":
            out[name] = raw
        elif tag == "N":
            out[name] = number_from_text(raw)
        else:
            decoder = _DECODERS.get(tag)
            if decoder is None:
                raise _unknown_tag(tag)
            out[name] = decoder(raw)
    return out


def _identity(raw: Any) -> Any:
    return raw


def _null(raw: Any) -> None:
    return None


def _number_set(raw: Iterable[str]) -> set[int | Decimal]:
    return {number_from_text(text) for text in raw}


#: The tag of an AttributeValue that already holds its Python value: a placeholder the request
#: path hands to the codecs (a lazy offloaded value, `lsiorm._model.offloaded_ref`); never sent.
DECODED_TAG: Final = "lsiorm:decoded"

_DECODERS: Final[dict[str, Callable[[Any], Any]]] = {
    DECODED_TAG: _identity,
    "S": _identity,
    "N": number_from_text,
    "B": _identity,
    "BOOL": _identity,
    "NULL": _null,
    "L": _decode_list,
    "M": _decode_map,
    "SS": set,
    "NS": _number_set,
    "BS": set,
}


def from_wire(av: Mapping[str, Any]) -> Any:
    """Return the Python value of an AttributeValue as botocore's low-level client returns it.

    Numbers come back as ``int`` when their text has no ``.``, ``e`` or ``E``, else as an exact
    ``Decimal``; sets come back as ``set``.
    """
    return _read(_decode, av, _DECODE_ERRORS)


def item_from_wire(item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return the Python form of a whole wire item (see `from_wire`)."""
    return _read(_decode_map, item, _DECODE_ERRORS)


def json_default(value: Any) -> Any:
    """Serialise bytes for ``json.dumps`` (a stable text for hashing keys and cursors)."""
    if isinstance(value, (bytes, bytearray)):
        return {"B64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"cannot serialise {type(value).__name__}")


def same_item(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two wire items hold the same values (numbers as numbers, sets in any order).

    A malformed item holds no values to compare: it is the same as no other.
    """
    if a == b:
        return True
    try:
        return item_from_wire(a) == item_from_wire(b)
    except ValidationError:
        return False


def utf8_len(text: str) -> int:
    """Return the UTF-8 byte length of ``text``; `TextError` for a lone surrogate."""
    return len(text) if text.isascii() else len(valid_text(text).encode("utf-8"))


def value_size(av: Mapping[str, Any]) -> int:
    """Return `attribute_value_size` of a well-formed value, without its error wrapping."""
    ((tag, raw),) = av.items()
    if tag == "S":
        return utf8_len(raw)
    if tag == "N":
        return number_size(raw)
    if tag == "B":
        return len(raw)
    if tag == "BOOL" or tag == "NULL":
        return 1
    if tag == "M":
        return 3 + sum(utf8_len(name) + value_size(v) + 1 for name, v in raw.items())
    if tag == "L":
        return 3 + sum(value_size(v) + 1 for v in raw)
    if tag == "SS":
        return sum(utf8_len(s) for s in raw)
    if tag == "NS":
        return sum(number_size(s) for s in raw)
    if tag == "BS":
        return sum(len(b) for b in raw)
    raise _unknown_tag(tag)


def attribute_value_size(av: Mapping[str, Any]) -> int:
    """Return the size in bytes DynamoDB counts for a value, without its attribute name.

    The rules of the DynamoDB developer guide ("Item sizes and formats"):

    * S: UTF-8 byte length. B: raw byte length. BOOL, NULL: 1.
    * N: 1 byte per pair of decimal digits, the pairs aligned on the decimal point
      (``12`` is one pair, ``1.5`` is two: ``01.50``), leading and trailing zero pairs dropped,
      plus 1 byte, plus 1 more when negative; zero costs 1. The guide's "1 byte per two
      significant digits + 1 byte" is an approximation; this exact rule was measured on
      DynamoDB Local's consumed capacity.
    * L, M: 3 + for each element (element size + 1); a map element also counts the UTF-8
      bytes of its key.
    * SS, NS, BS: the sum of the member sizes. The guide says nothing about sets; this is an
      assumption.
    """
    return _read(value_size, av, _SIZE_ERRORS)


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Return an item's size in bytes: per attribute, UTF-8 name bytes plus the value size."""
    return _read(_item_size, item, _SIZE_ERRORS)


def _item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(utf8_len(name) + value_size(av) for name, av in item.items())


# -- encoding and sizing in one pass -----------------------------------------------------------


def _sized_str(value: str) -> tuple[AttributeValue, int]:
    return {"S": value}, len(value) if value.isascii() else utf8_len(value)


def _sized_bool(value: bool) -> tuple[AttributeValue, int]:
    return {"BOOL": value}, 1


def _sized_int(value: int) -> tuple[AttributeValue, int]:
    text = int_text(value)
    return {"N": text}, int_size(text)


def _sized_float(value: float) -> tuple[AttributeValue, int]:
    text = float_text(value)
    return {"N": text}, number_size(text)


def _sized_decimal(value: Decimal) -> tuple[AttributeValue, int]:
    text = str(value)
    # Plain text of at most 38 characters (no exponent, NaN or Infinity) is in range and only
    # needs trailing fractional zeros dropped to be canonical; anything else takes the full way.
    if len(text) <= MAX_DIGITS and "E" not in text and "N" not in text and "I" not in text:
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if text == "-0":
            text = "0"
    else:
        text = decimal_text(value)
    return {"N": text}, number_size(text)


def _sized_bytes(value: bytes) -> tuple[AttributeValue, int]:
    return {"B": value}, len(value)


def _sized_none(value: None) -> tuple[AttributeValue, int]:
    return {"NULL": True}, 1


def _sized_list(value: Iterable[Any]) -> tuple[AttributeValue, int]:
    get = SIZED_ENCODERS.get
    out = []
    size = 3
    for element in value:
        sized = get(type(element))
        av, n = sized(element) if sized is not None else _sized_other(element)
        out.append(av)
        size += n + 1
    return {"L": out}, size


def _sized_dict(value: Mapping[Any, Any]) -> tuple[AttributeValue, int]:
    get = SIZED_ENCODERS.get
    out: WireItem = {}
    size = 3
    for name, element in value.items():
        if not isinstance(name, str):
            raise _non_string_name(name)
        sized = get(type(element))
        av, n = sized(element) if sized is not None else _sized_other(element)
        out[name] = av
        size += utf8_len(name) + n + 1
    return {"M": out}, size


def _sized_datetime(value: datetime) -> tuple[AttributeValue, int]:
    if value.tzinfo is timezone.utc:  # already UTC: no conversion
        text = value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        return {"S": text}, len(text)
    av = _encode_datetime(value)
    return av, len(av["S"])


def _sized_other(value: Any) -> tuple[AttributeValue, int]:
    av = to_wire(value)
    return av, value_size(av)


#: Per exact type, a function giving a value's AttributeValue and its size in one pass.
SIZED_ENCODERS: Final[dict[type, Callable[[Any], tuple[AttributeValue, int]]]] = {
    str: _sized_str,
    bool: _sized_bool,
    int: _sized_int,
    float: _sized_float,
    Decimal: _sized_decimal,
    bytes: _sized_bytes,
    type(None): _sized_none,
    list: _sized_list,
    tuple: _sized_list,
    dict: _sized_dict,
    datetime: _sized_datetime,
}


def to_wire_sized(value: Any) -> tuple[AttributeValue, int]:
    """Return ``(to_wire(value), attribute_value_size(to_wire(value)))``, in one pass."""
    sized = SIZED_ENCODERS.get(type(value))
    if sized is not None:
        return sized(value)
    return _sized_other(value)
