"""The compiler: a request the planner chose becomes the exact Query or Scan parameters.

A planner decides; this module only writes. It takes the index, the key range, the filter, the
projection and the read options of one request and returns its parameters, with the
expression texts and placeholders that ``explain()`` shows. Placeholders are allocated in one
order (key condition, filter, projection), so the same choice always compiles to the same
dictionary; the planner sends requests that compile alike once.

The ``Limit`` of a page is decided here too, once, for the plan's first page and for every page
the reads send (`page_limit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lsiorm._conditions import Condition, Placeholders
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.schema import Table
from lsiorm._model.wire import to_wire
from lsiorm._query.exactness import KeyPrefixes
from lsiorm._query.keyrange import SortCondition
from lsiorm._query.multikey import MultiKeyCondition
from lsiorm._query.plan import ReadOptions
from lsiorm._requests.items import compile_entity_condition

__all__ = [
    "CompiledRequest",
    "RequestChoice",
    "compile_request",
    "filter_text",
    "first_page_limit",
    "multi_key_text",
    "page_limit",
    "scan_segments",
    "sort_text",
]


@dataclass(frozen=True)
class RequestChoice:
    """One request as a planner chose it, for `compile_request`."""

    #: The entity whose stored attribute names the filter is written in.
    meta: EntityMeta[Entity]
    filter: Condition | None = None
    #: The types a filter on the type attribute keeps (None: no type filter).
    types: tuple[type[Entity], ...] | None = None
    #: Attributes named in ProjectionExpression (None: what the index returns by default).
    projection: tuple[str, ...] | None = None
    #: Ask for every attribute (Select=ALL_ATTRIBUTES): an LSI fetches what it does not hold.
    fetch: bool = False
    #: The partition key value of a Query (rendered key text or a direct value), or the whole
    #: key condition of a multi-attribute index.
    partition: Any = None
    #: The sort key part of a Query's key condition (None: the whole partition).
    sort: SortCondition | None = None
    #: For the types a type filter keeps whose items carry no type attribute, the key prefixes that
    #: tell their items apart (see `untyped_separation`).
    prefixes: KeyPrefixes = ()


@dataclass(frozen=True)
class CompiledRequest:
    """A compiled request: its parameters and the texts ``explain()`` shows."""

    params: dict[str, Any]
    key_condition: str | None
    filter: str | None
    names: dict[str, str]
    values: dict[str, Any]
    #: The attributes named in ProjectionExpression (None: none is sent).
    projection: tuple[str, ...] | None


def compile_request(
    operation: Literal["Query", "Scan"],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    choice: RequestChoice,
    options: ReadOptions,
) -> CompiledRequest:
    """Return the parameters of one Query or Scan request.

    A Scan's segments are copies of its one request (see `scan_segments`).
    """
    ph = Placeholders()
    key = _key_condition(table, index, choice, ph) if operation == "Query" else None
    text = filter_text(
        operation, table, choice.meta, choice.filter, choice.types, ph, choice.prefixes
    )
    return _compiled(table, index, key, text, choice, options, ph)


def _key_condition(
    table: Table, index: LocalIndex | GlobalIndex | None, choice: RequestChoice, ph: Placeholders
) -> str:
    if isinstance(choice.partition, MultiKeyCondition):
        return multi_key_text(choice.partition, ph)
    pk_attr, sk_attr = table.index_key_attributes(index)
    key = f"{ph.name(pk_attr)} = {ph.value(to_wire(choice.partition))}"
    if choice.sort is not None:
        assert sk_attr is not None
        key += " AND " + sort_text(choice.sort, ph.name(sk_attr), ph)
    return key


def _compiled(
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    key: str | None,
    filter_expr: str | None,
    choice: RequestChoice,
    options: ReadOptions,
    ph: Placeholders,
) -> CompiledRequest:
    params: dict[str, Any] = {"TableName": table.name}
    if index is not None:
        params["IndexName"] = index.name
    if key is not None:
        params["KeyConditionExpression"] = key
    if filter_expr is not None:
        params["FilterExpression"] = filter_expr
    projection = None
    if options.count:
        params["Select"] = "COUNT"
    elif choice.projection is not None:
        projection = choice.projection
        params["ProjectionExpression"] = ", ".join(ph.name(a) for a in projection)
    elif choice.fetch:
        params["Select"] = "ALL_ATTRIBUTES"
    if not options.forward:
        params["ScanIndexForward"] = False
    if options.consistent:
        params["ConsistentRead"] = True
    ph.into(params)
    return CompiledRequest(params, key, filter_expr, dict(ph.names), dict(ph.values), projection)


def multi_key_text(condition: MultiKeyCondition, ph: Placeholders) -> str:
    """Return the KeyConditionExpression of a multi-attribute index, in key order."""
    parts = [f"{ph.name(attr)} = {ph.value(value)}" for attr, value in condition.equal]
    if condition.last is not None:
        attr, sort = condition.last
        parts.append(sort_text(sort, ph.name(attr), ph))
    return " AND ".join(parts)


def sort_text(sort: SortCondition, name: str, ph: Placeholders) -> str:
    """Return the sort key part of a KeyConditionExpression."""
    vals = [ph.value(v) for v in sort.operands]
    if sort.op == "BETWEEN":
        return f"{name} BETWEEN {vals[0]} AND {vals[1]}"
    if sort.op == "begins_with":
        return f"begins_with({name}, {vals[0]})"
    return f"{name} {sort.op} {vals[0]}"


def _type_filter(
    table: Table, wanted: Sequence[type[Entity]], ph: Placeholders, prefixes: KeyPrefixes
) -> str:
    """Return the FilterExpression part that keeps the wanted types only.

    Items of a type that stores no type attribute are kept by its absence, and by the key
    prefixes that tell them from other such types' items.
    """
    name = ph.name(table.type_attribute)
    types = [meta_of(cls).type_name for cls in wanted if meta_of(cls).typed]
    parts = []
    if len(types) == 1:
        parts.append(f"{name} = {ph.value(to_wire(types[0]))}")
    elif types:
        parts.append(f"{name} IN ({', '.join(ph.value(to_wire(t)) for t in types)})")
    tests = dict(prefixes)
    untyped = [cls for cls in wanted if not meta_of(cls).typed]
    for cls in untyped:
        own = [f"attribute_not_exists({name})"]
        own += [
            f"begins_with({ph.name(attr)}, {ph.value(to_wire(prefix))})"
            for attr, prefix in tests.get(cls, ())
        ]
        parts.append(" AND ".join(own))
        if len(own) == 1:
            break  # absence alone keeps every untyped wanted type
    if len(parts) == 1:
        return parts[0]
    return "(" + " OR ".join(f"({p})" if " AND " in p else p for p in parts) + ")"


def filter_text(
    operation: Literal["Query", "Scan"],
    table: Table,
    meta: EntityMeta[Entity],
    condition: Condition | None,
    types: Sequence[type[Entity]] | None,
    ph: Placeholders,
    prefixes: KeyPrefixes = (),
) -> str | None:
    """Return the FilterExpression: the condition and the filter on the type attribute.

    A Query writes the condition first, a Scan the type filter (placeholders follow the text).
    """
    type_first = operation == "Scan"
    type_text = None
    if types is not None and type_first:
        type_text = _type_filter(table, types, ph, prefixes)
    text = None if condition is None else compile_entity_condition(meta, condition, ph)
    if types is not None and not type_first:
        type_text = _type_filter(table, types, ph, prefixes)
    if text is None or type_text is None:
        return text if type_text is None else type_text
    return f"{type_text} AND ({text})" if type_first else f"({text}) AND {type_text}"


def scan_segments(params: dict[str, Any], total: int) -> list[dict[str, Any]]:
    """Return one Scan request per segment (the same request when there is one segment)."""
    if total == 1:
        return [dict(params)]
    return [{**params, "Segment": n, "TotalSegments": total} for n in range(total)]


def page_limit(page_size: int | None, remaining: int | None, filtered: bool) -> int | None:
    """Return the ``Limit`` of a page: the page size, lowered to the items still wanted.

    A filter may drop items after ``Limit`` counted them, so a filtered read asks for the page
    size only: lowering it would end pages early and read the remaining items in more requests.
    """
    if remaining is None or filtered:
        return page_size
    return min(page_size or remaining, remaining)


def first_page_limit(options: ReadOptions, filtered: bool) -> int | None:
    """Return the ``Limit`` of a plan's first page (a count shows none)."""
    return None if options.count else page_limit(options.request_limit, options.max_items, filtered)
