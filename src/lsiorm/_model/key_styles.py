"""Key styles: which text a str-like key field is stored as, and the proofs that keep it exact.

A key field followed by more template needs a way to end. Fixed-width forms (padded ints,
UUIDs, dates, datetimes) end by their width and are the same in every style. Text is where the
styles differ:

* **printable** (the default): no key holds a control character. Text is stored as it is
  where its declared type proves that exact (the readable proofs below, with no value holding
  a character below U+0020); otherwise U+0000 to ``%`` are escaped as ``%XX`` and, when more
  template follows, the text ends with the first character of the literal that follows when
  that sorts below ``%`` (``#``, a space, ``!``, ``"``, ``$``), else with an added ``#``.
  Escaped text holds no character below ``%``, so its terminator sorts below all of it: the
  rules of a U+0000-terminated field hold with that terminator in its place (docs/encoding.md
  has the proof).
* **exact** (the encoding of lsiorm 0.2's development versions): U+0000 and U+0001 escaped,
  and a U+0000 terminator after every text field that more template follows. Exact for any
  text.
* **readable** (the default before printable keys): the text as it is wherever the declared
  type proves that this keeps key order and prefix-freedom exact, else as in exact. Before a
  literal ``L``, the text is stored as is, with ``L[0]`` as its terminator, when

  - the values are a closed set (Enum, Literal) none of which holds ``L[0]``, U+0000 or
    U+0001, and wherever one value ``a`` is a proper prefix of another ``b``, the character
    ``b[len(a)]`` sorts above ``L[0]``; or
  - every character a value may hold (an anchored pattern's, or a declared alphabet's) sorts
    above ``L[0]``.

  Then no value's text can hold ``L[0]``, so the first ``L[0]`` after the field ends it, and
  ``a < b`` gives ``a + L[0] < b + L[0]``: the rules of a U+0000-terminated field hold with
  ``L[0]`` in its place. A text field directly followed by another field, or unproved, ends
  with U+0000 as in exact; one that ends its template needs no terminator.
* **plain**: the value as other tools store it: the text as is, ints unpadded. Its text ends
  with ``L[0]`` when no value can hold that character (then equality is exact); otherwise a
  separator may occur inside a value, and equality is made exact by a filter on the field's
  stored attribute. Ranges are exact only where the text sorts as the values do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, get_args

from lsiorm._model.codec import MAX_CHAR, KeyCodec
from lsiorm._model.patterns import charset_contains, charset_text
from lsiorm._model.text_codecs import (
    HIGHEST_ESCAPED,
    PRINTABLE_TERMINATOR,
    Alphabet,
    PlainStrCodec,
    PrintableStrCodec,
    StrCodec,
)
from lsiorm.errors import DeclarationError

__all__ = [
    "DEFAULT_KEY_STYLE",
    "KEY_STYLES",
    "OLD_FORMAT_STYLES",
    "KeyStyle",
    "alphabet_refusal",
    "checked_style",
    "closed_set_refusal",
    "control_refusal",
    "text_codec",
]

KeyStyle = Literal["printable", "readable", "exact", "plain"]
"""How key fields are written: ``"printable"`` (the default), ``"readable"``, ``"exact"`` or
``"plain"``."""

KEY_STYLES: Final[tuple[str, ...]] = get_args(KeyStyle)
#: The style of a declaration that names none.
DEFAULT_KEY_STYLE: Final = "printable"
#: The styles that end text with U+0000 (the exact and the readable one): one index holds
#: keys of these or of the printable style, never both.
OLD_FORMAT_STYLES: Final = frozenset({"readable", "exact"})

_BELOW_ALL: Final = ("\x00", "\x01")
#: The characters the printable style escapes (U+0000 to '%'), in the user's words.
_ESCAPED: Final = "control characters, space, '!', '\"', '#', '$' and '%'"


def checked_style(style: object, where: str) -> KeyStyle:
    """Return ``style`` when it names a key style; raise ``template.key-style`` otherwise."""
    if style == "printable":
        return "printable"
    if style == "readable":
        return "readable"
    if style == "exact":
        return "exact"
    if style == "plain":
        return "plain"
    raise DeclarationError(
        "template.key-style",
        f"{where} has key style {style!r}; the key styles are {', '.join(KEY_STYLES)}.",
    )


def _show(char: str) -> str:
    return repr(char) if char.isprintable() else f"U+{ord(char):04X}"


def closed_set_refusal(values: Sequence[str], lead: str) -> str | None:
    """Return why a closed set cannot be stored as is before a literal starting with ``lead``.

    None means it can: no value holds ``lead`` (or U+0000, U+0001, U+10FFFF), and wherever a
    value is a proper prefix of another, the longer one's next character sorts above ``lead``.
    """
    known = set(values)
    for value in sorted(known):
        for char in (lead, *_BELOW_ALL, MAX_CHAR):
            if char in value:
                return f"its value {value!r} holds {_show(char)}"
        for end in range(len(value)):
            if value[:end] in known and value[end] <= lead:
                return (
                    f"its value {value[:end]!r} is a prefix of {value!r}, whose next character "
                    f"{_show(value[end])} does not sort above {_show(lead)}"
                )
    return None


def alphabet_refusal(alphabet: Alphabet, lead: str) -> str | None:
    """Return why an alphabet's text cannot be stored as is before a literal starting with
    ``lead``; None means every character it allows sorts above ``lead`` (and above U+0001).
    """
    lowest = chr(alphabet.chars[0][0])
    if lowest <= lead or lowest in _BELOW_ALL:
        return f"{alphabet.source} allows {_show(lowest)}, which does not sort above {_show(lead)}"
    return None


def _holds(members: Sequence[str] | None, alphabet: Alphabet | None, char: str) -> bool:
    """Whether some value may hold ``char`` (True when nothing limits the values)."""
    if members is not None:
        return any(char in m for m in members)
    if alphabet is not None:
        return charset_contains(alphabet.chars, char)
    return True


def _prefix_free(members: Sequence[str] | None) -> bool:
    if members is None:
        return False
    known = set(members)
    return not any(v[:end] in known for v in known for end in range(len(v)))


def _limit(members: Sequence[str] | None, alphabet: Alphabet | None) -> str:
    if members is not None:
        return f"its values (a closed set of {len(set(members))}) all"
    assert alphabet is not None
    return f"the characters {alphabet.source} allows ([{charset_text(alphabet.chars)}]) all"


def text_codec(
    *,
    field_name: str,
    style: KeyStyle,
    following: str | None,
    members: Sequence[str] | None = None,
    alphabet: Alphabet | None = None,
    case: str | None = None,
) -> KeyCodec:
    """Return the codec of a str-like key field, its ``why`` said.

    ``following`` is the template text after the field: None when the field ends the template,
    ``""`` when another field follows directly. ``members`` are a closed set's values,
    ``alphabet`` what a pattern or declaration allows.
    """
    if style == "plain":
        return _plain(field_name, following, members, alphabet, case)
    if style == "printable":
        return _printable(field_name, following, members, alphabet)
    codec: KeyCodec
    # A pattern's alphabet is enforced only where a key relies on it (a plain text).
    enforced = alphabet if alphabet is not None and alphabet.declared else None
    if following is None:
        codec = StrCodec(field_name=field_name, alphabet=enforced)
        codec.why = "it ends its template"
    elif style == "exact" or following == "" or (members is None and alphabet is None):
        codec = StrCodec(field_name=field_name, terminated=True, alphabet=enforced)
        if style == "exact":
            codec.why = "the exact style ends text followed by more template with U+0000"
        elif following == "":
            codec.why = "another field follows it directly"
        else:
            codec.why = (
                f"its text is unconstrained and {following!r} follows (an Enum, a Literal, an "
                "anchored pattern or a declared alphabet can prove it needs no terminator)"
            )
    else:
        lead = following[0]
        if members is not None:
            refusal = closed_set_refusal(members, lead)
        else:
            assert alphabet is not None  # the branch above took "neither a set nor an alphabet"
            refusal = alphabet_refusal(alphabet, lead)
        if refusal is not None:
            codec = StrCodec(field_name=field_name, terminated=True, alphabet=enforced)
            codec.why = f"{following!r} follows and {refusal}"
        else:
            codec = PlainStrCodec(
                field_name=field_name, terminator=lead, alphabet=alphabet, members=members
            )
            codec.why = (
                f"{_limit(members, alphabet)} sort above {_show(lead)}, so the {following!r} "
                "that follows ends the text"
            )
    codec.style = style
    return codec


def control_refusal(members: Sequence[str] | None, alphabet: Alphabet | None) -> str | None:
    """Return why a closed set or an alphabet may hold a character below U+0020 (a control
    character, which a printable key never holds); None means it cannot."""
    if members is not None:
        for value in sorted(set(members)):
            for char in value:
                if char < " ":
                    return f"its value {value!r} holds {_show(char)}, a control character"
        return None
    if alphabet is not None:
        lowest = chr(alphabet.chars[0][0])
        if lowest < " ":
            return f"{alphabet.source} allows {_show(lowest)}, a control character"
        return None
    return "its text is unconstrained"


def _printable(
    field_name: str,
    following: str | None,
    members: Sequence[str] | None,
    alphabet: Alphabet | None,
) -> KeyCodec:
    """The printable style's codec of a str-like field: plain where proved, else escaped."""
    # A pattern's alphabet is enforced only where a key relies on it (a plain text).
    enforced = alphabet if alphabet is not None and alphabet.declared else None
    refusal = control_refusal(members, alphabet)
    codec: KeyCodec
    if following:
        lead = following[0]
        if refusal is None:
            if members is not None:
                refusal = closed_set_refusal(members, lead)
            else:
                assert alphabet is not None  # control_refusal refuses "neither"
                refusal = alphabet_refusal(alphabet, lead)
        if refusal is None:
            codec = PlainStrCodec(
                field_name=field_name, terminator=lead, alphabet=alphabet, members=members
            )
            codec.why = (
                f"{_limit(members, alphabet)} sort above {_show(lead)}, so the {following!r} "
                "that follows ends the text"
            )
        elif ord(lead) < HIGHEST_ESCAPED:
            codec = PrintableStrCodec(
                field_name=field_name, terminator=lead, holds_literal=True, alphabet=enforced
            )
            codec.why = (
                f"{refusal}, so {_ESCAPED} are escaped (%XX); escaped text never holds "
                f"{_show(lead)}, so the {following!r} that follows ends it"
            )
        else:
            codec = PrintableStrCodec(
                field_name=field_name, terminator=PRINTABLE_TERMINATOR, alphabet=enforced
            )
            codec.why = (
                f"{refusal}, so {_ESCAPED} are escaped (%XX); {_show(lead)} cannot end escaped "
                "text (only a character that sorts below '%' can: '#', space, '!', '\"', '$'), "
                f"so lsiorm writes '{PRINTABLE_TERMINATOR}' before {following!r}"
            )
    elif following == "":
        codec = PrintableStrCodec(
            field_name=field_name, terminator=PRINTABLE_TERMINATOR, alphabet=enforced
        )
        codec.why = (
            f"another field follows it directly, so {_ESCAPED} are escaped (%XX) and lsiorm "
            f"ends the text with '{PRINTABLE_TERMINATOR}'"
        )
    elif refusal is None:
        codec = PlainStrCodec(field_name=field_name, alphabet=alphabet, members=members)
        codec.why = (
            f"it ends its template and {_limit(members, alphabet)} sort at or above U+0020 "
            "(no control character)"
        )
    else:
        codec = PrintableStrCodec(field_name=field_name, alphabet=enforced)
        codec.why = f"it ends its template and {refusal}, so {_ESCAPED} are escaped (%XX)"
    codec.style = "printable"
    return codec


