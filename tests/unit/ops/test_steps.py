"""The one step runner: both drivers run any operation to the same result and the same emits.

A random program of steps (calls that succeed or fail, sleeps, emits, nested gathers) is run by
the sync driver, by the async driver, and by a plain interpreter that does no I/O; all three
must agree, and :func:`advance` must report the end of an operation as :class:`Done`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._io.drivers import AsyncDriver, SyncDriver
from lsiorm._ops.steps import Call, Done, Emit, Gather, Operation, Sleep, advance
from lsiorm.errors import LsiormError, ThrottledError

Program = list[tuple[Any, ...]]


def _fails(n: int) -> bool:
    return n % 3 == 0


programs: st.SearchStrategy[Program] = st.recursive(
    st.lists(
        st.one_of(
            st.tuples(st.just("call"), st.integers(0, 50)),
            st.tuples(st.just("emit"), st.integers(0, 50)),
            st.tuples(st.just("sleep")),
        ),
        max_size=6,
    ),
    lambda inner: st.lists(
        st.one_of(
            st.tuples(st.just("call"), st.integers(0, 50)),
            st.tuples(st.just("gather"), st.lists(inner, max_size=3)),
        ),
        max_size=4,
    ),
    max_leaves=12,
)


def operation(program: Program) -> Operation[list[Any]]:
    """Run the program's steps; a failed call is caught and logged, so the run goes on."""
    log: list[Any] = []
    for step in program:
        if step[0] == "call":
            try:
                response = yield Call("GetItem", {"n": step[1]})
            except ThrottledError as exc:
                log.append(("failed", exc.operation))
            else:
                log.append(response["n"])
        elif step[0] == "emit":
            yield Emit(step[1])
        elif step[0] == "sleep":
            yield Sleep(0)
        else:
            log.append((yield Gather(tuple(operation(p) for p in step[1]))))
    return log


def reference(program: Program, emitted: list[Any] | None) -> list[Any]:
    """What running the program must give, computed without any driver."""
    log: list[Any] = []
    for step in program:
        if step[0] == "call":
            log.append(("failed", "GetItem") if _fails(step[1]) else step[1])
        elif step[0] == "emit" and emitted is not None:
            emitted.append(step[1])
        elif step[0] == "gather":
            log.append([reference(p, None) for p in step[1]])
    return log


def _answer(n: int) -> dict[str, Any]:
    if _fails(n):
        raise ClientError(
            {
                "Error": {"Code": "ThrottlingException", "Message": "fake"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            "GetItem",
        )
    return {"n": n}


class Client:
    def get_item(self, n: int) -> dict[str, Any]:
        return _answer(n)


class AsyncClient:
    async def get_item(self, n: int) -> dict[str, Any]:
        await asyncio.sleep(0)
        return _answer(n)


@given(programs)
def test_both_drivers_agree_with_the_reference(program: Program) -> None:
    emitted: list[Any] = []
    expected = reference(program, emitted)
    assert SyncDriver(Client()).run(operation(program)) == expected
    assert asyncio.run(AsyncDriver(AsyncClient()).run(operation(program))) == expected
    assert list(SyncDriver(Client()).iterate(operation(program))) == emitted

    async def collect() -> list[Any]:
        return [v async for v in AsyncDriver(AsyncClient()).iterate(operation(program))]

    assert asyncio.run(collect()) == emitted


def test_advance_reports_the_end_and_throws_failures_in() -> None:
    def op() -> Operation[str]:
        try:
            yield Call("GetItem", {})
        except LsiormError as exc:
            return f"caught {type(exc).__name__}"
        return "answered"

    started = op()
    assert advance(started) == Call("GetItem", {})
    assert advance(started, {"Item": {}}) == Done("answered")

    failing = op()
    advance(failing)
    end = advance(failing, error=ThrottledError("slow down", code="ThrottlingException"))
    assert end == Done("caught ThrottledError")


class _Failed(Exception):
    """An operation's own failure (not a request's): it escapes the operation."""


@given(
    st.lists(st.tuples(st.integers(1, 4), st.booleans()), max_size=12),
    st.integers(1, 5),
)
def test_async_gather_keeps_its_limit_busy_and_raises_the_first_failure_last(
    shapes: list[tuple[int, bool]], limit: int
) -> None:
    """At most ``limit`` operations run at once and, while enough are left, exactly that many;
    every operation runs to its end even when one fails; results (or the first failure, in the
    operations' order) come back in order."""
    running: list[int] = []
    peak: list[int] = [0]
    finished: list[int] = []

    def op(index: int, sleeps: int, fails: bool) -> Operation[int]:
        running.append(index)
        peak[0] = max(peak[0], len(running))
        for _ in range(sleeps):
            yield Sleep(0)
        running.remove(index)
        finished.append(index)
        if fails:
            raise _Failed(index)
        return index * 10

    def gather() -> Operation[Any]:
        ops = tuple(op(i, sleeps, fails) for i, (sleeps, fails) in enumerate(shapes))
        return (yield Gather(ops, limit=limit))

    failures = [i for i, (_, fails) in enumerate(shapes) if fails]
    if failures:
        with pytest.raises(_Failed) as raised:
            asyncio.run(AsyncDriver(AsyncClient()).run(gather()))
        assert raised.value.args == (failures[0],)
    else:
        result = asyncio.run(AsyncDriver(AsyncClient()).run(gather()))
        assert result == [i * 10 for i in range(len(shapes))]
    assert sorted(finished) == list(range(len(shapes)))
    assert peak[0] == min(limit, len(shapes))
