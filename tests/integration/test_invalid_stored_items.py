"""A stored item that does not fit its entity: every read path raises the same typed error.

Another tool (here boto3, by hand) wrote an item whose ``body`` is a number and another without
its required ``body``. Get, query (whole and partial), batch get, transact get and the
conditional writes that return the old item all raise lsiorm's ``ValidationError`` with the
rule ``item.invalid``, naming the table and the item's key, with Pydantic's error as cause.
Items that fit are read as usual around them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from lsiorm import Entity, Get, Session, Table, ValidationError, query

NOTES = Table("stored_notes", "pk", "sk")


class Note(Entity, table=NOTES, keys={"pk": "U#{user}", "sk": "NOTE#{n:03d}"}):
    user: str
    n: int
    body: str
    tag: str | None = None


@pytest.fixture
def notes(endpoint_url: str, prefix: str) -> Iterator[Session]:
    """A session whose table of notes no other test uses."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        s.create_table(NOTES)
        yield s


def _stored(n: int, **changes: Any) -> dict[str, Any]:
    wire = Note(user="ann", n=n, body=f"b{n}", tag="t").to_wire()
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
    notes: Session, dynamodb_client: Any
) -> None:
    name = notes.table_name(NOTES)
    good = _stored(1)
    bad_type = _stored(2, body={"N": "5"})
    missing = _stored(3, body=None)
    for item in (good, bad_type, missing):
        dynamodb_client.put_item(TableName=name, Item=item)

    assert notes.get(Note, user="ann", n=1) == Note(user="ann", n=1, body="b1", tag="t")
    for n in (2, 3):
        error = _refused(partial(notes.get, Note, user="ann", n=n))
        assert error.table == NOTES.name  # the declared name, as every ValidationError gives it
        assert error.key == {"pk": "U#ann", "sk": f"NOTE#{n:03d}"}
        assert "Note" in str(error)

    # A query stops at the first item that does not fit; one that ends before it reads on.
    whole = query(Note).where(user="ann")
    _refused(lambda: notes.all(whole))
    assert [x.n for x in notes.all(whole.limit(1))] == [1]
    _refused(lambda: notes.all(whole.select("n", "body")))
    assert [x.n for x in notes.all(whole.select("n", "tag"))] == [1, 2, 3]

    keys = [{"user": "ann", "n": n} for n in (1, 2)]
    _refused(lambda: notes.batch_get(Note, keys))
    _refused(lambda: notes.transact_get([Get(Note, key) for key in keys]))

    # A delete that returns the old item reports it, and the item is gone all the same.
    _refused(lambda: notes.delete_result(Note, user="ann", n=3))
    assert "Item" not in dynamodb_client.get_item(
        TableName=name, Key={"pk": {"S": "U#ann"}, "sk": {"S": "NOTE#003"}}
    )
