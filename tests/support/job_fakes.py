"""A job that sends nothing, for tests of the job engine on the memory ledger: a kind that
counts items, one page per unit, a clock that moves only when the job sleeps, and a runner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import PageRead
from lsiorm._jobs.resumable import DONE, Position, WireItem
from lsiorm._jobs.units import Unit
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Done, Gather, Operation, Sleep, advance
from support.fakes import Clock

ITEMS_PER_UNIT = 4

#: Where a fresh `Clock` starts.
START = Clock().now


def drive(op: Operation[Any], clock: Clock, *, steps: int = 10_000) -> Any:
    """Run an operation that sends nothing: a sleep moves the clock; a Gather runs in turn.

    A coordinator that would wait for ever fails here after ``steps`` steps."""
    step = advance(op)
    for _ in range(steps):
        if isinstance(step, Done):
            return step.value
        if isinstance(step, Sleep):
            clock.now += step.seconds
            step = advance(op)
        elif isinstance(step, Gather):
            step = advance(op, [drive(o, clock) for o in step.operations])
        else:
            raise AssertionError(f"the memory ledger sends nothing: {step!r}")
    raise AssertionError(f"still waiting after {steps} steps ({clock.now - START:.0f} s)")


class CountKind:
    """A job kind that only counts the items it is handed."""

    def new_part(self) -> dict[str, int]:
        return {"scanned": 0}

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        return {}

    def visit(
        self, part: dict[str, int], item: WireItem, recovered: dict[str, Any]
    ) -> Operation[object]:
        part["scanned"] += 1
        return None
        yield  # sends nothing

    def end_page(self, part: dict[str, int]) -> Operation[None]:
        return
        yield  # sends nothing

    def settle(self, part: dict[str, int], recovered: dict[str, Any]) -> Operation[None]:
        return
        yield  # sends nothing

    def counts(self, part: dict[str, int]) -> dict[str, int]:
        return dict(part)

    def notes(self, part: dict[str, int]) -> dict[str, list[Any]]:
        return {}

    def changed(self, counts: Mapping[str, int]) -> int:
        return 0

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        pass


def count_kind(ctx: Context, budget: RateBudget) -> CountKind:
    return CountKind()


def one_page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
    items = [{"n": {"N": str(n)}} for n in range(ITEMS_PER_UNIT)]
    return PageRead(items, DONE, len(items))
    yield  # sends nothing
