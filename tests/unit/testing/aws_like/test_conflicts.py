"""Transaction conflicts as AWS's developer guide lists them ("Transaction conflict handling")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lsiorm.testing.aws_like.conflicts import Conflicts
from lsiorm.testing.aws_like.options import TransactionConflicts
from lsiorm.testing.aws_like.protocol import ServiceError
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.tables import TableShape
from lsiorm.testing.aws_like.touches import Touch

TABLE = TableShape.of(
    {
        "TableName": "Shop",
        "TableArn": "arn:aws:dynamodb:us-east-1:000000000000:table/Shop",
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
    }
)


def items(*names: str, kind: str = "update") -> list[Touch]:
    return [Touch(i, TABLE, {"PK": {"S": n}}, kind) for i, n in enumerate(names)]


def reasons(exc: pytest.ExceptionInfo[ServiceError]) -> list[str]:
    body: dict[str, Any] = json.loads(exc.value.body())
    return [r["Code"] for r in body["CancellationReasons"]]


def test_a_transaction_meeting_one_in_flight_is_cancelled_at_that_items_position() -> None:
    conflicts = Conflicts(TransactionConflicts(), Tally())
    first = conflicts.take("TransactWriteItems", items("a", "b"), None, 0.0)
    with pytest.raises(ServiceError) as second:
        conflicts.take("TransactWriteItems", items("c", "b", "d"), None, 0.0)
    assert second.value.code == "TransactionCanceledException"
    assert reasons(second) == ["None", "TransactionConflict", "None"]
    assert conflicts.stats["conflicts"] == 1
    conflicts.release(first, 0.0, applied=True)  # no hold: free once answered
    assert conflicts.take("TransactWriteItems", items("c", "b", "d"), None, 0.0) is not None


def test_a_plain_write_of_an_item_a_transaction_holds_gets_a_conflict_exception() -> None:
    conflicts = Conflicts(TransactionConflicts(hold=0.5), Tally())
    held = conflicts.take("TransactWriteItems", items("a"), None, 0.0)
    conflicts.release(held, 1.0, applied=True)  # held until 1.5
    for operation in ("PutItem", "UpdateItem", "DeleteItem"):
        with pytest.raises(ServiceError) as refused:
            conflicts.take(operation, items("a"), None, 1.4)
        assert refused.value.code == "TransactionConflictException"
    assert conflicts.take("PutItem", items("a"), None, 1.5) is not None


def test_a_cancelled_transaction_holds_nothing_after_its_answer() -> None:
    conflicts = Conflicts(TransactionConflicts(hold=10.0), Tally())
    ticket = conflicts.take("TransactWriteItems", items("a"), None, 0.0)
    conflicts.release(ticket, 0.0, applied=False)
    assert conflicts.take("PutItem", items("a"), None, 0.0) is not None


def test_a_transaction_meets_a_plain_write_in_flight_and_reads_meet_writes() -> None:
    conflicts = Conflicts(TransactionConflicts(), Tally())
    plain = conflicts.take("PutItem", items("a"), None, 0.0)
    with pytest.raises(ServiceError) as write:
        conflicts.take("TransactWriteItems", items("a"), None, 0.0)
    assert reasons(write) == ["TransactionConflict"]
    with pytest.raises(ServiceError) as read:
        conflicts.take("TransactGetItems", items("a", kind="get"), None, 0.0)
    assert reasons(read) == ["TransactionConflict"]
    # Plain writes of one item do not conflict with each other (DynamoDB orders them).
    assert conflicts.take("UpdateItem", items("a"), None, 0.0) is not None
    conflicts.release(plain, 0.0, applied=True)


def test_transactional_reads_share_an_item_and_block_transactional_writes() -> None:
    conflicts = Conflicts(TransactionConflicts(), Tally())
    conflicts.take("TransactGetItems", items("a", kind="get"), None, 0.0)
    assert conflicts.take("TransactGetItems", items("a", kind="get"), None, 0.0) is not None
    with pytest.raises(ServiceError):
        conflicts.take("TransactWriteItems", items("a"), None, 0.0)
    with pytest.raises(ServiceError) as plain:
        conflicts.take("PutItem", items("a"), None, 0.0)
    assert plain.value.code == "TransactionConflictException"


def test_a_retry_with_the_same_token_is_the_same_transaction() -> None:
    conflicts = Conflicts(TransactionConflicts(hold=5.0), Tally())
    first = conflicts.take("TransactWriteItems", items("a"), "token-1", 0.0)
    conflicts.release(first, 0.0, applied=True)
    assert conflicts.take("TransactWriteItems", items("a"), "token-1", 1.0) is not None
    with pytest.raises(ServiceError):
        conflicts.take("TransactWriteItems", items("a"), "token-2", 1.0)


def test_batch_entries_are_never_refused_but_hold_their_items() -> None:
    conflicts = Conflicts(TransactionConflicts(hold=5.0), Tally())
    held = conflicts.take("TransactWriteItems", items("a"), None, 0.0)
    conflicts.release(held, 0.0, applied=True)
    batch = conflicts.take("BatchWriteItem", items("a", "b"), None, 1.0)
    assert batch is not None
    with pytest.raises(ServiceError) as read:
        conflicts.take("TransactGetItems", items("b", kind="get"), None, 1.0)
    assert reasons(read) == ["TransactionConflict"]


def test_a_rate_cancels_a_share_of_transactions_repeatably() -> None:
    def cancelled(seed: int) -> list[bool]:
        conflicts = Conflicts(TransactionConflicts(rate=0.3, seed=seed), Tally())
        outcome = []
        for n in range(200):
            try:
                ticket = conflicts.take("TransactWriteItems", items(f"i{n}", f"j{n}"), None, 0.0)
            except ServiceError as exc:
                outcome.append(reasons_of(exc).count("TransactionConflict") == 1)
            else:
                conflicts.release(ticket, 0.0, applied=True)
                outcome.append(False)
        return outcome

    first = cancelled(7)
    assert first == cancelled(7)
    assert 30 < sum(first) < 90


def reasons_of(exc: ServiceError) -> list[str]:
    return [r["Code"] for r in json.loads(exc.body())["CancellationReasons"]]
