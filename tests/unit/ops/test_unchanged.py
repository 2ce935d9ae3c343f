"""The guard of every move and rewrite: its condition, and the check after the delete."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.unchanged import (
    added_attributes,
    delete_unchanged,
    give_attributes,
    unchanged_condition,
)
from lsiorm.errors import ConditionFailedError, InternalServerError, ThrottledError
from support.fakes import answering

TABLE = Table("Things", "PK", "SK")
KEY = {"PK": {"S": "P"}, "SK": {"S": "S"}}
ITEM = {**KEY, "a": {"N": "1"}}
QUICK = Context(RetryPolicy(max_attempts=3, initial=0.0, maximum=0.0))


drive = answering


def test_the_condition_of_an_item_is_exact() -> None:
    expression, names, values = unchanged_condition(ITEM, frozenset({"b"}))
    assert (expression, names, values) == (
        "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2 AND attribute_not_exists(#u3)",
        {"#u0": "PK", "#u1": "SK", "#u2": "a", "#u3": "b"},
        {":u0": {"S": "P"}, ":u1": {"S": "S"}, ":u2": {"N": "1"}},
    )


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 9).map(lambda n: {"N": str(n)})),
    st.dictionaries(st.sampled_from("ghij"), st.text(max_size=3).map(lambda s: {"S": s})),
)
def test_added_attributes_are_those_of_the_old_image_the_read_lacked(
    read: dict[str, Any], added: dict[str, Any]
) -> None:
    assert added_attributes(read, {**read, **added}) == added
    assert added_attributes({**read, **added}, read) == {}


def test_a_delete_returns_what_a_writer_added_since_the_read() -> None:
    old = {**ITEM, "note": {"S": "late"}}
    removal, calls = drive(
        delete_unchanged(QUICK, TABLE, KEY, ITEM, frozenset()), [{"Attributes": old}]
    )
    assert (removal.deleted, removal.added, removal.unsure) == (
        True,
        {"note": {"S": "late"}},
        False,
    )
    assert calls[0].params["ReturnValues"] == "ALL_OLD"
    assert calls[0].params["ConditionExpression"].count(" = ") == 3


def test_a_delete_whose_answer_was_lost_is_unsure_and_a_throttled_one_is_not() -> None:
    failed = ConditionFailedError("changed", code="ConditionalCheckFailedException")
    lost, _ = drive(
        delete_unchanged(QUICK, TABLE, KEY, ITEM, frozenset()),
        [InternalServerError("lost", code="InternalServerError"), failed],
    )
    assert (lost.deleted, lost.unsure) == (False, True)
    throttled, _ = drive(
        delete_unchanged(QUICK, TABLE, KEY, ITEM, frozenset()),
        [ThrottledError("slow", code="ThrottlingException"), failed],
    )
    assert (throttled.deleted, throttled.unsure) == (False, False)


def test_added_attributes_go_to_an_unchanged_copy_or_fill_a_changed_one() -> None:
    added = {"note": {"S": "late"}}
    _, calls = drive(give_attributes(QUICK, TABLE, KEY, ITEM, added), [{}])
    assert [c.operation for c in calls] == ["UpdateItem"]
    assert "attribute_not_exists" in calls[0].params["ConditionExpression"]
    failed = ConditionFailedError("changed", code="ConditionalCheckFailedException")
    _, calls = drive(give_attributes(QUICK, TABLE, KEY, ITEM, added), [failed, {}])
    assert calls[1].params == {
        "TableName": "Things",
        "Key": KEY,
        "UpdateExpression": "SET #n1 = if_not_exists(#n1, :v0)",
        "ConditionExpression": "attribute_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "note"},
        "ExpressionAttributeValues": {":v0": {"S": "late"}},
    }
    # A copy deleted since stays deleted.
    _, calls = drive(give_attributes(QUICK, TABLE, KEY, ITEM, added), [failed, failed])
    assert len(calls) == 2
    _, calls = drive(give_attributes(QUICK, TABLE, KEY, ITEM, {}), [])
    assert calls == []
