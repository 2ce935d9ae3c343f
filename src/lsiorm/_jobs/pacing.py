"""A worker's pacing per resource: the partition keys DynamoDB said are hot, and the table.

DynamoDB says why it throttles (`lsiorm.ThrottlingReason`), and the cure depends on the
reason. A *key range* throttle (``TableWriteKeyRangeThroughputExceeded``) means one partition
key value gets more than its partition serves: only the writers of that key must slow down,
and slowing the whole job would waste every other partition's capacity. A table's or an
index's limit (provisioned throughput, an on-demand maximum, the account's quota) is shared by
every write of the job: the whole job must slow down.

So each throttle a worker meets becomes a `Signal` (`signals`, pure): what it names (a
`Resource`: a partition key value of a table, or the table itself), whether reads or writes
were throttled, and DynamoDB's reason.

* A table's key-range throttle names the partition key value the request targeted (from the
  request and the table's declaration). A transaction cancelled with ``ThrottlingError`` names
  the partition of each throttled action (the cancellation gives no reason; DynamoDB sends it
  for a partition that is over its share, as well as for an on-demand table at its limit).
* Everything else names the table: a key-range throttle of a global index (an index's key
  value is not in the request, and the items of every unit feed that index key, so the whole
  job writes it), a table or index limit, ``ProvisionedThroughputExceeded`` in a cancellation,
  and a throttle without reasons (an older engine).

A `Pacer` (one per worker, in `lsiorm._jobs.budget.RateBudget`) acts on the signals for
the resources a write names. A resource nobody throttled is not paced at all. The first
throttle of a resource starts pacing it at half the rate the worker was writing it (measured
over the last seconds: the rate that met the limit). A further throttle halves the rate again
when a write sent at that rate met the limit (the retries of one request meet it again and
count once); after ``calm`` seconds without a throttle the rate grows by a tenth of the rate
that last met the limit, so it comes back to that rate in about five calm periods and probes
past it slowly; and a resource back at its unpaced rate and calm for ``forget`` seconds, or
not written for as long, is not paced any more (additive increase, multiplicative decrease:
TCP's answer to congestion, per key).
Pacing is exact spacing (each write of *u* units waits until *u / rate* seconds after the
last one's turn), in the units the capacity model prices each write at, which are the units a
partition's limit counts. The rate never falls below ``floor`` units a second: a hot key is
slowed, never starved.

Why per worker, and not in the ledger like the job's rate: a partition key's items are read
by one unit (a scan segment holds whole partitions, an export file one partition's items), so
the worker that meets a hot key is the one that writes it, and pacing it needs no request of
its own. The job's shared rate (`lsiorm._jobs.budget`) stays the answer to a table's limit
when the job has a budget; a job without one paces the table in each worker, by the same
rule.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from lsiorm._model.schema import Table
from lsiorm._ops.service_errors import partition_keys
from lsiorm.errors import ThrottledError, TransactionCanceledError, key_text

__all__ = [
    "HOT_PREFIX",
    "THROTTLED_PREFIX",
    "Pacer",
    "Resource",
    "Signal",
    "hot_partitions",
    "signals",
    "throttle_counts",
    "throttled_resources",
    "written",
]

#: The names of a unit's counts of throttles: ``throttled:<resource> <reason>``, and of the
#: key-range throttles of one partition key: ``hot:<table> <key>``.
THROTTLED_PREFIX: Final = "throttled:"
HOT_PREFIX: Final = "hot:"
#: The most partition keys a unit names in its counts (the others are counted together).
MAX_HOT_KEYS: Final = 20
OTHER_KEYS: Final = "(other keys)"

_READS: Final = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})


@dataclass(frozen=True)
class Resource:
    """What a throttle names: the partition key value ``key`` of ``table`` (as text,
    ``PK=USER#1``), or the table itself (``key`` None)."""

    table: str
    key: str | None = None

    def __str__(self) -> str:
        return self.table if self.key is None else f"{self.table} {self.key}"


def written(table: Table, *items: Mapping[str, Any] | None) -> tuple[Resource, ...]:
    """What a write to ``table`` of these items (or keys) names: the table, and each one's
    partition key value."""
    attribute = table.partition_key.name
    found = [Resource(table.name)]
    for item in items:
        if item is not None and attribute in item:
            resource = Resource(table.name, key_text({attribute: item[attribute]}))
            if resource not in found:
                found.append(resource)
    return tuple(found)


@dataclass(frozen=True)
class Signal:
    """One throttle as a worker acts on it: the resource, ``"read"`` or ``"write"``, DynamoDB's
    reason (or the cancellation's code, or the error code), and the resource as DynamoDB
    named it (``where``: a table, ``table/index/name``)."""

    resource: Resource
    operation: str
    reason: str
    where: str


def _operation(reason_operation: str | None, request_operation: str) -> str:
    if reason_operation in ("Read", "Write"):
        return reason_operation.lower()
    return "read" if request_operation in _READS else "write"


def _cancelled(
    params: Mapping[str, Any], tables: Sequence[Table], error: TransactionCanceledError
) -> list[Signal]:
    actions = list(params.get("TransactItems") or ())
    found: list[Signal] = []
    for reason in error.failed:
        if reason.code not in ("ThrottlingError", "ProvisionedThroughputExceeded"):
            continue
        body = next(iter(actions[reason.index].values())) if reason.index < len(actions) else {}
        table = str(body.get("TableName", error.table or "?"))
        keys = (
            partition_keys("TransactWriteItems", {"TransactItems": [actions[reason.index]]}, tables)
            if reason.code == "ThrottlingError" and body
            else []
        )
        resource = Resource(table, key_text(keys[0][1])) if keys else Resource(table)
        found.append(Signal(resource, "write", reason.code, table))
    return found


def _tables_named(params: Mapping[str, Any]) -> list[str]:
    """The tables a request names (declared names, as a hook sees them)."""
    name = params.get("TableName")
    if isinstance(name, str):
        return [name]
    found = dict.fromkeys(params.get("RequestItems") or ())
    for action in params.get("TransactItems") or ():
        for body in action.values():
            found.setdefault(str(body.get("TableName")))
    return list(found)


def signals(
    operation: str, params: Mapping[str, Any], tables: Sequence[Table], error: BaseException
) -> list[Signal]:
    """What a failed request's throttle names (see the module doc); none for other errors.

    ``params`` and ``tables`` are the request's, as a hook sees them (declared table names).
    """
    if isinstance(error, TransactionCanceledError):
        return _cancelled(params, tables, error)
    if not isinstance(error, ThrottledError):
        return []
    names = _tables_named(params)
    fallback = names[0] if len(names) == 1 else (error.table or "?")
    if not error.reasons:
        return [Signal(Resource(fallback), _operation(None, operation), error.code, fallback)]
    found: list[Signal] = []
    for reason in error.reasons:
        kind = _operation(reason.operation, operation)
        where = reason.where
        if reason.key_range and reason.kind == "Table":
            keys = partition_keys(operation, params, tables)
            if keys:
                found += [
                    Signal(Resource(t, key_text(k)), kind, reason.reason, where) for t, k in keys
                ]
                continue
        found.append(Signal(Resource(fallback), kind, reason.reason, where))
    return found


@dataclass
class _Paced:
    """A resource being paced: its rate (units a second), the rate it was written at unpaced
    (``peak``) and the rate that last met the limit (``knee``), its next turn, when it was
    last throttled, last changed and last written, and how many writes took a turn since the
    last change."""

    rate: float
    peak: float
    knee: float
    turn: float
    throttled_at: float
    changed_at: float
    written_at: float
    written: int = 0


@dataclass(eq=False, repr=False)
class Pacer:
    """AIMD pacing per resource for one worker; see the module docstring. Thread-safe."""

    clock: Callable[[], float] = time.monotonic
    cooldown: float = 0.1
    calm: float = 2.0
    forget: float = 10.0
    floor: float = 1.0
    #: The seconds of writes a resource's rate is measured over, and how many resources'
    #: recent writes are kept (the most recently written).
    window: float = 2.0
    track: int = 64
    _paced: dict[Resource, _Paced] = field(default_factory=dict, init=False)
    _recent: OrderedDict[Resource, deque[tuple[float, float]]] = field(
        default_factory=OrderedDict, init=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def paced(self) -> dict[Resource, float]:
        """The resources paced now, with their rates in units a second."""
        with self._lock:
            return {resource: state.rate for resource, state in self._paced.items()}

    def throttled(self, resource: Resource) -> None:
        """Note a throttle of ``resource``: start pacing it, or halve its rate when a write
        sent at that rate met the limit (a request's own retries meet it again: one halving)."""
        now = self.clock()
        with self._lock:
            self._prune(now)
            state = self._paced.get(resource)
            if state is None:
                observed = max(self.floor, self._observed(resource, now))
                self._paced[resource] = _Paced(
                    rate=max(self.floor, observed / 2),
                    peak=observed,
                    knee=observed,
                    turn=now,
                    throttled_at=now,
                    changed_at=now,
                    written_at=now,
                )
                return
            state.throttled_at = now
            if state.written and now - state.changed_at >= self.cooldown:
                state.knee = state.rate
                state.rate = max(self.floor, state.rate / 2)
                state.changed_at = now
                state.written = 0

    def reserve(self, resources: Iterable[Resource], units: float) -> float:
        """Take the turn of a write of ``units`` to each of ``resources``; return how long to
        wait before sending it (0 when none of them is paced)."""
        now = self.clock()
        wait = 0.0
        with self._lock:
            for resource in resources:
                self._note(resource, now, units)
                state = self._paced.get(resource)
                if state is None:
                    continue
                if self._recovered(resource, state, now):
                    continue
                start = max(now, state.turn)
                state.turn = start + units / state.rate
                state.written += 1
                state.written_at = start
                wait = max(wait, start - now)
        return wait

    def _recovered(self, resource: Resource, state: _Paced, now: float) -> bool:
        """Raise a calm resource's rate by a tenth of the rate that last met the limit; forget
        one back at its unpaced rate and calm for long enough."""
        quiet = now - state.throttled_at
        if quiet >= self.calm and now - state.changed_at >= self.calm:
            state.rate = min(state.peak, state.rate + max(self.floor, state.knee / 10))
            state.changed_at = now
            state.written = 0
        if state.rate >= state.peak and quiet >= self.forget:
            del self._paced[resource]
            return True
        return False

    def _prune(self, now: float) -> None:
        """Forget the paced resources neither throttled nor written for a while (a hot key this
        worker is done with)."""
        idle = [
            resource
            for resource, state in self._paced.items()
            if now - max(state.throttled_at, state.written_at) >= self.forget
        ]
        for resource in idle:
            del self._paced[resource]

    def _note(self, resource: Resource, now: float, units: float) -> None:
        seen = self._recent.get(resource)
        if seen is None:
            seen = self._recent[resource] = deque()
            while len(self._recent) > self.track:
                self._recent.popitem(last=False)
        else:
            self._recent.move_to_end(resource)
        seen.append((now, units))
        while seen and now - seen[0][0] > self.window:
            seen.popleft()

    def _observed(self, resource: Resource, now: float) -> float:
        """The units a second this worker wrote to ``resource`` lately."""
        seen = self._recent.get(resource)
        if not seen:
            return 0.0
        recent = [(at, units) for at, units in seen if now - at <= self.window]
        if not recent:
            return 0.0
        span = max(now - recent[0][0], 0.1)
        return sum(units for _, units in recent) / span


# -- what a run says of its throttles -----------------------------------------------------------


def throttle_counts(found: Iterable[Signal], held: Mapping[str, int]) -> dict[str, int]:
    """The counts a unit adds for these throttles: one per signal under ``throttled:``, and one
    per key-range throttle of a partition key under ``hot:``, for at most `MAX_HOT_KEYS` keys
    (``held``: the unit's counts so far); the others under ``hot:<table> (other keys)``."""
    counts: dict[str, int] = {}
    named = {name for name in held if name.startswith(HOT_PREFIX)}
    for signal in found:
        name = f"{THROTTLED_PREFIX}{signal.where} {signal.reason}"
        counts[name] = counts.get(name, 0) + 1
        if signal.resource.key is None:
            continue
        hot = f"{HOT_PREFIX}{signal.resource}"
        if hot not in named and len(named) >= MAX_HOT_KEYS:
            hot = f"{HOT_PREFIX}{signal.resource.table} {OTHER_KEYS}"
        named.add(hot)
        counts[hot] = counts.get(hot, 0) + 1
    return counts


def _prefixed(counts: Mapping[str, int], prefix: str) -> dict[str, int]:
    found = {
        name[len(prefix) :]: value for name, value in counts.items() if name.startswith(prefix)
    }
    return dict(sorted(found.items(), key=lambda entry: (-entry[1], entry[0])))


def throttled_resources(counts: Mapping[str, int]) -> dict[str, int]:
    """A run's throttles by resource and reason (``"Orders TableWriteKeyRangeThroughputExceeded"``),
    from its counts, most first."""
    return _prefixed(counts, THROTTLED_PREFIX)


def hot_partitions(counts: Mapping[str, int]) -> dict[str, int]:
    """A run's hot partition keys (``"Orders PK=USER#1"``) with their key-range throttles, from
    its counts, most first."""
    return _prefixed(counts, HOT_PREFIX)
