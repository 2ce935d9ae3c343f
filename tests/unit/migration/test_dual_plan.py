"""The dual-write plans of a table migration, compared as dictionaries, and the property that
the destination always gets the derived image of what the source holds after the write."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._migration.dual_plan import (
    DualPlan,
    is_ledger,
    needs_read,
    plan_batch,
    plan_transaction,
    plan_write,
)
from lsiorm._migration.table_copy import derive_item
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import wire_item
from lsiorm._ops.unchanged import watched_attributes
from lsiorm._requests.items import delete_request, put_request
from lsiorm._requests.update_effect import apply_actions
from lsiorm._requests.update_expression import render_update
from lsiorm._requests.update_plan import plan_update, update_spec
from support.migration import declare_shop, source_item

TABLE, CLASSES = declare_shop("ShopV2")
Order = CLASSES["Order"]
PLAN = DualPlan(TABLE, "Shop", watched_attributes(TABLE, TABLE.entities.values()))
KEY = {"PK": {"S": "G#001"}, "SK": {"S": "ORDER#000001"}}


def order(status: str = "new", title: str = "t") -> Any:
    return Order(group=1, n=1, title=title, status=status)


def test_a_put_is_the_source_put_and_the_derived_destination_put() -> None:
    params, _ = put_request(order())
    planned = plan_write(PLAN, "PutItem", params, None, None)
    item = wire_item(order())
    assert not isinstance(planned, str)
    assert planned.request == {
        "TransactItems": [
            {"Put": {"TableName": "Shop", "Item": item}},
            {"Put": {"TableName": "ShopV2", "Item": item}},
        ]
    }
    assert (planned.answer, planned.guarded, planned.actions) == ({}, False, 1)
    assert not needs_read("PutItem", params)


def test_a_conditional_put_keeps_its_condition_on_the_source_only() -> None:
    params, _ = put_request(order(), create_only=True)
    params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    planned = plan_write(PLAN, "PutItem", params, None, None)
    assert not isinstance(planned, str)
    source, destination = planned.request["TransactItems"]
    assert source["Put"] == {**params, "TableName": "Shop"}
    assert destination == {"Put": {"TableName": "ShopV2", "Item": wire_item(order())}}


def test_a_delete_returning_the_old_item_is_guarded_by_the_item_read() -> None:
    params = delete_request(meta_of(Order), {"group": 1, "n": 1})
    assert needs_read("DeleteItem", params)
    old = source_item(1, title="t")  # as the older release stored it
    old = {**old, **KEY}
    planned = plan_write(PLAN, "DeleteItem", params, old, None)
    assert not isinstance(planned, str)
    source, destination = planned.request["TransactItems"]
    assert destination == {"Delete": {"TableName": "ShopV2", "Key": KEY}}
    body = source["Delete"]
    assert (body["TableName"], body["Key"]) == ("Shop", KEY)
    assert body["ConditionExpression"].count(" = ") == len(old)
    assert body["ExpressionAttributeValues"] == {f":dw{i}": old[n] for i, n in _read(body)}
    assert body["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert (planned.answer, planned.guarded) == ({"Attributes": old}, True)


def _read(body: dict[str, Any]) -> list[tuple[int, str]]:
    """The guard's placeholders of attributes read: (number, attribute name)."""
    names = body["ExpressionAttributeNames"]
    return [
        (int(ph[3:]), name)
        for ph, name in names.items()
        if ph.startswith("#dw") and f":dw{ph[3:]}" in body["ExpressionAttributeValues"]
    ]


def update_params(**changes: Any) -> tuple[dict[str, Any], tuple[Any, ...]]:
    meta = meta_of(Order)
    plan = plan_update(meta, {"group": 1, "n": 1}, update_spec(changes))
    return render_update(meta, plan), plan.actions


def test_an_update_puts_the_derived_new_image_and_keeps_the_callers_condition() -> None:
    params, actions = update_params(status="paid")
    old = {**source_item(1, title="t"), **KEY}  # no LSI1SK: written before the slots
    planned = plan_write(PLAN, "UpdateItem", params, old, actions)
    assert not isinstance(planned, str)
    source, destination = planned.request["TransactItems"]
    assert destination == {"Put": {"TableName": "ShopV2", "Item": wire_item(order("paid"))}}
    body = source["Update"]
    assert body["UpdateExpression"] == params["UpdateExpression"]
    assert body["ConditionExpression"].startswith(f"({params['ConditionExpression']}) AND ")
    names = params["ExpressionAttributeNames"]
    assert {k: v for k, v in body["ExpressionAttributeNames"].items() if k in names} == names
    assert planned.answer == {"Attributes": apply_actions(old, actions)}


def test_a_condition_in_parentheses_is_not_put_in_more() -> None:
    meta = meta_of(Order)
    plan = plan_update(meta, {"group": 1, "n": 1}, update_spec({"title": "x"}, upsert=True))
    params = render_update(meta, plan)
    assert params["ConditionExpression"].startswith("(")
    planned = plan_write(PLAN, "UpdateItem", params, None, plan.actions)
    assert not isinstance(planned, str)
    body = planned.request["TransactItems"][0]["Update"]
    assert body["ConditionExpression"].startswith(f"{params['ConditionExpression']} AND ")
    assert not body["ConditionExpression"].startswith("((")


