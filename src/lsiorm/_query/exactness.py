"""Exact reads from overloaded indexes: no item missing, no item of another type counted.

Two facts decide whether reading one index answers a query exactly:

* **Sparse slots.** An item is in a secondary index only when every field of the index's key
  templates has a value. A field that may be None leaves some items out, unless the query
  itself requires a value for it (a ``where()`` condition, or a filter conjunct that no
  missing value satisfies).
* **Shared key ranges.** Every declared entity type whose templates can render a key inside
  the range a request reads is in its results. When a type that was not asked for can be
  there, the request carries a filter on the table's type attribute, so that reads, limits
  and ``count()`` see the asked types only.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any

from lsiorm._conditions import (
    And,
    BeginsWith,
    Between,
    Compare,
    Condition,
    Contains,
    FieldCondition,
    In,
)
from lsiorm._model.codec import MAX_CHAR
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.keyspace import shape_of
from lsiorm._model.multikey import is_multi_key
from lsiorm._model.schema import Table
from lsiorm._model.shards import shard_of
from lsiorm._model.template import KeyTemplate
from lsiorm._model.wire import from_wire
from lsiorm._query.keyrange import SortCondition
from lsiorm._query.multikey import foreign_types as multi_key_types


def _may_be_none(meta: EntityMeta[Entity], name: str) -> bool:
    """Whether an entity's field can hold None (a shard is always filled in)."""
    if shard_of(meta, name) is not None:
        return False
    info = meta.cls.model_fields[name]
    annotation = info.annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return type(None) in typing.get_args(annotation)
    return annotation is None or annotation is type(None) or info.default is None


def _excludes_none(condition: Condition | None) -> set[str]:
    """Fields that a filter requires to hold a value (conjuncts no None value satisfies)."""
    if condition is None:
        return set()
    if isinstance(condition, And):
        return {f for c in condition.items for f in _excludes_none(c)}
    if isinstance(condition, FieldCondition):
        op = condition.op
        if isinstance(op, Compare) and op.op != "<>" and op.value is not None:
            return {condition.field}
        if isinstance(op, Between) and op.low is not None and op.high is not None:
            return {condition.field}
        if isinstance(op, (BeginsWith, Contains)):
            return {condition.field}
        if isinstance(op, In) and op.values and all(v is not None for v in op.values):
            return {condition.field}
    return set()


def sparse_fields(
    meta: EntityMeta[Entity],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    constrained: Iterable[str],
    filter_condition: Condition | None,
) -> list[str]:
    """Return the fields of the index's key templates whose None leaves a matching item out.

    The base table holds every item (its key fields cannot be optional), so it has none.
    """
    if index is None:
        return []
    required = set(constrained) | _excludes_none(filter_condition)
    out: list[str] = []
    for attr in table.index_key_names(index):
        tpl = meta.templates.get(attr)
        stored = meta.stored_keys.get(attr)
        for name in tpl.fields if tpl is not None else (stored,) if stored is not None else ():
            if name not in required and name not in out and _may_be_none(meta, name):
                out.append(name)
    return out


def _renders(tpl: KeyTemplate, value: Any) -> bool:
    """Whether the template can render exactly this key value (conservatively True)."""
    return tpl.is_direct or tpl.parses(value)


def _sort_interval(sort: SortCondition) -> tuple[str, str] | None:
    """Return an inclusive string interval holding every key the condition reads (None: any)."""
    raw = [from_wire(v) for v in sort.operands]
    if not all(isinstance(v, str) for v in raw):
        return None
    if sort.op == "begins_with":
        return raw[0], raw[0] + MAX_CHAR
    if sort.op == "BETWEEN":
        return raw[0], raw[1]
    if sort.op == "=":
        return raw[0], raw[0]
    if sort.op in ("<", "<="):
        return "", raw[0]
    return raw[0], MAX_CHAR * 2


def _sort_reaches(tpl: KeyTemplate, sort: SortCondition | None) -> bool:
    """Whether a key rendered by ``tpl`` can satisfy the sort condition (conservatively True)."""
    if sort is None or tpl.is_direct:
        return True
    if sort.op == "=":
        return _renders(tpl, from_wire(sort.operands[0]))
    interval = _sort_interval(sort)
    if interval is None:
        return True
    shape = shape_of(tpl)
    if shape is None:
        return True
    return shape.may_hold(*interval)


