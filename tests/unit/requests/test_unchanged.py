"""The requests of the unchanged guard, compared as dictionaries."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._model.schema import Table
from lsiorm._requests.unchanged import (
    copy_put,
    create_only_put,
    fill_update,
    guarded_action,
    move_transaction,
    replacing_move,
    rewrite_update,
    unchanged_put,
    unchanged_target,
)

TABLE = Table("Things", "PK", "SK")
KEY = {"PK": {"S": "P"}, "SK": {"S": "S"}}
ITEM = {**KEY, "a": {"N": "1"}}


def test_a_target_is_the_key_on_the_condition_that_the_item_is_unchanged() -> None:
    assert unchanged_target(TABLE, KEY, ITEM, frozenset({"b"})) == {
        "TableName": "Things",
        "Key": KEY,
        "ConditionExpression": (
            "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2 AND attribute_not_exists(#u3)"
        ),
        "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "a", "#u3": "b"},
        "ExpressionAttributeValues": {":u0": {"S": "P"}, ":u1": {"S": "S"}, ":u2": {"N": "1"}},
    }


def test_a_create_only_put_needs_the_key_free() -> None:
    assert create_only_put(TABLE, ITEM) == {
        "TableName": "Things",
        "Item": ITEM,
        "ConditionExpression": "attribute_not_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK"},
    }


def test_a_move_puts_the_new_item_where_none_is_and_checks_the_original() -> None:
    new = {"PK": {"S": "P"}, "SK": {"S": "T"}, "a": {"N": "1"}}
    checked = move_transaction(TABLE, KEY, ITEM, new, frozenset(), delete=False, token="t1")
    assert checked == {
        "TransactItems": [
            {
                "Put": {
                    "TableName": "Things",
                    "Item": new,
                    "ConditionExpression": "attribute_not_exists(#n0)",
                    "ExpressionAttributeNames": {"#n0": "PK"},
                }
            },
            {
                "ConditionCheck": {
                    "TableName": "Things",
                    "Key": KEY,
                    "ConditionExpression": "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2",
                    "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "a"},
                    "ExpressionAttributeValues": {
                        ":u0": {"S": "P"},
                        ":u1": {"S": "S"},
                        ":u2": {"N": "1"},
                    },
                }
            },
        ],
        "ClientRequestToken": "t1",
    }
    deleted = move_transaction(TABLE, KEY, ITEM, new, frozenset(), delete=True, token="t2")
    assert deleted["TransactItems"][1] == {"Delete": checked["TransactItems"][1]["ConditionCheck"]}
    assert deleted["ClientRequestToken"] == "t2"


def test_a_guard_joined_onto_a_write_keeps_its_condition_and_its_placeholders_apart() -> None:
    own = {
        "TableName": "Things",
        "Key": KEY,
        "UpdateExpression": "SET #n0 = :v0",
        "ConditionExpression": "#n1 = :v1 OR attribute_not_exists(#n1)",
        "ExpressionAttributeNames": {"#n0": "a", "#n1": "v"},
        "ExpressionAttributeValues": {":v0": {"N": "2"}, ":v1": {"N": "1"}},
    }
    assert guarded_action(own, ITEM, frozenset({"b"})) == {
        "TableName": "Things",
        "Key": KEY,
        "UpdateExpression": "SET #n0 = :v0",
        "ConditionExpression": (
            "(#n1 = :v1 OR attribute_not_exists(#n1)) AND #dw0 = :dw0 AND #dw1 = :dw1 AND "
            "#dw2 = :dw2 AND attribute_not_exists(#dw3)"
        ),
        "ExpressionAttributeNames": {
            "#n0": "a",
            "#n1": "v",
            "#dw0": "PK",
            "#dw1": "SK",
            "#dw2": "a",
            "#dw3": "b",
        },
        "ExpressionAttributeValues": {
            ":v0": {"N": "2"},
            ":v1": {"N": "1"},
            ":dw0": {"S": "P"},
            ":dw1": {"S": "S"},
            ":dw2": {"N": "1"},
        },
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    assert "ReturnValuesOnConditionCheckFailure" not in own  # the caller's is left as it was


def test_a_guard_alone_is_the_whole_condition_and_a_grouped_one_is_not_grouped_again() -> None:
    alone = guarded_action({"TableName": "Things", "Key": KEY}, {}, frozenset({"b"}))
    assert alone == {
        "TableName": "Things",
        "Key": KEY,
        "ConditionExpression": "attribute_not_exists(#dw0)",
        "ExpressionAttributeNames": {"#dw0": "b"},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    grouped = {"ConditionExpression": "(attribute_exists(#n0))", "ExpressionAttributeNames": {}}
    joined = guarded_action(grouped, {}, frozenset({"b"}))["ConditionExpression"]
    assert joined == "(attribute_exists(#n0)) AND attribute_not_exists(#dw0)"
    two = {"ConditionExpression": "(#n0 = :v0) OR (#n1 = :v1)", "ExpressionAttributeNames": {}}
    joined = guarded_action(two, {}, frozenset({"b"}))["ConditionExpression"]
    assert joined == "((#n0 = :v0) OR (#n1 = :v1)) AND attribute_not_exists(#dw0)"


def test_a_rewrite_sets_and_removes_on_the_unchanged_condition() -> None:
    params = rewrite_update(
        TABLE, KEY, ITEM, frozenset(), sets={"GSI1PK": {"S": "X"}}, removes=["old"]
    )
    assert params == {
        "TableName": "Things",
        "Key": KEY,
        "UpdateExpression": "SET #u3 = :u3 REMOVE #u4",
        "ConditionExpression": "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2",
        "ExpressionAttributeNames": {
            "#u0": "PK",
            "#u1": "SK",
            "#u2": "a",
            "#u3": "GSI1PK",
            "#u4": "old",
        },
        "ExpressionAttributeValues": {
            ":u0": {"S": "P"},
            ":u1": {"S": "S"},
            ":u2": {"N": "1"},
            ":u3": {"S": "X"},
        },
    }


def test_a_fill_sets_only_what_is_absent_on_an_item_that_exists() -> None:
    assert fill_update(TABLE, KEY, {"z": {"S": "2"}, "y": {"S": "1"}}) == {
        "TableName": "Things",
        "Key": KEY,
        "UpdateExpression": "SET #n1 = if_not_exists(#n1, :v0), #n2 = if_not_exists(#n2, :v1)",
        "ConditionExpression": "attribute_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK", "#n1": "y", "#n2": "z"},
        "ExpressionAttributeValues": {":v0": {"S": "1"}, ":v1": {"S": "2"}},
    }


def test_a_copy_goes_where_none_is_or_over_the_same_copy_or_over_its_own_older_one() -> None:
    assert copy_put(TABLE, ITEM, None) == {
        "TableName": "Things",
        "Item": ITEM,
        "ConditionExpression": (
            "attribute_not_exists(#u0) OR (#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2)"
        ),
        "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "a"},
        "ExpressionAttributeValues": {":u0": {"S": "P"}, ":u1": {"S": "S"}, ":u2": {"N": "1"}},
    }
    older = {**KEY, "a": {"N": "0"}}
    assert (
        copy_put(TABLE, ITEM, older)["ConditionExpression"]
        == "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2"
    )
    assert copy_put(TABLE, ITEM, older)["ExpressionAttributeValues"][":u2"] == {"N": "0"}


def _spelled(params: dict[str, Any], text: str) -> str:
    """``text`` with its placeholders replaced by the names and values they stand for."""
    names = params.get("ExpressionAttributeNames", {})
    values = params.get("ExpressionAttributeValues", {})
    text = re.sub(r"#\w+", lambda m: names[m.group()], text)
    return re.sub(r":\w+", lambda m: repr(values[m.group()]), text)


ATTRIBUTES = st.dictionaries(
    st.text("abcxyz", min_size=1, max_size=3),
    st.integers(0, 9).map(lambda n: {"N": str(n)}),
    max_size=5,
)


@given(
    ATTRIBUTES.filter(bool),
    ATTRIBUTES.filter(bool),
    st.frozensets(st.text("abcxyz", min_size=1, max_size=3), max_size=4),
)
def test_a_rewrite_compares_each_attribute_read_and_sets_what_it_is_given(
    item: dict[str, Any], sets: dict[str, Any], watched: frozenset[str]
) -> None:
    params = rewrite_update(TABLE, KEY, item, watched, sets=sets)
    condition = _spelled(params, params["ConditionExpression"]).split(" AND ")
    expected = [
        f"{n} = {item[n]!r}" if n in item else f"attribute_not_exists({n})"
        for n in sorted(set(item) | watched)
    ]
    assert condition == expected
    update = _spelled(params, params["UpdateExpression"])
    assert update == "SET " + ", ".join(f"{n} = {v!r}" for n, v in sets.items())


def test_an_unchanged_put_writes_over_the_item_as_read_only() -> None:
    new = {**KEY, "a": {"N": "2"}}
    assert unchanged_put(TABLE, new, ITEM, frozenset({"b"})) == {
        "TableName": "Things",
        "Item": new,
        "ConditionExpression": (
            "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2 AND attribute_not_exists(#u3)"
        ),
        "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "a", "#u3": "b"},
        "ExpressionAttributeValues": {":u0": {"S": "P"}, ":u1": {"S": "S"}, ":u2": {"N": "1"}},
    }


def test_a_replacing_move_deletes_the_item_as_read_and_puts_its_image_whatever_is_there() -> None:
    new = {"PK": {"S": "P"}, "SK": {"S": "T"}, "a": {"N": "1"}}
    assert replacing_move(TABLE, KEY, ITEM, new, frozenset()) == {
        "TransactItems": [
            {
                "Delete": {
                    "TableName": "Things",
                    "Key": KEY,
                    "ConditionExpression": "#u0 = :u0 AND #u1 = :u1 AND #u2 = :u2",
                    "ExpressionAttributeNames": {"#u0": "PK", "#u1": "SK", "#u2": "a"},
                    "ExpressionAttributeValues": {
                        ":u0": {"S": "P"},
                        ":u1": {"S": "S"},
                        ":u2": {"N": "1"},
                    },
                }
            },
            {"Put": {"TableName": "Things", "Item": new}},
        ]
    }
