"""The consumed-capacity meter: what it asks for, what it adds up and where it reports it.

A stub client answers with canned ConsumedCapacity figures, so the mechanism is tested without
an engine (the figures themselves are proven against DynamoDB Local in
tests/integration/test_capacity_differential.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lsiorm import (
    AsyncSession,
    ConsumedCapacity,
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    ReadEstimate,
    Session,
    Table,
    query,
    scan,
)

TABLE = Table(
    "Meter",
    "PK",
    "SK",
    local_indexes=[LocalIndex("ByDay", KeyAttribute("Day"), Projection.keys_only())],
)


class Event(Entity, table=TABLE, keys={"PK": "E#{source}", "SK": "{eid}", "Day": "{day}"}):
    source: str
    eid: str
    day: str | None = None


def consumed(units: float, index: float = 0.0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "TableName": "Meter",
        "CapacityUnits": units + index,
        "Table": {"CapacityUnits": units},
    }
    if index:
        out["LocalSecondaryIndexes"] = {"ByDay": {"CapacityUnits": index}}
    return out


def item(eid: str) -> dict[str, Any]:
    return {
        "PK": {"S": "E#s"},
        "SK": {"S": eid},
        "_type": {"S": "Event"},
        "source": {"S": "s"},
        "eid": {"S": eid},
    }


class StubClient:
    """Answers every call; records the params; returns ConsumedCapacity only when asked."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def _answer(self, operation: str, params: dict[str, Any], body: dict[str, Any]) -> Any:
        self.sent.append((operation, params))
        if params.get("ReturnConsumedCapacity") == "INDEXES":
            units = consumed(1.0, 2.0) if operation == "PutItem" else consumed(0.5)
            listed = operation.startswith(("Batch", "Transact"))
            body["ConsumedCapacity"] = [units] if listed else units
        return body

    def put_item(self, **params: Any) -> Any:
        return self._answer("PutItem", params, {})

    def get_item(self, **params: Any) -> Any:
        return self._answer("GetItem", params, {"Item": item("1")})

    def query(self, **params: Any) -> Any:
        start = params.get("ExclusiveStartKey")
        if params.get("Select") == "COUNT":
            return self._answer("Query", params, {"Count": 3, "ScannedCount": 3})
        if start is None:
            body = {"Items": [item("1")], "Count": 1, "ScannedCount": 1}
            body["LastEvaluatedKey"] = {"PK": {"S": "E#s"}, "SK": {"S": "1"}}
            return self._answer("Query", params, body)
        return self._answer("Query", params, {"Items": [item("2")], "Count": 1, "ScannedCount": 1})

    def scan(self, **params: Any) -> Any:
        return self._answer("Scan", params, {"Items": [], "Count": 0, "ScannedCount": 0})

    def batch_write_item(self, **params: Any) -> Any:
        return self._answer("BatchWriteItem", params, {"UnprocessedItems": {}})

    def describe_table(self, **params: Any) -> Any:
        return self._answer("DescribeTable", params, {"Table": {"TableStatus": "ACTIVE"}})


class AsyncStub(StubClient):
    """The same answers, awaited."""

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name.startswith("_") or name == "sent" or not callable(attr):
            return attr

        async def call(**params: Any) -> Any:
            return attr(**params)

        return call


def test_off_by_default_nothing_is_asked_or_reported() -> None:
    client = StubClient()
    session = Session(client)
    session.put(Event(source="s", eid="1"))
    ((_, params),) = client.sent
    assert "ReturnConsumedCapacity" not in params
    assert session.capacity.last == ()
    assert session.capacity.total == 0
    assert session.page(query(Event).where(source="s")).consumed == ()


def test_enabled_every_read_and_write_asks_and_is_metered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = StubClient()
    session = Session(client, consumed_capacity=True)
    caplog.set_level(logging.INFO, logger="lsiorm.capacity")
    session.put(Event(source="s", eid="1", day="d"))
    assert client.sent[-1][1]["ReturnConsumedCapacity"] == "INDEXES"
    assert session.capacity.last == (ConsumedCapacity("Meter", 1.0, {"ByDay": 2.0}),)
    assert "PutItem Meter: 3 units: table 1 + ByDay 2" in caplog.text
    session.get(Event, source="s", eid="1")
    assert session.capacity.last == (ConsumedCapacity("Meter", 0.5),)
    assert session.count(query(Event).where(source="s")) == 3
    assert session.capacity.last == (ConsumedCapacity("Meter", 0.5),)
    assert session.capacity.totals == {"Meter": ConsumedCapacity("Meter", 2.0, {"ByDay": 2.0})}
    assert session.capacity.total == 4.0
    session.capacity.reset()
    assert session.capacity.total == 0
    assert session.capacity.last == ()


