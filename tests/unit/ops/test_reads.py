"""Releasing buffered rows: the batch release of unmerged streams equals releasing them one by one.

`_take` releases a page's rows at once when the plan does not merge its requests' results.
The reference here is the row-at-a-time release it replaced: the first stream with rows gives
its next row until the budget is spent, and each stream resumes after the key of its last
released row while rows remain buffered, else at its own position.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table, query
from lsiorm._ops import reads

TABLE = Table("reads_take", "pk", "sk")


class Row(Entity, table=TABLE, keys={"pk": "P#{p}", "sk": "S#{n:04d}"}):
    p: str
    n: int


PLAN = query(Row).where(p="a").plan()


def _streams(buffers: list[list[int]], done: list[bool]) -> list[Any]:
    streams = []
    for index, (numbers, finished) in enumerate(zip(buffers, done, strict=True)):
        stream = reads._Stream(index, PLAN.requests[0])
        stream.position = "done" if finished else {"pk": {"S": "P#a"}, "sk": {"S": f"X{index}"}}
        stream.buffer = deque(reads._Row(None, Row(p="a", n=n).to_wire()) for n in numbers)
        streams.append(stream)
    return streams


def _one_by_one(streams: list[Any], budget: int | None) -> list[tuple[int, int]]:
    keys = PLAN.key_attributes
    taken = []
    while budget is None or len(taken) < budget:
        stream = next((s for s in streams if s.buffer), None)
        if stream is None:
            break
        row = stream.buffer.popleft()
        key = {k: row.item[k] for k in keys if k in row.item}
        stream.resume = key if stream.buffer else stream.position
        taken.append((stream.index, int(row.item["n"]["N"])))
    return taken


@given(
    buffers=st.lists(st.lists(st.integers(0, 9999), max_size=6), min_size=1, max_size=4),
    done=st.lists(st.booleans(), min_size=4, max_size=4),
    budget=st.none() | st.integers(1, 12),
)
def test_an_unmerged_release_equals_releasing_rows_one_by_one(
    buffers: list[list[int]], done: list[bool], budget: int | None
) -> None:
    done = done[: len(buffers)]
    ours, reference = _streams(buffers, done), _streams(buffers, done)
    taken = reads._take(PLAN, ours, False, budget)
    assert [(s.index, int(r.item["n"]["N"])) for s, r in taken] == _one_by_one(reference, budget)
    assert [s.resume for s in ours] == [s.resume for s in reference]
    assert [list(s.buffer) for s in ours] == [list(s.buffer) for s in reference]