def _plain(
    field_name: str,
    following: str | None,
    members: Sequence[str] | None,
    alphabet: Alphabet | None,
    case: str | None,
) -> KeyCodec:
    """The plain style's codec of a str-like field: its text as is."""
    if case is not None and members is not None:
        members = sorted({m.lower() if case == "lower" else m.upper() for m in members})
    limited = case is None or members is not None
    # A pattern's alphabet is enforced only where the key relies on it (a terminator).
    enforced = alphabet if alphabet is not None and alphabet.declared else None
    terminator: str | None = None
    ordered = prefix_free = True
    if following is None:
        # The key ends with the text: it sorts as the values do, but one value may start
        # another ("a", "a#1"), so a bound is exact only at the very end of the key.
        prefix_free = _prefix_free(members)
        why = "it ends its template"
    elif following == "":
        ordered = prefix_free = _prefix_free(members)
        why = "another field follows it directly"
    elif limited and not _holds(members, alphabet if case is None else None, following[0]):
        terminator, enforced = following[0], alphabet
        if members is not None:
            proof = closed_set_refusal(members, terminator)
        else:
            assert alphabet is not None
            proof = alphabet_refusal(alphabet, terminator)
        ordered = proof is None
        why = f"its values never hold {_show(terminator)}, so {following!r} ends it" + (
            "" if ordered else f"; ranges are not exact ({proof})"
        )
    else:
        ordered = prefix_free = False
        why = (
            f"a value may hold {_show(following[0])}, so equality is also checked on the stored "
            "attribute, and ranges are not exact"
        )
    codec = PlainStrCodec(
        field_name=field_name,
        terminator=terminator,
        alphabet=enforced,
        members=members,
        case=case,
        ordered=ordered,
        prefix_free=prefix_free if terminator is None else None,
    )
    if not codec.injective:
        why += f"; lettercase is folded ({case}), so equality is checked on the attribute"
    codec.why, codec.style = why, "plain"
    return codec
