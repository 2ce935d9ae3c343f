"""explain(): a plan rendered as text, with its read-cost rule and a sampled estimate."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from lsiorm._model.capacity import (
    ConsumedCapacity,
    ReadEstimate,
    estimate_batch_get,
    estimate_request,
    needs_fetch,
)
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.key_layout import layout_of_template, template_layout
from lsiorm._query.plan import QueryPlan


@dataclass(frozen=True)
class Explanation:
    """A plan that prints itself: ``print(q.explain())``; ``.plan`` holds the data.

    ``estimate`` is the read cost the capacity model gives for the sample items passed to
    ``explain(sample=...)`` (None without a sample).
    """

    plan: QueryPlan
    estimate: ReadEstimate | None = None
    #: The ConsumedCapacity DynamoDB reported for the same request, when it was measured.
    measured: ReadEstimate | None = None

    def __str__(self) -> str:
        return _render(self.plan, self.estimate, self.measured)

    def with_measured(
        self, measured: ReadEstimate | ConsumedCapacity | Sequence[ConsumedCapacity] | None
    ) -> Explanation:
        """Return this explanation with a measured read cost to show beside the estimate.

        ``measured`` is what DynamoDB reported: a ``Page.consumed`` (its entries for the
        query's table are summed), one ConsumedCapacity, or a ReadEstimate.
        """
        if measured is None or isinstance(measured, ReadEstimate):
            return Explanation(self.plan, self.estimate, measured)
        entries = [measured] if isinstance(measured, ConsumedCapacity) else list(measured)
        total = ReadEstimate(self.plan.table.name, 0.0)
        for entry in entries:
            if entry.table == total.table:
                total = total + ReadEstimate(entry.table, entry.table_units, dict(entry.per_index))
        return Explanation(self.plan, self.estimate, total)


def sample_estimate(plan: QueryPlan, sample: Iterable[Entity] | None) -> ReadEstimate | None:
    """Return the capacity model's read cost of one page that matches the sample items."""
    if sample is None or plan.empty is not None or not plan.requests:
        return None
    items = [wire_item(e) for e in sample]
    estimate = estimate_request(plan.table, plan.operation, plan.requests[0].first_params(), items)
    if plan.count or not _hydrates(plan):
        return estimate
    # hydrate(): the items are read again, whole, with an eventually consistent BatchGetItem.
    return estimate + estimate_batch_get(plan.table, items)


def _hydrates(plan: QueryPlan) -> bool:
    return bool(plan.unavailable) and plan.missing_mode == "hydrate"


def _fetches(plan: QueryPlan, rule: str) -> bool:
    if plan.operation != "Query" or not plan.requests:
        return False
    params = plan.requests[0].params
    return needs_fetch(
        plan.table,
        plan.index,
        plan.projection or (),
        select=params.get("Select"),
        rule="engine" if rule == "engine" else "documented",
    )


def _cost_rule(plan: QueryPlan) -> str:
    """Describe, without data, how DynamoDB will charge this query's reads."""
    half = "" if plan.consistent else ", halved (eventually consistent)"
    if plan.operation == "Scan" and isinstance(plan.index, LocalIndex):
        what = f"whole items in {plan.index.name}, charged to the index,"
    else:
        what = "items" if plan.index is None else f"{plan.index.name} entries (+ keys)"
    rule = f"{what} summed per page, rounded up to 4 KB: 1 read unit per 4 KB{half}"
    if _hydrates(plan) and not plan.count:
        rule += (
            "; plus each item read again with BatchGetItem (hydrate), rounded up to 4 KB alone, "
            "halved"
        )
    if _fetches(plan, "engine"):
        rule += "; plus each matched item read whole from the table, rounded up to 4 KB alone"
        if not _fetches(plan, "documented"):
            rule += (
                " (DynamoDB Local fetches for any projection on this index; "
                "AWS documents no fetch when every attribute is projected)"
            )
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
    if isinstance(index, GlobalIndex) and index.multi_attribute:
        keys = " + ".join(a.name for a in index.partition_attributes)
        if index.sort_attributes:
            keys += ", sorted by " + " + ".join(a.name for a in index.sort_attributes)
        kind += f" with a multi-attribute key: {keys};"
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


_INDENT: Final = " " * 14


class _Lines:
    """The rows of an explanation: a label column, then text; continuations are indented."""

    def __init__(self, head: str) -> None:
        self.lines = [head]

    def row(self, label: str, text: str) -> None:
        self.lines.append(f"  {label:<12}{text}")

    def more(self, text: str) -> None:
        self.lines.append(_INDENT + text)

    def rows(self, label: str, texts: Iterable[str]) -> None:
        """One row for the first text, continuation lines for the others."""
        for n, text in enumerate(texts):
            if n == 0:
                self.row(label, text)
            else:
                self.more(text)


def _render(
    plan: QueryPlan, estimate: ReadEstimate | None = None, measured: ReadEstimate | None = None
) -> str:
    names = ", ".join(e.__name__ for e in plan.entities)
    out = _Lines(f"{'Count' if plan.count else plan.operation} {names}")
    out.row("index", _index_text(plan))
    if plan.empty is not None:
        out.row("result", f"empty without a request: {plan.empty}")
    _expressions(out, plan)
    if not plan.count:
        _returned(out, plan)
    out.row("read", _read_text(plan))
    if plan.empty is None:
        out.row("cost", _cost_rule(plan))
        if estimate is not None:
            out.more(f"sample estimate: {estimate}")
        if measured is not None:
            out.more(f"measured: {measured}")
    if len(plan.requests) > 1:
        merge = (
            f", merged by {plan.merge_attribute}"
            if plan.merge_attribute is not None and plan.operation == "Query"
            else ""
        )
        labels = ", ".join(r.label for r in plan.requests)
        out.row("requests", f"{len(plan.requests)} ({labels}){merge}")
    out.rows("types", plan.collection)
    if plan.operation == "Query":
        out.rows("layout", _layout_lines(plan))
        _candidates(out, plan)
    return "\n".join(out.lines)


def _expressions(out: _Lines, plan: QueryPlan) -> None:
    """The key condition and filter, readable, with the notes on what the filter holds."""
    if plan.key_condition is not None:
        out.row("key", plan.key_condition)
        out.more("= " + _readable(plan.key_condition, plan))
    out.rows("key use", plan.key_use)
    if plan.filter is not None:
        out.row("filter", plan.filter)
        out.more("= " + _readable(plan.filter, plan))
        out.more("(applied after the read: items it drops still cost capacity)")
    for text in plan.fallback_filters:
        out.row("fallback", f"{text} is filtered, not part of the key condition")
    for text in plan.pending_slots:
        out.row("pending", text)
    for text in plan.residual_filters:
        out.row(
            "open end", f"{text}: the key condition reads the closed range, the filter is exact"
        )
    for text in plan.plain_checks:
        out.row(
            "plain", f"{text}: a plain key text may hold its separator, so the filter checks it"
        )
    for text in plan.closed_ends:
        out.row("open end", f"{text} (no value the key can hold lies in between)")
    for text in plan.type_filters:
        out.row("types", text)
    for text in plan.sparse:
        out.row("not seen", text)
    if plan.names:
        out.row("names", ", ".join(f"{k} = {v}" for k, v in plan.names.items()))
    out.rows("values", (f"{k} = {_show_value(v)}" for k, v in plan.values.items()))


def _returned(out: _Lines, plan: QueryPlan) -> None:
    """What each item carries: the projection, fetched and missing fields, selected fields."""
    out.row("projection", _projection_text(plan))
    if plan.fetched:
        out.row(
            "fetched", f"{', '.join(plan.fetched)} (not projected; read from the table per item)"
        )
    if plan.unavailable:
        how = {
            "hydrate": "read from the table with BatchGetItem",
            "partial": "left missing in partial results",
            "error": "refused",
        }[plan.missing_mode]
        out.row("missing", f"{', '.join(plan.unavailable)} (not projected; {how})")
    if plan.selected is not None:
        out.row("fields", ", ".join(plan.selected))


def _read_text(plan: QueryPlan) -> str:
    order = "ascending" if plan.forward else "descending"
    extras = [order] if plan.operation == "Query" else []
    if plan.max_items is not None:
        extras.append(f"limit {plan.max_items}")
    if plan.request_limit is not None:
        extras.append(f"page size {plan.request_limit}")
    extras.append("strongly consistent" if plan.consistent else "eventually consistent")
    return ", ".join(extras)


def _layout_lines(plan: QueryPlan) -> list[str]:
    """How the chosen index's key templates are stored, with an example key, and how and why
    each of their fields is written."""
    lines: list[str] = []
    if isinstance(plan.index, GlobalIndex) and plan.index.multi_attribute:
        return lines  # natively typed copies of fields: the key use lines say how each is read
    for attr in plan.table.index_key_attributes(plan.index):
        for cls in plan.entities:
            tpl = meta_of(cls).templates.get(attr) if attr is not None else None
            if tpl is None:
                continue
            head = f"{cls.__name__} {attr} {tpl.source!r}"
            lines.extend(f"{head} {line}" for line in layout_of_template(cls, tpl).lines())
            for field in template_layout(tpl):
                style = "" if field.style in ("printable", "native") else f" ({field.style})"
                lines.append(
                    f"{cls.__name__}.{field.field} in {attr}: {field.form}{style}, {field.why}"
                )
    return lines


def _candidates(out: _Lines, plan: QueryPlan) -> None:
    out.lines.append("  candidates")
    width = max(len(c.label) for c in plan.candidates)
    for c in plan.candidates:
        mark = "*" if c.chosen else "-"
        out.lines.append(f"    {mark} {c.label:<{width}}  {c.reason}")
