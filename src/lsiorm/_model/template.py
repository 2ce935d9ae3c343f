"""Key templates: the strings that derive key attributes from model fields."""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lsiorm._model.codec import KeyCodec
from lsiorm.errors import DeclarationError, KeyEncodingError

__all__ = ["FieldSlot", "KeyTemplate", "Segment", "parse_template", "slot_codec"]


@dataclass(frozen=True)
class FieldSlot:
    """One ``{field:spec}`` placeholder of a template, with the codec that encodes it."""

    field: str
    spec: str
    codec: KeyCodec | None = None


Segment = str | FieldSlot


def slot_codec(slot: FieldSlot) -> KeyCodec:
    """Return the codec a bound template gave this slot (binding sets every slot's codec)."""
    assert slot.codec is not None
    return slot.codec


def parse_template(source: str, *, attribute: str) -> tuple[Segment, ...]:
    """Split a template into literal text and field placeholders (no codecs yet).

    ``{{`` and ``}}`` stand for literal braces, as in ``str.format``.
    """
    segments: list[Segment] = []
    try:
        parsed = list(string.Formatter().parse(source))
    except ValueError as exc:
        raise DeclarationError(
            "template.syntax", f"Key template {source!r} for {attribute!r} is malformed: {exc}."
        ) from exc
    for literal, name, spec, conversion in parsed:
        if literal:
            if segments and isinstance(segments[-1], str):
                segments[-1] += literal
            else:
                segments.append(literal)
        if name is None:
            continue
        if not name.isidentifier() or conversion is not None:
            raise DeclarationError(
                "template.syntax",
                f"Key template {source!r} for {attribute!r} has placeholder {{{name}}}; "
                "placeholders must be a plain field name with an optional format spec, "
                "like {replies:06d}.",
            )
        segments.append(FieldSlot(name, spec or ""))
    return tuple(segments)


