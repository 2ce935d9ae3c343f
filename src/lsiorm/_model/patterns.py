"""Character sets of key text: what an anchored pattern lets a value hold, declared alphabets.

`pattern_alphabet` reads a regular expression with Python's own parser and returns every
character a whole match can contain, or None when it cannot tell. It answers only for patterns
anchored at both ends (a pattern is searched anywhere in the value, so an unanchored one says
nothing about the other characters), and only for constructs whose characters it can list:
literals, classes and ranges (negated too), ``.``, groups, alternation and repetition. Anything
else (``\\d``, ``\\w``, look-arounds, back-references, case-insensitive or multi-line flags)
proves nothing. The answer only ever feeds a proof that a key needs no terminator, and the
codec that relies on it refuses any value outside the set (``key.outside-alphabet``), so a
pattern read too generously can cost a write, never a wrong key.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterable
from typing import Any, Final

from lsiorm._model.codec import CharSet
from lsiorm.errors import DeclarationError

if sys.version_info >= (3, 11):
    import re._constants as _sre
    import re._parser as _parser
else:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _parser

__all__ = [
    "alphabet_chars",
    "charset_contains",
    "charset_intersection",
    "charset_text",
    "pattern_alphabet",
]

_TOP: Final = 0x10FFFF
_EVERYTHING: Final[CharSet] = ((0, _TOP),)
_UNSUPPORTED_FLAGS: Final = re.IGNORECASE | re.MULTILINE | re.LOCALE


class _Unknown(Exception):
    """The pattern holds a construct whose characters cannot be listed."""


def _normal(ranges: Iterable[tuple[int, int]]) -> CharSet:
    """Sort and merge ranges into a CharSet."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(charset: CharSet) -> CharSet:
    out: list[tuple[int, int]] = []
    at = 0
    for lo, hi in charset:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= _TOP:
        out.append((at, _TOP))
    return tuple(out)


def charset_intersection(a: CharSet, b: CharSet) -> CharSet:
    """Return the characters in both sets."""
    out = []
    for lo_a, hi_a in a:
        for lo_b, hi_b in b:
            lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
            if lo <= hi:
                out.append((lo, hi))
    return _normal(out)


def charset_contains(charset: CharSet, char: str) -> bool:
    """Whether ``char`` is in the set."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in charset)


def charset_text(charset: CharSet) -> str:
    """Return the set written as a class body, like ``-0-9a-z``."""

    def show(code: int) -> str:
        char = chr(code)
        if char in "\\-]^":
            return "\\" + char
        return char if char.isprintable() else f"\\u{code:04x}"

    parts = []
    for lo, hi in charset:
        if lo == hi:
            parts.append(show(lo))
        elif hi == lo + 1:
            parts.append(show(lo) + show(hi))
        else:
            parts.append(f"{show(lo)}-{show(hi)}")
    return "".join(parts)


def _class_items(items: Iterable[tuple[Any, Any]]) -> CharSet:
    """The characters of a class body (``IN``), negated when it starts with NEGATE."""
    ranges: list[tuple[int, int]] = []
    negate = False
    for op, arg in items:
        if op is _sre.NEGATE:
            negate = True
        elif op is _sre.LITERAL:
            ranges.append((arg, arg))
        elif op is _sre.RANGE:
            ranges.append((arg[0], arg[1]))
        else:  # CATEGORY (\d, \w, \s) and anything newer
            raise _Unknown
    charset = _normal(ranges)
    return _complement(charset) if negate else charset


def _chars(items: Iterable[tuple[Any, Any]], dotall: bool) -> CharSet:
    """The characters any match of a parsed sequence can hold (anchors inside refused)."""
    ranges: list[tuple[int, int]] = []
    for op, arg in items:
        if op is _sre.LITERAL:
            ranges.append((arg, arg))
        elif op is _sre.NOT_LITERAL:
            ranges.extend(_complement(((arg, arg),)))
        elif op is _sre.IN:
            ranges.extend(_class_items(arg))
        elif op is _sre.ANY:
            ranges.extend(_EVERYTHING if dotall else _complement(((10, 10),)))
        elif op is _sre.SUBPATTERN:
            add_flags, del_flags = arg[1], arg[2]
            if add_flags & _UNSUPPORTED_FLAGS:
                raise _Unknown
            inner_dotall = (dotall or bool(add_flags & re.DOTALL)) and not del_flags & re.DOTALL
            ranges.extend(_chars(arg[3], inner_dotall))
        elif op is _sre.BRANCH:
            for branch in arg[1]:
                ranges.extend(_chars(branch, dotall))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)):
            ranges.extend(_chars(arg[2], dotall))
        elif op is getattr(_sre, "ATOMIC_GROUP", None):
            ranges.extend(_chars(arg, dotall))
        else:  # anchors inside, look-arounds, back-references, conditionals
            raise _Unknown
    return _normal(ranges)


def _items(parsed: Any) -> list[tuple[Any, Any]]:
    """The (opcode, argument) items of a parsed pattern."""
    return [parsed[n] for n in range(len(parsed))]


def _parse(source: str, flags: int) -> Any:
    """Parse a pattern; one the parser warns about (a nested set, say) is not understood."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = _parser.parse(source, flags)
    if caught:
        raise re.error(str(caught[0].message))
    return parsed


