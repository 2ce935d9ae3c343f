"""Choosing a key field's codec from its declared type and key style: codec_for, KeyFormat."""

from __future__ import annotations

import re
import types
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Final, Literal, NewType, Union, get_args, get_origin

import pydantic

from lsiorm._model.codec import MAX_CHAR, KeyCodec
from lsiorm._model.fixed_codecs import BoolCodec, PlainBoolCodec, UUIDCodec
from lsiorm._model.key_styles import DEFAULT_KEY_STYLE, KeyStyle, checked_style, text_codec
from lsiorm._model.number_codecs import DecimalCodec, FloatCodec, IntCodec, PlainIntCodec
from lsiorm._model.patterns import alphabet_chars, charset_intersection, pattern_alphabet
from lsiorm._model.text_codecs import Alphabet, EnumCodec, StrCodec
from lsiorm._model.time_codecs import DateCodec, DatetimeCodec, PlainDatetimeCodec
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
    """How a key field is written, as in ``Annotated[int, KeyFormat("06d")]``.

    ``spec`` means the same as writing the format spec in the template (``{replies:06d}``);
    when both are given they must agree. ``style`` picks the field's key style
    (``"printable"``, the default, ``"readable"``, ``"exact"`` or ``"plain"``; see
    docs/encoding.md) over the entity's and the table's. ``alphabet`` declares the characters a
    text field's values may hold, written like the inside of a regular expression's ``[...]``
    (``"a-z0-9-"``); every key value is checked against it (``key.outside-alphabet``), and a
    printable or readable key stores such text as it is, with no escape or terminator of its
    own, where every character sorts above the literal that follows. Plain-style fields
    also take ``datetime_format`` (a ``strftime`` format written in UTC, such as
    ``"%Y-%m-%dT%H:%M:%S.%f+0000"``) and ``case`` (``"lower"`` or ``"upper"``: the text is
    stored in that lettercase, so equality is checked on the stored attribute too).
    """

    spec: str = ""
    style: KeyStyle | None = None
    alphabet: str | None = None
    datetime_format: str | None = None
    case: Literal["lower", "upper"] | None = None


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


@dataclass
class _Declared:
    """What a field's annotation and metadata say about its key format."""

    specs: list[str] = field(default_factory=list)
    formats: list[KeyFormat] = field(default_factory=list)
    patterns: list[Any] = field(default_factory=list)

    def take(self, items: Sequence[Any]) -> None:
        for item in items:
            if isinstance(item, KeyFormat):
                self.formats.append(item)
                if item.spec:
                    self.specs.append(item.spec)
            pattern = getattr(item, "pattern", None)
            if isinstance(pattern, (str, re.Pattern)):
                self.patterns.append(pattern)

    def one(self, name: str, field_name: str) -> Any:
        """The value of one KeyFormat option, refusing two that disagree."""
        given = {getattr(f, name) for f in self.formats} - {None}
        if len(given) > 1:
            raise DeclarationError(
                "template.format-conflict",
                f"Field {field_name!r} has disagreeing KeyFormat {name} values "
                f"{sorted(map(str, given))!r}; give one.",
            )
        return given.pop() if given else None


def codec_for(
    annotation: Any,
    *,
    spec: str = "",
    metadata: Sequence[Any] = (),
    field_name: str,
    terminated: bool = False,
    following: str | None = None,
    style: KeyStyle | None = None,
    python_patterns: bool = False,
    forced: bool = False,
) -> KeyCodec:
    """Return the codec for a key field declared with ``annotation``.

    ``spec`` is the format spec written in the template, ``metadata`` the field's pydantic
    metadata (a `KeyFormat` or a pattern in it counts like one inside ``Annotated``).
    ``following`` is the template text after the field (None: it ends the template, ``""``:
    another field follows directly); ``terminated=True`` alone means more template follows.
    ``style`` is the key style the entity or table gives (a KeyFormat's wins; "printable" when
    neither says; ``forced``: ``style`` wins), ``python_patterns`` whether patterns are checked
    by Python's ``re``.
    Raises DeclarationError when the type has no encoding, the spec does not fit the type, or
    two specs disagree.
    """
    declared = _Declared([spec] if spec else [])
    base = _unwrap(annotation, declared)
    declared.take(metadata)
    if following is None and terminated:
        following = ""
    own = None if forced else declared.one("style", field_name)
    chosen = checked_style(own if own is not None else style or DEFAULT_KEY_STYLE, repr(field_name))
    options = _Options(declared, field_name, chosen, following, python_patterns)
    if forced and chosen != "plain":
        options.case = options.datetime_format = None  # plain-only options, not this style's

    if get_origin(base) is Literal:
        values = [value for value in get_args(base) if value is not None]
        kinds = {type(value) for value in values}
        if len(kinds) != 1 or not kinds <= {str, int}:
            raise _no_encoding(field_name, annotation)
        kind = kinds.pop()
        codec = options.text(values) if kind is str else options.scalar(kind)
        _check_values(codec, values, "Literal")
        return codec
    base = _PYDANTIC_ALIASES.get(base, base)
    if base is pydantic.NaiveDatetime:
        why = "key datetimes must be timezone-aware (use AwareDatetime or datetime)"
        raise _no_encoding(field_name, annotation, why)
    if isinstance(base, type) and issubclass(base, Enum):
        kinds = {type(member.value) for member in base}
        enum_kind = kinds.pop() if len(kinds) == 1 else None
        if enum_kind not in _FACTORIES:
            why = f"the values of {base.__name__} must all have one type, a supported key type"
            raise _no_encoding(field_name, annotation, why)
        values = [member.value for member in base]
        inner = options.text(values) if enum_kind is str else options.scalar(enum_kind)
        codec = EnumCodec(base, inner)
        codec.style, codec.why = inner.style, inner.why
        _check_values(codec.inner, values, base.__name__)
        return codec
    if base not in _FACTORIES:
        raise _no_encoding(field_name, annotation)
    return options.text(None) if base is str else options.scalar(base)


