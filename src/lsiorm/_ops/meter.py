"""Consumed capacity: ask DynamoDB for it on every request and report it, once for sync and async.

`CapacityMeter` wraps each operation a session runs (see `CapacityMeter.wrap`).
When it is on, every read or write request asks for ``ReturnConsumedCapacity=INDEXES``; each
response's ``ConsumedCapacity`` is added to the meter's running totals per table, logged to the
``lsiorm.capacity`` logger, and attached to the results that have a ``consumed`` field: each
`Page` carries what its own requests consumed (hydration's BatchGetItem
included), a batch write or transaction result what the whole call consumed. Results without
such a field (an entity, a list, a count) leave the figure in ``meter.last``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._ops.steps import ITEM_OPERATIONS, Call, Emit, Gather, Operation, Step, relayed

__all__ = ["CAPACITY_OPERATIONS", "CapacityMeter", "consumed_of"]

log = logging.getLogger("lsiorm.capacity")

_RECORDING = threading.Lock()

T = TypeVar("T")

#: The API operations that accept ReturnConsumedCapacity: all that read or write items.
CAPACITY_OPERATIONS: Final = ITEM_OPERATIONS


def consumed_of(
    response: Mapping[str, Any], declared: Callable[[str], str] | None = None
) -> tuple[ConsumedCapacity, ...]:
    """Return a response's ConsumedCapacity (one entry or a list of them), one per table,
    each under its declared name when ``declared`` names a live table back."""
    raw = response.get("ConsumedCapacity")
    if not raw:
        return ()
    entries = raw if isinstance(raw, list) else [raw]
    found = [ConsumedCapacity.from_consumed(entry) for entry in entries]
    if declared is None:
        return tuple(found)
    return tuple(dataclasses.replace(c, table=declared(c.table)) for c in found)


class _Tally:
    """Consumed capacity summed per table, in first-seen order."""

    def __init__(self) -> None:
        self.tables: dict[str, ConsumedCapacity] = {}

    def add(self, consumed: ConsumedCapacity) -> None:
        known = self.tables.get(consumed.table)
        self.tables[consumed.table] = consumed if known is None else known + consumed

    def take(self) -> tuple[ConsumedCapacity, ...]:
        out = tuple(self.tables.values())
        self.tables = {}
        return out


class Measurement:
    """What the requests sent while `CapacityMeter.measure` was open consumed.

    See [`CapacityMeter.measure`][lsiorm.CapacityMeter.measure].
    """

    def __init__(self) -> None:
        self._tally = _Tally()

    @property
    def consumed(self) -> tuple[ConsumedCapacity, ...]:
        """The consumed capacity, one entry per table."""
        return tuple(self._tally.tables.values())

    @property
    def total(self) -> float:
        """Every unit consumed, on every table and index."""
        return sum(c.total for c in self._tally.tables.values())

    def __str__(self) -> str:
        return "; ".join(f"{c.table}: {c}" for c in self.consumed) or "nothing consumed"


class CapacityMeter:
    """A session's consumed-capacity meter (``session.capacity``).

    ``enabled`` (``Session(consumed_capacity=True)``) asks every read and write for
    ``ReturnConsumedCapacity=INDEXES``; `measure` does so for the calls inside its block
    only. ``last`` holds what the last finished call consumed (with concurrent async calls, the
    one that finished last), ``totals`` the running sum per table since the session began (or
    `reset`). Every figure is under the declared table name, as hooks see it, also when the
    session names the live table otherwise (``declared`` names it back). Results with a
    ``consumed`` field (a ``Page``, a batch write or transaction result) carry their own
    call's figures, whatever runs concurrently.
    """

    def __init__(self, enabled: bool = False, declared: Callable[[str], str] | None = None) -> None:
        self.enabled = enabled
        # The declared name of a live table (a session with a table prefix or table_names).
        self._declared = declared
        self._totals = _Tally()
        self._open: list[Measurement] = []
        #: What the last finished session call consumed, one entry per table (empty when
        #: that call was not metered).
        self.last: tuple[ConsumedCapacity, ...] = ()

    @property
    def totals(self) -> dict[str, ConsumedCapacity]:
        """The running consumed capacity per table name (with its per-index figures)."""
        return dict(self._totals.tables)

    @property
    def total(self) -> float:
        """Every unit consumed since the session began or the last `reset`."""
        return sum(c.total for c in self._totals.tables.values())

    def reset(self) -> None:
        """Forget the running totals and ``last``."""
        self._totals = _Tally()
        self.last = ()

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        """Measure the calls made inside the block, even when the meter is not ``enabled``.

        Under an async session, calls that other tasks run meanwhile are measured too.
        """
        measurement = Measurement()
        self._open.append(measurement)
        try:
            yield measurement
        finally:
            self._open.remove(measurement)

    @property
    def requesting(self) -> bool:
        """Whether requests now ask for their consumed capacity."""
        return self.enabled or bool(self._open)

    # -- the wrapper around every operation ----------------------------------------------------

    def wrap(self, op: Operation[T]) -> Operation[T]:
        """Return ``op`` metered when the meter is on, else ``op`` itself."""
        if not self.requesting:
            self.last = ()
            return op
        return self._metered(op)

    def _metered(self, op: Operation[T]) -> Operation[T]:
        whole = _Tally()
        page = _Tally()
        result = yield from self._observe(op, (whole, page))
        consumed = tuple(whole.tables.values())
        self.last = consumed
        attached: T = _attach(result, consumed)
        return attached

    def _record(self, call: Call, response: Mapping[str, Any], tallies: tuple[_Tally, ...]) -> None:
        for consumed in consumed_of(response, self._declared):
            with _RECORDING:  # batch chunks may record from several threads at once
                for tally in (*tallies, self._totals, *(m._tally for m in self._open)):
                    tally.add(consumed)
            log.info("%s %s: %s", call.operation, consumed.table, consumed)

    def _observe(self, op: Operation[T], tallies: tuple[_Tally, _Tally]) -> Operation[T]:
        """Run ``op`` inside this operation, asking for and recording consumed capacity."""

        def rewrite(step: Step) -> Step:
            if isinstance(step, Emit):
                return Emit(_attach(step.value, tallies[1].take()))
            if (
                isinstance(step, Call)
                and step.operation in CAPACITY_OPERATIONS
                and "ReturnConsumedCapacity" not in step.params
            ):
                params = {**step.params, "ReturnConsumedCapacity": "INDEXES"}
                return dataclasses.replace(step, params=params)
            if isinstance(step, Gather):
                parts = tuple(self._observe(o, tallies) for o in step.operations)
                return dataclasses.replace(step, operations=parts)
            return step

        def answered(sent: Step, result: Any) -> None:
            if isinstance(sent, Call):
                self._record(sent, result, tallies)

        return relayed(op, rewrite, answered)


def _attach(value: Any, consumed: tuple[ConsumedCapacity, ...]) -> Any:
    """Return a result with its ``consumed`` field filled in (other values as they are)."""
    if (
        dataclasses.is_dataclass(value)
        and not isinstance(value, type)
        and any(f.name == "consumed" for f in dataclasses.fields(value))
    ):
        return dataclasses.replace(value, consumed=consumed)
    return value
