"""The key codec contract: KeyCodec (UnformattedCodec for types without a format spec), the
tokens a codec describes its texts with, MAX_CHAR.

Every codec maps values to text whose order (as Python ``str``, which for valid Unicode is also
UTF-8 byte order, the order DynamoDB uses) is exactly the order of the values, and equal text to
equal values only. The codecs' formats (number, text, time and fixed codecs) are the storage
format: changing one changes stored keys.
"""

from __future__ import annotations

import abc
from typing import Any, Final

from lsiorm.errors import DeclarationError, KeyEncodingError

#: A Unicode noncharacter, never allowed inside a str value; query bounds append it as the
#: upper sentinel, so it must sort above every character a value may hold.
MAX_CHAR: Final = "\U0010ffff"

#: A character class as sorted, disjoint, inclusive code point ranges.
CharSet = tuple[tuple[int, int], ...]
#: One step of a key's shape: ``("one", chars)`` one character of the class, ``("opt", chars)``
#: at most one, ``("star", chars)`` any number. A codec's tokens describe a superset of the
#: texts it writes; `lsiorm._model.keyspace` reasons about key ranges with them.
Token = tuple[str, CharSet]

ANY_KEY_CHAR: Final[CharSet] = ((0, 0x10FFFE),)
_DIGITS: Final[CharSet] = ((0x30, 0x39),)
_HEX: Final[CharSet] = ((0x30, 0x39), (0x61, 0x66))


def chars(text: str) -> CharSet:
    """Return the class of exactly the characters of ``text``."""
    return tuple((ord(c), ord(c)) for c in sorted(set(text)))


def layout_tokens(pattern: str) -> list[Token]:
    """Return the tokens of a fixed layout: ``9`` a digit, ``f`` a hex digit, others themselves."""
    out: list[Token] = []
    for c in pattern:
        out.append(("one", _DIGITS if c == "9" else _HEX if c == "f" else chars(c)))
    return out


class KeyCodec(abc.ABC):
    """Encode the values of one field into key text that sorts as the values do, and back."""

    python_type: type
    #: True when no encoding is a proper prefix of another, so a range over this field stays
    #: exact when more template text follows it.
    prefix_free: bool
    #: The normalised format spec in use ("" when the codec takes none).
    spec: str
    field_name: str
    #: The character that ends every encoding (U+0000, or the first character of the literal
    #: that follows the field, which the encoding then holds), or None.
    terminator: str | None = None
    #: True when key text order is the order of the values (False only in the plain style).
    ordered: bool = True
    #: True when distinct values have distinct encodings (False when a plain style transform
    #: such as lowercasing folds several values onto one text).
    injective: bool = True
    #: True when every encoding has the same length (padded numbers, dates, UUIDs, ...).
    fixed_width: bool = False
    #: True when the terminator is the first character of the literal after the field, which
    #: the template then leaves out (see `lsiorm._model.key_styles`).
    holds_literal: bool = False
    #: The key style the field was given ("printable", "readable", "exact" or "plain").
    style: str = "printable"
    #: Why the field takes this form in its template (set by `codec_for`).
    why: str = ""

    @abc.abstractmethod
    def encode(self, value: Any) -> str:
        """Return the key text of ``value``; raise KeyEncodingError naming the rule it breaks."""

    def decode(self, text: str) -> Any:
        """Return the value whose encoding is ``text``; raise KeyEncodingError if there is none.

        Only the exact text `encode` produces is accepted, so decoding is the inverse of
        encoding and never guesses.
        """
        canonical: str | None = None
        value: Any = None
        if isinstance(text, str):
            try:
                value = self._parse(text)
                canonical = self.encode(value)
            except (ValueError, OverflowError):
                canonical = None
        if canonical is None or canonical != text:
            raise KeyEncodingError(
                "key.malformed",
                f"{text!r} is not a key encoding of field {self.field_name!r} ({self!r}).",
            )
        return value

    def validate_prefix(self, prefix: str) -> str:
        """Return the key text for a begins_with ``prefix`` on this field."""
        raise KeyEncodingError(
            "key.begins-with-type",
            f"begins_with needs a str field, but field {self.field_name!r} holds "
            f"{self.python_type.__name__} values.",
        )

    def text_form(self) -> tuple[Any, ...]:
        """What decides the text of every encoding: two codecs of a field with the same form
        write the same text for every value."""
        return (type(self).__name__, self.spec, self.terminator)

    def admits_prefix(self, prefix: str) -> bool:
        """Return False only when no value of this field starts with ``prefix``."""
        return True

    def tokens(self) -> list[Token]:
        """Return the shape of every text this codec writes (a superset is allowed)."""
        return [("star", ANY_KEY_CHAR)]

    @abc.abstractmethod
    def _parse(self, text: str) -> Any:
        """Return the value ``text`` spells; may raise ValueError on text that spells none."""

    def type_error(self, value: Any, expected: str) -> KeyEncodingError:
        """Return the refusal of a value of the wrong type (``key.type``)."""
        return KeyEncodingError(
            "key.type",
            f"Field {self.field_name!r} needs {expected}, got {type(value).__name__} {value!r}.",
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(spec={self.spec!r})"


class UnformattedCodec(KeyCodec):
    """A codec of a type that takes no format spec; ``kind`` names the type in the refusal."""

    kind: str

    def __init__(self, spec: str = "", *, field_name: str = "value") -> None:
        if spec:
            raise DeclarationError(
                "template.format-spec",
                f"{self.kind} field {field_name!r} takes no format spec, got {spec!r}.",
            )
        self.field_name = field_name
        self.spec = ""
