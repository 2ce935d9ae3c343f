"""Collection audit: sizes measured by reading collections back, on both engines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, Session, Table
from lsiorm._ops.audit import CollectionSize, audit_collection, largest_collections
from lsiorm._ops.hooks import HookRequest
from lsiorm.errors import ValidationError
from support.audits import ITEMS_OF_A, OTHERS, audit_table, expected_a
from support.tables import session_with


class QueryLog:
    """A hook that records every request, to see the pages an audit reads."""

    def __init__(self) -> None:
        self.requests: list[HookRequest] = []

    def before(self, request: HookRequest) -> None:
        self.requests.append(request)


@pytest.fixture
def log() -> QueryLog:
    return QueryLog()


@pytest.fixture
def filled(endpoint_url: str, table_name: str, log: QueryLog) -> Iterator[tuple[Session, Table]]:
    table = audit_table(table_name)
    with session_with(endpoint_url, table, wait=False) as session:
        for item in [*ITEMS_OF_A, *OTHERS]:
            session.client.put_item(TableName=table.name, Item=item)
        session.add_hook(log)
        yield session, table


def test_audit_reads_one_collection_in_consistent_pages(
    filled: tuple[Session, Table], log: QueryLog
) -> None:
    session, table = filled
    size = session.run(audit_collection(session.ctx, table, "A", page_size=2))
    assert size == expected_a(table)
    queries = [r.params for r in log.requests]
    assert len(queries) >= 2  # three items in pages of two
    assert all(q["ConsistentRead"] is True and q["Limit"] == 2 for q in queries)
    assert "ExclusiveStartKey" in queries[1]


def test_audit_of_an_empty_collection_is_zero(filled: tuple[Session, Table]) -> None:
    session, table = filled
    size = session.run(audit_collection(session.ctx, table, {"S": "nobody"}))
    assert size == CollectionSize(table.name, "PK", "nobody", 0, 0, {"ByA": 0, "ByB": 0})


def test_audit_refuses_a_key_of_the_wrong_type(filled: tuple[Session, Table]) -> None:
    session, table = filled
    with pytest.raises(ValidationError) as caught:
        session.run(audit_collection(session.ctx, table, 7))
    assert caught.value.rule == "audit.key-type"
    assert "an entity of the collection" in str(caught.value)


def test_audit_takes_an_entity_of_the_collection(filled: tuple[Session, Table]) -> None:
    session, table = filled

    class Note(Entity, table=table, keys={"PK": "{group}", "SK": "N#{n}"}, type_attribute=None):
        group: str
        n: str

    assert session.audit_collection(table, Note(group="A", n="9")) == expected_a(table)
    with pytest.raises(ValidationError) as caught:
        session.audit_collection(audit_table(f"{table.name}-other"), Note(group="A", n="9"))
    assert caught.value.rule == "audit.entity-table"


def test_largest_collections_scans_and_ranks(filled: tuple[Session, Table], log: QueryLog) -> None:
    session, table = filled
    everything = session.run(largest_collections(session.ctx, table, 0, page_size=2))
    assert [(c.key, c.items) for c in everything] == [("B", 1), ("A", 3), ("C", 1)]
    assert everything[1] == expected_a(table)
    # B: item 3 + 3 + 1004 + 3 = 1013, plus 100, and its ByA entry the same; C: 510 + 100.
    assert [c.total_bytes for c in everything] == [2 * 1113, 796, 610]
    assert len(log.requests) >= 3  # five items in pages of two
    assert all(r.operation == "Scan" for r in log.requests)
    top = session.run(largest_collections(session.ctx, table, 0, limit=1))
    assert [c.key for c in top] == ["B"]
    over = session.run(largest_collections(session.ctx, table, 800 / 2**30))
    assert [c.key for c in over] == ["B"]
    assert session.run(largest_collections(session.ctx, table)) == []  # below 8 GB
    with pytest.raises(ValidationError):
        session.run(largest_collections(session.ctx, table, -1.0))


async def test_audit_runs_on_the_async_session(
    filled: tuple[Session, Table], endpoint_url: str
) -> None:
    _, table = filled
    async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        size: Any = await session.run(audit_collection(session.ctx, table, "A", page_size=1))
        ranked: Any = await session.run(largest_collections(session.ctx, table, 0))
    assert size == expected_a(table)
    assert [c.key for c in ranked] == ["B", "A", "C"]
