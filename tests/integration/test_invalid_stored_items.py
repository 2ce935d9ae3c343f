"""A stored item that does not fit its entity: every read path raises the same typed error.

Another tool (here boto3, by hand) wrote an item whose ``body`` is a number and another without
its required ``body``. Get, query (whole and partial), batch get, transact get and the
conditional writes that return the old item all raise lsiorm's ``ValidationError`` with the
rule ``item.invalid``, naming the table and the item's key, with Pydantic's error as cause.
Items that fit are read as usual around them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from lsiorm import Entity, Get, Session, Table, ValidationError, query

WIRE_BODY_NUMBER = {"body": {"N": "5"}}


def declare(table_name: str) -> tuple[Table, type[Entity]]:
    table = Table(table_name, "pk", "sk")

    class Note(Entity, table=table, keys={"pk": "U#{user}", "sk": "NOTE#{n:03d}"}):
        user: str
        n: int
        body: str
        tag: str | None = None

    return table, Note


def _stored(note: type[Entity], n: int, **changes: Any) -> dict[str, Any]:
    wire = note(user="ann", n=n, body=f"b{n}", tag="t").to_wire()
    for name, av in changes.items():
        if av is None:
            wire.pop(name)
        else:
            wire[name] = av
    return wire


def _refused(read: Callable[[], object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        read()
    error = caught.value
    assert error.rule == "item.invalid"
    assert isinstance(error.__cause__, PydanticValidationError)
    assert "body" in str(error)
    return error


def test_every_read_of_an_item_that_does_not_fit_raises_item_invalid(
    session: Session, dynamodb_client: Any, table_name: str
) -> None:
    table, note = declare(table_name)
    session.create_table(table)
    good = _stored(note, 1)
    bad_type = _stored(note, 2, body={"N": "5"})
    missing = _stored(note, 3, body=None)
    for item in (good, bad_type, missing):
        dynamodb_client.put_item(TableName=table_name, Item=item)

    assert session.get(note, user="ann", n=1) == note(user="ann", n=1, body="b1", tag="t")
    for n in (2, 3):
        error = _refused(lambda n=n: session.get(note, user="ann", n=n))  # type: ignore[misc]
        assert error.table == table_name
        assert error.key == {"pk": "U#ann", "sk": f"NOTE#{n:03d}"}
        assert note.__name__ in str(error)

    # A query stops at the first item that does not fit; one that ends before it reads on.
    whole = query(note).where(user="ann")
    _refused(lambda: session.all(whole))
    assert [x.n for x in session.all(whole.limit(1))] == [1]  # type: ignore[attr-defined]
    _refused(lambda: session.all(whole.select("n", "body")))
    assert [x.n for x in session.all(whole.select("n", "tag"))] == [1, 2, 3]  # type: ignore[attr-defined]

    keys = [{"user": "ann", "n": n} for n in (1, 2)]
    _refused(lambda: session.batch_get(note, keys))
    _refused(lambda: session.transact_get([Get(note, key) for key in keys]))

    # A delete that returns the old item reports it, and the item is gone all the same.
    _refused(lambda: session.delete_result(note, user="ann", n=3))
    assert "Item" not in dynamodb_client.get_item(
        TableName=table_name, Key={"pk": {"S": "U#ann"}, "sk": {"S": "NOTE#003"}}
    )
