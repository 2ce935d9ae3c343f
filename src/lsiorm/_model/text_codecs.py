"""Key codecs of text: str with its escapes and terminator (the printable style's and the exact
style's), plain text, enums by their values."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import Any, Final

from lsiorm._model.codec import (
    ANY_KEY_CHAR,
    MAX_CHAR,
    CharSet,
    KeyCodec,
    Token,
    UnformattedCodec,
    chars,
)
from lsiorm._model.patterns import charset_contains, charset_intersection, charset_text
from lsiorm.errors import KeyEncodingError

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
    """Invert `escape_text`; raise ValueError on text it cannot have produced."""
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


#: Starts the printable style's escape: ``%`` and two uppercase hex digits stand for one of
#: the characters U+0000 to ``%`` (U+0025), which never stand for themselves.
PERCENT: Final = "%"
#: The highest character the printable style escapes; every character above stands for itself.
HIGHEST_ESCAPED: Final = 0x25
#: Ends printable escaped text where the literal that follows does not start with a character
#: below ``%`` (or another field follows directly).
PRINTABLE_TERMINATOR: Final = "#"
_PERCENT_TABLE: Final = {code: f"%{code:02X}" for code in range(HIGHEST_ESCAPED + 1)}
_PERCENT_NEEDED: Final = re.compile("[\x00-%]")
_HEX: Final = "0123456789ABCDEF"


def percent_escape(text: str) -> str:
    """Return ``text`` with each character from U+0000 to ``%`` written ``%`` + two hex digits.

    The printable style's escape: ``" "`` becomes ``%20``, ``#`` ``%23``, ``%`` ``%25``; every
    other character stands for itself. No escaped text holds a character below ``%``.
    """
    if _PERCENT_NEEDED.search(text) is None:
        return text
    return text.translate(_PERCENT_TABLE)


def percent_unescape(text: str) -> str:
    """Invert `percent_escape`; raise ValueError on text it cannot have produced."""
    if _PERCENT_NEEDED.search(text) is None:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == PERCENT:
            digits = text[pos + 1 : pos + 3]
            if len(digits) != 2 or any(d not in _HEX for d in digits):
                raise ValueError(text)
            code = int(digits, 16)
            if code > HIGHEST_ESCAPED:
                raise ValueError(text)
            out.append(chr(code))
            pos += 3
        elif ord(char) <= HIGHEST_ESCAPED:
            raise ValueError(text)
        else:
            out.append(char)
            pos += 1
    return "".join(out)


def checked_text(codec: KeyCodec, value: Any, what: str) -> str:
    """Return ``value`` as plain ``str``; refuse non-text, lone surrogates and U+10FFFF."""
    if not isinstance(value, str):
        raise codec.type_error(value, "a str")
    text = value if type(value) is str else str.__str__(value)
    if text.isascii():  # no surrogate, no U+10FFFF
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise KeyEncodingError(
            "key.invalid-unicode",
            f"Field {codec.field_name!r} {what} {text!r} holds a lone surrogate, which "
            "UTF-8 cannot encode.",
        ) from None
    if MAX_CHAR in text:
        raise KeyEncodingError(
            "key.reserved-char",
            f"Field {codec.field_name!r} {what} {text!r} holds U+10FFFF, which lsiorm "
            "reserves as the upper bound of key ranges.",
        )
    return text


class Alphabet:
    """The characters a field's key values may hold, and where that limit comes from."""

    __slots__ = ("chars", "declared", "source")

    def __init__(self, charset: CharSet, source: str, *, declared: bool) -> None:
        # U+10FFFF can never be in a key value, whatever the declaration says.
        self.chars: CharSet = charset_intersection(charset, ((0, 0x10FFFE),))
        #: What declared it, for messages: "its alphabet 'a-z'" or "its pattern '^[a-z]+$'".
        self.source = source
        #: True for a KeyFormat alphabet, enforced on every key value; False for one read from
        #: a pattern, enforced only where a key relies on it.
        self.declared = declared

    def check(self, codec: KeyCodec, text: str, what: str) -> None:
        """Refuse text holding a character outside the alphabet (``key.outside-alphabet``)."""
        for char in text:
            if not charset_contains(self.chars, char):
                raise KeyEncodingError(
                    "key.outside-alphabet",
                    f"Field {codec.field_name!r} {what} {text!r} holds {char!r}, which "
                    f"{self.source} does not allow ([{charset_text(self.chars)}]).",
                )

    def __repr__(self) -> str:
        return f"Alphabet({charset_text(self.chars)!r})"


