"""A migration's state in the ledger as lsiorm entities: its requests compared as dictionaries
(pure), the versioned save (one of two writers wins; a lost answer whose resend met itself is
this save's own), and the refusal of a state the earlier format wrote."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import ValidationError
from lsiorm._jobs.ledger import LedgerLocation
from lsiorm._migration.plan import MigrationStore
from lsiorm._migration.state_items import MigrationEntities, MigrationState
from lsiorm._model.entity import decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Sleep, advance
from lsiorm.errors import ConditionFailedError, TransportError

LOCATION = LedgerLocation("Jobs", "PK", "SK")
KEY = {"PK": {"S": "~lsiorm#jobs"}, "SK": {"S": "migration#m1"}}


def store(location: LedgerLocation = LOCATION) -> MigrationStore:
    return MigrationStore(Context(), location)


def state(**fields: Any) -> MigrationState:
    values: dict[str, Any] = {"id": "m1", "declaration": {"kind": "migration", "source": "Old"}}
    return store().entities.state(**{**values, **fields})


def drive(op: Any, answer: Any) -> tuple[Any, list[Call]]:
    """Run ``op``, answering each Call with ``answer(call)`` (an exception is thrown in); the
    retry policy's sleeps pass."""
    calls: list[Call] = []
    step = advance(op)
    while not isinstance(step, Done):
        if isinstance(step, Sleep):
            step = advance(op, None)
            continue
        assert isinstance(step, Call), step
        calls.append(step)
        result = answer(step)
        step = advance(op, error=result) if isinstance(result, Exception) else advance(op, result)
    return step.value, calls


def refused(item: dict[str, Any] | None) -> ConditionFailedError:
    return ConditionFailedError(
        "refused", code="ConditionalCheckFailedException", response={"Item": item} if item else {}
    )


def test_a_first_save_creates_the_typed_item_only_where_there_is_none() -> None:
    new = state(worker={"page_size": None, "concurrency": 8}, lag=[3, 1.5])
    _, calls = drive(store().save(new), lambda call: {})
    (put,) = calls
    assert put.operation == "PutItem"
    assert put.params == {
        "TableName": "Jobs",
        "Item": {
            **KEY,
            "_type": {"S": "LedgerMigration"},
            "id": {"S": "m1"},
            "declaration": {"M": {"kind": {"S": "migration"}, "source": {"S": "Old"}}},
            "phase": {"S": "copy"},
            "created_destination": {"BOOL": False},
            "stream_arn": {"S": ""},
            "shards": {"M": {}},
            "applied": {"N": "0"},
            "skipped": {"N": "0"},
            "unapplied": {"N": "0"},
            "lag": {"L": [{"N": "3"}, {"N": "1.5"}]},
            "verify": {"M": {}},
            "verify_epoch": {"N": "0"},
            "verify_jobs": {"L": []},
            "caught_up_at": {"N": "0"},
            "worker": {"M": {"page_size": {"NULL": True}, "concurrency": {"N": "8"}}},
            "before_copy": {"N": "0"},
            "version": {"N": "1"},
        },
        "ConditionExpression": "attribute_not_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK"},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    assert new.version == 1


def test_a_save_writes_over_the_version_it_read_only() -> None:
    read = state(version=3, phase="catch-up")
    _, calls = drive(store().save(read), lambda call: {})
    params = calls[0].params
    assert params["ConditionExpression"] == "#n0 = :v0"
    assert params["ExpressionAttributeNames"] == {"#n0": "version"}
    assert params["ExpressionAttributeValues"] == {":v0": {"N": "3"}}
    assert params["Item"]["version"] == {"N": "4"}
    assert params["Item"]["phase"] == {"S": "catch-up"}
    assert read.version == 4


def test_of_two_writers_of_one_version_the_second_gets_the_typed_conflict() -> None:
    ledger: dict[str, Any] = {}

    def table(call: Call) -> Any:
        """One item, written on the put's condition as DynamoDB would."""
        held = ledger.get("item")
        expected = call.params.get("ExpressionAttributeValues", {}).get(":v0", {}).get("N")
        if (held is None) != (expected is None) or (held and held["version"]["N"] != expected):
            return refused(held)
        ledger["item"] = call.params["Item"]
        return {}

    drive(store().save(first := state()), table)
    one, two = state(version=first.version), state(version=first.version)
    one.applied, two.applied = 10, 20
    drive(store().save(one), table)
    with pytest.raises(ValidationError) as caught:
        drive(store().save(two), table)
    assert caught.value.rule == "migrate.concurrent"
    assert "run one migration process at a time" in str(caught.value)
    assert isinstance(caught.value.__cause__, ConditionFailedError)
    assert (one.version, two.version) == (2, 1)  # the loser keeps the version it read
    assert ledger["item"]["applied"] == {"N": "10"}


def test_a_lost_answer_whose_resend_met_itself_is_this_saves_own() -> None:
    read = state(version=3, applied=7)
    attempts: list[dict[str, Any]] = []

    def answer(call: Call) -> Any:
        attempts.append(call.params["Item"])
        if len(attempts) == 1:  # applied, and its answer lost
            return TransportError("lost", code="ConnectionClosedError")
        return refused(attempts[0])  # the resend finds version 4: the first attempt's

    drive(store().save(read), answer)
    assert len(attempts) == 2
    assert read.version == 4


