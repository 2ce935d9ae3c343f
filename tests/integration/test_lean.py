"""The lean lane on the engines: same requests and results as botocore's lane, sync and async."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, Session, Table, query
from lsiorm._io import lean
from lsiorm._ops.steps import Call
from lsiorm.errors import ConditionFailedError
from support.lanes import Notes, normal, recorded
from support.models import declare_scored_doc


def run_scenario(session: Session, table: Table, doc: type[Entity]) -> list[Any]:
    """Run every data-plane operation and return each request and what came back."""
    with recorded(session) as notes:
        _scenario(session, doc)
    return notes.seen


def _scenario(session: Session, doc: type[Entity]) -> None:
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
    plain, lean_run = (normal(r, n) for r, n in zip(runs, names, strict=True))
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

    assert normal(runs[1], names[1]) == normal(runs[0], names[0])
