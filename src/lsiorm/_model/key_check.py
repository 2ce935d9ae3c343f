"""The key check of one stored item: does it carry the key attributes its declaration derives?

An entity's keys are derived from its fields by templates. When a template changes (a wider
number, a renamed namespace, a new encoding) or an entity starts using a new index slot, items
written before keep their old keys. `check_item_keys` compares one stored item with what the
declaration derives today, attribute by attribute: the primary key, every LSI and GSI key
attribute, and the type attribute. It is pure: every write that may meet an item in an older
key form (`lsiorm._ops.rekeying`), the key audit and the backfill (`lsiorm._jobs`) and a
migration's copy (`lsiorm._migration`) call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lsiorm._model.entity import Entity, decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import build_item
from lsiorm._model.schema import Table
from lsiorm._model.wire import AttributeValue, WireItem, from_wire, to_wire

__all__ = [
    "ItemKeyCheck",
    "KeyProblem",
    "ProblemKind",
    "check_item_keys",
    "derived_keys",
    "key_attribute_names",
]

ProblemKind = Literal["stale", "missing", "extra"]
"""How a stored key attribute differs: another value, absent, or present but not derived."""


@dataclass(frozen=True)
class KeyProblem:
    """One key attribute of a stored item that differs from what the declaration derives.

    ``kind`` is ``"stale"`` (stored, but another value), ``"missing"`` (derived, not stored) or
    ``"extra"`` (stored, but the declaration derives none). Values are Python values.
    """

    attribute: str
    kind: ProblemKind
    stored: Any
    expected: Any


@dataclass(frozen=True)
class ItemKeyCheck:
    """The result of checking one stored item against its entity's declaration."""

    entity: type[Entity]
    stored_key: WireItem
    expected: WireItem
    problems: tuple[KeyProblem, ...]
    #: Whether every differing key attribute holds what the entity's ``rekeying_from`` style
    #: derives: an item still in the key form it had before (a 0.2 development version's, say).
    old_form: bool = False

    @property
    def current(self) -> bool:
        """Whether every key attribute is what the declaration derives."""
        return not self.problems

    @property
    def moves(self) -> bool:
        """Whether the primary key itself changes (a rewrite is then a move)."""
        table = meta_of(self.entity).table
        primary = {table.partition_key.name, *([table.sort_key.name] if table.sort_key else [])}
        return any(p.attribute in primary for p in self.problems)


def key_attribute_names(table: Table) -> tuple[str, ...]:
    """Every attribute a declaration derives: all key attributes, then the type attribute."""
    return (*table.key_attributes, table.type_attribute)


def derived_keys(entity: Entity) -> WireItem:
    """The key attributes and type attribute the declaration derives for an entity (wire)."""
    meta = meta_of(entity)
    item = build_item(entity)
    return {name: to_wire(item[name]) for name in key_attribute_names(meta.table) if name in item}


def _same(a: AttributeValue, b: AttributeValue) -> bool:
    return a == b or from_wire(a) == from_wire(b)


def check_item_keys(
    table: Table, item: Mapping[str, AttributeValue], only: Iterable[type[Entity]] | None = None
) -> ItemKeyCheck | None:
    """Check one stored item (wire form); None when it is of no declared type (or not in only).

    Raises `ValidationError` (rule ``item.invalid``) when the item's fields do not fit its type.
    """
    entity = decode_stored(table, item, only)
    if entity is None:
        return None
    expected = derived_keys(entity)
    problems: list[KeyProblem] = []
    for name in key_attribute_names(table):
        stored, derived = item.get(name), expected.get(name)
        if stored is None and derived is None:
            continue
        if stored is None:
            assert derived is not None
            problems.append(KeyProblem(name, "missing", None, from_wire(derived)))
        elif derived is None:
            problems.append(KeyProblem(name, "extra", from_wire(stored), None))
        elif not _same(stored, derived):
            problems.append(KeyProblem(name, "stale", from_wire(stored), from_wire(derived)))
    primary = [table.partition_key.name, *([table.sort_key.name] if table.sort_key else [])]
    stored_key = {name: dict(item[name]) for name in primary if name in item}
    old_form = bool(problems) and _in_old_form(entity, problems)
    return ItemKeyCheck(type(entity), stored_key, expected, tuple(problems), old_form)


def _in_old_form(entity: Entity, problems: Iterable[KeyProblem]) -> bool:
    """Whether the differing key attributes hold what the ``rekeying_from`` style derives."""
    old = meta_of(entity).old_form
    if old is None:
        return False
    values = {name: getattr(entity, name) for name in type(entity).model_fields}
    derived = {**old.key(values), **old.index_keys(values)}
    return all(p.stored is not None and derived.get(p.attribute) == p.stored for p in problems)
