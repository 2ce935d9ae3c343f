"""Keys a declaration never writes, found in items read from its table: the mark of a table that
a 0.2 development version wrote, declared without the key style it was written with.

The printable key style (the default) writes no character below U+0020 into a key; the readable
and the exact style (of lsiorm 0.2's development versions) end text with U+0000 wherever its type
proves nothing, and escape U+0000 and U+0001 with U+0001. So in a key attribute whose every
template is printable, a key holding a control character was written in one of those formats,
and a declaration that names no style reads past it: `get` and key conditions look for the
printable form. `probe_keys` finds such keys in a sample of items and says which of the two
styles parses them. It is pure: `lsiorm check` reads the sample and prints the finding.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from lsiorm._model.declaration import bind_template
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.key_styles import KeyStyle
from lsiorm._model.schema import Table
from lsiorm._model.template import KeyTemplate
from lsiorm._model.text_codecs import EnumCodec, PlainStrCodec, PrintableStrCodec, StrCodec

__all__ = ["FormatProbe", "printable_attributes", "probe_keys"]

#: The styles tried on a key the declaration does not write (the ones that write U+0000), in
#: the order they are suggested.
_EARLIER: Final[tuple[KeyStyle, ...]] = ("readable", "exact")
_EXAMPLES: Final = 3


def _writes_control(tpl: KeyTemplate) -> bool:
    """Whether a template may write a character below U+0020 (True when unsure)."""
    if tpl.is_direct:
        return True
    for seg in tpl.segments:
        if isinstance(seg, str):
            if any(char < " " for char in seg):
                return True
            continue
        codec = seg.codec
        if codec is None:
            return True
        inner = codec.inner if isinstance(codec, EnumCodec) else codec
        text = isinstance(inner, (StrCodec, PlainStrCodec, PrintableStrCodec))
        if text and codec.style != "printable":
            return True  # readable and exact text may end with U+0000; plain text holds anything
    return False


def _entities(table: Table) -> list[EntityMeta[EntityModel]]:
    return [meta_of(typing.cast("type[EntityModel]", cls)) for cls in table.entities.values()]


def printable_attributes(table: Table) -> tuple[str, ...]:
    """The string key attributes in which no template of the table writes a control character
    and no entity is being re-keyed (a re-keyed entity's old keys are expected there)."""
    out = []
    metas = _entities(table)
    for name, kind in table.key_attributes.items():
        templates = [m.templates[name] for m in metas if name in m.templates]
        if kind != "S" or not templates or name in table.multi_key_attributes:
            continue
        if any(_writes_control(t) for t in templates):
            continue
        if any(name in m.old_templates or m.rekeying_from is not None for m in metas):
            continue
        out.append(name)
    return tuple(out)


@dataclass(frozen=True)
class FormatProbe:
    """What a sample of a table's items says about the key formats it holds.

    ``found`` items hold, in an attribute where the declaration writes only printable keys, a
    key it does not write (see `probe_keys`); ``styles`` are the earlier key styles under which
    every such key parses as one of the table's templates (empty when none does).
    """

    table: str
    read: int
    attributes: tuple[str, ...]
    found: int
    examples: tuple[tuple[str, str], ...]
    styles: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when no item read holds a key the declaration does not write."""
        return self.found == 0

    def __str__(self) -> str:
        where = ", ".join(self.attributes)
        if not self.attributes:
            return (
                f"Key formats of table {self.table!r}: not checked (no key attribute is printable "
                "in every template)."
            )
        head = f"Key formats of table {self.table!r}: {self.read} items read"
        if self.ok:
            return f"{head}; every key in {where} is printable, as the declaration writes them."
        shown = ", ".join(f"{attr} {text!r}" for attr, text in self.examples)
        if self.styles:
            named = " or ".join(repr(s) for s in self.styles)
            fix = (
                f"They parse in the {named} key style of an earlier version: declare the table "
                f"with the style it was written with (Table(..., key_style={self.styles[0]!r}))"
                f", or move it to printable keys (rekeying_from={self.styles[0]!r}, then a "
                "backfill; see docs/migrations.md)."
            )
        else:
            fix = "No key style of the declaration parses them: see docs/encoding.md."
        return (
            f"{head}; {self.found} hold a key that this declaration does not write (it writes "
            f"printable keys in {where}), e.g. {shown}. {fix}"
        )


class _EarlierForms:
    """Each entity's templates of one attribute in the earlier styles, built once."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.built: dict[tuple[str, str], list[KeyTemplate]] = {}

    def templates(self, attribute: str, style: KeyStyle) -> list[KeyTemplate]:
        found = self.built.get((attribute, style))
        if found is None:
            kind = self.table.key_attributes[attribute]
            found = self.built[attribute, style] = [
                bind_template(meta.cls, attribute, kind, tpl.source, style, forced=True)
                for meta in _entities(self.table)
                for tpl in [meta.templates.get(attribute)]
                if tpl is not None
            ]
        return found

    def parsing_styles(self, attribute: str, text: str) -> set[str]:
        """The earlier styles in which some entity's template of ``attribute`` parses it."""
        return {
            style
            for style in _EARLIER
            if any(t.parses(text) for t in self.templates(attribute, style))
        }


def probe_keys(
    table: Table, items: Iterable[Mapping[str, Any]], *, skip_partition: str | None = None
) -> FormatProbe:
    """Return what ``items`` (wire items read from ``table``) say about its key formats.

    A key in a `printable_attributes` attribute is of another format when it holds a control
    character, or when none of the attribute's templates parses it but the template of an
    earlier style does (``ORDER#a b``, which the printable style writes ``ORDER#a%20b``).
    Items whose partition key is ``skip_partition`` (the jobs' reserved partition) are left out.
    """
    attributes = printable_attributes(table)
    metas = _entities(table)
    current = {a: [m.templates[a] for m in metas if a in m.templates] for a in attributes}
    pk = table.partition_key.name
    read = found = 0
    examples: list[tuple[str, str]] = []
    styles: set[str] | None = None
    earlier = _EarlierForms(table)
    for item in items:
        if skip_partition is not None and item.get(pk, {}).get("S") == skip_partition:
            continue
        read += 1
        odd = False
        for attr in attributes:
            text = item.get(attr, {}).get("S")
            if text is None:
                continue
            control = any(char < " " for char in text)
            if not control and any(t.parses(text) for t in current[attr]):
                continue
            parsed = earlier.parsing_styles(attr, text)
            if not control and not parsed:
                continue  # another tool's key, or another type's: not a format of ours
            odd = True
            if len(examples) < _EXAMPLES:
                examples.append((attr, text))
            styles = parsed if styles is None else styles & parsed
        found += odd
    ordered = tuple(s for s in _EARLIER if styles and s in styles)
    return FormatProbe(table.name, read, attributes, found, tuple(examples), ordered)
