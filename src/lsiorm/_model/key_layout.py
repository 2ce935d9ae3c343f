"""key_layout(): how each key template of an entity is stored, with an example, and how and why
each of its fields is written."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, Final, Literal, get_args, get_origin

from lsiorm._model.codec import KeyCodec
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.field_types import bare_type
from lsiorm._model.template import FieldSlot, KeyTemplate
from lsiorm._model.text_codecs import TERMINATOR, EnumCodec, PlainStrCodec, PrintableStrCodec

__all__ = ["FieldLayout", "KeyLayout", "TemplateLayout", "key_layout", "template_layout"]


@dataclass(frozen=True)
class FieldLayout:
    """One field of one key template: its key style, the form of its text, and why.

    ``form`` is ``"plain"`` (the text as is, with no terminator of its own: it ends the
    template, or the literal after it ends it), ``"escaped"`` (the printable style's text:
    U+0000 to ``%`` written ``%XX``, ended by a ``#``, a space, ``!``, ``"`` or ``$`` where more
    template follows), ``"terminated"`` (a U+0000 ends it), ``"fixed-width"`` (its length ends
    it) or ``"native"`` (a Number or Binary key holds the value itself).
    """

    attribute: str
    template: str
    field: str
    style: str
    form: str
    why: str

    def __str__(self) -> str:
        return f"{{{self.field}}} {self.form} ({self.style}): {self.why}"


@dataclass(frozen=True)
class TemplateLayout:
    """How one key template is stored: its text with the terminators lsiorm writes, and one key.

    ``stored`` is the template with each terminator a field adds made visible (``'\\x00'`` in
    the readable and exact styles, an added ``#`` in the printable style before a literal that
    cannot end escaped text); it equals ``template`` when the literals end every field.
    ``example`` is the key of ``values``, example values of the fields' types (``"a b"`` for
    unconstrained text, to show what a space becomes). Both are None for a Number or Binary key.
    """

    attribute: str
    template: str
    stored: str | None
    example: str | None
    values: tuple[tuple[str, Any], ...]

    def lines(self) -> list[str]:
        """The stored form (when it differs from the template) and the example, one per line."""
        out = []
        if self.stored is not None and self.stored != self.template:
            out.append(f"stored as {self.stored!r}")
        if self.example is not None and self.values:
            shown = ", ".join(f"{name}={_shown(value)}" for name, value in self.values)
            out.append(f"e.g. {self.example!r} ({shown})")
        return out


def _shown(value: Any) -> str:
    if isinstance(value, Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class KeyLayout:
    """Every key template and key field of an entity class; ``str()`` gives the templates,
    each with its stored form and an example, and one line per field."""

    entity: str
    fields: tuple[FieldLayout, ...]
    templates: tuple[TemplateLayout, ...] = ()

    def __str__(self) -> str:
        lines = [f"Key layout of {self.entity}"]
        shown = None
        by_attribute = {t.attribute: t for t in self.templates}
        for field in self.fields:
            if field.attribute != shown:
                lines.append(f"  {field.attribute} {field.template!r}")
                shown = field.attribute
                found = by_attribute.get(field.attribute)
                lines.extend(f"    {line}" for line in (found.lines() if found else ()))
            lines.append(f"    {field}")
        return "\n".join(lines)


def _text_codec(codec: KeyCodec) -> KeyCodec:
    return codec.inner if isinstance(codec, EnumCodec) else codec


def field_form(codec: KeyCodec) -> str:
    """The form of a field's text: plain, escaped, terminated or fixed-width."""
    inner = _text_codec(codec)
    if isinstance(inner, PrintableStrCodec):
        return "escaped"
    if codec.terminator == TERMINATOR:
        return "terminated"
    if codec.fixed_width:
        return "fixed-width"
    return "plain"