def pattern_alphabet(pattern: str | re.Pattern[str], *, python_semantics: bool) -> CharSet | None:
    """Return every character a value matching ``pattern`` can hold, or None when unknown.

    ``python_semantics`` says which engine checks the pattern: Python's ``re``, whose ``$``
    also matches before a final newline (so a newline may end the value), or the Rust engine
    pydantic uses by default, whose ``$`` is the end of the text.
    """
    if isinstance(pattern, re.Pattern):
        flags = pattern.flags
        source = pattern.pattern
        python_semantics = True
    else:
        flags, source = 0, pattern
    if not isinstance(source, str) or flags & _UNSUPPORTED_FLAGS:
        return None
    try:
        parsed = _parse(source, flags)
    except (re.error, RecursionError, OverflowError):
        return None
    state_flags = parsed.state.flags
    if state_flags & _UNSUPPORTED_FLAGS:
        return None
    items = _items(parsed)
    if len(items) < 2:
        return None
    start, end = items[0], items[-1]
    if start != (_sre.AT, _sre.AT_BEGINNING) and start != (_sre.AT, _sre.AT_BEGINNING_STRING):
        return None
    newline_end = False
    if end == (_sre.AT, _sre.AT_END):
        newline_end = python_semantics
    elif end != (_sre.AT, _sre.AT_END_STRING):
        return None
    try:
        found = _chars(items[1:-1], bool(state_flags & re.DOTALL))
    except _Unknown:
        return None
    return _normal([*found, (10, 10)]) if newline_end else found


def alphabet_chars(spec: str, *, where: str) -> CharSet:
    """Return the characters of a declared alphabet, written like the inside of ``[...]``.

    ``"a-z0-9-"`` is the lowercase letters, the digits and ``-``. Raises DeclarationError
    (``template.alphabet``) when it is not such a class or lists no character.
    """
    found: CharSet = ()
    if isinstance(spec, str) and spec:
        try:
            parsed = _items(_parse(f"[{spec}]", 0))
            if len(parsed) == 1 and parsed[0][0] in (_sre.IN, _sre.LITERAL, _sre.NOT_LITERAL):
                found = _chars(parsed, dotall=False)
        except (re.error, _Unknown):
            found = ()
    if not found:
        raise DeclarationError(
            "template.alphabet",
            f"{where} declares the alphabet {spec!r}; write it like the inside of a regular "
            "expression's [...] with single characters and ranges, like 'a-z0-9-'.",
        )
    return found