@dataclass(eq=False, repr=False)
class _Options:
    """The choices one field's declaration makes, turned into its codec."""

    declared: _Declared
    field_name: str
    style: KeyStyle
    following: str | None
    python_patterns: bool

    def __post_init__(self) -> None:
        self.case = self.declared.one("case", self.field_name)
        self.datetime_format = self.declared.one("datetime_format", self.field_name)
        self.alphabet_spec = self.declared.one("alphabet", self.field_name)

    def _refuse(self, option: str, why: str) -> DeclarationError:
        return DeclarationError(
            "template.format-option", f"Field {self.field_name!r} has KeyFormat {option}: {why}."
        )

    def _alphabet(self, with_patterns: bool) -> Alphabet | None:
        name = self.field_name
        if self.alphabet_spec is not None:
            chars = alphabet_chars(self.alphabet_spec, where=f"Field {name!r}")
            return Alphabet(chars, f"its alphabet {self.alphabet_spec!r}", declared=True)
        if not with_patterns:
            return None
        found: Alphabet | None = None
        for pattern in self.declared.patterns:
            read = pattern_alphabet(pattern, python_semantics=self.python_patterns)
            if read is None:
                continue
            chars = read
            shown = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
            if found is None:
                found = Alphabet(chars, f"its pattern {shown!r}", declared=False)
            else:
                both = charset_intersection(found.chars, chars)
                found = Alphabet(both, f"{found.source} and its pattern {shown!r}", declared=False)
        return found if found is not None and found.chars else None

    def text(self, members: Sequence[str] | None) -> KeyCodec:
        """The codec of a str, a str Enum or a Literal of str."""
        if self.datetime_format is not None:
            raise self._refuse("datetime_format", "it applies to datetime fields")
        if self.declared.specs:
            # A str field takes no spec; StrCodec says so in the usual words.
            StrCodec(self.declared.specs[0], field_name=self.field_name)
        if self.case not in (None, "lower", "upper"):
            raise self._refuse("case", f"{self.case!r} is neither 'lower' nor 'upper'")
        if self.case is not None and self.style != "plain":
            raise self._refuse("case", "only plain-style fields store transformed text")
        return text_codec(
            field_name=self.field_name,
            style=self.style,
            following=self.following,
            members=members,
            alphabet=self._alphabet(with_patterns=members is None),
            case=self.case,
        )

    def scalar(self, kind: Any) -> KeyCodec:
        """The codec of a field that is not text."""
        if self.alphabet_spec is not None or self.case is not None:
            option = "alphabet" if self.alphabet_spec is not None else "case"
            raise self._refuse(option, "it applies to text fields")
        if self.datetime_format is not None and (kind is not datetime or self.style != "plain"):
            raise self._refuse("datetime_format", "it applies to plain-style datetime fields")
        codec: KeyCodec
        if self.style == "plain":
            codec = self._plain_scalar(kind)
        else:
            codec = _with_spec(_FACTORIES[kind], self.declared.specs, self.field_name, False)
            codec.why = "its length ends it"
        codec.style = self.style
        return codec

    def _plain_scalar(self, kind: Any) -> KeyCodec:
        name, specs, lead = self.field_name, self.declared.specs, self.following
        codec: KeyCodec
        if specs and kind in (int, float, Decimal):
            # A format spec asks for the fixed width; other tools pad numbers with zeros too.
            codec = _with_spec(_FACTORIES[kind], specs, name, False)
            codec.why = "its format spec gives it a fixed width"
            return codec
        if kind is int:
            free = lead[0] if lead and lead[0] not in "-0123456789" else None
            codec = PlainIntCodec(field_name=name, terminator=free)
            codec.why = "unpadded digits do not sort as numbers, so ranges are not exact" + (
                f"; {free!r} ends them" if free else ""
            )
            return codec
        if kind is bool:
            codec = _with_spec(
                lambda spec, field, _: PlainBoolCodec(spec, field_name=field), specs, name, False
            )
            codec.why = "false or true"
            return codec
        if kind is datetime and self.datetime_format is not None:
            if specs:
                raise self._refuse("datetime_format", "give it or a format spec, not both")
            codec = PlainDatetimeCodec(self.datetime_format, field_name=name)
            codec.why = f"written as {self.datetime_format!r}" + (
                "" if codec.ordered else ", which does not sort as the instants do"
            )
            return codec
        if kind in (float, Decimal):
            raise DeclarationError(
                "template.plain-type",
                f"Field {name!r} is a {kind.__name__}, which has no one plain text other "
                "tools agree on; give it a fixed-point format spec (like '010.2f'), or the "
                "printable, readable or exact key style.",
            )
        codec = _with_spec(_FACTORIES[kind], specs, name, False)
        codec.why = "its length ends it"
        return codec


def _unwrap(annotation: Any, declared: _Declared) -> Any:
    """Strip Optional, Annotated and NewType; collect the KeyFormats and patterns met."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extras = get_args(annotation)
            declared.take(extras)
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
