"""The dual-write route of a session, with DynamoDB's answers scripted: what it sends, how a
cancellation becomes the original request's outcome, and when it falls back."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import cond
from lsiorm._migration.dual_writes import TRIES, DualFallback, DualWrites
from lsiorm._model.item_encoding import wire_item
from lsiorm._ops import items, transactions
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._requests.transactions import ConditionCheck, Put, Update
from lsiorm._requests.update_plan import update_spec
from lsiorm.errors import (
    CancellationReason,
    ConditionFailedError,
    NotFoundError,
    TransactionCanceledError,
)
from support.fakes import answering as drive
from support.migration import declare_shop, source_item

TABLE, CLASSES = declare_shop("ShopV2")
Order = CLASSES["Order"]
KEY = {"PK": {"S": "G#001"}, "SK": {"S": "ORDER#000001"}}
OLD = {**source_item(1, title="t"), **KEY}


def route(reads: str = "source") -> tuple[Context, DualWrites, list[DualFallback]]:
    seen: list[DualFallback] = []
    dual = DualWrites(TABLE, "Shop", reads, seen.append)
    return Context(RetryPolicy(max_attempts=3, initial=0.0, maximum=0.0), route=dual), dual, seen


def cancelled(*codes: str, item: dict[str, Any] | None = None) -> TransactionCanceledError:
    reasons = [
        CancellationReason(i, code, "", item=item if i == 0 else None)
        for i, code in enumerate(codes)
    ]
    return TransactionCanceledError(
        "cancelled", reasons=reasons, code="TransactionCanceledException"
    )


def order(status: str = "new") -> Any:
    return Order(group=1, n=1, title="t", status=status)


def test_a_put_is_sent_as_one_transaction_over_both_tables() -> None:
    ctx, dual, seen = route()
    stored, calls = drive(items.put(ctx, order()), [{}])
    assert stored == order()
    assert [c.operation for c in calls] == ["TransactWriteItems"]
    tables = [next(iter(a.values()))["TableName"] for a in calls[0].params["TransactItems"]]
    assert tables == ["Shop", "ShopV2"]
    assert (dual.mirrored, dual.fallbacks, seen) == (1, {}, [])


def test_a_false_condition_raises_what_it_raises_without_dual_writes() -> None:
    ctx, dual, _ = route()
    op = items.put(ctx, order(), create_only=True)
    with pytest.raises(ConditionFailedError) as caught:
        drive(op, [cancelled("ConditionalCheckFailed", "None", item=OLD)])
    assert type(caught.value) is ConditionFailedError
    assert caught.value.operation == "PutItem"
    assert caught.value.response["Item"] == OLD
    # An update of a missing item: NotFoundError, as a session without dual writes says.
    op = items.update(ctx, Order, {"group": 1, "n": 1}, update_spec({"status": "paid"}))
    with pytest.raises(NotFoundError):
        drive(op, [{}, cancelled("ConditionalCheckFailed", "None")])
    assert (dual.mirrored, dual.fallbacks) == (0, {})


def test_an_update_reads_then_writes_both_and_answers_with_the_new_image() -> None:
    ctx, dual, _ = route()
    op = items.update(ctx, Order, {"group": 1, "n": 1}, update_spec({"status": "paid"}))
    stored, calls = drive(op, [{"Item": OLD}, {}])
    assert stored == order("paid")
    assert [c.operation for c in calls] == ["GetItem", "TransactWriteItems"]
    assert calls[0].params == {"TableName": "Shop", "Key": KEY, "ConsistentRead": True}
    put = calls[1].params["TransactItems"][1]["Put"]
    assert put == {"TableName": "ShopV2", "Item": wire_item(order("paid"))}
    assert dual.mirrored == 1


def test_an_item_that_keeps_changing_falls_back_to_the_source_alone() -> None:
    ctx, dual, seen = route()
    op = items.update(ctx, Order, {"group": 1, "n": 1}, update_spec({"status": "paid"}))
    answers: list[Any] = []
    for n in range(TRIES):
        read = {**OLD, "title": {"S": f"v{n}"}}
        answers += [{"Item": read}, cancelled("ConditionalCheckFailed", "None", item=OLD)]
    answers.append({"Attributes": wire_item(order("paid"))})
    stored, calls = drive(op, answers)
    assert stored == order("paid")
    assert (calls[-1].operation, calls[-1].params["TableName"]) == ("UpdateItem", "Shop")
    assert (dual.mirrored, dual.fallbacks) == (0, {"source-changed": 1})
    assert seen == [DualFallback("UpdateItem", "source-changed")]


def test_a_conflict_is_tried_again_and_another_cancellation_falls_back() -> None:
    ctx, dual, _ = route()
    _, calls = drive(items.put(ctx, order()), [cancelled("None", "TransactionConflict"), {}])
    assert [c.operation for c in calls] == ["TransactWriteItems"] * 2
    _, calls = drive(items.put(ctx, order()), [cancelled("None", "ValidationError"), {}])
    assert (calls[-1].operation, calls[-1].params["TableName"]) == ("PutItem", "Shop")
    assert (dual.mirrored, dual.fallbacks) == (1, {"cancelled ValidationError": 1})


@pytest.mark.parametrize(("reads", "table"), [("source", "Shop"), ("destination", "ShopV2")])
def test_reads_go_where_they_are_told(reads: str, table: str) -> None:
    ctx, _, _ = route(reads)
    found, calls = drive(items.get(ctx, Order, {"group": 1, "n": 1}), [{"Item": OLD}])
    assert found == order()
    assert calls[0].params["TableName"] == table


def test_a_failing_action_of_a_transaction_is_the_callers_with_the_callers_reasons() -> None:
    ctx, dual, _ = route()
    check = ConditionCheck(Order, cond("title") == "t", key={"group": 1, "n": 2})
    op = transactions.transact_write(ctx, [Put(order()), check])
    with pytest.raises(TransactionCanceledError) as caught:
        drive(op, [cancelled("None", "ConditionalCheckFailed", "None")])
    assert [r.code for r in caught.value.reasons] == ["None", "ConditionalCheckFailed"]
    assert (dual.mirrored, dual.fallbacks) == (0, {})


def test_a_transaction_that_falls_back_has_a_token_of_its_own() -> None:
    ctx, dual, _ = route()
    update = Update(Order, {"group": 1, "n": 1}, set={"title": "x"})
    _, calls = drive(transactions.transact_write(ctx, [update], token="t" * 32), [{}])
    assert [c.operation for c in calls] == ["TransactWriteItems"]
    token = calls[0].params["ClientRequestToken"]
    assert token != "t" * 32
    assert len(token) == 32
    assert calls[0].params["TransactItems"][0]["Update"]["TableName"] == "Shop"
    assert dual.fallbacks == {"update-in-transaction": 1}