def intruders(
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    partition: Any,
    sort: SortCondition | None,
    wanted: Sequence[type[Entity]],
) -> list[str]:
    """Return the type names, not among ``wanted``, whose items can lie in the key range read."""
    if is_multi_key(index):
        return [meta_of(c).type_name for c in multi_key_types(table, index, wanted)]
    pk_attr, sk_attr = table.index_key_attributes(index)
    out: list[str] = []
    for type_name, cls in table.entities.items():
        if cls in wanted:
            continue
        other = meta_of(typing.cast("type[Entity]", cls))
        # While a type is re-keyed, its items may still have keys of the old form too.
        forms = [other] if other.old_form is None else [other, other.old_form]
        if any(_form_in_range(m, pk_attr, sk_attr, partition, sort) for m in forms):
            out.append(type_name)
    return out


def _form_in_range(
    meta: EntityMeta[Entity],
    pk_attr: str,
    sk_attr: str | None,
    partition: Any,
    sort: SortCondition | None,
) -> bool:
    """Whether items with these templates can lie in the partition and sort range read."""
    pk_tpl = meta.templates.get(pk_attr)
    sk_tpl = meta.templates.get(sk_attr) if sk_attr is not None else None
    if pk_tpl is None or (sk_attr is not None and sk_tpl is None):
        return False  # its items are not in this index
    if not _renders(pk_tpl, partition):
        return False
    return sk_tpl is None or _sort_reaches(sk_tpl, sort)


def type_not_projected(
    table: Table, index: LocalIndex | GlobalIndex | None, foreign: Sequence[str]
) -> str:
    """Return why an index that does not project the type attribute cannot serve a query."""
    return (
        f"items of {', '.join(foreign)} can share its key range and it does not project the "
        f"type attribute {table.type_attribute!r}, so a filter cannot drop them (and count() "
        f"would count them); project {table.type_attribute!r} "
        f"(Projection.include({table.type_attribute!r}, ...)) or query another index"
    )


# -- entities whose items carry no type attribute -------------------------------------------

#: Per untyped entity a read keeps, the key prefixes its items are told apart by: pairs of
#: (key attribute, literal prefix) that each of its items begins with and no item of an
#: untyped type that shares the range does. Empty when the absence of the type attribute is
#: test enough.
KeyPrefixes = tuple[tuple[type[Entity], tuple[tuple[str, str], ...]], ...]


def filterable_keys(
    table: Table, index: LocalIndex | GlobalIndex | None, operation: str
) -> tuple[str, ...]:
    """The table's key attributes a FilterExpression may name in this read.

    A Query cannot filter on the key attributes of what it reads; a Scan can filter on any.
    Only a global index leaves the table's own keys free to filter on.
    """
    primary = tuple(k for k in table.index_key_attributes(None) if k is not None)
    if operation == "Scan":
        return primary
    if not isinstance(index, GlobalIndex):
        return ()
    own = {name for name, _ in table.key_schema(index)}
    return tuple(k for k in primary if k not in own)


def _excluded(other: EntityMeta[Entity], attr: str, prefix: str) -> bool:
    """Whether no key the other entity writes to ``attr`` begins with ``prefix``."""
    tpl = other.templates.get(attr)
    if tpl is None or tpl.is_direct:
        return False
    shape = shape_of(tpl)
    return shape is not None and not shape.may_hold(prefix, prefix + MAX_CHAR)


def untyped_separation(
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    operation: str,
    wanted: Sequence[type[Entity]],
    foreign: Sequence[type[Entity]],
) -> KeyPrefixes | str:
    """How a read keeps its untyped wanted types apart from the foreign types in its range.

    Typed foreign items fail a test on the absence of the type attribute; untyped foreign items
    need a key prefix the wanted type's items all begin with and theirs never do, on a key
    attribute the read may filter on. Returns the prefixes per untyped wanted type, or why no
    filter can keep them apart.
    """
    others = [meta_of(c) for c in foreign if not meta_of(c).typed]
    out: list[tuple[type[Entity], tuple[tuple[str, str], ...]]] = []
    keys = filterable_keys(table, index, operation)
    for cls in wanted:
        meta = meta_of(cls)
        if meta.typed:
            continue
        if not others:
            out.append((cls, ()))
            continue
        tests = []
        for attr in keys:
            tpl = meta.templates.get(attr)
            if tpl is not None and not tpl.is_direct and tpl.namespace:
                tests.append((attr, tpl.namespace))
        apart = [o for o in others if any(_excluded(o, a, p) for a, p in tests)]
        if len(apart) < len(others):
            left = ", ".join(o.cls.__name__ for o in others if o not in apart)
            return (
                f"items of {left} can share its key range, and neither they nor {cls.__name__} "
                "items carry a type attribute; no key prefix the read may filter on tells them "
                "apart. Store the type attribute in one of the types, give their templates "
                "distinct literal prefixes, or query another index"
            )
        useful = tuple((a, p) for a, p in tests if any(_excluded(o, a, p) for o in others))
        out.append((cls, useful))
    return tuple(out)
