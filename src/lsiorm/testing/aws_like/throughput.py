"""Partition limits and on-demand maxima: token buckets, the units charged, throttle reasons.

AWS documents two limits this module reproduces (the developer guide's "Throughput" and
"Troubleshooting throttling" pages, and the API reference's ``ThrottlingReason``):

* **Key ranges.** A partition serves at most 1,000 write units and 3,000 read units a second,
  whatever the table's mode. Past that a request is throttled with
  ``ProvisionedThroughputExceededException``, whose ``ThrottlingReasons`` list
  ``{"reason": ..., "resource": ...}`` entries: the reason is *resource* + *operation* + *limit*
  (``TableWriteKeyRangeThroughputExceeded``, ``TableReadKeyRangeThroughputExceeded``,
  ``IndexWriteKeyRangeThroughputExceeded``, ``IndexReadKeyRangeThroughputExceeded``) and the
  resource is the table's ARN, or ``<table ARN>/index/<name>`` for a global index.
* **On-demand maximum.** A table or index whose ``OnDemandThroughput`` sets
  ``MaxReadRequestUnits`` or ``MaxWriteRequestUnits`` is throttled past it with
  ``ThrottlingException``, whose list is named ``throttlingReasons`` (lowercase, as botocore's
  model names it) and whose reasons end in ``MaxOnDemandThroughputExceeded``.

The engine keeps one bucket per partition key value (of the table, and of each global index)
and per kind (read, write), and one per table or index for its maximum. A bucket refills
continuously and holds ``burst_seconds`` of its rate. A request that finds one of its buckets
empty is refused before it reaches the upstream engine, so nothing is applied; one that is let
in is charged what it consumed afterwards, so a bucket may go below zero. A local secondary
index shares its table's partitions, as on AWS.

In a batch, each entry is let in or refused alone: refused entries come back as
``UnprocessedItems`` (``UnprocessedKeys``), and only when every entry is refused is the whole
request refused. A transaction with a refused action is cancelled
(``TransactionCanceledException``) with ``ThrottlingError`` at that action's position.

The units charged are the ``ConsumedCapacity`` the upstream engine reports (the engine asks for
``INDEXES`` and gives the caller what it asked for), or, for moto, whose numbers are made up,
lsiorm's size model over the items: a write's units from the larger of the item before and
after, each global index's from its entries, a read's from the items returned. A batch's or
transaction's units are shared evenly among its entries on the same table or index.
"""

from __future__ import annotations

import binascii
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsiorm._model.capacity import read_units, write_units
from lsiorm._model.wire import item_size
from lsiorm.errors import ValidationError
from lsiorm.testing.aws_like.options import OnDemandMaximum, PartitionLimits
from lsiorm.testing.aws_like.protocol import ServiceError
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.tables import TableShape
from lsiorm.testing.aws_like.touches import Touch
from lsiorm.testing.loopback import binary_decoded

__all__ = [
    "Access",
    "Refusal",
    "Throughput",
    "TokenBucket",
    "estimated_units",
    "reported_units",
    "throttled",
    "wire_size",
]

Units = dict[tuple[str, "str | None"], float]
"""Units consumed per (table name, global index name or None for the table)."""


class TokenBucket:
    """``rate`` units a second, holding at most ``rate * burst_seconds``; starts full."""

    def __init__(self, rate: float, burst_seconds: float, now: float) -> None:
        self.rate = rate
        self.capacity = rate * burst_seconds
        self.tokens = self.capacity
        self._stamp = now

    def level(self, now: float) -> float:
        """The units in the bucket at ``now`` (below zero after a charge it could not cover)."""
        if now > self._stamp:
            self.tokens = min(self.capacity, self.tokens + (now - self._stamp) * self.rate)
            self._stamp = now
        return self.tokens

    def has_room(self, now: float) -> bool:
        """Whether a request may go in: the bucket is not empty."""
        return self.level(now) > 0

    def charge(self, units: float, now: float) -> None:
        """Take what a request consumed."""
        self.level(now)
        self.tokens -= units


@dataclass(frozen=True)
class Access:
    """One read or write of a partition (``partition`` None: of the whole table or index)."""

    position: int
    table: TableShape
    #: A global index, or None for the table's own partitions (local indexes share them).
    index: str | None
    write: bool
    partition: str | None


@dataclass(frozen=True)
class Refusal:
    """Why one access was refused."""

    position: int
    reason: str
    resource: str
    on_demand: bool
    #: The refused table's name (its own, for an index): throttles are counted per table.
    table: str = ""