def test_a_lost_answer_whose_resend_met_another_writer_is_the_conflict() -> None:
    read = state(version=3, applied=7)
    other = {**state(version=3, applied=9).to_wire(), "version": {"N": "4"}}
    answers: list[Any] = [TransportError("lost", code="ConnectionClosedError"), refused(other)]
    with pytest.raises(ValidationError) as caught:
        drive(store().save(read), lambda call: answers.pop(0))
    assert caught.value.rule == "migrate.concurrent"
    assert read.version == 3


def test_a_state_and_its_dual_writes_are_read_by_their_keys() -> None:
    saved = state(version=2, verify={"clean": True, "source": 4})
    loaded, calls = drive(store().load("m1"), lambda call: {"Item": saved.to_wire()})
    assert calls[0].params == {"TableName": "Jobs", "Key": KEY, "ConsistentRead": True}
    assert loaded == saved
    assert isinstance(loaded, MigrationState)
    dual = store().entities.dual(migration="m1", since=5.5, reads="destination")
    _, calls = drive(store().save_dual("m1", since=5.5, reads="destination"), lambda call: {})
    assert calls[0].params == {
        "TableName": "Jobs",
        "Item": {
            "PK": {"S": "~lsiorm#jobs"},
            "SK": {"S": "migration#m1#dual"},
            "_type": {"S": "LedgerMigrationDual"},
            "migration": {"S": "m1"},
            "since": {"N": "5.5"},
            "reads": {"S": "destination"},
        },
    }
    found, _ = drive(store().load_dual("m1"), lambda call: {"Item": dual.to_wire()})
    assert found == {"since": 5.5, "reads": "destination"}


def test_the_listing_reads_the_prefix_and_keeps_the_states_only() -> None:
    one, two = state(), state(id="m2", phase="switched")
    dual = store().entities.dual(migration="m1", since=1.0, reads="source")
    page = {"Items": [one.to_wire(), dual.to_wire(), two.to_wire()]}
    found, calls = drive(store().states(), lambda call: page)
    assert calls[0].operation == "Query"
    assert calls[0].params == {
        "TableName": "Jobs",
        "KeyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
        "ConsistentRead": True,
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "SK"},
        "ExpressionAttributeValues": {":v0": {"S": "~lsiorm#jobs"}, ":v1": {"S": "migration#"}},
    }
    assert found == [one, two]


EARLIER = {
    **KEY,
    "data": {"S": json.dumps({"id": "m1", "declaration": {}, "version": 3})},
    "phase": {"S": "copy"},
    "version": {"N": "3"},
}


@pytest.mark.parametrize("read", ["load", "states"])
def test_a_state_of_the_earlier_format_is_refused_with_what_to_do(read: str) -> None:
    op = store().load("m1") if read == "load" else store().states()
    answer = {"Item": EARLIER} if read == "load" else {"Items": [EARLIER]}
    with pytest.raises(ValidationError) as caught:
        drive(op, lambda call: answer)
    assert caught.value.rule == "ledger.old-format"
    message = str(caught.value)
    assert "the ledger of table 'Jobs' holds a table migration written by an earlier" in message
    assert "Finish the migration" in message
    assert "abandon" in message


def test_the_entities_are_bound_once_per_location_beside_the_ledgers() -> None:
    first = MigrationEntities.at("Jobs", "PK", "SK")
    assert MigrationEntities.at("Jobs", "PK", "SK") is first
    table = meta_of(first.state).table
    assert {"LedgerRun", "LedgerJob", "LedgerUnit", "LedgerMigration"} <= set(table.entities)
    assert meta_of(first.state).version_field == "version"
    other = store(LedgerLocation("Shop", "pk", "sk")).entities.state(id="m", declaration={})
    assert {"pk", "sk"} <= set(other.to_wire())


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.floats(-(2.0**53), 2.0**53, allow_nan=False).filter(lambda f: f == 0 or abs(f) > 1e-100)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)
maps = st.dictionaries(st.text(max_size=4), json_like, max_size=4)


@given(maps, maps, maps, st.integers(0, 10**6), st.lists(st.text(max_size=4), max_size=3))
def test_a_state_read_back_is_the_state_written(
    declaration: dict[str, Any],
    worker: dict[str, Any],
    verify: dict[str, Any],
    applied: int,
    jobs: list[str],
) -> None:
    written = state(
        declaration=declaration, worker=worker, verify=verify, applied=applied, verify_jobs=jobs
    )
    cls = type(written)
    back = decode_stored(meta_of(cls).table, written.to_wire(), only=(cls,))
    assert back == written
    # numbers come back as the ints and floats written, not decimals (a declaration's
    # fingerprint hashes its JSON text, in which a decimal would be a string)
    assert not any(isinstance(v, Decimal) for v in _leaves([back.declaration, back.worker]))
    assert not any(isinstance(v, Decimal) for v in _leaves(back.verify))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_a_state_made_without_the_ledgers_binding_is_saved_as_its_entity() -> None:
    made = MigrationState(id="m1", declaration={"kind": "migration"}, version=2, applied=3)
    _, calls = drive(store().save(made), lambda call: {})
    item = calls[0].params["Item"]
    assert (item["_type"], item["SK"], item["applied"]) == (
        {"S": "LedgerMigration"},
        {"S": "migration#m1"},
        {"N": "3"},
    )
    assert calls[0].params["ExpressionAttributeValues"] == {":v0": {"N": "2"}}
    assert made.version == 3
