"""Telling entity types apart: an item's type by its type attribute, or by its key templates.

lsiorm writes each entity's ``type_name`` into the table's type attribute, and reads it back to
pick the class. Tables written by other tools often carry no type attribute at all, or only on
some entity types: an entity declared with ``type_attribute=None`` writes none, and its items
are recognised by their keys instead, as the items whose primary key its templates parse.

Declaration refuses two types whose primary keys can be the same text (rule
``entity.indistinguishable``), so an untyped item's keys are parsed by one declared type at
most. Should several parse them anyway, the item is ambiguous: `item_types` returns all of
them, and the readers refuse to guess (`entity_class` raises ``item.ambiguous-type``).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Any

from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.schema import Table
from lsiorm._model.template import KeyTemplate
from lsiorm._model.wire import from_wire
from lsiorm.errors import ValidationError

__all__ = ["entity_class", "item_types", "named_type", "parses_keys", "untyped_entities"]


def untyped_entities(table: Table) -> list[EntityMeta[EntityModel]]:
    """The entities of a table whose items carry no type attribute, in declaration order."""
    out = []
    for cls in table.entities.values():
        meta = meta_of(typing.cast("type[EntityModel]", cls))
        if not meta.typed:
            out.append(meta)
    return out


def _parses(tpl: KeyTemplate, av: Mapping[str, Any] | None) -> bool:
    if av is None:
        return False
    if tpl.is_direct:
        return list(av) == [tpl.attribute_type]
    return len(av) == 1 and tpl.parses(av.get("S"))


def parses_keys(
    meta: EntityMeta[EntityModel], item: Mapping[str, Any], attributes: Iterable[str]
) -> bool:
    """Whether every one of ``attributes`` the item holds parses under the entity's template.

    An attribute the item holds but the entity derives no template for does not parse. While
    the entity is re-keyed (``rekeying_from``), keys in the old form parse too.
    """
    old = meta.old_templates
    for attr in attributes:
        av = item.get(attr)
        if av is None:
            continue
        tpl = meta.templates.get(attr)
        if tpl is not None and _parses(tpl, av):
            continue
        former = old.get(attr)
        if former is None or not _parses(former, av):
            return False
    return True


def _primary(table: Table) -> tuple[str, ...]:
    return tuple(k for k in table.index_key_attributes(None) if k is not None)


def item_types(table: Table, item: Mapping[str, Any]) -> list[type[EntityModel]]:
    """Every declared type a wire item may be: the one its type attribute names, or else each
    untyped entity whose templates parse its primary key.

    An item whose type attribute names no declared type is of none (an untyped entity's items
    carry no type attribute).
    """
    av = item.get(table.type_attribute)
    if av is not None:
        found = named_type(table, av)
        return [] if found is None else [found]
    primary = _primary(table)
    if not all(item.get(attr) is not None for attr in primary):
        return []
    return [meta.cls for meta in untyped_entities(table) if parses_keys(meta, item, primary)]


def named_type(table: Table, av: Any) -> type[EntityModel] | None:
    """The typed entity a type attribute's value ``av`` names, or None."""
    name = av.get("S") if type(av) is dict or isinstance(av, Mapping) else None
    found: type[EntityModel] | None = table.entities.get(name) if type(name) is str else None
    meta = found.__lsiorm__ if found is not None else None  # set on every bound class
    return found if meta is not None and meta.typed else None


def entity_class(
    table: Table, item: Mapping[str, Any], only: Iterable[type[Any]] | None = None
) -> type[EntityModel] | None:
    """The one declared type of a wire item (among ``only``, when given), or None.

    Raises ValidationError (rule ``item.ambiguous-type``) when the keys of an item without a
    type attribute parse under several entities' templates: lsiorm never guesses.
    """
    av = item.get(table.type_attribute)
    if av is not None:  # the common case, kept short: it runs once per item read
        named = named_type(table, av)
        if named is None or (only is not None and named not in tuple(only)):
            return None
        return named
    found = item_types(table, item)
    if only is not None:
        allowed = tuple(only)
        found = [cls for cls in found if cls in allowed]
    if not found:
        return None
    if len(found) > 1:
        key = {k: from_wire(item[k]) for k in _primary(table)}
        raise ValidationError(
            "item.ambiguous-type",
            f"The item {key!r} of table {table.name!r} has no type attribute and its keys parse "
            f"as {', '.join(c.__name__ for c in found)}; lsiorm does not guess which it is.",
            table=table.name,
        )
    return found[0]
