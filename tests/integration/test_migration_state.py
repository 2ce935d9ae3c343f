"""A migration's state in the ledger, on both engines: typed attributes, one writer per version
(another process's save is refused; a save whose answer was lost is this one's), and a state
the earlier format wrote refused with what to do."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from lsiorm import Session, ValidationError, ledger_table
from lsiorm._jobs.ledger import LedgerLocation
from lsiorm._migration.plan import MigrationStore
from lsiorm.testing import FaultInjector


@pytest.fixture
def store(session: Session, table_name: str) -> Iterator[MigrationStore]:
    session.create_table(ledger_table(table_name))
    try:
        yield MigrationStore(session.ctx, LedgerLocation(table_name, "PK", "SK"))
    finally:
        session.delete_table(ledger_table(table_name))


def test_the_state_is_kept_as_typed_attributes_and_read_back(
    session: Session, store: MigrationStore, table_name: str
) -> None:
    state = store.entities.state(
        id="m1",
        declaration={"kind": "migration", "source": "Old", "destination": "New"},
        worker={"page_size": None, "concurrency": 8, "keys": [["PK", "S"]]},
    )
    session.run(store.save(state))
    state.phase, state.lag, state.verify = "catch-up", [2, 0.5], {"clean": True, "source": 3}
    session.run(store.save(state))
    session.run(store.save_dual("m1", since=1_700_000_000.25, reads="source"))
    raw = session.client.get_item(
        TableName=table_name,
        Key={"PK": {"S": "~lsiorm#jobs"}, "SK": {"S": "migration#m1"}},
        ConsistentRead=True,
    )["Item"]
    assert raw["version"] == {"N": "2"}
    assert raw["worker"]["M"]["concurrency"] == {"N": "8"}
    assert raw["lag"] == {"L": [{"N": "2"}, {"N": "0.5"}]}
    assert "data" not in raw
    loaded = session.run(store.load("m1"))
    assert loaded == state
    assert (loaded.version, loaded.worker["concurrency"]) == (2, 8)
    assert session.run(store.states()) == [state]  # the dual writes' item is not a state
    assert session.run(store.load_dual("m1")) == {"since": 1_700_000_000.25, "reads": "source"}
    assert session.run(store.load("other")) is None


def test_of_two_processes_saving_one_version_the_second_is_refused(
    session: Session, store: MigrationStore
) -> None:
    session.run(store.save(store.entities.state(id="m1", declaration={})))
    one, two = session.run(store.load("m1")), session.run(store.load("m1"))
    one.applied, two.applied = 10, 20
    session.run(store.save(one))
    with pytest.raises(ValidationError) as caught:
        session.run(store.save(two))
    assert caught.value.rule == "migrate.concurrent"
    assert session.run(store.load("m1")).applied == 10
    with pytest.raises(ValidationError):  # a second first save: created meanwhile
        session.run(store.save(store.entities.state(id="m1", declaration={})))


def test_a_save_whose_answer_was_lost_is_this_ones(session: Session, store: MigrationStore) -> None:
    state = store.entities.state(id="m1", declaration={})
    session.run(store.save(state))
    state.applied = 5
    with FaultInjector() as faults:
        faults.lose_answer("PutItem", times=1)
        session.run(store.save(state))  # applied; its resend meets version 2: its own
        assert dict(faults.stats)["lost-answer"] == 1
    assert state.version == 2
    assert session.run(store.load("m1")) == state


def test_a_state_the_earlier_format_wrote_is_refused_with_what_to_do(
    session: Session, store: MigrationStore, table_name: str
) -> None:
    earlier = {"id": "m1", "declaration": {"kind": "migration"}, "phase": "copy", "version": 3}
    session.client.put_item(
        TableName=table_name,
        Item={
            "PK": {"S": "~lsiorm#jobs"},
            "SK": {"S": "migration#m1"},
            "data": {"S": json.dumps(earlier)},
            "phase": {"S": "copy"},
            "version": {"N": "3"},
        },
    )
    for op in (store.load("m1"), store.states()):
        with pytest.raises(ValidationError, match="earlier lsiorm") as caught:
            session.run(op)
        assert caught.value.rule == "ledger.old-format"
        assert "Finish the migration" in str(caught.value)
