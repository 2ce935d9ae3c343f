"""What the engine counts (``AwsLikeEngine.stats``): a counter that many threads add to.

The engine answers each connection in a thread of its own and reads streams in another, so a
count is added under a lock (``stats[key] += 1`` from several threads could lose one).
"""

from __future__ import annotations

import threading
from collections import Counter

__all__ = ["Tally"]


class Tally(Counter[str]):
    """A `Counter` whose `add` is safe from any thread; read it as any Counter."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def add(self, key: str, count: int = 1) -> None:
        """Add ``count`` to ``key``."""
        with self._lock:
            self[key] += count
