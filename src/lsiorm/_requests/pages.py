"""A paged read as a value: a Query or Scan read page after page, and what each page says.

DynamoDB answers a Query or a Scan one page at a time: each answer carries the key to start
the next page after (``LastEvaluatedKey``), and none when the read is done. Every paged read
lsiorm makes is described here, and sent by one reader (`lsiorm._ops.pages`), which both
drivers run:

* `PagedRead`: the operation, its parameters (without a position), the items each request may
  evaluate (its ``Limit``), where it starts, and how many pages to read at most;
  `PagedRead.request` gives the exact parameters of the page at a position.
* `ReadPage`: one page as the reader hands it on (its items, what DynamoDB evaluated, the
  parameters it was read with) and `ReadPage.next`, where the next page starts (None: the
  read is done).

A position is the key of the last item evaluated, as DynamoDB gives it; None is the start.
Nothing here sends anything, so the tests compare dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from lsiorm._model.wire import WireItem
from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = ["PagedRead", "Position", "ReadPage", "read_page_of"]

#: Where a paged read starts: the key of the last item evaluated before it; None: the start.
Position = Mapping[str, Any] | None


@dataclass(frozen=True)
class PagedRead:
    """A Query or Scan read page by page; see the module docstring.

    ``limit`` is the ``Limit`` of each request (None: DynamoDB's 1 MB page). ``pages`` stops
    the read after that many pages (None: to the end; a resumable unit reads one at a time).
    ``tables`` are the declared tables the request names (for hooks and live names).
    """

    operation: Literal["Query", "Scan"]
    params: Mapping[str, Any]
    limit: int | None = None
    start: Position = None
    pages: int | None = None
    tables: tuple[Table, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValidationError(
                "read.limit", f"A read's limit is {self.limit}; it must be at least 1."
            )
        if self.pages is not None and self.pages < 1:
            raise ValidationError(
                "read.pages", f"A read of {self.pages} pages reads nothing; give at least 1."
            )

    def request(self, position: Position = None) -> dict[str, Any]:
        """The parameters of the page that starts after ``position`` (None: the first)."""
        params = dict(self.params)
        if self.limit is not None:
            params["Limit"] = self.limit
        if position:
            params["ExclusiveStartKey"] = dict(position)
        return params

    def segment(self, number: int, total: int) -> PagedRead:
        """Segment ``number`` of a Scan read in ``total`` parallel segments (``total`` 1: the
        whole read, as it is)."""
        if total <= 1:
            return self
        if self.operation != "Scan":
            raise ValidationError("read.segment", "Only a Scan is read in parallel segments.")
        return replace(self, params={**self.params, "Segment": number, "TotalSegments": total})

    def from_position(self, position: Position) -> PagedRead:
        """This read, started after ``position`` instead."""
        return replace(self, start=position)


@dataclass(frozen=True)
class ReadPage:
    """One page of a paged read, as DynamoDB answered it.

    ``scanned`` is what DynamoDB evaluated (a filter's dropped items included), ``count`` what
    it returned; ``next`` is where the next page starts, None when this page is the last.
    ``request`` holds the parameters the page was read with (its price depends on them).
    """

    items: list[WireItem]
    scanned: int
    count: int
    next: dict[str, Any] | None
    request: dict[str, Any] = field(default_factory=dict)
    #: The whole answer, for what only some readers look at (ConsumedCapacity, say).
    response: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def last(self) -> bool:
        """True when no page follows this one."""
        return self.next is None


def read_page_of(response: Mapping[str, Any], request: dict[str, Any] | None = None) -> ReadPage:
    """The page a Query or Scan ``response`` holds (sent with ``request``)."""
    items: list[WireItem] = list(response.get("Items") or ())
    last = response.get("LastEvaluatedKey")
    return ReadPage(
        items,
        int(response.get("ScannedCount", len(items))),
        int(response.get("Count", len(items))),
        dict(last) if last else None,
        request if request is not None else {},
        response,
    )
