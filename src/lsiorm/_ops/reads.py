"""Running query and scan plans: pages with cursors, fan-out merges, hydration and counts.

Every function here returns an operation generator (see `_ops/steps.py`), so the sync and
async sessions run the same code. `pages` emits one `Page` at a time and holds at
most one DynamoDB page per request in memory; the others build on it.

Several requests (the shards of a sharded GSI, or entity types with different key conditions)
are merged in sort-key order: a row is released only when every unfinished request has a row
buffered, so the merge is exact. A cursor records, per request, the key of the last row
released (or, once its buffer is empty, where the request's next page would start).
"""

from __future__ import annotations

import builtins
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Generic, TypeVar

from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import meta_of
from lsiorm._ops.batch import read_keys
from lsiorm._ops.pages import read_page
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Emit, Gather, Operation
from lsiorm._query.compile import page_limit
from lsiorm._query.cursor import CursorState, decode_cursor, encode_cursor
from lsiorm._query.decode import decode, rows_decoder
from lsiorm._query.plan import PlannedRequest, QueryPlan, ScanProgress
from lsiorm._query.rekeying import new_form_sort_text, row_kept
from lsiorm._query.values import Query, Scan
from lsiorm._requests.batch import KeyIdentity, key_identity
from lsiorm._requests.pages import PagedRead, ReadPage
from lsiorm._requests.reads import projection
from lsiorm.errors import BatchGetIncompleteError

__all__ = ["Page", "all", "count", "first", "page", "pages"]

log = logging.getLogger("lsiorm.query")

E = TypeVar("E", bound=Entity)


@dataclass(frozen=True)
class Page(Generic[E]):
    """One page of results and the cursor that resumes after it (None when nothing is left)."""

    items: list[E]
    cursor: str | None
    #: Items DynamoDB evaluated for this page, including those a filter dropped.
    scanned: int = 0
    #: The capacity this page's requests consumed, per table, when the session's capacity
    #: meter asked for it (see ``docs/capacity.md``); empty otherwise.
    consumed: tuple[ConsumedCapacity, ...] = ()


_Sink = Callable[[Page[Any]], None]


@dataclass(slots=True)
class _Row:
    order: Any  # the sort value merging orders rows by (None when the plan does not merge)
    item: dict[str, Any]


@dataclass
class _Stream:
    """One request's progress: where the next read starts and what is buffered."""

    index: int
    request: PlannedRequest
    position: CursorState = None
    resume: CursorState = None
    buffer: deque[_Row] = field(default_factory=deque)
    pages: int = 0
    scanned: int = 0
    returned: int = 0

    @property
    def live(self) -> bool:
        return bool(self.buffer) or self.position != "done"


class _Descending:
    """Reverses comparisons so one ``min`` serves both directions."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.value == other.value)


def _order_of(plan: QueryPlan, request: PlannedRequest, item: dict[str, Any]) -> Any:
    """The row's sort key value (a tuple for a multi-attribute sort key), as DynamoDB orders it."""
    if not plan.merge_attributes:
        return None
    attr = plan.merge_attribute
    if request.forms and attr is not None and attr in item:
        # An old-form row sorts where its key in the new form would.
        text = new_form_sort_text(request.forms, item, attr)
        if text is not None:
            return text if plan.forward else _Descending(text)
    values: list[Any] = []
    for name in plan.merge_attributes:
        av = item.get(name)
        if av is None:
            return None
        ((tag, raw),) = av.items()
        if tag == "N":
            values.append(Decimal(raw))
        elif tag == "B":
            values.append(bytes(raw))
        else:
            values.append(raw)
    value = values[0] if len(values) == 1 else tuple(values)
    return value if plan.forward else _Descending(value)


def _merges(plan: QueryPlan) -> bool:
    return plan.operation == "Query" and len(plan.requests) > 1 and bool(plan.merge_attributes)


def _plan_of(source: Query[Any] | Scan[Any], *, count: bool = False) -> QueryPlan:
    return source.plan(count=count)


def _fetch(
    ctx: Context, plan: QueryPlan, stream: _Stream, remaining: int | None
) -> Operation[ReadPage]:
    limit = page_limit(plan.request_limit, None if plan.count else remaining, plan.has_filter)
    read = PagedRead(plan.operation, stream.request.params, limit, tables=(plan.table,))
    position = stream.position if isinstance(stream.position, dict) else None
    return (yield from read_page(ctx, read, position))


def _accept(plan: QueryPlan, stream: _Stream, page: ReadPage) -> None:
    forms = stream.request.forms
    merge = _merges(plan)
    buffer = stream.buffer
    for item in page.items:
        if forms and not row_kept(forms, item):
            continue  # a row of the other key form: another request reads it
        buffer.append(_Row(_order_of(plan, stream.request, item) if merge else None, item))
    stream.position = page.next if page.next is not None else "done"
    stream.pages += 1
    stream.scanned += page.scanned
    stream.returned += page.count
    if not stream.buffer:
        stream.resume = stream.position
    if plan.on_progress is not None:
        plan.on_progress(
            ScanProgress(
                stream.index,
                plan.segments,
                stream.pages,
                stream.scanned,
                stream.returned,
                stream.position == "done",
            )
        )