def _reason(access: Access, on_demand: bool) -> Refusal:
    limit = "MaxOnDemandThroughputExceeded" if on_demand else "KeyRangeThroughputExceeded"
    name = ("Index" if access.index else "Table") + ("Write" if access.write else "Read") + limit
    arn = access.table.index_arn(access.index)
    return Refusal(access.position, name, arn, on_demand, access.table.name)


def throttled(refusals: Sequence[Refusal]) -> ServiceError:
    """The error of a refused request: ``ThrottlingException`` when an on-demand maximum was
    reached, else ``ProvisionedThroughputExceededException``; each with its reasons."""
    on_demand = [r for r in refusals if r.on_demand]
    chosen = on_demand or list(refusals)
    reasons: list[dict[str, str]] = []
    for refusal in chosen:
        entry = {"reason": refusal.reason, "resource": refusal.resource}
        if entry not in reasons:
            reasons.append(entry)
    if on_demand:
        return ServiceError(
            "ThrottlingException",
            "Throughput exceeds the maximum on-demand throughput set for the table or index "
            "(OnDemandThroughput).",
            fields={"throttlingReasons": reasons},
        )
    return ServiceError(
        "ProvisionedThroughputExceededException",
        "Throughput exceeds what one partition key value may consume: the key range is hot.",
        fields={"ThrottlingReasons": reasons},
    )


class Throughput:
    """The buckets of an engine: per partition key value, and per table or index maximum."""

    def __init__(
        self,
        limits: PartitionLimits | None,
        maximum: OnDemandMaximum | None,
        stats: Tally,
    ) -> None:
        self.limits = limits
        self.maximum = maximum
        self.stats = stats
        self._keys: dict[tuple[str, str | None, bool, str], TokenBucket] = {}
        self._tables: dict[tuple[str, str | None, bool], TokenBucket | None] = {}
        self._lock = threading.Lock()

    def _key_bucket(self, access: Access, now: float) -> TokenBucket | None:
        if self.limits is None or access.partition is None:
            return None
        slot = (access.table.name, access.index, access.write, access.partition)
        bucket = self._keys.get(slot)
        if bucket is None:
            rate = self.limits.write_units if access.write else self.limits.read_units
            bucket = self._keys[slot] = TokenBucket(rate, self.limits.burst_seconds, now)
        return bucket

    def _table_bucket(self, access: Access, now: float) -> TokenBucket | None:
        if self.maximum is None:
            return None
        slot = (access.table.name, access.index, access.write)
        if slot not in self._tables:
            self._tables[slot] = self._new_maximum(access, now)
        return self._tables[slot]

    def _new_maximum(self, access: Access, now: float) -> TokenBucket | None:
        assert self.maximum is not None
        table = access.table
        source: Any = table if access.index is None else table.global_indexes[access.index]
        declared = source.max_write if access.write else source.max_read
        if declared is None and access.index is None:
            declared = self.maximum.write_units if access.write else self.maximum.read_units
        if declared is None:
            return None
        return TokenBucket(declared, self.maximum.burst_seconds, now)

    def forget(self, table: str) -> None:
        """Drop a table's maxima (it changed: its declared maxima may have)."""
        with self._lock:
            for slot in [s for s in self._tables if s[0] == table]:
                del self._tables[slot]

    def refusals(self, accesses: Iterable[Access], now: float) -> list[Refusal]:
        """The accesses refused now (their table or index at its maximum, or their key range
        out of units); one refusal per position at most."""
        refused: dict[int, Refusal] = {}
        with self._lock:
            for access in accesses:
                if access.position in refused:
                    continue
                table = self._table_bucket(access, now)
                if table is not None and not table.has_room(now):
                    refused[access.position] = _reason(access, on_demand=True)
                    continue
                key = self._key_bucket(access, now)
                if key is not None and not key.has_room(now):
                    refused[access.position] = _reason(access, on_demand=False)
        for refusal in refused.values():
            self.stats.add("throttled")
            self.stats.add(refusal.reason)
            # Per table too: a test can tell its own table's throttles from a ledger's.
            self.stats.add(f"throttled:{refusal.table}")
        return sorted(refused.values(), key=lambda r: r.position)

    def charge(self, accesses: Sequence[Access], units: Units, now: float) -> None:
        """Charge what a request consumed: each (table, index)'s units shared evenly among
        its accesses of that table or index, and in full to its maximum's bucket."""
        groups: dict[tuple[str, str | None, bool], list[Access]] = {}
        for access in accesses:
            groups.setdefault((access.table.name, access.index, access.write), []).append(access)
        with self._lock:
            for (table, index, _write), members in groups.items():
                spent = units.get((table, index), 0.0)
                if not spent:
                    continue
                maximum = self._table_bucket(members[0], now)
                if maximum is not None:
                    maximum.charge(spent, now)
                for access in members:
                    bucket = self._key_bucket(access, now)
                    if bucket is not None:
                        bucket.charge(spent / len(members), now)


