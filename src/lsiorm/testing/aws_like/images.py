"""Item images read around a write, under per-item locks that keep them in write order.

The partition limits need the global index entries an item had before a write and has after
it; the GSI lag needs every changed item's state after each write, in the order of the writes.
Both are read from the upstream engine with a strongly consistent GetItem: the item before, just
before the write goes on, and after, as soon as it is answered. A write and its reads hold the
locks of the items it touches for that time, taken in one sorted order (a batch or a
transaction takes several), so two writes of one item are read in the order they were applied.
The locks are a fixed set of stripes chosen by the item's identity: memory stays bounded, and
two items that share a stripe only wait for each other.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from lsiorm.testing.aws_like.touches import Touch
from lsiorm.testing.aws_like.upstream import Upstream

__all__ = ["ItemLocks", "read_image"]


class ItemLocks:
    """Locks per item, striped (``stripes`` locks in all)."""

    def __init__(self, stripes: int = 512) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def _stripe(self, identity: str) -> int:
        digest = hashlib.md5(identity.encode()).digest()
        return int.from_bytes(digest[:4], "big") % len(self._locks)

    @contextmanager
    def holding(self, identities: Sequence[str]) -> Iterator[None]:
        """Hold the locks of these items (in one global order: no two writers deadlock)."""
        with ExitStack() as stack:
            for stripe in sorted({self._stripe(i) for i in identities}):
                stack.enter_context(self._locks[stripe])
            yield


def read_image(upstream: Upstream, touch: Touch) -> dict[str, Any] | None:
    """The item a touch names, as the upstream engine holds it now (None: absent)."""
    answer = upstream.call(
        "GetItem", {"TableName": touch.table.name, "Key": touch.key, "ConsistentRead": True}
    )
    item: dict[str, Any] | None = answer.get("Item")
    return item
