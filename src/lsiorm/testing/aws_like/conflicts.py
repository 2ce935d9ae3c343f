"""Transaction conflicts: items held by a transaction in flight, and what meets them.

AWS's developer guide ("Transaction conflict handling in DynamoDB") lists when a conflict
happens, and this module follows it:

* a PutItem, UpdateItem or DeleteItem of an item that an ongoing TransactWriteItems includes
  is refused with ``TransactionConflictException``;
* a TransactWriteItems that includes an item another ongoing TransactWriteItems or
  TransactGetItems includes, or that a plain write is changing at that moment, is cancelled:
  ``TransactionCanceledException`` whose reason at that item's position is
  ``TransactionConflict`` (``None`` elsewhere);
* a TransactGetItems that includes an item an ongoing TransactWriteItems or a plain write
  (PutItem, UpdateItem, DeleteItem, BatchWriteItem) is changing is cancelled the same way.

Nothing is applied by a refused or cancelled request. A transaction's items are held from the
moment the engine takes it until its answer, and ``TransactionConflicts.hold`` seconds more
for one that was applied (to make overlaps happen in a test; on AWS a transaction holds its
items only while it runs). A retry of a transaction with the same ``ClientRequestToken`` is the
same transaction: it never conflicts with itself. ``rate`` cancels a share of
TransactWriteItems at random, at one random action.

Not modelled: a BatchWriteItem's entries are never refused for a conflict (they only make
transactions that meet them conflict), and reads outside transactions never conflict.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from lsiorm.testing.aws_like.options import TransactionConflicts
from lsiorm.testing.aws_like.protocol import ServiceError, cancelled
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.touches import Touch

__all__ = ["Conflicts", "Ticket"]

_CONFLICT = "Transaction is ongoing for the item"


@dataclass
class _Hold:
    owner: str
    #: "write" (a TransactWriteItems), "get" (a TransactGetItems) or "plain" (a single write).
    kind: str
    until: float | None = None  # None: in flight


@dataclass
class Ticket:
    """The items one request holds, released by `Conflicts.release`."""

    owner: str
    kind: str
    identities: list[str] = field(default_factory=list)


def _meets(kind: str, held: str) -> bool:
    """Whether a request of ``kind`` conflicts with an item held by one of ``held``."""
    if kind == "write":
        return True
    if kind == "get":
        return held in ("write", "plain")
    return held in ("write", "get")  # a plain write meets transactions only


class Conflicts:
    """The items held by requests in flight (and by transactions during their hold)."""

    def __init__(self, option: TransactionConflicts, stats: Tally) -> None:
        self.option = option
        self.stats = stats
        self._held: dict[str, list[_Hold]] = {}
        self._random = random.Random(option.seed)
        self._owners = itertools.count()
        self._lock = threading.Lock()

    def _active(self, identity: str, now: float) -> list[_Hold]:
        holds = [h for h in self._held.get(identity, ()) if h.until is None or h.until > now]
        if holds:
            self._held[identity] = holds
        else:
            self._held.pop(identity, None)
        return holds

    def take(
        self, operation: str, touched: Sequence[Touch], token: object, now: float
    ) -> Ticket | None:
        """Hold a request's items, or raise its conflict; None for a request that holds none."""
        if operation == "TransactWriteItems":
            kind = "write"
        elif operation == "TransactGetItems":
            kind = "get"
        elif operation in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"):
            kind = "plain"
        else:
            return None
        owner = f"token:{token}" if isinstance(token, str) else f"request:{next(self._owners)}"
        with self._lock:
            clashes = [
                touch.position
                for touch in touched
                if operation != "BatchWriteItem"  # a batch's entries are never refused
                and any(
                    h.owner != owner and _meets(kind, h.kind)
                    for h in self._active(touch.identity, now)
                )
            ]
            if not clashes and kind == "write" and touched and self._drawn():
                clashes = [self._random.randrange(len(touched))]
            if clashes:
                self.stats.add("conflicts")
                raise self._refusal(operation, len(touched), clashes)
            ticket = Ticket(owner, kind, [t.identity for t in touched])
            for identity in ticket.identities:
                self._held.setdefault(identity, []).append(_Hold(owner, kind))
            return ticket

    def _drawn(self) -> bool:
        """Whether a transaction is cancelled at random (``rate``)."""
        return bool(self.option.rate) and self._random.random() < self.option.rate

    @staticmethod
    def _refusal(operation: str, count: int, clashes: Sequence[int]) -> ServiceError:
        if operation in ("TransactWriteItems", "TransactGetItems"):
            return cancelled(
                [("TransactionConflict", _CONFLICT) if i in clashes else None for i in range(count)]
            )
        return ServiceError(
            "TransactionConflictException",
            "Transaction is ongoing for the item: the request conflicts with a transaction "
            "in flight.",
        )

    def release(self, ticket: Ticket | None, now: float, *, applied: bool) -> None:
        """Let a request's items go: at once, or after the hold for an applied transaction."""
        if ticket is None:
            return
        keep = applied and ticket.kind == "write" and self.option.hold > 0
        with self._lock:
            for identity in ticket.identities:
                holds = self._held.get(identity, [])
                for hold in holds:
                    if hold.owner == ticket.owner and hold.until is None:
                        hold.until = now + self.option.hold if keep else now
                self._active(identity, now)
