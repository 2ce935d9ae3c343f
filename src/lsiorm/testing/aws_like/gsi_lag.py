"""Global secondary indexes that lag behind their table, through shadow tables.

On AWS a global secondary index is updated asynchronously: a Query or Scan of it may miss a
write made a moment ago and see the item as it was before (still there after a delete, still
under its old index key after a move), while the table itself and its local secondary indexes
are consistent at once (the developer guide's "Global secondary indexes": reads of a global
index are eventually consistent; a local index is updated with its table).

The engine keeps, for each table with global indexes, a **shadow table**: same key schema,
same global indexes, a name callers never see (``<table>.lsiorm-gsi-lag``, left out of
ListTables, deleted with its table). After every write that goes through the engine, it reads
each changed item (a strongly consistent GetItem, under the item's lock, so one item's states
are read in the order of its writes) and queues that state with the time it was read. Before a
Query or Scan of a global index at time T, every queued state read before T - ``seconds`` is
copied to the shadow table, in order (only the last state of each item matters), and the read
is sent to the shadow table's index: the upstream engine evaluates every expression, filter and
projection itself, over the index as it was ``seconds`` ago. Names in the answer (consumed
capacity, error messages) are given back as the table's.

A table first met after it already held items is copied to its shadow when the engine first
needs it: a consistent Scan of the table, whose pages are described and read as every paged
read of lsiorm is (`lsiorm._requests.pages`); the engine sends them itself, on the thread that
answers the request, since it runs no driver. Writes that do not go through the engine are not
seen until the shadow is rebuilt (after an UpdateTable through the engine).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lsiorm._requests.pages import PagedRead, Position, read_page_of
from lsiorm.testing.aws_like.options import GsiLag
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.tables import TableShape, key_id
from lsiorm.testing.aws_like.upstream import Upstream, UpstreamError

__all__ = ["SHADOW_SUFFIX", "GsiLagging", "is_shadow", "shadow_name"]

SHADOW_SUFFIX: Final = ".lsiorm-gsi-lag"
_MAX_NAME = 255
_BATCH = 25


def shadow_name(table: str) -> str:
    """The name of a table's shadow (a valid table name, at most 255 characters)."""
    name = table + SHADOW_SUFFIX
    if len(name) <= _MAX_NAME:
        return name
    tail = hashlib.md5(table.encode()).hexdigest()[:12]
    return f"{table[: _MAX_NAME - len(SHADOW_SUFFIX) - 13]}.{tail}{SHADOW_SUFFIX}"


def is_shadow(name: object) -> bool:
    """Whether a table name is a shadow's."""
    return isinstance(name, str) and name.endswith(SHADOW_SUFFIX)


@dataclass
class _Shadow:
    name: str
    pending: deque[tuple[float, dict[str, Any], dict[str, Any] | None]] = field(
        default_factory=deque
    )
    lock: threading.Lock = field(default_factory=threading.Lock)


