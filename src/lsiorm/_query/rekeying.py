"""Queries during a re-keying: both key forms of an entity's items, merged by value order.

While an entity is declared with ``rekeying_from``, some of its items may still carry keys in
the old style. A query reads the new form's key range as usual and, for each entity whose index
keys differ between the forms, the old form's key range too (the same conditions, bound by the
old templates). The two ranges may overlap, and rows of both forms can sort differently, so
each request keeps only the rows of its own form (`FormCheck`): the new-form request drops the
entity's old-form rows, the old-form request keeps only them. Each request then returns its rows
in the order of the values, and rows of an old-form request are merged by the key they would
have in the new form, so the merged result is in the order the new keys give.

A row's form is told by its key text: old-form keys parse with the old templates and not with
the new ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of

__all__ = ["FormCheck", "form_check", "new_form_sort_text", "row_kept"]


@dataclass(frozen=True)
class FormCheck:
    """How a request treats the rows of one entity being re-keyed, by the form of their keys.

    ``attributes`` are the index's key attributes whose text differs between the entity's
    declared templates and its ``rekeying_from`` ones. ``keep_old`` True: the request reads the
    old form's range and keeps only the entity's old-form rows; False: it keeps every row but
    those.
    """

    entity: type[Entity]
    attributes: tuple[str, ...]
    keep_old: bool


def form_check(
    meta: EntityMeta[Entity], attributes: tuple[str | None, ...], *, keep_old: bool
) -> FormCheck | None:
    """The form check of an entity on an index's key attributes (None when no form differs)."""
    differing = tuple(a for a in attributes if a is not None and a in meta.old_templates)
    return FormCheck(meta.cls, differing, keep_old) if differing else None


def _text(item: Mapping[str, Any], attribute: str) -> Any:
    av = item.get(attribute)
    return av.get("S") if isinstance(av, Mapping) else None


def _old_row(check: FormCheck, item: Mapping[str, Any]) -> bool:
    """Whether a row is the entity's, with its keys in the old form."""
    meta = meta_of(check.entity)
    type_av = item.get(meta.table.type_attribute)
    if type_av is not None and type_av != {"S": meta.type_name}:
        return False
    texts = [_text(item, a) for a in check.attributes]
    new = [meta.templates[a] for a in check.attributes]
    if all(t.parses(x) for t, x in zip(new, texts, strict=True)):
        return False
    old = [meta.old_templates[a] for a in check.attributes]
    return all(t.parses(x) for t, x in zip(old, texts, strict=True))


def row_kept(checks: tuple[FormCheck, ...], item: Mapping[str, Any]) -> bool:
    """Whether a request with these form checks keeps a row."""
    return all(check.keep_old == _old_row(check, item) for check in checks)


def new_form_sort_text(
    checks: tuple[FormCheck, ...], item: Mapping[str, Any], attribute: str
) -> str | None:
    """The sort key text an old-form row would have in the new form (None: not such a row)."""
    for check in checks:
        if check.keep_old and attribute in check.attributes:
            meta = meta_of(check.entity)
            old = meta.old_templates[attribute].parse(_text(item, attribute))
            text: str = meta.templates[attribute].render(old)
            return text
    return None