def test_what_cannot_be_mirrored_exactly_says_why() -> None:
    params, actions = update_params(status="paid")
    old = {**source_item(1), **KEY}
    assert plan_write(PLAN, "UpdateItem", params, old, None) == "update-effect-unknown"
    legacy = {**params, "Expected": {}}
    assert plan_write(PLAN, "UpdateItem", legacy, old, actions) == "parameters Expected"
    updated = {**params, "ReturnValues": "UPDATED_NEW"}
    assert plan_write(PLAN, "UpdateItem", updated, old, actions) == "return-values"
    put, _ = put_request(order())
    moved = {**put, "Item": {**put["Item"], "SK": {"S": "ORDER#1"}}}  # not the derived key
    assert plan_write(PLAN, "PutItem", moved, None, None) == "key-moves"
    unknown = {"TableName": "ShopV2", "Item": {**KEY, "_type": {"S": "Gone"}}}
    kept = plan_write(PLAN, "PutItem", unknown, None, None)  # no model: kept as stored
    assert not isinstance(kept, str)
    assert kept.request["TransactItems"][1] == {"Put": unknown}
    lacking = {"TableName": "ShopV2", "Item": {"PK": {"S": "x"}}}
    assert plan_write(PLAN, "PutItem", lacking, None, None) == "unmatched"


def test_a_transaction_mirrors_its_puts_and_deletes_after_the_callers_actions() -> None:
    put, _ = put_request(order())
    other = {"Put": {"TableName": "Elsewhere", "Item": {"id": {"S": "1"}}}}
    check = {"ConditionCheck": {"TableName": "ShopV2", "Key": KEY, "ConditionExpression": "x"}}
    delete = {"Delete": {"TableName": "ShopV2", "Key": {**KEY, "SK": {"S": "ORDER#000002"}}}}
    params = {"TransactItems": [{"Put": put}, other, check, delete], "ClientRequestToken": "t"}
    planned = plan_transaction(PLAN, params)
    assert not isinstance(planned, str)
    assert planned.request == {
        "TransactItems": [
            {"Put": {**put, "TableName": "Shop"}},
            other,
            {"ConditionCheck": {**check["ConditionCheck"], "TableName": "Shop"}},
            {"Delete": {**delete["Delete"], "TableName": "Shop"}},
            {"Put": {"TableName": "ShopV2", "Item": wire_item(order())}},
            {"Delete": {"TableName": "ShopV2", "Key": delete["Delete"]["Key"]}},
        ],
        "ClientRequestToken": "t",
    }
    assert planned.actions == 4
    update = {"Update": {"TableName": "ShopV2", "Key": KEY, "UpdateExpression": "SET a = :a"}}
    assert plan_transaction(PLAN, {"TransactItems": [update]}) == "update-in-transaction"
    many = {"TransactItems": [{"Put": put}] * 51}
    assert plan_transaction(PLAN, many) == "too-many-actions"


def test_a_batch_chunk_is_one_transaction_of_its_writes_and_their_mirrors() -> None:
    item = wire_item(order())
    params = {
        "RequestItems": {
            "ShopV2": [{"PutRequest": {"Item": item}}, {"DeleteRequest": {"Key": KEY}}],
            "Elsewhere": [{"DeleteRequest": {"Key": {"id": {"S": "1"}}}}],
        },
        "ReturnConsumedCapacity": "TOTAL",
    }
    planned = plan_batch(PLAN, params)
    assert not isinstance(planned, str)
    assert planned.request == {
        "TransactItems": [
            {"Put": {"TableName": "Shop", "Item": item}},
            {"Delete": {"TableName": "Shop", "Key": KEY}},
            {"Delete": {"TableName": "Elsewhere", "Key": {"id": {"S": "1"}}}},
            {"Put": {"TableName": "ShopV2", "Item": item}},
            {"Delete": {"TableName": "ShopV2", "Key": KEY}},
        ],
        "ReturnConsumedCapacity": "TOTAL",
    }
    assert planned.answer == {"UnprocessedItems": {}}


def test_the_ledger_partition_is_never_mirrored() -> None:
    assert is_ledger({"Key": {"PK": {"S": NAMESPACE}, "SK": {"S": "job#1"}}}, TABLE)
    assert not is_ledger({"Item": wire_item(order())}, TABLE)


STATUSES = st.sampled_from(("new", "paid", "sent", "back"))


@given(
    STATUSES,
    st.text(max_size=5),
    st.booleans(),
    st.fixed_dictionaries({}, optional={"status": STATUSES, "title": st.text(max_size=5)}),
)
def test_the_destination_gets_the_derived_image_the_source_holds_after_the_update(
    status: str, title: str, old_layout: bool, changes: dict[str, Any]
) -> None:
    # The item as stored before: by the older release (no slot attribute), or by this one.
    stored = wire_item(order(status, title))
    if old_layout:
        stored = {k: v for k, v in stored.items() if k != "LSI1SK"}
    params, actions = update_params(**(changes or {"title": "x"}))
    planned = plan_write(PLAN, "UpdateItem", params, stored, actions)
    assert not isinstance(planned, str)
    source, destination = planned.request["TransactItems"]
    after = apply_actions(stored, actions)
    assert destination == {"Put": {"TableName": "ShopV2", "Item": derive_item(TABLE, after).item}}
    # The oracle: the entity with the changes, encoded as the destination's declaration does.
    expected = wire_item(order(**{"status": status, "title": title, **(changes or {"title": "x"})}))
    assert destination["Put"]["Item"] == expected
    assert source["Update"]["Key"] == KEY