def template_layout(tpl: KeyTemplate) -> Iterator[FieldLayout]:
    """The layout of each field of one bound template, in order."""
    for slot in tpl.slots:
        codec = slot.codec
        if codec is None or tpl.is_direct:
            yield FieldLayout(
                tpl.attribute,
                tpl.source,
                slot.field,
                "native",
                "native",
                f"the {tpl.attribute_type} key holds the value itself",
            )
            continue
        yield FieldLayout(
            tpl.attribute, tpl.source, slot.field, codec.style, field_form(codec), codec.why
        )


_UTC_SAMPLE: Final = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
_SAMPLES: Final[dict[type, tuple[Any, ...]]] = {
    str: ("a b", "ab", "AB", "1", "a"),
    bool: (True,),
    int: (7, 0),
    float: (1.5, 0.0),
    Decimal: (Decimal("1.5"), Decimal(1), Decimal(0)),
    datetime: (_UTC_SAMPLE,),
    date: (date(2024, 1, 2),),
    uuid.UUID: (uuid.UUID("12345678-1234-5678-1234-567812345678"),),
}


def _candidates(annotation: Any, codec: KeyCodec) -> list[Any]:
    base = bare_type(annotation)
    if get_origin(base) is Literal:
        return [value for value in get_args(base) if value is not None]
    if isinstance(base, type) and issubclass(base, Enum):
        return list(base)
    inner = _text_codec(codec)
    if isinstance(inner, PlainStrCodec) and inner.members is not None:
        return sorted(inner.members)
    alphabet = getattr(inner, "alphabet", None)
    samples = list(_SAMPLES.get(base, ())) if isinstance(base, type) else []
    if alphabet is not None:
        samples.append(chr(alphabet.chars[0][0]) * 2)
    return samples


def _sample(annotation: Any, codec: KeyCodec) -> tuple[bool, Any]:
    """An example value of a field that its codec encodes: (found, value)."""
    for value in _candidates(annotation, codec):
        try:
            codec.encode(value)
        except (ValueError, TypeError):
            continue
        return True, value
    return False, None


def stored_form(tpl: KeyTemplate) -> str:
    """The template's text with each terminator its fields add made visible."""
    parts: list[str] = []
    for seg in tpl.segments:
        if not isinstance(seg, FieldSlot):
            parts.append(seg.replace("{", "{{").replace("}", "}}"))
            continue
        codec = seg.codec
        parts.append(f"{{{seg.field}{':' + seg.spec if seg.spec else ''}}}")
        if codec is not None and codec.terminator is not None:
            parts.append(codec.terminator)
    return "".join(parts)


def layout_of_template(cls: type[Any], tpl: KeyTemplate) -> TemplateLayout:
    """The stored form and an example key of one bound template of ``cls``."""
    if tpl.is_direct or any(slot.codec is None for slot in tpl.slots):
        return TemplateLayout(tpl.attribute, tpl.source, None, None, ())
    fields = cls.model_fields
    values: dict[str, Any] = {}
    for slot in tpl.slots:
        assert slot.codec is not None  # every slot has one (checked above)
        found, value = _sample(fields[slot.field].annotation, slot.codec)
        if not found:
            return TemplateLayout(tpl.attribute, tpl.source, stored_form(tpl), None, ())
        values[slot.field] = value
    example = tpl.render(values)
    return TemplateLayout(
        tpl.attribute, tpl.source, stored_form(tpl), example, tuple(values.items())
    )


def layout_of(meta: EntityMeta[EntityModel]) -> KeyLayout:
    """The key layout of a bound entity class's metadata."""
    fields = tuple(f for tpl in meta.templates.values() for f in template_layout(tpl))
    templates = tuple(layout_of_template(meta.cls, tpl) for tpl in meta.templates.values())
    return KeyLayout(meta.cls.__name__, fields, templates)


def key_layout(cls: type[Entity]) -> KeyLayout:
    """Return how each key template of an entity is stored, and how and why each field is.

    ``print(key_layout(Task))`` shows, per key attribute, the template, its stored form where
    lsiorm adds a terminator, and an example key; then, per field, whether its text is plain,
    escaped (printable: ``%XX``), terminated (U+0000) or of fixed width, in which key style,
    and the reason.
    """
    return layout_of(meta_of(cls))