def _fetch_round(
    ctx: Context, plan: QueryPlan, waiting: Sequence[_Stream], remaining: int | None
) -> Operation[None]:
    if len(waiting) == 1:
        page = yield from _fetch(ctx, plan, waiting[0], remaining)
        _accept(plan, waiting[0], page)
        return
    answers = yield Gather(tuple(_fetch(ctx, plan, s, remaining) for s in waiting))
    for stream, page in zip(waiting, answers, strict=True):
        _accept(plan, stream, page)


def _next(streams: Sequence[_Stream], merge: bool) -> _Stream | None:
    """Return the stream whose head row comes next, or None when a read must come first."""
    if merge:
        live = [s for s in streams if s.live]
        if not live or any(not s.buffer for s in live):
            return None
        return min(live, key=lambda s: (_Ranked(s.buffer[0].order), s.index))
    return next((s for s in streams if s.buffer), None)


class _Ranked:
    """Orders rows by sort value; a row without one sorts first."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Ranked) -> bool:
        if self.value is None or other.value is None:
            return self.value is None and other.value is not None
        return bool(self.value < other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ranked) and bool(self.value == other.value)


def _take(
    plan: QueryPlan, streams: Sequence[_Stream], merge: bool, budget: int | None
) -> list[tuple[_Stream, _Row]]:
    """Release up to ``budget`` buffered rows: in sort order across the streams when merging,
    else each stream's rows in turn; each stream's ``resume`` then follows its last row."""
    taken: list[tuple[_Stream, _Row]] = []
    if not merge:
        for stream in streams:
            if budget is not None and len(taken) >= budget:
                break
            buffer = stream.buffer
            room = len(buffer) if budget is None else min(len(buffer), budget - len(taken))
            if not room:
                continue
            rows = [buffer.popleft() for _ in range(room)]
            taken.extend([(stream, row) for row in rows])
            _resume_after(plan, stream, rows[-1])
        return taken
    while budget is None or len(taken) < budget:
        head = _next(streams, merge)
        if head is None:
            break
        row = head.buffer.popleft()
        _resume_after(plan, head, row)
        taken.append((head, row))
    return taken


def _resume_after(plan: QueryPlan, stream: _Stream, row: _Row) -> None:
    """Set where the stream resumes once ``row`` is released: after that row's key, or, once
    its buffer is empty, where the request's next page starts (or "done"), which is exact:
    rows between the last released one and it were dropped by the filter."""
    if stream.buffer:
        stream.resume = {k: row.item[k] for k in plan.key_attributes if k in row.item}
    else:
        stream.resume = stream.position


def _cursor(ctx: Context, plan: QueryPlan, streams: Sequence[_Stream]) -> str | None:
    states = [s.resume for s in streams]
    if builtins.all(state == "done" for state in states):
        return None
    return encode_cursor(plan.fingerprint, states, ctx.cursor_key)


def pages(ctx: Context, source: Query[E] | Scan[E]) -> Operation[None]:
    """Emit the results page by page, each `Page` with the cursor that resumes after it."""
    plan = _plan_of(source)
    return _pages(ctx, plan, None)


def _pages(ctx: Context, plan: QueryPlan, sink: _Sink | None) -> Operation[None]:
    """Read the plan page by page; each page is emitted, or handed to ``sink`` when given."""

    def out(page: Page[Any]) -> Operation[None]:
        if sink is None:
            yield Emit(page)
        else:
            sink(page)

    if plan.empty is not None or not plan.requests:
        yield from out(Page([], None, 0))
        return
    streams = [_Stream(n, r) for n, r in enumerate(plan.requests)]
    if plan.cursor is not None:
        states = decode_cursor(plan.cursor, plan.fingerprint, len(streams), ctx.cursor_key)
        for stream, state in zip(streams, states, strict=True):
            stream.position = stream.resume = state
    merge = _merges(plan)
    remaining = plan.max_items
    results: list[Entity] = []
    scanned = 0
    emitted = False
    last_cursor: str | None = None
    while remaining != 0 and builtins.any(s.live for s in streams):
        waiting = [s for s in streams if not s.buffer and s.position != "done"]
        if waiting and (merge or not builtins.any(s.buffer for s in streams)):
            if results:
                last_cursor = _cursor(ctx, plan, streams)
                yield from out(Page(results, last_cursor, scanned))
                emitted, results, scanned = True, [], 0
            before = sum(s.scanned for s in waiting)
            yield from _fetch_round(ctx, plan, waiting, remaining)
            scanned += sum(s.scanned for s in waiting) - before
            continue
        taken = _take(plan, streams, merge, remaining)
        decoded = yield from _decode_rows(ctx, plan, taken)
        results.extend(decoded)
        if remaining is not None:
            remaining -= len(decoded)
    final = _cursor(ctx, plan, streams)
    # DynamoDB may only find out on the next request that a page was the last; then one more
    # (empty) page carries the final cursor, so the last page's cursor is None when all is read.
    if results or not emitted or final != last_cursor:
        yield from out(Page(results, final, scanned))


def page(ctx: Context, source: Query[E] | Scan[E]) -> Operation[Page[E]]:
    """Return every result (up to the limit) as one page, with the cursor that resumes after it."""
    collected: list[Page[E]] = []
    yield from _pages(ctx, _plan_of(source), collected.append)
    items = [item for p in collected for item in p.items]
    return Page(items, collected[-1].cursor, sum(p.scanned for p in collected))


def all(ctx: Context, source: Query[E] | Scan[E]) -> Operation[list[E]]:
    """Return every result (up to the limit) as a list."""
    items: list[E] = []
    yield from _pages(ctx, _plan_of(source), lambda p: items.extend(p.items))
    return items


def first(ctx: Context, source: Query[E] | Scan[E]) -> Operation[E | None]:
    """Return the first result, or None when there is none."""
    found = yield from all(ctx, source.limit(1))
    return found[0] if found else None


def count(ctx: Context, source: Query[Any] | Scan[Any]) -> Operation[int]:
    """Return how many items match (Select=COUNT: no item is transferred)."""
    plan = _plan_of(source, count=True)
    if plan.empty is not None or not plan.requests:
        return 0
    if builtins.any(r.forms for r in plan.requests) or plan.decrypted_checks:
        # Rows are kept by the form of their keys, or by their decrypted values (a beacon),
        # which Select=COUNT cannot tell: read them.
        every = replace(source, max_items=None)
        found: list[Any] = []
        yield from _pages(ctx, _plan_of(every), lambda p: found.extend(p.items))
        return len(found)
    streams = [_Stream(n, r) for n, r in enumerate(plan.requests)]
    if len(streams) == 1:
        totals = [(yield from _count_one(ctx, plan, streams[0]))]
    else:
        totals = yield Gather(tuple(_count_one(ctx, plan, s) for s in streams))
    return sum(totals)


def _count_one(ctx: Context, plan: QueryPlan, stream: _Stream) -> Operation[int]:
    total = 0
    while stream.position != "done":
        page = yield from _fetch(ctx, plan, stream, None)
        total += page.count
        _accept(plan, stream, page)
    return total


# -- decoding ----------------------------------------------------------------------------------


def _decode_rows(
    ctx: Context, plan: QueryPlan, rows: Sequence[tuple[_Stream, _Row]]
) -> Operation[list[Entity]]:
    if plan.unavailable and plan.missing_mode == "hydrate":
        return (yield from _hydrate(ctx, plan, rows))
    out = []
    # One decoder per request (a merged query's rows come from several), built for its page.
    decoders: dict[int, Callable[[dict[str, Any]], Entity | None]] = {}
    for stream, row in rows:
        decode_row = decoders.get(id(stream))
        if decode_row is None:
            decode_row = decoders[id(stream)] = rows_decoder(plan, stream.request.entities)
        entity = decode_row(row.item)
        if entity is not None and (not plan.decrypted_checks or plan.kept(entity)):
            out.append(entity)
    return out


# -- hydration ---------------------------------------------------------------------------------


def _hydrate(
    ctx: Context, plan: QueryPlan, rows: Sequence[tuple[_Stream, _Row]]
) -> Operation[list[Entity]]:
    """Read the base items of index rows the way ``batch_get`` does, keeping the index order.

    Each distinct key is read once; every row then takes the item of its own key, so the
    result follows the rows, and a row whose item is gone (deleted since the index was read)
    is left out.
    """
    table = plan.table
    primary = [k for k in table.index_key_attributes(None) if k is not None]
    positions: dict[KeyIdentity, int] = {}
    keys: list[dict[str, Any]] = []
    at: list[int] = []
    for _, row in rows:
        key = {k: row.item[k] for k in primary}
        position = positions.setdefault(key_identity(table.name, key), len(keys))
        if position == len(keys):
            keys.append(key)
        at.append(position)
    reads = yield from read_keys(ctx, table, keys, extra=_projection(plan))
    full = plan.for_base_items()
    out: list[Entity] = []
    for (stream, _), position in zip(rows, at, strict=True):
        base = reads.items.get(position)
        if base is None:
            continue
        entity = decode(full, base, stream.request.entities)
        if entity is not None and (not plan.decrypted_checks or plan.kept(entity)):
            out.append(entity)
    if reads.left:
        raise BatchGetIncompleteError(
            f"Reading the base items of the rows of index {plan.index_name!r} in table "
            f"{table.name!r} gave up: {len(reads.left)} of {len(keys)} keys were not read "
            f"(cause: {reads.cause}).",
            unprocessed=[keys[p] for p in reads.left],
            found=out,
        ) from reads.error
    return out


def _projection(plan: QueryPlan) -> dict[str, Any] | None:
    """The ProjectionExpression of the base reads when only some fields are selected."""
    if plan.selected is None:
        return None
    table = plan.table
    attrs = [k for k in table.index_key_attributes(None) if k is not None]
    attrs.append(table.type_attribute)
    for cls in plan.entities:
        meta = meta_of(cls)
        attrs.extend(meta.attributes[n] for n in plan.selected)
    return projection(attrs)