class GsiLagging:
    """The shadow tables of an engine, the states queued for them, and the reads sent there."""

    def __init__(self, option: GsiLag, upstream: Upstream, stats: Tally) -> None:
        self.option = option
        self.upstream = upstream
        self.stats = stats
        self._shadows: dict[str, _Shadow] = {}
        self._lock = threading.Lock()

    # -- shadows ---------------------------------------------------------------------------

    def ensure(self, shape: TableShape) -> _Shadow | None:
        """The shadow of a table with global indexes, created (and filled) when first needed."""
        if not shape.global_indexes:
            return None
        with self._lock:
            shadow = self._shadows.get(shape.name)
            if shadow is None:
                shadow = self._shadows[shape.name] = _Shadow(shadow_name(shape.name))
                self._build(shape, shadow.name)
            return shadow

    def _build(self, shape: TableShape, name: str) -> None:
        description = shape.description
        needed = set(shape.key_names)
        indexes = []
        for raw in description.get("GlobalSecondaryIndexes") or ():
            needed |= {k["AttributeName"] for k in raw["KeySchema"]}
            indexes.append(
                {
                    "IndexName": raw["IndexName"],
                    "KeySchema": raw["KeySchema"],
                    "Projection": raw.get("Projection") or {"ProjectionType": "ALL"},
                }
            )
        params = {
            "TableName": name,
            "KeySchema": description["KeySchema"],
            "AttributeDefinitions": [
                d
                for d in description.get("AttributeDefinitions") or ()
                if d["AttributeName"] in needed
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "GlobalSecondaryIndexes": indexes,
        }
        self._delete(name)  # a shadow left by an engine before this one is stale
        self.upstream.call("CreateTable", params)
        self._copy(shape.name, name)
        self.stats.add("shadow_tables")

    def _copy(self, source: str, target: str) -> None:
        read = PagedRead("Scan", {"TableName": source, "ConsistentRead": True})
        position: Position = None
        while True:
            params = read.request(position)
            page = read_page_of(self.upstream.call("Scan", params), params)
            for i in range(0, len(page.items), _BATCH):
                chunk = page.items[i : i + _BATCH]
                self._write(target, [{"PutRequest": {"Item": it}} for it in chunk])
            if page.last:
                return
            position = page.next

    def _write(self, target: str, writes: list[dict[str, Any]]) -> None:
        requests: Mapping[str, Any] = {target: writes}
        while requests:
            answer = self.upstream.call("BatchWriteItem", {"RequestItems": requests})
            requests = answer.get("UnprocessedItems") or {}

    def _delete(self, name: str) -> None:
        try:
            self.upstream.call("DeleteTable", {"TableName": name})
        except UpstreamError as exc:
            if exc.code != "ResourceNotFoundException":
                raise

    def drop(self, table: str) -> None:
        """Delete a table's shadow (the table was deleted, or its indexes changed: the next
        need builds it again)."""
        with self._lock:
            shadow = self._shadows.pop(table, None)
        if shadow is not None:
            self._delete(shadow.name)

    def close(self) -> None:
        """Delete every shadow table (the engine stops)."""
        for table in list(self._shadows):
            with contextlib.suppress(OSError, UpstreamError):  # the upstream engine is gone
                self.drop(table)

    # -- writes and reads ------------------------------------------------------------------

    def capture(self, shape: TableShape, key: dict[str, Any], image: Any, now: float) -> None:
        """Queue the state of an item after a write (None: it is absent now)."""
        shadow = self.ensure(shape)
        if shadow is not None:
            with self._lock:
                shadow.pending.append((now, key, image))
            self.stats.add("gsi_captured")

    def _apply_due(self, shadow: _Shadow, now: float) -> None:
        cutoff = now - self.option.seconds
        with shadow.lock:
            latest: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
            with self._lock:
                while shadow.pending and shadow.pending[0][0] <= cutoff:
                    _, key, image = shadow.pending.popleft()
                    latest[key_id(shadow.name, key)] = (key, image)
            writes = [
                {"PutRequest": {"Item": image}} if image else {"DeleteRequest": {"Key": key}}
                for key, image in latest.values()
            ]
            for i in range(0, len(writes), _BATCH):
                self._write(shadow.name, writes[i : i + _BATCH])
            self.stats.add("gsi_applied", len(writes))

    def redirected(
        self, params: Mapping[str, Any], shape: TableShape, now: float
    ) -> dict[str, Any] | None:
        """A Query or Scan of a global index, sent to the shadow as it was ``seconds`` ago;
        None for any other read (it goes to the table)."""
        if params.get("IndexName") not in shape.global_indexes:
            return None
        shadow = self.ensure(shape)
        if shadow is None:
            return None
        self._apply_due(shadow, now)
        self.stats.add("gsi_reads")
        return {**params, "TableName": shadow.name}

    @staticmethod
    def renamed(payload: bytes, table: str) -> bytes:
        """An answer of the shadow with the shadow's name given back as the table's."""
        return payload.replace(shadow_name(table).encode(), table.encode())
