"""The ledger in DynamoDB as lsiorm entities: its requests compared as dictionaries (pure), the
format of its items, and the refusal of a ledger the earlier format wrote."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import ValidationError
from lsiorm._jobs.ledger import JobLedger, LedgerLocation, UnitClaim, fingerprint
from lsiorm._jobs.ledger_items import LedgerEntities, plain
from lsiorm._jobs.units import ScanUnit
from lsiorm._model.wire import item_from_wire, item_to_wire
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Gather, advance

LOCATION = LedgerLocation("Jobs", "PK", "SK")
NOW = 1_700_000_000.5
UNIT = ScanUnit(1, 4)


def ledger(location: LedgerLocation = LOCATION) -> JobLedger:
    return JobLedger(Context(), location, lease_seconds=30.0, clock=lambda: NOW)


def first_call(op: Any) -> Call:
    step = advance(op)
    assert isinstance(step, Call), step
    return step


def test_a_claim_is_a_typed_update_whose_condition_says_the_unit_is_free() -> None:
    call = first_call(ledger().claim("backfill-1", UNIT, owner="me"))
    assert call.operation == "UpdateItem"
    assert call.params == {
        "TableName": "Jobs",
        "Key": {"PK": {"S": "~lsiorm#jobs"}, "SK": {"S": "unit#backfill-1#scan-00001-of-00004"}},
        "UpdateExpression": "SET #n1 = :v0, #n2 = :v1, #n3 = :v2 ADD #n4 :v3",
        "ConditionExpression": "(attribute_exists(#n0)) AND "
        "(#n3 <> :v4 AND (attribute_not_exists(#n1) OR #n2 < :v5))",
        "ExpressionAttributeNames": {
            "#n0": "PK",
            "#n1": "owner",
            "#n2": "lease",
            "#n3": "state",
            "#n4": "runs",
        },
        "ExpressionAttributeValues": {
            ":v0": {"S": "me"},
            ":v1": {"N": "1700000030.5"},
            ":v2": {"S": "running"},
            ":v3": {"N": "1"},
            ":v4": {"S": "done"},
            ":v5": {"N": "1700000000.5"},
        },
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def test_the_ledger_takes_the_key_attribute_names_of_its_table() -> None:
    call = first_call(ledger(LedgerLocation("Shop", "pk", "sk")).claim("r-1", UNIT, owner="me"))
    assert call.params["TableName"] == "Shop"
    assert call.params["Key"] == {
        "pk": {"S": "~lsiorm#jobs"},
        "sk": {"S": "unit#r-1#scan-00001-of-00004"},
    }


def test_a_commit_holds_its_lease_and_writes_maps() -> None:
    claim = UnitClaim(UNIT, "me", position={"PK": {"B": b"\x00k"}}, counts={"scanned": 3})
    call = first_call(ledger().commit("r-1", claim))
    assert call.params["UpdateExpression"] == (
        "SET #n1 = :v0, #n2 = :v1, #n3 = :v2, #n5 = :v3 REMOVE #n4"
    )
    assert call.params["ConditionExpression"] == (
        "(attribute_exists(#n0)) AND (#n6 = :v4 AND #n7 = :v5)"
    )
    names = call.params["ExpressionAttributeNames"]
    values = call.params["ExpressionAttributeValues"]
    assert [names[f"#n{n}"] for n in range(8)] == [
        "PK", "position", "counts", "notes", "intent", "lease", "owner", "state"
    ]  # fmt: skip
    assert values == {
        ":v0": {"M": {"PK": {"M": {"B": {"B": b"\x00k"}}}}},
        ":v1": {"M": {"scanned": {"N": "3"}}},
        ":v2": {"M": {}},
        ":v3": {"N": "1700000030.5"},
        ":v4": {"S": "me"},
        ":v5": {"S": "running"},
    }


def test_a_finish_is_one_transaction_of_the_unit_and_its_run() -> None:
    claim = UnitClaim(UNIT, "a" * 32, counts={"scanned": 3}, unreported=(5, 2))
    call = first_call(ledger().finish("r-1", claim))
    assert call.operation == "TransactWriteItems"
    assert call.params["ClientRequestToken"] == "a" * 32 + "-don"
    unit, run = (part["Update"] for part in call.params["TransactItems"])
    assert unit["Key"]["SK"] == {"S": "unit#r-1#scan-00001-of-00004"}
    assert unit["UpdateExpression"] == (
        "SET #n1 = :v0, #n2 = :v1, #n3 = :v2, #n4 = :v3 REMOVE #n5, #n6, #n7, #n8"
    )
    assert [unit["ExpressionAttributeNames"][f"#n{n}"] for n in range(1, 9)] == [
        "state", "counts", "notes", "finished", "owner", "lease", "intent", "position"
    ]  # fmt: skip
    assert run["Key"]["SK"] == {"S": "job#r-1"}
    names, values = run["ExpressionAttributeNames"], run["ExpressionAttributeValues"]
    added = run["UpdateExpression"].split(" ADD ")[1]
    assert {names[n]: values[v]["N"] for n, v in (a.split() for a in added.split(", "))} == {
        "done": "1",
        "running": "-1",
        "items": "5",
        "changed": "2",
    }


def test_the_rate_is_compared_and_set_as_a_map() -> None:
    op = ledger().set_rate("r-1", {"write": 10.0}, {"write": 5.0}, not_since=NOW - 1)
    params = first_call(op).params
    assert params["ConditionExpression"] == "(attribute_exists(#n0)) AND (#n1 = :v2 AND #n2 <= :v3)"
    assert params["ExpressionAttributeValues"][":v2"] == {"M": {"write": {"N": "10"}}}
    assert params["ExpressionAttributeValues"][":v0"] == {"M": {"write": {"N": "5"}}}


def test_opening_moves_the_pointer_with_an_upsert_only_where_it_has_no_run() -> None:
    op = ledger().open({"kind": "audit"}, [UNIT], {})
    read = first_call(op)
    assert read.operation == "GetItem"
    print_ = fingerprint({"kind": "audit"})
    assert read.params["Key"]["SK"] == {"S": f"run#{print_}"}
    moved = advance(op, {})
    assert isinstance(moved, Call)
    assert moved.operation == "UpdateItem"
    names = moved.params["ExpressionAttributeNames"]
    assert moved.params["ConditionExpression"] == (
        "(attribute_not_exists(#n0) OR #n1 = :v0) AND (attribute_not_exists(#n2))"
    )
    assert (names["#n1"], names["#n2"]) == ("_type", "current")


def test_a_new_runs_items_are_typed_and_hold_maps() -> None:
    op = ledger().open({"kind": "audit", "page_size": 100}, [UNIT], {"write": 2.5})
    advance(op)
    advance(op, {})  # no pointer yet
    gathered = advance(op, {"Attributes": {}})
    assert isinstance(gathered, Gather), gathered
    batch = first_call(gathered.operations[0])
    ((request,),) = [r for r in batch.params["RequestItems"].values()]
    item = request["PutRequest"]["Item"]
    assert item["_type"] == {"S": "LedgerUnit"}
    assert item["unit"] == {
        "M": {"kind": {"S": "scan"}, "segment": {"N": "1"}, "total_segments": {"N": "4"}}
    }


def test_an_item_of_the_earlier_format_is_refused_with_what_to_do() -> None:
    op = ledger().job("backfill-1")
    first_call(op)
    earlier = {
        "PK": {"S": "~lsiorm#jobs"},
        "SK": {"S": "job#backfill-1"},
        "id": {"S": "backfill-1"},
        "state": {"S": "running"},
        "declaration": {"S": '{"kind":"backfill"}'},
    }
    with pytest.raises(ValidationError, match="earlier lsiorm") as caught:
        advance(op, {"Item": earlier})
    assert caught.value.rule == "ledger.old-format"
    assert "Finish or cancel those runs with the version that started them" in str(caught.value)


def test_entities_are_bound_once_per_location_and_not_to_the_users_table() -> None:
    first = LedgerEntities.at("Jobs", "PK", "SK")
    assert LedgerEntities.at("Jobs", "PK", "SK") is first
    # the ledger's own table: its entities, and a migration's when one was bound there too
    assert {"LedgerRun", "LedgerJob", "LedgerUnit"} <= set(first.table.entities)
    assert set(first.table.entities) <= {
        "LedgerRun", "LedgerJob", "LedgerUnit", "LedgerMigration", "LedgerMigrationDual"
    }  # fmt: skip
    assert LedgerEntities.at("Jobs", "pk", "sk").unit is not first.unit


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    # A float past 2**53 is written as the integer it stands for, and read back as that int.
    # DynamoDB's numbers reach down to 1E-130 in magnitude.
    | st.floats(-(2.0**53), 2.0**53, allow_nan=False).filter(lambda f: f == 0 or abs(f) > 1e-100)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(json_like)
def test_a_value_read_back_from_a_map_is_the_value_written(value: Any) -> None:
    back = plain(item_from_wire(item_to_wire({"v": value}))["v"])
    assert back == value
    assert not any(isinstance(v, Decimal) for v in _leaves(back))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
