"""How the query oracles read a drawn query: its order, page size and limit, and a second read
that resumes from a cursor."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from lsiorm import Session
from lsiorm._ops.reads import all as all_items
from lsiorm._ops.reads import page
from lsiorm._query.values import Query


def draw_reading(data: st.DataObject, q: Query) -> tuple[Query, bool, int | None]:
    """``q`` read forward or backward, maybe in small pages, maybe limited; with the direction
    and the limit drawn."""
    forward = data.draw(st.booleans())
    if not forward:
        q = q.descending()
    if data.draw(st.booleans()):
        q = q.page_size(data.draw(st.integers(1, 4)))
    limit = data.draw(st.none() | st.integers(1, 6))
    if limit is not None:
        q = q.limit(limit)
    return q, forward, limit


def resumed(session: Session, q: Query, data: st.DataObject) -> list[Any]:
    """Every item of ``q``, read as a first page of 1 to 3 items and then the rest from its
    cursor (also when the first page stops inside a buffered DynamoDB page)."""
    first = session.run(page(session.ctx, q.limit(data.draw(st.integers(1, 3)))))
    if first.cursor is None:
        return list(first.items)
    rest: list[Any] = session.run(all_items(session.ctx, q.limit(10_000).after(first.cursor)))
    return [*first.items, *rest]
