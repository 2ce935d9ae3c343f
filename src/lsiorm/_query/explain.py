"""explain(): a plan rendered as text, with its read-cost rule and a sampled estimate."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
)

from lsiorm._model.capacity import ReadEstimate, estimate_query
from lsiorm._model.entity import (
    Entity,
    wire_item,
)
from lsiorm._model.schema import LocalIndex
from lsiorm._query.plan import QueryPlan

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Explanation:
    """A plan that prints itself: ``print(q.explain())``; ``.plan`` holds the data.

    ``estimate`` is the read cost the capacity model gives for the sample items passed to
    ``explain(sample=...)`` (None without a sample).
    """

    plan: QueryPlan
    estimate: ReadEstimate | None = None

    def __str__(self) -> str:
        return _render(self.plan, self.estimate)


def _estimate(plan: QueryPlan, sample: Iterable[Entity] | None) -> ReadEstimate | None:
    """Return the capacity model's read cost of one page that matches the sample items."""
    if sample is None or plan.count:
        return None
    items = [wire_item(e) for e in sample]
    return estimate_query(
        plan.table,
        plan.index,
        items,
        consistent=plan.consistent,
        attributes=plan.projection or (),
        select="ALL_ATTRIBUTES" if plan.projection is None and plan.fetched else None,
    )


def _cost_rule(plan: QueryPlan) -> str:
    """Describe, without data, how DynamoDB will charge this query's reads."""
    half = "" if plan.consistent else ", halved (eventually consistent)"
    what = "items" if plan.index is None else f"{plan.index.name} entries (+ keys)"
    rule = f"{what} summed per page, rounded up to 4 KB: 1 read unit per 4 KB{half}"
    if plan.fetched:
        rule += "; plus each matched item read whole from the table, rounded up to 4 KB alone"
    return rule


def _show_value(av: Mapping[str, Any]) -> str:
    ((tag, raw),) = av.items()
    if tag == "N":
        return str(raw)
    if tag == "S":
        return repr(raw)
    if tag == "B":
        return f"<{len(raw)} bytes>"
    return repr(raw)


def _index_text(plan: QueryPlan) -> str:
    index = plan.index
    if index is None:
        return f"table {plan.table.name!r}"
    kind = "LSI" if isinstance(index, LocalIndex) else "GSI"
    projection = index.projection
    what: str = projection.type
    if projection.type == "INCLUDE":
        what += f" ({', '.join(projection.attributes)})"
    return f"{index.name} ({kind} of {plan.table.name!r}, projects {what})"


_PLACEHOLDER: Final = re.compile(r"[#:][nv][0-9]+")


def _readable(text: str, plan: QueryPlan) -> str:
    """Return expression text with its placeholders replaced by the names and values."""

    def swap(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in plan.names:
            return plan.names[token]
        if token in plan.values:
            return _show_value(plan.values[token])
        return token

    return _PLACEHOLDER.sub(swap, text)


def _projection_text(plan: QueryPlan) -> str:
    if plan.projection is not None:
        return ", ".join(plan.projection)
    select = plan.requests[0].params.get("Select") if plan.requests else None
    if select is not None:
        return f"every attribute (Select={select})"
    if plan.index is None or plan.index.projection.type == "ALL":
        return "every attribute"
    return f"the attributes {plan.index.name} projects"


def _render(plan: QueryPlan, estimate: ReadEstimate | None = None) -> str:
    names = ", ".join(e.__name__ for e in plan.entities)
    what = "Count" if plan.count else plan.operation
    lines = [f"{what} {names}"]
    indent = " " * 14

    def row(label: str, text: str) -> None:
        lines.append(f"  {label:<12}{text}")

    row("index", _index_text(plan))
    if plan.empty is not None:
        row("result", f"empty without a request: {plan.empty}")
    if plan.key_condition is not None:
        row("key", plan.key_condition)
        lines.append(indent + "= " + _readable(plan.key_condition, plan))
    if plan.filter is not None:
        row("filter", plan.filter)
        lines.append(indent + "= " + _readable(plan.filter, plan))
        lines.append(indent + "(applied after the read: items it drops still cost capacity)")
    for text in plan.fallback_filters:
        row("fallback", f"{text} is filtered, not part of the key condition")
    for text in plan.residual_filters:
        row("open end", f"{text}: the key condition reads the closed range, the filter is exact")
    for text in plan.type_filters:
        row("types", text)
    for text in plan.sparse:
        row("not seen", text)
    if plan.names:
        row("names", ", ".join(f"{k} = {v}" for k, v in plan.names.items()))
    for n, (k, v) in enumerate(plan.values.items()):
        text = f"{k} = {_show_value(v)}"
        if n == 0:
            row("values", text)
        else:
            lines.append(indent + text)
    if not plan.count:
        row("projection", _projection_text(plan))
        if plan.fetched:
            row(
                "fetched",
                f"{', '.join(plan.fetched)} (not projected; read from the table per item)",
            )
        if plan.unavailable:
            how = {
                "hydrate": "read from the table with BatchGetItem",
                "partial": "left missing in partial results",
                "error": "refused",
            }[plan.missing_mode]
            row("missing", f"{', '.join(plan.unavailable)} (not projected; {how})")
        if plan.selected is not None:
            row("fields", ", ".join(plan.selected))
    order = "ascending" if plan.forward else "descending"
    extras = [order] if plan.operation == "Query" else []
    if plan.max_items is not None:
        extras.append(f"limit {plan.max_items}")
    if plan.request_limit is not None:
        extras.append(f"page size {plan.request_limit}")
    extras.append("strongly consistent" if plan.consistent else "eventually consistent")
    row("read", ", ".join(extras))
    if not plan.count and plan.empty is None:
        row("cost", _cost_rule(plan))
        if estimate is not None:
            lines.append(indent + f"sample estimate: {estimate}")
    if len(plan.requests) > 1:
        merge = (
            f", merged by {plan.merge_attribute}"
            if plan.merge_attribute is not None and plan.operation == "Query"
            else ""
        )
        row(
            "requests", f"{len(plan.requests)} ({', '.join(r.label for r in plan.requests)}){merge}"
        )
    for n, note in enumerate(plan.collection):
        if n == 0:
            row("types", note)
        else:
            lines.append(indent + note)
    if plan.operation == "Query":
        lines.append("  candidates")
        width = max(len(c.label) for c in plan.candidates)
        for c in plan.candidates:
            mark = "*" if c.chosen else "-"
            lines.append(f"    {mark} {c.label:<{width}}  {c.reason}")
    return "\n".join(lines)
