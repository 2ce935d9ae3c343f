"""The stream handler on records each engine's stream gives, wrapped as Lambda wraps them, with
its marks in a table on the engine: a redelivered batch applies nothing twice."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import ChangeEvent, Session, Table, stream_handler
from lsiorm.testing import created_tables
from support.stream_records import Customer, Order, record_changes, redeliver, shop, shop_story


@pytest.fixture
def marks(session: Session) -> Iterator[Table]:
    table = Table(f"marks_{uuid.uuid4().hex[:8]}", "PK", ttl_attribute="expires")
    with created_tables(session, table):
        yield table


def test_the_engines_records_reach_the_function_typed_and_in_order(endpoint_url: str) -> None:
    event, _ = record_changes(endpoint_url, "NEW_AND_OLD_IMAGES", shop_story)
    assert all(r["eventSource"] == "aws:dynamodb" and r["eventSourceARN"] for r in event["Records"])
    seen: list[tuple[str, str, Any]] = []

    @stream_handler(shop)
    def handler(change: ChangeEvent[Customer | Order]) -> None:
        assert change.entity_type is not None
        seen.append((change.name, change.entity_type.__name__, change.entity))

    assert handler(event, None) == {"batchItemFailures": []}
    assert seen == [
        ("INSERT", "Customer", Customer(cid="c1", email="ann@example.com")),
        ("INSERT", "Order", Order(cid="c1", oid="7", total=42, v=1)),
        ("MODIFY", "Order", Order(cid="c1", oid="7", total=40, v=2)),
        ("MODIFY", "Customer", Customer(cid="c1", email="ann@example.org")),
        ("REMOVE", "Order", Order(cid="c1", oid="7", total=40, v=2)),
    ]


def test_keys_only_records_name_their_entity(endpoint_url: str) -> None:
    event, _ = record_changes(endpoint_url, "KEYS_ONLY", shop_story)
    seen: list[tuple[str, Any, dict[str, Any]]] = []
    handler = stream_handler(shop, unknown="pass")(
        lambda c: seen.append((c.name, c.entity_type, c.keys))
    )
    handler(event, None)
    assert [(name, kind) for name, kind, _ in seen] == [
        ("INSERT", Customer),
        ("INSERT", Order),
        ("MODIFY", Order),
        ("INSERT", None),
        ("MODIFY", Customer),
        ("REMOVE", Order),
    ]
    assert seen[1][2] == {"PK": "C#c1", "SK": "O#7"}


def test_a_failure_and_lambdas_redeliveries_apply_each_change_once(
    endpoint_url: str, session: Session, marks: Table
) -> None:
    event, _ = record_changes(endpoint_url, "NEW_AND_OLD_IMAGES", shop_story)
    records = event["Records"]
    applied: list[str] = []
    fails = {records[1]["eventID"]: 1}  # the order's INSERT fails once

    @stream_handler(shop, idempotency=marks, session=session)
    def handler(change: ChangeEvent[Any]) -> None:
        if fails.get(change.event_id):
            fails[change.event_id] -= 1
            raise RuntimeError("downstream is down")
        applied.append(change.event_id)

    first = handler.handle(event)
    assert [f.event_id for f in first.failed] == [records[1]["eventID"]]
    batch = redeliver(records, first.response)
    assert batch == records[1:]
    second = handler.handle({"Records": batch})
    # The customer's MODIFY ran in the first delivery; the redelivery skips it by its mark.
    assert second.duplicates == [records[4]["dynamodb"]["SequenceNumber"]]
    assert redeliver(batch, second.response) == []
    expected = [r["eventID"] for i, r in enumerate(records) if i != 3]  # 3: no entity, skipped
    assert sorted(applied) == sorted(expected)
    assert len(applied) == len(set(applied))
    assert applied.index(records[1]["eventID"]) < applied.index(records[2]["eventID"])
    again = handler.handle(event)
    assert again.applied == []
    assert len(again.duplicates) == 5
