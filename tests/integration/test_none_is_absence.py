"""None is absence: never stored as NULL, read back as None, and the same for every write path.

A put omits None fields, an update REMOVEs them, and an absent attribute reads as None. So a
condition, a version check or an ADD sees the same item after a put, an update or a read
followed by a write. Items written by older versions, which hold NULL, still read as None.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import Session, not_exists, query, where
from support.models import DEFAULTS_TABLE, WithDefaults, declare_optional_doc
from support.tables import session_with


@pytest.fixture
def world(endpoint_url: str, dynamodb_client: Any) -> Iterator[tuple[Session, Any, type[Any]]]:
    table, doc = declare_optional_doc()
    with session_with(endpoint_url, table) as session:
        yield session, dynamodb_client, doc


def raw(client: Any, doc: type[Any], did: str) -> dict[str, Any]:
    table = doc.__lsiorm__.table
    item: dict[str, Any] = client.get_item(
        TableName=table.name, Key={"pk": {"S": f"D#{did}"}, "sk": {"S": "D"}}, ConsistentRead=True
    ).get("Item", {})
    return item


def test_put_omits_none_and_reads_back_none(world: tuple[Session, Any, type[Any]]) -> None:
    session, client, doc = world
    stored = session.put(doc(did="a", note=None))
    item = raw(client, doc, "a")
    assert not any("NULL" in av for av in item.values()), item
    assert {"status", "rev", "hits", "note", "tags", "gpk", "gsk"}.isdisjoint(item)
    # A condition on None matches the absent attribute.
    session.put(stored, condition=where(status=None) & where(note=None))
    assert session.get(doc, did="a", consistent=True) == stored


def test_update_to_none_removes_and_next_put_stays_absent(
    world: tuple[Session, Any, type[Any]],
) -> None:
    session, client, doc = world
    session.put(doc(did="a", note="n", status="open", rev=1))
    updated = session.update(doc, did="a", set={"note": None, "status": None})
    assert updated.note is None
    assert updated.status is None
    item = raw(client, doc, "a")
    assert {"note", "status", "gpk"}.isdisjoint(item)
    assert item["gsk"] == {"S": "R#00001"}  # its template does not use status
    again = session.put(updated)  # a read followed by a write
    assert {"note", "status"}.isdisjoint(raw(client, doc, "a"))
    assert session.get(doc, did="a", consistent=True) == again


def test_a_required_field_that_allows_none_can_be_removed(
    world: tuple[Session, Any, type[Any]],
) -> None:
    session, client, doc = world
    session.put(doc(did="r", note="n"))
    cleared = session.update(doc, did="r", remove=["note"])
    assert cleared.note is None
    assert "note" not in raw(client, doc, "r")
    assert session.get(doc, did="r", consistent=True) == cleared


def test_update_through_an_instance_with_a_none_template_field(
    world: tuple[Session, Any, type[Any]],
) -> None:
    session, client, doc = world
    stored = session.put(doc(did="a", note=None, status=None))
    # gsk needs rev; status (gpk's field) is None: the update requires it to be absent, and
    # the put left it absent, so the condition holds.
    updated = session.update(stored, set={"rev": 5})
    assert updated.rev == 5
    assert updated.status is None
    assert "gsk" in raw(client, doc, "a")
    assert "gpk" not in raw(client, doc, "a")


def test_conditions_and_add_see_none_as_absent_after_every_write(
    world: tuple[Session, Any, type[Any]],
) -> None:
    session, _client, doc = world
    session.put(doc(did="p", note=None))  # written by put
    session.put(doc(did="u", note="x", hits=3))
    session.update(doc, did="u", set={"note": None, "hits": None})  # written by update
    read = session.get(doc, did="u", consistent=True)
    session.put(read)  # read, then written back
    for did in ("p", "u"):
        after = session.update(
            doc, did=did, add={"hits": 2}, condition=where(note=not_exists()) & where(hits=None)
        )
        assert after.hits == 2


def test_an_old_item_holding_null_reads_as_none(world: tuple[Session, Any, type[Any]]) -> None:
    session, client, doc = world
    table = doc.__lsiorm__.table
    client.put_item(
        TableName=table.name,
        Item={
            "pk": {"S": "D#old"},
            "sk": {"S": "D"},
            "_type": {"S": "Doc"},
            "did": {"S": "old"},
            "status": {"NULL": True},
            "hits": {"NULL": True},
            "note": {"NULL": True},
        },
    )
    old = session.get(doc, did="old", consistent=True)
    assert old == doc(did="old", note=None)
    session.put(old)
    assert {"status", "hits", "note"}.isdisjoint(raw(client, doc, "old"))


def test_none_reads_back_as_none_through_a_query(endpoint_url: str) -> None:
    with session_with(endpoint_url, DEFAULTS_TABLE) as session:
        stored = session.put(WithDefaults(wid="q", count=None, labels=None, must=None))
        assert session.get(WithDefaults, wid="q") == stored
        assert session.all(query(WithDefaults).where(wid="q")) == [stored]
        assert stored.count is None
