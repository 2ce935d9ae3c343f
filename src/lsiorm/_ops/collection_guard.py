"""The item-collection watcher: a hook that asks writes for collection sizes and warns early.

On a table with local secondary indexes, DynamoDB refuses to grow an item collection (every
item with one partition key value, in the table and all its LSIs) past 10 GB. The watcher
requests ``ReturnItemCollectionMetrics=SIZE`` on writes to such tables, remembers the latest
estimate of each collection, and warns on the ``lsiorm.collections`` logger (and to callbacks)
when an estimate's upper bound reaches the warning threshold.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from lsiorm._model.wire import AttributeValue, from_wire, to_wire
from lsiorm._ops.service_errors import collection_key_of
from lsiorm.errors import ItemCollectionSizeLimitError, ValidationError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table
    from lsiorm._ops.hooks import HookRequest

__all__ = [
    "COLLECTION_LIMIT_GB",
    "DEFAULT_WARNING_GB",
    "WRITE_OPERATIONS",
    "CollectionEstimate",
    "CollectionWarning",
    "CollectionWatcher",
    "Hookable",
]

log = logging.getLogger("lsiorm.collections")

#: DynamoDB's size limit of one item collection on a table with LSIs.
COLLECTION_LIMIT_GB: Final = 10.0
#: The warning threshold of a collection whose table is not declared to the request.
DEFAULT_WARNING_GB: Final = 8.0
#: The API operations that accept ``ReturnItemCollectionMetrics``.
WRITE_OPERATIONS: Final = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)
_TRANSACT_ACTIONS: Final = ("Put", "Update", "Delete", "ConditionCheck")


@dataclass(frozen=True)
class CollectionEstimate:
    """DynamoDB's latest size estimate of one item collection.

    ``key`` is the partition key value as Python (str, int or Decimal, bytes) and
    ``attribute`` its attribute name; ``seen_at`` is the watcher's clock reading.
    """

    table: str
    attribute: str
    key: Any
    low_gb: float
    high_gb: float
    seen_at: float

    @property
    def collection_key(self) -> dict[str, AttributeValue]:
        """The collection key in DynamoDB's ``ItemCollectionKey`` form."""
        return {self.attribute: to_wire(self.key)}


@dataclass(frozen=True)
class CollectionWarning:
    """A collection whose estimate reached the threshold; what callbacks receive.

    ``band`` is the whole number of GB of the estimate's upper bound: a warning repeats
    before the interval has passed only when the collection reaches a higher band.
    """

    estimate: CollectionEstimate
    threshold_gb: float
    band: int


class Hookable(Protocol):
    """Anything a watcher can install itself on: a session, or whatever takes hooks."""

    def add_hook(self, hook: object) -> None: ...


