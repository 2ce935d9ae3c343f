"""One model on tables chosen at run time (`Entity.bound_to`), on both engines: their names
and key attribute names differ, and each bound class reads and writes its own table."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lsiorm import Entity, Session, Table, cond, query
from lsiorm.errors import ConditionFailedError, StaleVersionError


class Lease(Entity):
    """Fields only: which worker holds a unit, until when."""

    unit: str
    owner: str | None = None
    until: float = 0.0
    runs: int = 0


@pytest.fixture
def tables(session: Session) -> Iterator[list[Table]]:
    tag = uuid.uuid4().hex[:10]
    made = [Table(f"bound_a_{tag}", "PK", "SK"), Table(f"bound_b_{tag}", "tenant", "item")]
    for table in made:
        session.create_table(table)
    yield made
    for table in made:
        session.delete_table(table, wait=False)


def test_one_model_reads_and_writes_tables_chosen_at_run_time(
    session: Session, tables: list[Table]
) -> None:
    bound = [
        Lease.bound_to(t, {t.partition_key.name: "~leases", t.sort_key.name: "unit#{unit}"})
        for t in tables
    ]
    for n, Bound in enumerate(bound):
        session.put(Bound(unit=f"u{n}"), create_only=True)
    for n, Bound in enumerate(bound):
        # each class finds its own table's item, under that table's key attribute names
        assert [x.unit for x in session.all(query(Bound).where(unit=f"u{n}"))] == [f"u{n}"]
        assert session.get(Bound, unit=f"u{1 - n}", consistent=True) is None
    raw = session.client.get_item(
        TableName=tables[1].name,
        Key={"tenant": {"S": "~leases"}, "item": {"S": "unit#u1"}},
        ConsistentRead=True,
    )["Item"]
    assert (raw["tenant"], raw["item"], raw["unit"]) == (
        {"S": "~leases"},
        {"S": "unit#u1"},
        {"S": "u1"},
    )
    assert "owner" not in raw  # None is absence


def test_a_lease_taken_with_a_conditional_update_on_a_bound_entity(
    session: Session, tables: list[Table]
) -> None:
    t = tables[1]
    Bound = Lease.bound_to(t, {"tenant": "~leases", "item": "unit#{unit}"}, type_attribute=None)
    session.put(Bound(unit="u1"))
    free = cond("owner").not_exists() | (cond("until") < 100.0)
    taken = session.update(
        Bound, unit="u1", set={"owner": "w1", "until": 160.0}, add={"runs": 1}, condition=free
    )
    assert (taken.owner, taken.until, taken.runs) == ("w1", 160.0, 1)
    with pytest.raises(ConditionFailedError):  # held by w1 until 160
        session.update(Bound, unit="u1", set={"owner": "w2"}, add={"runs": 1}, condition=free)
    assert session.get(Bound, unit="u1", consistent=True) == taken


class Note(Entity):
    """Fields only, with a version: each write checks the version it read."""

    name: str
    text: str = ""
    version: int = 0


def test_a_bound_entity_with_a_version_writes_over_the_version_it_read_only(
    session: Session, tables: list[Table]
) -> None:
    t = tables[1]
    Bound = Note.bound_to(t, {"tenant": "~notes", "item": "note#{name}"}, version="version")
    first = session.put(Bound(name="n1", text="a"))
    assert first.version == 1
    second = session.put(first.model_copy(update={"text": "b"}))
    assert second.version == 2
    with pytest.raises(StaleVersionError) as caught:  # written from the first copy again
        session.put(first.model_copy(update={"text": "c"}))
    assert (caught.value.expected_version, caught.value.stored_version) == (1, 2)
    with pytest.raises(ConditionFailedError):  # a new one where one exists
        session.put(Bound(name="n1", text="d"))
    assert session.get(Bound, name="n1", consistent=True) == second