@dataclass(frozen=True)
class KeyTemplate:
    """How one key attribute is derived from an entity's fields.

    A string template (``attribute_type == "S"``) renders literal text and encoded field values.
    A number or binary template (``"N"``/``"B"``) is a single field stored as the value itself.
    """

    attribute: str
    attribute_type: str
    source: str
    segments: tuple[Segment, ...]

    @cached_property
    def slots(self) -> tuple[FieldSlot, ...]:
        """The field placeholders in order."""
        return tuple(s for s in self.segments if isinstance(s, FieldSlot))

    @cached_property
    def fields(self) -> tuple[str, ...]:
        """The names of the fields the template reads, in order."""
        return tuple(s.field for s in self.slots)

    @cached_property
    def recoverable(self) -> frozenset[str]:
        """The fields whose value the key text gives back, and only that value.

        Not so for a field whose encoding folds several values onto one text (lowercased
        plain text), nor for one whose text may hold the first character of the literal that
        follows it (plain text holding the separator), where the split of a key is a guess:
        such values are read from the item's own attributes.
        """
        if self.is_direct:
            return frozenset(self.fields)
        out = set()
        for i, seg in enumerate(self.segments):
            if not isinstance(seg, FieldSlot):
                continue
            codec = slot_codec(seg)
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            if not codec.injective:
                continue
            if isinstance(nxt, FieldSlot) and not codec.prefix_free:
                continue
            if isinstance(nxt, str) and not codec.prefix_free and _may_hold(codec, nxt[0]):
                continue
            out.add(seg.field)
        return frozenset(out)

    @cached_property
    def form(self) -> tuple[Any, ...]:
        """What decides the key text: two templates of the same form render alike."""
        return tuple(
            seg if isinstance(seg, str) else slot_codec(seg).text_form() for seg in self.segments
        )

    @cached_property
    def ambiguous_fields(self) -> frozenset[str]:
        """Fields whose value the key text alone cannot tell (plain style only).

        So a plain text that may hold the separator after it (``a#b`` before ``#``) and is not
        last, or text folded to one lettercase: conditions on them also read the stored
        attribute, and two items may share a key.
        """
        out = set()
        for slot in self.slots:
            codec = slot.codec
            if codec is None:
                continue
            if not codec.injective or (not codec.prefix_free and self.segments[-1] is not slot):
                out.add(slot.field)
        return frozenset(out)

    @property
    def namespace(self) -> str:
        """The literal text before the first field (the whole text if there is no field)."""
        first = self.segments[0] if self.segments else ""
        return first if isinstance(first, str) else ""

    @property
    def is_direct(self) -> bool:
        """True when the attribute holds the field value itself (Number or Binary key)."""
        return self.attribute_type != "S"

    def render(self, values: Mapping[str, Any]) -> Any:
        """Return the key attribute's value, or None when a field of the template has no value.

        None means the attribute is left out of the item (a sparse index slot).
        """
        if self.is_direct:
            return values.get(self.fields[0])
        parts: list[str] = []
        for seg in self.segments:
            if isinstance(seg, str):
                parts.append(seg)
                continue
            value = values.get(seg.field)
            if value is None:
                return None
            assert seg.codec is not None
            parts.append(seg.codec.encode(value))
        return "".join(parts)

    def prefix(self, values: Mapping[str, Any], count: int) -> str:
        """Return the key text fixed by the first ``count`` fields and the literal after them."""
        parts: list[str] = []
        seen = 0
        for seg in self.segments:
            if isinstance(seg, str):
                parts.append(seg)
                continue
            if seen == count:
                break
            assert seg.codec is not None
            parts.append(seg.codec.encode(values[seg.field]))
            seen += 1
        return "".join(parts)

    def parses(self, value: object) -> bool:
        """Whether ``value`` is key text this template renders (`parse` accepts it)."""
        if not isinstance(value, str):
            return False
        try:
            self.parse(value)
        except KeyEncodingError:
            return False
        return True

    def parse(self, text: str) -> dict[str, Any]:
        """Decode a rendered key back into field values.

        Raises KeyEncodingError when the text was not rendered by this template.
        """
        if self.is_direct:
            return {self.fields[0]: text}
        found = _match(self.segments, text, 0)
        if found is None:
            raise KeyEncodingError(
                "key.template-mismatch",
                f"Key {text!r} of {self.attribute!r} does not match template {self.source!r}.",
            )
        return found


def _may_hold(codec: KeyCodec, char: str) -> bool:
    """Whether a text the codec writes may hold ``char`` (its tokens say; True if unsure)."""
    point = ord(char)
    return any(low <= point <= high for _, charset in codec.tokens() for low, high in charset)


def _match(segments: Sequence[Segment], text: str, pos: int) -> dict[str, Any] | None:
    """Match segments against text from pos, backtracking over where each field ends."""
    if not segments:
        return {} if pos == len(text) else None
    head, rest = segments[0], segments[1:]
    if isinstance(head, str):
        if not text.startswith(head, pos):
            return None
        return _match(rest, text, pos + len(head))
    assert head.codec is not None
    ends: list[int]
    terminator = head.codec.terminator
    if terminator is not None:
        # A terminated field ends at its first terminator, which its text holds nowhere else.
        at = text.find(terminator, pos)
        ends = [at + 1] if at != -1 else []
    elif not rest:
        ends = [len(text)]
    elif isinstance(rest[0], str):
        lit = rest[0]
        ends = []
        at = text.find(lit, pos)
        while at != -1:
            ends.append(at)
            at = text.find(lit, at + 1)
    else:
        ends = list(range(pos, len(text) + 1))
    for end in ends:
        decoded = _try(head.codec.decode, text[pos:end])
        if decoded is _FAIL:
            continue
        tail = _match(rest, text, end)
        if tail is not None:
            tail[head.field] = decoded
            return tail
    return None


_FAIL = object()


def _try(decode: Callable[[str], Any], text: str) -> Any:
    try:
        return decode(text)
    except (KeyEncodingError, ValueError):
        return _FAIL
