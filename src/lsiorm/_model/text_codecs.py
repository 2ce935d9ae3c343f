"""Key codecs of text: str with its escapes and terminator, and enums by their values."""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, Final

from lsiorm._model.codec import MAX_CHAR, KeyCodec, Token, UnformattedCodec, chars
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
    UTF-8 cannot carry (``key.invalid-unicode``). The empty string is allowed; the template
    decides whether an empty key is.
    """

    kind = "Str"
    python_type = str

    def __init__(
        self, spec: str = "", *, field_name: str = "value", terminated: bool = False
    ) -> None:
        super().__init__(spec, field_name=field_name)
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