class CollectionWatcher:
    """A middleware hook that watches the item collections of tables with LSIs.

    ``threshold_gb`` overrides every table's ``collection_warning_gb``. Warnings for one
    collection repeat at most once per ``interval_seconds``, unless it grows into a higher
    whole-GB band. Each callback gets a [`CollectionWarning`][lsiorm.CollectionWarning]; one
    that raises is logged and the others still run. The watcher never changes a request's
    result and never raises. It remembers the ``max_collections`` most recently reported
    collections, so a long-running process writing to many partitions keeps bounded memory.
    """

    def __init__(
        self,
        threshold_gb: float | None = None,
        interval_seconds: float = 3600.0,
        callbacks: Sequence[Callable[[CollectionWarning], object]] = (),
        clock: Callable[[], float] = time.monotonic,
        max_collections: int = 100_000,
    ) -> None:
        if threshold_gb is not None and not 0 < threshold_gb <= COLLECTION_LIMIT_GB:
            raise ValidationError(
                "collections.threshold",
                f"The collection warning threshold is {threshold_gb} GB; it must be above 0 "
                f"and at most DynamoDB's {COLLECTION_LIMIT_GB:g} GB item collection limit.",
            )
        if interval_seconds < 0:
            raise ValidationError(
                "collections.interval",
                f"The warning interval is {interval_seconds} seconds; it cannot be negative.",
            )
        if max_collections < 1:
            raise ValidationError(
                "collections.max-collections",
                f"max_collections is {max_collections}; the watcher must remember at least one.",
            )
        self.threshold_gb = threshold_gb
        self.interval_seconds = interval_seconds
        self.callbacks = tuple(callbacks)
        self.clock = clock
        self.max_collections = max_collections
        self._lock = threading.Lock()
        # Both in least recently reported order, trimmed to max_collections.
        self._estimates: OrderedDict[tuple[str, Any], CollectionEstimate] = OrderedDict()
        self._warned: OrderedDict[tuple[str, Any], tuple[float, int]] = OrderedDict()

    def __repr__(self) -> str:
        return (
            f"CollectionWatcher(threshold_gb={self.threshold_gb!r}, "
            f"interval_seconds={self.interval_seconds!r}, callbacks={len(self.callbacks)})"
        )

    def install(self, session: Hookable) -> CollectionWatcher:
        """Attach the watcher to a Session or AsyncSession (anything with ``add_hook``)."""
        session.add_hook(self)
        return self

    # -- what the application reads ---------------------------------------------------------

    @property
    def estimates(self) -> dict[tuple[str, Any], CollectionEstimate]:
        """The latest estimate of every collection seen, by (table name, partition key value)."""
        with self._lock:
            return dict(self._estimates)

    def estimate(self, table: Table | str, key: Any) -> CollectionEstimate | None:
        """Return the latest estimate of one collection, or None if no write reported it.

        ``key`` is the partition key value, as Python or as an ``ItemCollectionKey`` mapping.
        """
        name = table if isinstance(table, str) else table.name
        with self._lock:
            return self._estimates.get((name, _key_value(key)))

    # -- the hook ---------------------------------------------------------------------------

    def before(self, request: HookRequest) -> None:
        """Ask for item collection metrics when the write touches a table with LSIs."""
        if request.operation not in WRITE_OPERATIONS:
            return
        if "ReturnItemCollectionMetrics" in request.params:
            return  # the caller chose; "NONE" turns the watch off for this request
        for name in _table_names(request.operation, request.params):
            table = request.table(name)
            if table is not None and table.has_lsi:
                request.params["ReturnItemCollectionMetrics"] = "SIZE"
                return

    def after(self, request: HookRequest, response: Mapping[str, Any]) -> None:
        """Read every item collection metric of a response."""
        try:
            metrics = list(_metrics(request, response.get("ItemCollectionMetrics")))
        except Exception:  # a malformed response must not break the caller's request
            log.exception(
                "lsiorm could not read the item collection metrics of a %s response",
                request.operation,
            )
            return
        for name, metric in metrics:
            try:
                self._observe(request, name, metric)
            except Exception:  # a malformed metric must not hide the others, nor raise
                log.exception("lsiorm could not read item collection metric %r", metric)

    def error(self, request: HookRequest, error: BaseException) -> None:
        """Complete a collection size error with the table and collection key it is about."""
        if isinstance(error, ItemCollectionSizeLimitError) and error.collection_key is None:
            table, key = collection_key_of(request.operation, request.params, request.tables)
            error.collection_key = key
            error.table = error.table or table

    # -- internals --------------------------------------------------------------------------

    def _threshold(self, table: Table | None) -> float:
        if self.threshold_gb is not None:
            return self.threshold_gb
        return table.collection_warning_gb if table is not None else DEFAULT_WARNING_GB

    def _observe(self, request: HookRequest, name: str, metric: Mapping[str, Any]) -> None:
        ((attribute, av),) = (metric.get("ItemCollectionKey") or {}).items()
        low, high = (float(bound) for bound in metric["SizeEstimateRangeGB"])
        key = from_wire(av)
        now = self.clock()
        estimate = CollectionEstimate(name, attribute, key, low, high, now)
        threshold = self._threshold(request.table(name))
        band = math.floor(high)
        with self._lock:
            _remember(self._estimates, (name, key), estimate, self.max_collections)
            if high < threshold:
                return
            last = self._warned.get((name, key))
            if last is not None and now - last[0] < self.interval_seconds and band <= last[1]:
                return
            _remember(self._warned, (name, key), (now, band), self.max_collections)
        self._warn(CollectionWarning(estimate, threshold, band))

    def _warn(self, warning: CollectionWarning) -> None:
        e = warning.estimate
        log.warning(
            "Item collection %s=%r of table %r is estimated at %g to %g GB, at or above the "
            "%g GB warning threshold; DynamoDB refuses writes that grow it past %g GB.",
            e.attribute,
            e.key,
            e.table,
            e.low_gb,
            e.high_gb,
            warning.threshold_gb,
            COLLECTION_LIMIT_GB,
            extra={
                "table": e.table,
                "collection_key": e.collection_key,
                "size_estimate_range_gb": (e.low_gb, e.high_gb),
            },
        )
        for callback in self.callbacks:
            try:
                callback(warning)
            except Exception:  # one broken callback must not silence the others
                log.exception("lsiorm collection warning callback %r failed", callback)


def _remember(
    memory: OrderedDict[tuple[str, Any], Any], key: tuple[str, Any], value: Any, limit: int
) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > limit:
        memory.popitem(last=False)


def _key_value(key: Any) -> Any:
    if isinstance(key, Mapping) and len(key) == 1:
        ((_, av),) = key.items()
        if isinstance(av, Mapping):
            return from_wire(av)
    return key


def _table_names(operation: str, params: Mapping[str, Any]) -> Iterable[str]:
    if operation == "BatchWriteItem":
        return list(params.get("RequestItems") or ())
    if operation == "TransactWriteItems":
        names: list[str] = []
        for action in params.get("TransactItems") or ():
            for kind in _TRANSACT_ACTIONS:
                name = (action.get(kind) or {}).get("TableName")
                if name is not None:
                    names.append(name)
        return names
    name = params.get("TableName")
    return [name] if isinstance(name, str) else []


def _metrics(request: HookRequest, metrics: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield (table name, metric) from any response shape.

    PutItem, UpdateItem and DeleteItem return one metric object; BatchWriteItem and
    TransactWriteItems return a list of them per table name.
    """
    if not isinstance(metrics, Mapping):
        return
    if "ItemCollectionKey" in metrics or "SizeEstimateRangeGB" in metrics:
        yield str(request.params.get("TableName", "")), metrics
        return
    for name, listed in metrics.items():
        for metric in listed or ():
            yield name, metric