class StrCodec(UnformattedCodec):
    """Strings: the text itself, with U+0000 and U+0001 escaped, then a terminator when more
    template follows.

    Format: every character stands for itself except U+0000, written ``\\x01\\x01``, and
    U+0001, written ``\\x01\\x02``. A field followed by more template text (``terminated``)
    then ends with U+0000, which sorts below every character the escaped text can hold; so
    ``"ab"`` (``ab\\x00``) sorts before ``"ab!"`` (``ab!\\x00``) whatever literal follows, and
    no encoding is a prefix of another. A field that ends its template carries no terminator,
    so its key text is the value itself unless the value holds U+0000 or U+0001.

    Refused: text holding `MAX_CHAR` (``key.reserved-char``) or a lone surrogate, which
    UTF-8 cannot carry (``key.invalid-unicode``), and text outside a declared ``alphabet``
    (``key.outside-alphabet``), which changes no encoding. The empty string is allowed; the
    template decides whether an empty key is.
    """

    kind = "Str"
    python_type = str

    def __init__(
        self,
        spec: str = "",
        *,
        field_name: str = "value",
        terminated: bool = False,
        alphabet: Alphabet | None = None,
    ) -> None:
        super().__init__(spec, field_name=field_name)
        self.terminated = terminated
        self.prefix_free = terminated
        self.terminator = TERMINATOR if terminated else None
        self.alphabet = alphabet

    def encode(self, value: Any) -> str:
        """Return the key text of the str ``value``."""
        text = escape_text(self._checked(value, "value"))
        return text + TERMINATOR if self.terminated else text

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text every value starting with ``prefix`` starts with."""
        return escape_text(checked_text(self, prefix, "begins_with prefix"))

    def admits_prefix(self, prefix: str) -> bool:
        """False when the prefix holds a character outside the field's alphabet."""
        alphabet = self.alphabet
        return alphabet is None or all(charset_contains(alphabet.chars, c) for c in prefix)

    def _checked(self, value: Any, what: str) -> str:
        text = checked_text(self, value, what)
        if self.alphabet is not None:
            self.alphabet.check(self, text, what)
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


class PrintableStrCodec(UnformattedCodec):
    """Strings in the printable style: the text with U+0000 to ``%`` escaped, then a terminator
    when more template follows.

    Format: every character stands for itself except U+0000 to ``%`` (U+0025), each written
    ``%`` and two uppercase hex digits (`percent_escape`: a space is ``%20``, ``#`` is ``%23``).
    So escaped text holds no character below ``%``, and no control character at all. A field
    followed by more template ends with its ``terminator``: the first character of the literal
    that follows when that sorts below ``%`` (``#``, a space, ``!``, ``"`` or ``$``; the
    template then leaves it out of the literal, ``holds_literal``), else an added ``#``. The
    terminator sorts below every character of escaped text, so ``"ab"`` (``ab#``) sorts before
    ``"ab!"`` (``ab%21#``) whatever follows, and no encoding is a prefix of another. A field
    that ends its template has no terminator. docs/encoding.md proves the order.

    Refused as by `StrCodec`: U+10FFFF, lone surrogates, text outside a declared ``alphabet``.
    """

    kind = "Str"
    python_type = str

    def __init__(
        self,
        spec: str = "",
        *,
        field_name: str = "value",
        terminator: str | None = None,
        holds_literal: bool = False,
        alphabet: Alphabet | None = None,
    ) -> None:
        super().__init__(spec, field_name=field_name)
        if terminator is not None and ord(terminator) >= HIGHEST_ESCAPED:
            raise ValueError(f"{terminator!r} does not sort below every escaped character")
        self.terminator = terminator
        self.prefix_free = terminator is not None
        #: True when the terminator is the first character of the literal after the field.
        self.holds_literal = holds_literal and terminator is not None
        self.alphabet = alphabet
        self._tail = terminator or ""

    def encode(self, value: Any) -> str:
        """Return the key text of the str ``value``."""
        text = checked_text(self, value, "value")
        if self.alphabet is not None:
            self.alphabet.check(self, text, "value")
        return percent_escape(text) + self._tail

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text every value starting with ``prefix`` starts with."""
        return percent_escape(checked_text(self, prefix, "begins_with prefix"))

    def admits_prefix(self, prefix: str) -> bool:
        """False when the prefix holds a character outside the field's alphabet."""
        alphabet = self.alphabet
        return alphabet is None or all(charset_contains(alphabet.chars, c) for c in prefix)

    def tokens(self) -> list[Token]:
        """``%``, hex digits and every character above ``%``; then the terminator, if any."""
        body: list[Token] = [("star", ((HIGHEST_ESCAPED, 0x10FFFE),))]
        return body if self.terminator is None else [*body, ("one", chars(self.terminator))]

    def _parse(self, text: str) -> str:
        if self.terminator is not None:
            if not text.endswith(self.terminator):
                raise ValueError(text)
            text = text[:-1]
        return percent_unescape(text)

    def __repr__(self) -> str:
        return f"PrintableStrCodec(terminator={self.terminator!r})"


_CASES: Final = {"lower": str.lower, "upper": str.upper}


