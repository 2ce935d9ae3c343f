"""key_layout(): how each field of an entity's key templates is written, and why."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.template import KeyTemplate
from lsiorm._model.text_codecs import TERMINATOR

__all__ = ["FieldLayout", "KeyLayout", "key_layout", "template_layout"]


@dataclass(frozen=True)
class FieldLayout:
    """One field of one key template: its key style, the form of its text, and why.

    ``form`` is ``"plain"`` (the text as is, with no terminator of its own: it ends the
    template, or the literal after it ends it), ``"terminated"`` (a U+0000 ends it),
    ``"fixed-width"`` (its length ends it) or ``"native"`` (a Number or Binary key holds the
    value itself).
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
class KeyLayout:
    """Every key field of an entity class; ``str()`` gives one line per field."""

    entity: str
    fields: tuple[FieldLayout, ...]

    def __str__(self) -> str:
        lines = [f"Key layout of {self.entity}"]
        shown = None
        for field in self.fields:
            if field.attribute != shown:
                lines.append(f"  {field.attribute} {field.template!r}")
                shown = field.attribute
            lines.append(f"    {field}")
        return "\n".join(lines)


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
        if codec.terminator == TERMINATOR:
            form = "terminated"
        elif codec.fixed_width:
            form = "fixed-width"
        else:
            form = "plain"
        yield FieldLayout(tpl.attribute, tpl.source, slot.field, codec.style, form, codec.why)


def layout_of(meta: EntityMeta[EntityModel]) -> KeyLayout:
    """The key layout of a bound entity class's metadata."""
    fields = tuple(f for tpl in meta.templates.values() for f in template_layout(tpl))
    return KeyLayout(meta.cls.__name__, fields)


def key_layout(cls: type[Entity]) -> KeyLayout:
    """Return how each field of an entity's key templates is written, and why.

    ``print(key_layout(Task))`` shows, per key attribute and field, whether its text is plain
    or ends with U+0000 (or has a fixed width), in which key style, and the reason.
    """
    return layout_of(meta_of(cls))