def test_each_page_carries_its_own_requests_and_the_call_their_sum() -> None:
    session = Session(StubClient(), consumed_capacity=True)
    pages = list(session.pages(query(Event).where(source="s")))
    assert [p.consumed for p in pages] == [(ConsumedCapacity("Meter", 0.5),)] * 2
    assert session.capacity.last == (ConsumedCapacity("Meter", 1.0),)
    whole = session.page(query(Event).where(source="s"))
    assert whole.consumed == (ConsumedCapacity("Meter", 1.0),)
    batch = session.batch_write([Event(source="s", eid=str(i)) for i in range(30)])
    assert batch.calls == 2
    assert batch.consumed == (ConsumedCapacity("Meter", 1.0),)  # 0.5 for each of two calls


def test_parallel_segments_are_metered_through_the_gather() -> None:
    client = StubClient()
    session = Session(client, consumed_capacity=True)
    session.all(scan(Event).segments(3))
    assert [p.get("ReturnConsumedCapacity") for _, p in client.sent] == ["INDEXES"] * 3
    assert session.capacity.last == (ConsumedCapacity("Meter", 1.5),)


def test_measure_meters_only_the_calls_inside_the_block() -> None:
    client = StubClient()
    session = Session(client)
    session.get(Event, source="s", eid="1")
    with session.capacity.measure() as measured:
        session.get(Event, source="s", eid="1")
        session.put(Event(source="s", eid="2"))
    session.get(Event, source="s", eid="1")
    asked = [p.get("ReturnConsumedCapacity") for _, p in client.sent]
    assert asked == [None, "INDEXES", "INDEXES", None]
    assert measured.consumed == (ConsumedCapacity("Meter", 1.5, {"ByDay": 2.0}),)
    assert measured.total == 3.5
    assert str(measured) == "Meter: 3.5 units: table 1.5 + ByDay 2"
    assert session.capacity.last == ()


def test_other_requests_are_left_alone() -> None:
    client = StubClient()
    session = Session(client, consumed_capacity=True)
    session.call("DescribeTable", {"TableName": "Meter"})
    assert "ReturnConsumedCapacity" not in client.sent[-1][1]
    assert session.capacity.last == ()


def test_hooks_see_the_consumed_capacity_in_each_response() -> None:
    seen: list[Any] = []

    class Hook:
        def after(self, request: Any, response: dict[str, Any]) -> None:
            seen.append(response.get("ConsumedCapacity"))

    session = Session(StubClient(), consumed_capacity=True, hooks=[Hook()])
    session.put(Event(source="s", eid="1"))
    assert seen == [consumed(1.0, 2.0)]


def test_the_async_session_meters_the_same_way() -> None:
    async def run() -> None:
        async with AsyncSession(AsyncStub(), consumed_capacity=True) as session:
            await session.put(Event(source="s", eid="1", day="d"))
            assert session.capacity.last == (ConsumedCapacity("Meter", 1.0, {"ByDay": 2.0}),)
            pages = [p async for p in session.pages(query(Event).where(source="s"))]
            assert [p.consumed for p in pages] == [(ConsumedCapacity("Meter", 0.5),)] * 2
            assert session.capacity.total == 4.0

    asyncio.run(run())


def test_explain_shows_a_measured_page_beside_the_estimate() -> None:
    session = Session(StubClient(), consumed_capacity=True)
    q = query(Event).where(source="s")
    page = session.page(q)
    text = str(q.explain(sample=page.items).with_measured(page.consumed))
    assert "sample estimate: 0.5 units: table 0.5" in text
    assert "measured: 1 units: table 1" in text
    estimate = q.explain().with_measured(ReadEstimate("Meter", 2.0)).measured
    assert estimate == ReadEstimate("Meter", 2.0)
