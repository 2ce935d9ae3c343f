"""The stored item on a failed condition, on both engines, sync (both request lanes) and async.

Each write below fails its condition; the error carries the item DynamoDB returned with the
failure, decoded as its entity, and the hook counts prove that no read was sent to get it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import AsyncSession, Delete, Entity, Put, Session, Table, Update, cond
from lsiorm.errors import ConditionFailedError, StaleVersionError, TransactionCanceledError
from lsiorm.testing import created_tables

table = Table(f"cond_item_{uuid.uuid4().hex[:8]}", "PK", "SK")


class Doc(Entity, table=table, keys={"PK": "D#{name}", "SK": "DOC"}, version="v"):
    name: str
    body: str = ""
    v: int = 0


class Note(Entity, table=table, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str
    text: str = ""


class Sent:
    """A hook that records the operation of every request sent."""

    def __init__(self) -> None:
        self.operations: list[str] = []

    def before(self, request: Any) -> None:
        self.operations.append(request.operation)


@pytest.fixture(scope="module")
def created(endpoint_url: str) -> Iterator[str]:
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1") as session,
        created_tables(session, table),
    ):
        yield endpoint_url


@pytest.fixture(params=[True, False], ids=["lean", "botocore"])
def lane(request: pytest.FixtureRequest) -> bool:
    lean: bool = request.param
    return lean


def _name() -> str:
    return uuid.uuid4().hex[:8]


def test_each_sync_write_carries_the_stored_entity(created: str, lane: bool) -> None:
    sent = Sent()
    with Session(endpoint_url=created, region_name="us-east-1", hooks=[sent], lean=lane) as s:
        note = s.put(Note(name=_name(), text="first"))
        doc = s.put(Doc(name=_name(), body="first"))
        s.update(doc, set={"body": "second"})  # the stored version is now 2
        sent.operations.clear()

        with pytest.raises(ConditionFailedError) as put:
            s.put(Note(name=note.name, text="again"), create_only=True)
        assert put.value.item == note

        with pytest.raises(ConditionFailedError) as update:
            s.update(Note, name=note.name, set={"text": "x"}, condition=cond("text") == "no")
        assert update.value.item == note

        with pytest.raises(ConditionFailedError) as delete:
            s.delete(Note, name=note.name, condition=cond("text") == "no")
        assert delete.value.item == note

        stored = Doc(name=doc.name, body="second", v=2)
        with pytest.raises(StaleVersionError) as stale_put:
            s.put(doc.model_copy(update={"body": "third"}))
        with pytest.raises(StaleVersionError) as stale_update:
            s.update(doc, set={"body": "third"})
        with pytest.raises(StaleVersionError) as stale_delete:
            s.delete(doc)
        for stale in (stale_put, stale_update, stale_delete):
            assert stale.value.item == stored
            assert (stale.value.expected_version, stale.value.stored_version) == (1, 2)
        writes = ["PutItem", "UpdateItem", "DeleteItem"]
        assert sent.operations == [*writes, *writes], "the failures sent no read"


def test_a_cancelled_transaction_carries_each_stored_entity(created: str, lane: bool) -> None:
    with Session(endpoint_url=created, region_name="us-east-1", lean=lane) as s:
        note = s.put(Note(name=_name(), text="kept"))
        doc = s.put(Doc(name=_name()))
        with pytest.raises(TransactionCanceledError) as caught:
            s.transact_write(
                [
                    Put(Note(name=note.name), create_only=True),
                    Update(Doc, {"name": doc.name}, set={"body": "b"}, condition=cond("v") == 9),
                    Delete(Note, {"name": _name()}),
                ]
            )
        reasons = caught.value.reasons
        assert [r.code for r in reasons] == [
            "ConditionalCheckFailed",
            "ConditionalCheckFailed",
            "None",
        ]
        assert [r.item for r in reasons] == [note, doc, None]


async def test_each_async_write_carries_the_stored_entity(created: str) -> None:
    sent = Sent()
    async with AsyncSession(endpoint_url=created, region_name="us-east-1", hooks=[sent]) as s:
        note = await s.put(Note(name=_name(), text="first"))
        doc = await s.put(Doc(name=_name()))
        fresh = await s.update(doc, set={"body": "second"})
        sent.operations.clear()
        with pytest.raises(ConditionFailedError) as put:
            await s.put(Note(name=note.name), create_only=True)
        assert put.value.item == note
        with pytest.raises(ConditionFailedError) as update:
            await s.update(Note, name=note.name, set={"text": "x"}, condition=cond("text") == "n")
        assert update.value.item == note
        with pytest.raises(ConditionFailedError) as delete:
            await s.delete(Note, name=note.name, condition=cond("text") == "n")
        assert delete.value.item == note
        with pytest.raises(StaleVersionError) as stale:
            await s.update(doc, set={"body": "third"})
        assert stale.value.item == fresh
        assert stale.value.stored_version == 2
        with pytest.raises(TransactionCanceledError) as cancelled:
            await s.transact_write([Put(doc.model_copy(update={"body": "t"}))])
        assert cancelled.value.reasons[0].item == fresh
        writes = ["PutItem", "UpdateItem", "DeleteItem", "UpdateItem", "TransactWriteItems"]
        assert sent.operations == writes