# -- units consumed ------------------------------------------------------------------------------


def reported_units(consumed: Any) -> Units:
    """The units of a ``ConsumedCapacity`` (one entry or a list) answered with ``INDEXES``."""
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    units: Units = {}
    for entry in entries:
        table = str(entry.get("TableName"))
        part = entry.get("Table")
        own = float(part["CapacityUnits"]) if part else float(entry.get("CapacityUnits", 0))
        for lsi in (entry.get("LocalSecondaryIndexes") or {}).values():
            own += float(lsi.get("CapacityUnits", 0))
        units[(table, None)] = units.get((table, None), 0.0) + own
        for name, gsi in (entry.get("GlobalSecondaryIndexes") or {}).items():
            units[(table, name)] = units.get((table, name), 0.0) + float(gsi["CapacityUnits"])
    return units


def wire_size(item: Mapping[str, Any] | None) -> int:
    """An item's size by lsiorm's size model (its JSON form: binary values are base64)."""
    if not item:
        return 0
    try:
        return item_size({name: binary_decoded(av) for name, av in item.items()})
    except (ValidationError, binascii.Error, ValueError, AttributeError):
        return 0


def _write_units(touch: Touch, factor: int) -> Units:
    table = touch.table
    new = touch.new_image if touch.kind != "delete" else None
    units: Units = {
        (table.name, None): factor * write_units(max(wire_size(touch.before), wire_size(new)))
    }
    if touch.kind == "check":
        return units
    for gsi in table.global_indexes.values():
        old_entry, new_entry = gsi.entry_key(touch.before), gsi.entry_key(new)
        spent = 0
        if new_entry is not None:
            spent += write_units(wire_size(new))
        if old_entry is not None and old_entry != new_entry:
            spent += write_units(wire_size(touch.before))
        if spent:
            units[(table.name, gsi.name)] = factor * spent
    return units


def _add(total: Units, more: Units) -> None:
    for slot, value in more.items():
        total[slot] = total.get(slot, 0.0) + value


def _read_units(size: int, consistent: bool) -> float:
    return max(read_units(size, consistent=consistent), 1.0 if consistent else 0.5)


def _query_units(params: Mapping[str, Any], answer: Mapping[str, Any], shape: TableShape) -> Units:
    index = params.get("IndexName")
    gsi = index if isinstance(index, str) and index in shape.global_indexes else None
    size = sum(wire_size(item) for item in answer.get("Items") or ())
    return {(shape.name, gsi): _read_units(size, bool(params.get("ConsistentRead")))}


def estimated_units(
    operation: str,
    params: Mapping[str, Any],
    answer: Mapping[str, Any],
    touched: Sequence[Touch],
    shape: TableShape | None = None,
) -> Units:
    """The units of a request by lsiorm's size model (for an upstream engine whose
    ConsumedCapacity is made up). ``shape`` is the table of a Query or Scan."""
    units: Units = {}
    if operation in ("Query", "Scan") and shape is not None:
        return _query_units(params, answer, shape)
    factor = 2 if operation.startswith("Transact") else 1
    if operation == "GetItem" and touched:
        units[(touched[0].table.name, None)] = _read_units(
            wire_size(answer.get("Item")), bool(params.get("ConsistentRead"))
        )
        return units
    if operation in ("BatchGetItem", "TransactGetItems"):
        found = answer.get("Responses") or {}
        if isinstance(found, Mapping):
            rows = [(table, item) for table, items in found.items() for item in items]
        else:
            rows = [(t.table.name, r.get("Item")) for t, r in zip(touched, found, strict=False)]
        for table, item in rows:
            _add(units, {(table, None): factor * _read_units(wire_size(item), True)})
        return units
    for touch in touched:
        if touch.writes:
            _add(units, _write_units(touch, factor))
    return units