class PlainStrCodec(KeyCodec):
    """Strings stored as they are: no escape, no U+0000, and the terminator only where one
    is free.

    Format: the text itself (lowercased or uppercased first when ``case`` says so), followed
    by ``terminator`` when one is given. A readable field gets the first character of the
    literal that follows it as its terminator (the template's literal then starts one character
    later), and only when its values provably never hold that character: they come from a
    closed set (``members``) or an ``alphabet``, which the codec enforces on every value
    (``key.literal-value``, ``key.outside-alphabet``). Whether the text order is the order of
    the values (``ordered``) is decided by whoever builds the codec (see
    `lsiorm._model.key_styles`).
    """

    python_type = str

    def __init__(
        self,
        *,
        field_name: str = "value",
        terminator: str | None = None,
        alphabet: Alphabet | None = None,
        members: Sequence[str] | None = None,
        ordered: bool = True,
        case: str | None = None,
        prefix_free: bool | None = None,
    ) -> None:
        self.field_name = field_name
        self.spec = ""
        self.terminator = terminator
        self.alphabet = alphabet
        self.members = None if members is None else frozenset(members)
        self.ordered = ordered and case is None
        self.case = case
        self.injective = case is None
        self._fold = _CASES[case] if case is not None else None
        self.prefix_free = terminator is not None if prefix_free is None else prefix_free
        self.holds_literal = terminator is not None

    def text_form(self) -> tuple[Any, ...]:
        """The class, the terminator and the lettercase."""
        return (*super().text_form(), self.case)

    def encode(self, value: Any) -> str:
        """Return the key text of the str ``value``."""
        text = self._text(value, "value")
        members = self.members
        if members is not None and text not in members:
            raise KeyEncodingError(
                "key.literal-value",
                f"Field {self.field_name!r} value {text!r} is not one of its declared values "
                f"{sorted(members)!r}.",
            )
        return text if self.terminator is None else text + self.terminator

    def _text(self, value: Any, what: str) -> str:
        text = checked_text(self, value, what)
        if self._fold is not None:
            text = self._fold(text)
        if self.alphabet is not None:
            self.alphabet.check(self, text, what)
        if self.terminator is not None and self.terminator in text:
            raise KeyEncodingError(
                "key.outside-alphabet",
                f"Field {self.field_name!r} {what} {text!r} holds {self.terminator!r}, which "
                "ends the field in its key.",
            )
        return text

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text every value starting with ``prefix`` starts with."""
        text = checked_text(self, prefix, "begins_with prefix")
        return self._fold(text) if self._fold is not None else text

    def admits_prefix(self, prefix: str) -> bool:
        """False when no value can start with ``prefix`` (it holds the terminator, say)."""
        text = self.validate_prefix(prefix)
        if self.terminator is not None and self.terminator in text:
            return False
        if self.members is not None:
            return any(m.startswith(text) for m in self.members)
        alphabet = self.alphabet
        return alphabet is None or all(charset_contains(alphabet.chars, c) for c in text)

    def body_chars(self) -> CharSet:
        """The characters a value's text may hold."""
        if self.members is not None:
            return chars("".join(self.members))
        if self.alphabet is not None:
            return self.alphabet.chars
        return ANY_KEY_CHAR

    def tokens(self) -> list[Token]:
        """The value's characters, then the terminator if any."""
        body: list[Token] = [("star", self.body_chars())]
        if self.terminator is None:
            return body
        return [*body, ("one", chars(self.terminator))]

    def _parse(self, text: str) -> str:
        if self.terminator is not None:
            if not text.endswith(self.terminator):
                raise ValueError(text)
            text = text[: -len(self.terminator)]
        return text

    def __repr__(self) -> str:
        return f"PlainStrCodec(terminator={self.terminator!r})"


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
        self.terminator = inner.terminator
        self.ordered = inner.ordered
        self.injective = inner.injective
        self.holds_literal = inner.holds_literal
        self.fixed_width = inner.fixed_width

    def text_form(self) -> tuple[Any, ...]:
        """The inner codec's form."""
        return self.inner.text_form()

    def encode(self, value: Any) -> str:
        """Return the key text of the member ``value``."""
        if not isinstance(value, self.enum_type):
            raise self.type_error(value, f"a {self.enum_type.__name__} member")
        return self.inner.encode(value.value)

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text of a begins_with ``prefix``; only str-valued enums allow one."""
        return self.inner.validate_prefix(prefix)

    def admits_prefix(self, prefix: str) -> bool:
        """Whether some member's value can start with ``prefix``."""
        return self.inner.admits_prefix(prefix)

    def tokens(self) -> list[Token]:
        """The tokens of the inner codec."""
        return self.inner.tokens()

    def _parse(self, text: str) -> Enum:
        return self.enum_type(self.inner.decode(text))

    def __repr__(self) -> str:
        return f"EnumCodec({self.python_type.__name__}, {self.inner!r})"
