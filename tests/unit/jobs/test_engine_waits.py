"""Units that wait for others and units that pause: the job engine as a stream's catch-up uses it.

A stream's shards are units that never end while the stream is live: a page may *pause* its
unit (committed, lease given up, not done), a shard waits for its parent (`waits_for`), and
``run_units(once=True)`` is one pass: each unit at most once, children right after their
parent. The runs here are in the memory ledger and send nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm._jobs.engine import JobRun, PageRead, run_units
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.resumable import DONE, Position
from lsiorm._jobs.units import ShardUnit, Unit, unit_from_json, unit_to_json, waits_for
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from support.fakes import Clock
from support.job_fakes import count_kind, drive

OPEN = {"kind": "catch-up", "open": True}


class Script:
    """Each unit's pages in turn: ``"pause"`` (a page that pauses its unit), ``"more"`` (a page
    after which it reads on) or ``"end"`` (its last page); every page read is logged."""

    def __init__(self, pages: Mapping[str, Sequence[str]]) -> None:
        self.pages = {k: list(v) for k, v in pages.items()}
        self.log: list[tuple[str, int]] = []

    def __call__(self, ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ShardUnit)
        read = 0 if position is None else int(str(position))
        kind = self.pages[unit.shard][read]
        self.log.append((unit.shard, read))
        item = [{"n": {"N": str(read)}}]
        if kind == "end":
            return PageRead(item, DONE, 1)
        return PageRead(item, str(read + 1), 1, pause=kind == "pause")
        yield  # sends nothing


def _run(ledger: MemoryLedger, clock: Clock, script: Script, units: Sequence[Unit]) -> Any:
    run = JobRun(OPEN, units, count_kind, script, {})
    record, _ = drive(run_units(Context(), ledger, run, clock=clock, once=True), clock)
    return record


def test_a_shard_unit_names_its_parent_and_round_trips_through_json() -> None:
    child = ShardUnit("shardId-2", "shardId-1", "000000000000000000042")
    assert (child.id, waits_for(child)) == ("shard-shardId-2", "shard-shardId-1")
    assert waits_for(ShardUnit("shardId-1")) is None
    assert unit_from_json(unit_to_json(child)) == child


def test_one_pass_runs_parents_first_each_unit_once_and_pauses_what_has_no_more() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=30.0)
    units = [
        ShardUnit("a"),
        ShardUnit("b", "a"),
        ShardUnit("c", "a"),
        ShardUnit("d", "b"),
    ]
    script = Script(
        {"a": ["more", "end"], "b": ["pause", "end"], "c": ["end"], "d": ["pause", "end"]}
    )
    first = _run(ledger, clock, script, units)
    assert script.log == [("a", 0), ("a", 1), ("b", 0), ("c", 0)]
    states = {u.unit.id: (u.state, u.owner, u.position, u.runs) for u in first.units}
    assert states == {
        "shard-a": ("done", None, None, 1),
        "shard-b": ("pending", None, "1", 1),  # paused: its position kept, its lease given up
        "shard-c": ("done", None, None, 1),
        "shard-d": ("pending", None, None, 0),  # its parent is not done: not started
    }
    assert first.state == "running"  # open-ended: never done by its units
    script.log.clear()
    second = _run(ledger, clock, script, units)
    # b reads on from its position and ends; d, its child, starts right after it.
    assert script.log == [("b", 1), ("d", 0)]
    assert {u.unit.id: u.state for u in second.units}["shard-d"] == "pending"
    script.log.clear()
    third = _run(ledger, clock, script, units)
    assert script.log == [("d", 1)]
    assert all(u.state == "done" for u in third.units)
    assert third.state == "running"
    assert third.counts() == {"scanned": 7}


def test_units_added_to_a_run_are_run_by_the_next_pass() -> None:
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=30.0)
    script = Script({"a": ["pause", "end"], "b": ["end"], "c": ["end"]})
    record = _run(ledger, clock, script, [ShardUnit("a")])
    # The shard split: it is read to its end, and its children appear in the stream.
    added = drive(ledger.add_units(record.id, [ShardUnit("a"), ShardUnit("b", "a")], 2), clock)
    assert added == 1
    script.log.clear()
    record = _run(ledger, clock, script, [])
    assert script.log == [("a", 1), ("b", 0)]
    assert drive(ledger.add_units(record.id, [ShardUnit("c", "gone")], 3), clock) == 1
    script.log.clear()
    _run(ledger, clock, script, [])
    # A parent the run has no unit of (trimmed from the stream) holds nothing back.
    assert script.log == [("c", 0)]


@st.composite
def forests(draw: st.DrawFn) -> tuple[list[ShardUnit], dict[str, list[str]]]:
    """Shards with parents among the earlier ones, each with pages that pause or read on, the
    last one ending the shard."""
    size = draw(st.integers(1, 8))
    units: list[ShardUnit] = []
    pages: dict[str, list[str]] = {}
    for n in range(size):
        parent = draw(st.one_of(st.none(), st.integers(0, n - 1))) if n else None
        units.append(ShardUnit(f"s{n}", None if parent is None else f"s{parent}"))
        middle = draw(st.lists(st.sampled_from(["pause", "more"]), max_size=4))
        pages[f"s{n}"] = [*middle, "end"]
    return units, pages


@settings(max_examples=150)
@given(forests())
def test_passes_read_every_shard_to_its_end_parents_wholly_before_children(
    forest: tuple[list[ShardUnit], dict[str, list[str]]],
) -> None:
    units, pages = forest
    clock = Clock()
    ledger = MemoryLedger(clock, lease_seconds=30.0)
    script = Script(pages)
    runs_before: dict[str, int] = {}
    for _ in range(sum(len(p) for p in pages.values()) + 1):
        record = _run(ledger, clock, script, units)
        runs = {u.unit.id: u.runs for u in record.units}
        # One pass claims each unit at most once.
        assert all(runs[k] - runs_before.get(k, 0) <= 1 for k in runs)
        runs_before = runs
        if all(u.state == "done" for u in record.units):
            break
    assert all(u.state == "done" for u in record.units)
    # Every page of every shard was read once, in order.
    for shard, shard_pages in pages.items():
        assert [n for s, n in script.log if s == shard] == list(range(len(shard_pages)))
    # A child's first page comes after its parent's last.
    where = {entry: i for i, entry in enumerate(script.log)}
    for unit in units:
        if unit.parent is not None:
            parent_last = where[(unit.parent, len(pages[unit.parent]) - 1)]
            assert where[(unit.shard, 0)] > parent_last
