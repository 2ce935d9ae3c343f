"""Projections: which attributes an index returns, and which a read names or must fetch."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from lsiorm._conditions import Condition, field_conditions
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.schema import Table


def index_kind(index: LocalIndex | GlobalIndex | None) -> Literal["table", "local", "global"]:
    """Return what is read: the base table, a local or a global secondary index."""
    if index is None:
        return "table"
    return "local" if isinstance(index, LocalIndex) else "global"


def index_projection(table: Table, index: LocalIndex | GlobalIndex | None) -> frozenset[str] | None:
    """Return the attributes the index holds (None: every attribute, as the base table)."""
    if index is None:
        return None
    return table.projected_attributes(index)


def type_projected(table: Table, index: LocalIndex | GlobalIndex | None) -> bool:
    """Whether the index holds the type attribute, so a filter can keep types apart."""
    projected = index_projection(table, index)
    return projected is None or table.type_attribute in projected


def key_attributes(table: Table, index: LocalIndex | GlobalIndex | None) -> set[str]:
    """Return the key attributes of the table and of the index (every index item has them)."""
    keys = {*table.index_key_names(None)}
    if index is not None:
        keys |= {*table.index_key_names(index)}
    return keys


def recoverable_fields(meta: EntityMeta[Entity], keys: set[str]) -> set[str]:
    """Fields whose values can be parsed back from these key attributes."""
    return {f for attr, tpl in meta.templates.items() if attr in keys for f in tpl.recoverable}


def uncovered(
    meta: EntityMeta[Entity],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    fields: Iterable[str],
) -> tuple[list[str], list[str]]:
    """Return (fields the index cannot return, their stored attribute names)."""
    projected = index_projection(table, index)
    if projected is None:
        return [], []
    recoverable = recoverable_fields(meta, key_attributes(table, index))
    out = [f for f in fields if meta.attributes[f] not in projected and f not in recoverable]
    return out, [meta.attributes[f] for f in out]


def filter_field_names(condition: Condition | None) -> set[str]:
    """The fields a filter names."""
    return {c.field for c in field_conditions(condition)}


def unprojected_filter_attributes(
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    fields: set[str],
) -> list[str]:
    """Return the stored attributes a filter on ``fields`` reads that the index does not hold.

    A filter runs on what the index returns; it cannot fetch from the table.
    """
    projected = index_projection(table, index)
    if projected is None or not fields:
        return []
    return sorted({m.attributes[f] for m in metas for f in fields if f in m.attributes} - projected)


def named_attributes(
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    selected: Sequence[str] | None,
    with_type: bool,
) -> list[str] | None:
    """Return the attributes a read names in its ProjectionExpression (None: the default).

    Key attributes are always named (cursors and decoding need them); a selected field that
    the index key text already holds is parsed from it instead of being named, so an LSI does
    not fetch it.
    """
    if selected is None:
        return None
    projected = index_projection(table, index)
    keys = sorted(key_attributes(table, index))
    attrs: list[str] = []
    for meta in metas:
        recoverable = recoverable_fields(meta, set(keys))
        for name in selected:
            attr = meta.attributes[name]
            if projected is None or attr in projected:
                attrs.append(attr)
            elif name not in recoverable and isinstance(index, LocalIndex):
                attrs.append(attr)  # DynamoDB fetches it from the table
        attrs.extend(keys)
        if with_type:
            attrs.append(table.type_attribute)
    return list(dict.fromkeys(attrs))
