"""Which key texts a template can write: overlap of two templates, and keys inside a range.

A string template is read as a small automaton over `Token`
steps (its literal characters, then each codec's shape). The shapes may describe more texts
than a codec writes, never fewer, so every answer here errs on the safe side: "may hold a key"
can be a false alarm, "holds no key" is a proof.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import lru_cache

from lsiorm._model.codec import CharSet, Token, chars
from lsiorm._model.template import FieldSlot, KeyTemplate

__all__ = ["Shape", "intersection_witness", "shape_of"]

_TOP = 0x10FFFF
_STEP_CACHE = 65536


class Shape:
    """The automaton of one template: positions 0..n over its tokens; n accepts."""

    def __init__(self, tokens: Iterable[Token]) -> None:
        self.tokens: tuple[Token, ...] = tuple(tokens)
        self.end = len(self.tokens)
        # Planning walks the same key prefixes again and again: remember each step.
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        """Add every position reachable by skipping optional and repeated steps."""
        out: set[int] = set()
        for p in states:
            while p not in out:
                out.add(p)
                if p < self.end and self.tokens[p][0] != "one":
                    p += 1
                else:
                    break
        return frozenset(out)

    def start(self) -> frozenset[int]:
        """The states before any character."""
        return self.closure((0,))

    def step(self, states: frozenset[int], char: str) -> frozenset[int]:
        """The states after reading ``char``."""
        known = self._steps.get((states, char))
        if known is not None:
            return known
        if len(self._steps) > _STEP_CACHE:
            self._steps.clear()
        found = self._steps[states, char] = self._step(states, char)
        return found

    def _step(self, states: frozenset[int], char: str) -> frozenset[int]:
        code = ord(char)
        nxt: list[int] = []
        for p in states:
            if p == self.end:
                continue
            kind, charset = self.tokens[p]
            if _contains(charset, code):
                nxt.append(p if kind == "star" else p + 1)
        return self.closure(nxt)

    def walk(self, states: frozenset[int], text: str) -> frozenset[int]:
        """The states after reading ``text``."""
        for char in text:
            if not states:
                break
            states = self.step(states, char)
        return states

    def accepts(self, states: frozenset[int]) -> bool:
        """True when a key may end here."""
        return self.end in states

    def moves_within(self, states: frozenset[int], low: int, high: int) -> bool:
        """True when some key continues with a character in ``[low, high]``."""
        if low > high:
            return False
        return any(p < self.end and _meets(self.tokens[p][1], low, high) for p in states)

    def may_hold(self, low: str, high: str) -> bool:
        """Return False only when no key of this shape lies in ``[low, high]`` (inclusive)."""
        return _may_hold(self, low, high)

    def matches(self, text: str) -> bool:
        """Return False only when this shape cannot write ``text``."""
        return self.accepts(self.walk(self.start(), text))


def _contains(charset: CharSet, code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in charset)


def _meets(charset: CharSet, low: int, high: int) -> bool:
    return any(lo <= high and low <= hi for lo, hi in charset)


def _may_hold(shape: Shape, low: str, high: str) -> bool:
    if low > high:
        return False
    common = 0
    while common < min(len(low), len(high)) and low[common] == high[common]:
        common += 1
    states = shape.walk(shape.start(), low[:common])
    if not states:
        return False
    if common == len(low):
        # ``low`` is a prefix of ``high``: low itself, the prefixes of high longer than low,
        # and everything that leaves high's path below it.
        for j in range(common, len(high) + 1):
            if not states:
                return False
            if shape.accepts(states):
                return True
            if j == len(high):
                return False
            if shape.moves_within(states, 0, ord(high[j]) - 1):
                return True
            states = shape.step(states, high[j])
        return False
    # low[common] < high[common]: anything strictly between the two characters ...
    if shape.moves_within(states, ord(low[common]) + 1, ord(high[common]) - 1):
        return True
    # ... low and what continues or leaves its path upwards ...
    side = shape.step(states, low[common])
    for j in range(common + 1, len(low) + 1):
        if not side:
            break
        if j == len(low):
            if shape.accepts(side) or shape.moves_within(side, 0, _TOP):
                return True
            break
        if shape.moves_within(side, ord(low[j]) + 1, _TOP):
            return True
        side = shape.step(side, low[j])
    # ... and the prefixes of high and what leaves its path downwards.
    side = shape.step(states, high[common])
    for j in range(common + 1, len(high) + 1):
        if not side:
            break
        if shape.accepts(side):
            return True
        if j == len(high):
            break
        if shape.moves_within(side, 0, ord(high[j]) - 1):
            return True
        side = shape.step(side, high[j])
    return False


@lru_cache(maxsize=4096)
def shape_of(template: KeyTemplate) -> Shape | None:
    """Return the shape of a string template (None for Number and Binary keys)."""
    if template.is_direct:
        return None
    tokens: list[Token] = []
    for seg in template.segments:
        if isinstance(seg, FieldSlot):
            assert seg.codec is not None
            tokens.extend(seg.codec.tokens())
        else:
            tokens.extend(("one", chars(c)) for c in seg)
    return Shape(tokens)


def intersection_witness(a: KeyTemplate, b: KeyTemplate) -> str | None:
    """Return a key text both templates may write, or None when they can write none alike.

    Number and Binary templates overlap any template of the same attribute.
    """
    sa, sb = shape_of(a), shape_of(b)
    if sa is None or sb is None:
        return "" if a.attribute_type == b.attribute_type else None
    start = (0, 0)
    seen: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    todo: deque[tuple[int, int]] = deque([start])
    while todo:
        p, q = pair = todo.popleft()
        if p == sa.end and q == sb.end:
            out: list[str] = []
            at: tuple[int, int] | None = pair
            while at is not None and seen[at] is not None:
                back = seen[at]
                assert back is not None
                at, char = back
                out.append(char)
            return "".join(reversed(out))
        moves: list[tuple[tuple[int, int], str]] = []
        if p < sa.end and sa.tokens[p][0] != "one":
            moves.append(((p + 1, q), ""))
        if q < sb.end and sb.tokens[q][0] != "one":
            moves.append(((p, q + 1), ""))
        if p < sa.end and q < sb.end:
            (ka, ca), (kb, cb) = sa.tokens[p], sb.tokens[q]
            common = _common_char(ca, cb)
            if common is not None:
                moves.append(((p if ka == "star" else p + 1, q if kb == "star" else q + 1), common))
        for nxt, step in moves:
            if nxt not in seen:
                seen[nxt] = (pair, step)
                todo.append(nxt)
    return None


def _common_char(a: CharSet, b: CharSet) -> str | None:
    """Return a printable-first character in both classes, or None."""
    best: int | None = None
    for lo_a, hi_a in a:
        for lo_b, hi_b in b:
            lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
            if lo <= hi:
                pick = max(lo, 0x61) if lo <= 0x7A <= hi or lo <= 0x61 <= hi else lo
                pick = min(pick, hi)
                if 0xD800 <= pick <= 0xDFFF:
                    pick = 0xE000 if hi >= 0xE000 else lo
                if best is None or (pick < best):
                    best = pick
    return chr(best) if best is not None else None
