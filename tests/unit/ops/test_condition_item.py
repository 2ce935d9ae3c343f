"""The stored item on a failed condition: asked for on every conditional write, typed on the error.

The requests are compared as dictionaries; the failures are DynamoDB's answers as botocore
gives them (``Item`` beside ``Error``), thrown into the operations as the drivers throw them.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from lsiorm import Entity, Table, cond
from lsiorm._ops import items
from lsiorm._ops.pipeline import Context
from lsiorm._ops.service_errors import failed_item, from_error_response
from lsiorm._ops.transactions import transact_write
from lsiorm._requests.transactions import Put, Update
from lsiorm._requests.update_plan import update_spec
from lsiorm.errors import (
    ConditionFailedError,
    StaleVersionError,
    TransactionCanceledError,
)
from support.fakes import answering

shop = Table(f"CondItem{uuid.uuid4().hex[:6]}", "PK", "SK")


class Doc(Entity, table=shop, keys={"PK": "D#{name}", "SK": "DOC"}, version="v"):
    name: str
    body: str = ""
    v: int = 0


class Note(Entity, table=shop, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str
    text: str = ""


CTX = Context()


def _failed(operation: str, item: dict[str, Any] | None) -> ConditionFailedError:
    response: dict[str, Any] = {
        "Error": {"Code": "ConditionalCheckFailedException", "Message": "failed"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    if item is not None:
        response["Item"] = item
    error = from_error_response(response, operation, {"TableName": shop.name})
    assert isinstance(error, ConditionFailedError)
    return error


def _stored_doc(v: int, body: str = "theirs") -> dict[str, Any]:
    return {
        "PK": {"S": "D#a"},
        "SK": {"S": "DOC"},
        "_type": {"S": "Doc"},
        "name": {"S": "a"},
        "body": {"S": body},
        "v": {"N": str(v)},
    }


def test_every_conditional_write_asks_for_the_stored_item() -> None:
    _, (put,) = answering(items.put(CTX, Note(name="a"), create_only=True), [{}])
    assert put.params == {
        "TableName": shop.name,
        "Item": {
            "PK": {"S": "N#a"},
            "SK": {"S": "NOTE"},
            "_type": {"S": "Note"},
            "name": {"S": "a"},
            "text": {"S": ""},
        },
        "ConditionExpression": "attribute_not_exists(#n0)",
        "ExpressionAttributeNames": {"#n0": "PK"},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    delete = items.delete_result(CTX, Note, {"name": "a"}, condition=cond("text") == "x")
    _, (sent,) = answering(delete, [{}])
    assert sent.params["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert sent.params["ReturnValues"] == "ALL_OLD"
    # A plain put has no condition to fail, so it asks for nothing.
    _, (plain,) = answering(items.put(CTX, Note(name="b")), [{}])
    assert "ReturnValuesOnConditionCheckFailure" not in plain.params


def test_a_failed_put_carries_the_stored_item_as_its_entity() -> None:
    stored = {**_stored_doc(1), "PK": {"S": "N#a"}, "SK": {"S": "NOTE"}, "_type": {"S": "Note"}}
    stored["text"] = {"S": "old"}
    op = items.put(CTX, Note(name="a", text="new"), create_only=True)
    with pytest.raises(ConditionFailedError) as caught:
        answering(op, [_failed("PutItem", stored)])
    assert caught.value.item == Note(name="a", text="old")


def test_a_stale_versioned_put_says_which_version_is_stored() -> None:
    op = items.put(CTX, Doc(name="a", body="mine", v=2))
    with pytest.raises(StaleVersionError) as caught:
        answering(op, [_failed("PutItem", _stored_doc(5))])
    error = caught.value
    assert (error.expected_version, error.stored_version) == (2, 5)
    assert error.item == Doc(name="a", body="theirs", v=5)
    assert "expected stored v=2, but it holds v=5" in str(error)


def test_a_stale_delete_of_a_gone_item_says_it_is_gone() -> None:
    op = items.delete_result(CTX, Doc, {"name": "a"}, expected_version=3)
    with pytest.raises(StaleVersionError) as caught:
        answering(op, [_failed("DeleteItem", None)])
    assert caught.value.item is None
    assert caught.value.stored_version is None
    assert "the item is gone" in str(caught.value)


def test_a_failed_update_carries_the_item_and_a_stale_one_its_version() -> None:
    spec = update_spec({"body": "x"}, (), None, None, None, None, None, False)
    op = items.update(CTX, Doc, {"name": "a"}, spec, condition=cond("body") == "nope")
    with pytest.raises(ConditionFailedError) as caught:
        answering(op, [_failed("UpdateItem", _stored_doc(4))])
    assert type(caught.value) is ConditionFailedError
    assert caught.value.item == Doc(name="a", body="theirs", v=4)

    mine = Doc(name="a", body="mine", v=3)
    op = items.update(CTX, Doc, {"name": "a"}, spec, instance=mine)
    with pytest.raises(StaleVersionError) as stale:
        answering(op, [_failed("UpdateItem", _stored_doc(4))])
    assert (stale.value.expected_version, stale.value.stored_version) == (3, 4)
    assert stale.value.item == Doc(name="a", body="theirs", v=4)


def test_an_item_of_another_entity_is_given_as_that_entity() -> None:
    wire = {"PK": {"S": "N#z"}, "SK": {"S": "NOTE"}, "_type": {"S": "Note"}, "name": {"S": "z"}}
    assert failed_item(shop, wire) == Note(name="z")
    # No item, an item of no declared entity, an item that no longer fits: None, never a
    # decoding error in place of the condition's failure.
    assert failed_item(shop, None) is None
    assert failed_item(shop, {}) is None
    assert failed_item(shop, {"PK": {"S": "X"}, "SK": {"S": "Y"}, "_type": {"S": "Gone"}}) is None
    broken = {**wire, "text": {"N": "1"}}
    assert failed_item(shop, broken) is None


def test_a_cancelled_transaction_carries_each_stored_item() -> None:
    response = {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
        "CancellationReasons": [
            {"Code": "ConditionalCheckFailed", "Message": "failed", "Item": _stored_doc(7)},
            {"Code": "None"},
        ],
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    error = from_error_response(response, "TransactWriteItems", {})
    actions = [Put(Doc(name="a", v=6)), Update(Note, {"name": "b"}, set={"text": "t"})]
    with pytest.raises(TransactionCanceledError) as caught:
        answering(transact_write(CTX, actions), [error])
    first, second = caught.value.reasons
    assert first.item == Doc(name="a", body="theirs", v=7)
    assert second.item is None


class Counter(Entity, table=shop, keys={"PK": "C#{name}", "SK": "COUNTER"}, version="v"):
    name: str
    hits: int = 0
    v: int = 0


def test_an_update_applied_once_raises_stale_with_the_stored_version() -> None:
    # An update that ADDs, with idempotency="transaction": one action with a request token.
    spec = update_spec(None, (), {"hits": 1}, None, None, None, None, False)
    mine = Counter(name="a", v=2)
    counter = {
        "PK": {"S": "C#a"},
        "SK": {"S": "COUNTER"},
        "_type": {"S": "Counter"},
        "name": {"S": "a"},
        "hits": {"N": "4"},
        "v": {"N": "9"},
    }
    response = {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
        "CancellationReasons": [
            {"Code": "ConditionalCheckFailed", "Message": "failed", "Item": counter}
        ],
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    error = from_error_response(response, "TransactWriteItems", {})
    op = items.update(CTX, Counter, {"name": "a"}, spec, instance=mine, idempotency="transaction")
    with pytest.raises(StaleVersionError) as caught:
        answering(op, [error])
    assert (caught.value.expected_version, caught.value.stored_version) == (2, 9)
    assert caught.value.item == Counter(name="a", hits=4, v=9)
