"""The one page reader: every paged Query and Scan lsiorm sends, as one operation.

A paged read is described by a value (`lsiorm._requests.pages.PagedRead`); this module sends
it. `read_page` reads the one page at a position (the query planner's merges and the key jobs'
resumable units read page by page, keeping their own positions); `read_pages` reads from the
read's start to its end (or to its page cap), handing each page to the caller's ``each``, and
returns where it stopped. Both are operations (see `_ops/steps.py`), so the sync and async
drivers run the same code, and every page goes through the pipeline's hooks and retries.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._requests.pages import PagedRead, Position, ReadPage, read_page_of

__all__ = ["PageHandler", "read_all", "read_page", "read_pages"]

#: What a caller does with each page: plain code (returns None), or an operation of its own
#: (a generator, which the reader runs before it reads on).
PageHandler = Callable[[ReadPage], Generator[Any, Any, object] | None]


def read_page(ctx: Context, read: PagedRead, position: Position = None) -> Operation[ReadPage]:
    """Read the one page of ``read`` that starts after ``position`` (None: its first)."""
    params = read.request(position)
    response = yield from call(ctx, read.operation, params, read.tables)
    return read_page_of(response, params)


def read_pages(ctx: Context, read: PagedRead, each: PageHandler) -> Operation[Position]:
    """Read ``read`` page by page from its start, each page handed to ``each``; return where
    the read stopped: None at its end, else the position its page cap left it at."""
    position = read.start
    count = 0
    while True:
        page = yield from read_page(ctx, read, position)
        handled = each(page)
        if handled is not None:
            yield from handled
        count += 1
        position = page.next
        if position is None or (read.pages is not None and count >= read.pages):
            return position


def read_all(ctx: Context, read: PagedRead) -> Operation[list[Any]]:
    """Every item of ``read``, read to its end."""
    items: list[Any] = []
    yield from read_pages(ctx, read, lambda page: items.extend(page.items))
    return items
