"""The lean lane on the engines: same requests and results as botocore's lane, sync and async."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, Session, Table, query
from lsiorm._io import lean
from lsiorm._ops.steps import Call
from lsiorm.errors import ConditionFailedError, LsiormError
from support.models import declare_scored_doc


def _comparable(response: Any) -> Any:
    # ResponseMetadata carries request ids, dates and the like, which differ run to run.
    if isinstance(response, dict):
        return {k: v for k, v in response.items() if k != "ResponseMetadata"}
    return response


class Notes:
    """Each request a driver sent and what came back: a response, or an error's type and text."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @contextmanager
    def of(self, call: Call) -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
        """Note ``call``'s error if one is raised; yield what notes and returns its response."""

        def answered(response: dict[str, Any]) -> dict[str, Any]:
            self.seen.append((call.operation, call.params, _comparable(response)))
            return response

        try:
            yield answered
        except LsiormError as exc:
            self.seen.append((call.operation, call.params, type(exc).__name__, exc.code, str(exc)))
            raise


def run_scenario(session: Session, table: Table, doc: type[Entity]) -> list[Any]:
    """Run every data-plane operation and return each request and what came back."""
    notes = Notes()
    driver = getattr(session.driver, "inner", session.driver)  # under the capacity meter
    send = driver.send

    def recording(call: Call) -> dict[str, Any]:
        with notes.of(call) as answered:
            return answered(send(call))

    driver.send = recording  # type: ignore[method-assign]
    docs = [
        doc(  # type: ignore[call-arg]
            owner=f"o{i % 2}",
            n=i,
            score=i * 7 % 5 if i % 3 else None,
            blob=bytes([i, 255 - i]),
            blobs={bytes([i]), b"\x00\xff"},
            price=Decimal(i) / 4,
            note="é" * i,
            tags=[f"t{j}" for j in range(i % 4)],
        )
        for i in range(40)
    ]
    session.put(docs[0])
    session.put(docs[0], create_only=False)
    with pytest.raises(ConditionFailedError):
        session.put(docs[0], create_only=True)
    session.batch_write(puts=docs[1:30])
    assert session.get(doc, owner="o0", n=0) == docs[0]
    assert session.get(doc, owner="o0", n=999) is None
    session.update(doc, owner="o1", n=1, set={"note": "changed", "blob": b"\x01\x02"})
    found = session.batch_get(doc, [{"owner": f"o{i % 2}", "n": i} for i in range(35)])
    assert len(found) == 30
    everything = session.all(query(doc).where(owner="o0").page_size(4))
    assert len(everything) == 15
    by_score = session.all(query(doc).where(owner="o1", score=3))
    assert all(d.score == 3 for d in by_score)  # type: ignore[attr-defined]
    session.delete(doc, owner="o0", n=2)
    session.batch_write(puts=docs[30:], deletes=[(doc, {"owner": "o0", "n": 4})])
    driver.send = send  # type: ignore[method-assign]
    return notes.seen


@pytest.fixture
def fresh_tables(endpoint_url: str) -> Iterator[list[tuple[Session, Table, type[Entity]]]]:
    made: list[tuple[Session, Table, type[Entity]]] = []
    yield made
    for session, table, _ in made:
        session.delete_table(table)
        session.close()


@pytest.mark.integration
def test_both_lanes_send_the_same_requests_and_get_the_same_results(
    endpoint_url: str, fresh_tables: list[tuple[Session, Table, type[Entity]]]
) -> None:
    runs = []
    for use_lean in (False, True):
        table, doc = declare_scored_doc(f"lean_{uuid.uuid4().hex[:10]}")
        session = Session(endpoint_url=endpoint_url, region_name="us-east-1", lean=use_lean)
        session.create_table(table)
        fresh_tables.append((session, table, doc))
        runs.append(run_scenario(session, table, doc))
        lane = session.driver.lane
        if use_lean:
            assert lane is not None
            assert lane.sent == len(runs[-1])
        else:
            assert lane is None
    names = [t.name for _, t, _ in fresh_tables]
    # The chunks of one batch are sent concurrently and may be recorded in any order: compare
    # the requests and results as a multiset.
    plain, lean_run = (
        sorted(json.dumps(x, default=repr, sort_keys=True).replace(n, "T") for x in r)
        for r, n in zip(runs, names, strict=True)
    )
    assert lean_run == plain


def _lean_session(endpoint_url: str) -> Session:
    session = Session(endpoint_url=endpoint_url, region_name="us-east-1")
    assert session.driver.lane is not None
    return session


@pytest.mark.integration
def test_credentials_are_read_for_every_request(endpoint_url: str, table_name: str) -> None:
    table, doc = declare_scored_doc(table_name)
    session = _lean_session(endpoint_url)
    lane = session.driver.lane
    assert lane is not None
    calls = 0
    frozen = lane._credentials.get_frozen_credentials

    def counting() -> Any:
        nonlocal calls
        calls += 1
        return frozen()

    session.create_table(table)  # botocore's lane, which reads them too
    lane._credentials.get_frozen_credentials = counting
    try:
        for i in range(3):
            session.put(doc(owner="a", n=i))  # type: ignore[call-arg]
        assert calls == lane.sent == 3
    finally:
        session.delete_table(table)


async def run_async_scenario(session: AsyncSession, doc: type[Entity]) -> list[Any]:
    notes = Notes()
    driver = getattr(session.driver, "inner", session.driver)  # under the capacity meter
    send = driver.send

    async def recording(call: Call) -> dict[str, Any]:
        with notes.of(call) as answered:
            return answered(await send(call))

    driver.send = recording  # type: ignore[method-assign]
    docs = [
        doc(owner="o", n=i, blob=bytes([i]), blobs={b"\x01", bytes([i])}, price=Decimal(i) / 8)  # type: ignore[call-arg]
        for i in range(60)
    ]
    await session.put(docs[0])
    with pytest.raises(ConditionFailedError):
        await session.put(docs[0], create_only=True)
    await session.batch_write(puts=docs[1:], concurrency=4)
    assert await session.get(doc, owner="o", n=5) == docs[5]
    assert len(await session.all(query(doc).where(owner="o").page_size(7))) == 60
    assert (
        len(await session.batch_get(doc, [{"owner": "o", "n": i} for i in range(0, 60, 3)])) == 20
    )
    await session.delete(doc, owner="o", n=1)
    driver.send = send  # type: ignore[method-assign]
    return notes.seen


@pytest.mark.integration
async def test_both_async_lanes_send_the_same_requests_and_get_the_same_results(
    endpoint_url: str,
) -> None:
    runs = []
    names = []
    for use_lean in (False, True):
        table, doc = declare_scored_doc(f"alean_{uuid.uuid4().hex[:10]}")
        names.append(table.name)
        async with AsyncSession(
            endpoint_url=endpoint_url, region_name="us-east-1", lean=use_lean
        ) as session:
            await session.create_table(table)
            try:
                runs.append(await run_async_scenario(session, doc))
                lane = session.driver.lane
                if use_lean:
                    assert isinstance(lane, lean.AsyncLeanLane)
                    assert lane.sent == len(runs[-1])  # all but CreateTable and DescribeTable
                else:
                    assert lane is None
            finally:
                await session.delete_table(table)

    def normal(run: list[Any], name: str) -> Any:
        # Concurrent chunks may finish in any order: compare the requests as a multiset.
        return sorted(json.dumps(r, default=repr, sort_keys=True).replace(name, "T") for r in run)

    assert normal(runs[1], names[1]) == normal(runs[0], names[0])
