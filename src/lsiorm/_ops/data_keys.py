"""The data-key cache of one session: keys that encrypt, bounded by age and uses; unwrapped
keys that decrypt, bounded by age and count.

Pure state behind a lock (a batch's chunks and a job's units seal and open from several
threads); fetching a key from KMS is `lsiorm._ops.protection`'s, which stores what it got here.
A plaintext data key is never shown: the entries' reprs name the KMS key and sizes only.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from lsiorm._model.sealing import DataKey

__all__ = ["DataKeyCache"]


@dataclass
class _Encrypting:
    key: DataKey
    since: float
    uses: int = 0


class DataKeyCache:
    """A session's data keys (see the module); ``clock`` is monotonic seconds."""

    def __init__(
        self,
        max_age: float,
        max_uses: int,
        max_keys: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age = max_age
        self.max_uses = max_uses
        self.max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._encrypting: dict[str, _Encrypting] = {}
        self._decrypting: OrderedDict[tuple[bytes, str], tuple[bytes, float]] = OrderedDict()
        #: How many data keys were generated and unwrapped (KMS calls), for tests and reports.
        self.generated = 0
        self.unwrapped = 0

    def take(self, table: str) -> DataKey | None:
        """A key to encrypt one value of ``table`` with, counting the use; None when there is
        none, or it is too old or used up (then a new one is generated)."""
        with self._lock:
            entry = self._encrypting.get(table)
            if entry is None:
                return None
            if self._clock() - entry.since >= self.max_age or entry.uses >= self.max_uses:
                del self._encrypting[table]
                return None
            entry.uses += 1
            return entry.key

    def put(self, table: str, key: DataKey) -> None:
        """Keep a freshly generated key for ``table`` (its first use counted)."""
        with self._lock:
            self.generated += 1
            self._encrypting[table] = _Encrypting(key, self._clock(), 1)
            self._remember(key.wrapped, table, key.plaintext)

    def current(self, table: str) -> DataKey | None:
        """The key ``take`` would give, without counting a use (for size estimates)."""
        with self._lock:
            entry = self._encrypting.get(table)
            return entry.key if entry is not None else None

    def unwrapped_key(self, wrapped: bytes, table: str) -> bytes | None:
        """The plaintext of a wrapped data key seen before, while it is young enough."""
        with self._lock:
            found = self._decrypting.get((wrapped, table))
            if found is None:
                return None
            if self._clock() - found[1] >= self.max_age:
                del self._decrypting[(wrapped, table)]
                return None
            self._decrypting.move_to_end((wrapped, table))
            return found[0]

    def keep_unwrapped(self, wrapped: bytes, table: str, plaintext: bytes) -> None:
        """Keep an unwrapped data key (the oldest goes past ``max_keys``)."""
        with self._lock:
            self.unwrapped += 1
            self._remember(wrapped, table, plaintext)

    def _remember(self, wrapped: bytes, table: str, plaintext: bytes) -> None:
        self._decrypting[(wrapped, table)] = (plaintext, self._clock())
        self._decrypting.move_to_end((wrapped, table))
        while len(self._decrypting) > self.max_keys:
            self._decrypting.popitem(last=False)

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"DataKeyCache({len(self._encrypting)} encrypting, "
                f"{len(self._decrypting)} unwrapped)"
            )
