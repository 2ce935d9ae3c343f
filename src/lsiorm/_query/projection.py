"""Projections: which attributes an index returns, and which a query must fetch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import (
    TYPE_CHECKING,
    Literal,
)

from lsiorm._conditions import Condition, Placeholders, field_conditions
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.schema import Table

if TYPE_CHECKING:
    pass


def _index_kind(index: LocalIndex | GlobalIndex | None) -> Literal["table", "local", "global"]:
    if index is None:
        return "table"
    return "local" if isinstance(index, LocalIndex) else "global"


def _projected(table: Table, index: LocalIndex | GlobalIndex | None) -> frozenset[str] | None:
    if index is None:
        return None
    return table.projected_attributes(index)


def _key_attrs(table: Table, index: LocalIndex | GlobalIndex | None) -> set[str]:
    keys = {*table.index_key_attributes(None)}
    if index is not None:
        keys |= {*table.index_key_attributes(index)}
    return {k for k in keys if k is not None}


def _recoverable(meta: EntityMeta, keys: set[str]) -> set[str]:
    """Fields whose values can be parsed back from these key attributes."""
    return {f for attr, tpl in meta.templates.items() if attr in keys for f in tpl.fields}


def _covered(
    meta: EntityMeta, table: Table, index: LocalIndex | GlobalIndex | None, fields: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Return (fields the index cannot return, their stored attribute names)."""
    projected = _projected(table, index)
    if projected is None:
        return [], []
    recoverable = _recoverable(meta, _key_attrs(table, index))
    out = [f for f in fields if meta.attributes[f] not in projected and f not in recoverable]
    return out, [meta.attributes[f] for f in out]


def _filter_fields(condition: Condition | None) -> set[str]:
    """The fields a filter names."""
    return {c.field for c in field_conditions(condition)}


def _projection_names(attrs: Iterable[str], ph: Placeholders) -> str:
    return ", ".join(ph.name(a) for a in attrs)
