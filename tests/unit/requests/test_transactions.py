"""Transaction requests built without I/O: exact params, locks, tokens, limits, refusals."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from lsiorm import Entity, Session, Table, cond, where
from lsiorm._conditions import eq
from lsiorm._ops.transactions import transact_write
from lsiorm._requests.transactions import (
    ConditionCheck,
    Delete,
    Get,
    Put,
    Update,
    transact_get_request,
    transact_write_request,
)
from lsiorm.errors import ValidationError
from support.fakes import ScriptedClient
from support.models import declare_ledger

accounts = Table("tx_accounts", "pk", "sk")
Account, Entry = declare_ledger(accounts)


class Profile(Entity, table=accounts, keys={"pk": "P#{owner}", "sk": "PROFILE"}, version="v"):
    owner: str
    email: str = ""
    v: int = 0


def test_write_request_is_exact() -> None:
    params = transact_write_request(
        [
            Put(Account(owner="ann", balance=5), create_only=True),
            Update(Account, {"owner": "bob"}, set={"balance": 7}),
            Delete(Entry(owner="ann", n=1)),
            ConditionCheck(Account, cond("balance") >= 0, key={"owner": "cy"}),
        ],
        token="tok-1",
    )
    assert params == {
        "ClientRequestToken": "tok-1",
        "TransactItems": [
            {
                "Put": {
                    "TableName": "tx_accounts",
                    "Item": {
                        "owner": {"S": "ann"},
                        "balance": {"N": "5"},
                        "pk": {"S": "A#ann"},
                        "sk": {"S": "ACCOUNT"},
                        "_type": {"S": "Account"},
                    },
                    "ConditionExpression": "attribute_not_exists(#n0)",
                    "ExpressionAttributeNames": {"#n0": "pk"},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Update": {
                    "TableName": "tx_accounts",
                    "Key": {"pk": {"S": "A#bob"}, "sk": {"S": "ACCOUNT"}},
                    "UpdateExpression": "SET #n1 = :v0",
                    "ConditionExpression": "attribute_exists(#n0)",
                    "ExpressionAttributeNames": {"#n0": "pk", "#n1": "balance"},
                    "ExpressionAttributeValues": {":v0": {"N": "7"}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Delete": {
                    "TableName": "tx_accounts",
                    "Key": {"pk": {"S": "A#ann"}, "sk": {"S": "E#00001"}},
                }
            },
            {
                "ConditionCheck": {
                    "TableName": "tx_accounts",
                    "Key": {"pk": {"S": "A#cy"}, "sk": {"S": "ACCOUNT"}},
                    "ConditionExpression": "#n0 >= :v0",
                    "ExpressionAttributeNames": {"#n0": "balance"},
                    "ExpressionAttributeValues": {":v0": {"N": "0"}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ],
    }


def test_versioned_entities_keep_their_lock_in_a_transaction() -> None:
    params = transact_write_request(
        [
            Put(Profile(owner="a", v=3)),
            Delete(Profile(owner="b", v=2)),
            ConditionCheck(Profile(owner="c", v=9)),
        ]
    )
    put, delete, check = (next(iter(i.values())) for i in params["TransactItems"])
    assert put["Item"]["v"] == {"N": "4"}
    assert put["ExpressionAttributeValues"] == {":v0": {"N": "3"}}
    assert delete["ExpressionAttributeValues"] == {":v0": {"N": "2"}}
    assert check["ExpressionAttributeValues"] == {":v0": {"N": "9"}}


def test_a_generated_token_is_a_fresh_uuid4() -> None:
    first = transact_write_request([Put(Account(owner="a"))])["ClientRequestToken"]
    second = transact_write_request([Put(Account(owner="a"))])["ClientRequestToken"]
    assert first != second
    assert uuid.UUID(first).version == 4


def test_at_most_100_actions_checked_before_sending() -> None:
    client = ScriptedClient([], {})
    session = Session(client=client)
    actions = [Put(Entry(owner="a", n=i)) for i in range(101)]
    with pytest.raises(ValidationError) as caught:
        session.run(transact_write(session.ctx, actions))
    assert caught.value.rule == "transaction.max-100"
    assert client.params == []
    assert len(transact_write_request(actions[:100])["TransactItems"]) == 100
    with pytest.raises(ValidationError) as caught:
        transact_get_request([Get(Entry, {"owner": "a", "n": i}) for i in range(101)])
    assert caught.value.rule == "transaction.max-100"


@pytest.mark.parametrize(
    "actions",
    [
        [
            Put(Account(owner="a")),
            ConditionCheck(Account, where(balance=eq(0)), key={"owner": "a"}),
        ],
        [Update(Account(owner="a"), set={"balance": 1}), Delete(Account, {"owner": "a"})],
        [Put(Entry(owner="a", n=1)), Put(Entry(owner="a", n=1, amount=2))],
    ],
)
def test_two_actions_on_one_item_are_refused(actions: list[Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        transact_write_request(actions)
    assert caught.value.rule == "transaction.duplicate-item"


def test_reads_of_one_item_twice_are_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        transact_get_request([Get(Account(owner="a")), Get(Account, {"owner": "a"})])
    assert caught.value.rule == "transaction.duplicate-item"


@pytest.mark.parametrize(
    ("build", "rule"),
    [
        (lambda: transact_write_request([]), "transaction.empty"),
        (lambda: transact_get_request([]), "transaction.empty"),
        (
            lambda: transact_write_request([ConditionCheck(Account(owner="a"))]),
            "transaction.condition-check-empty",
        ),
        (lambda: transact_write_request([Put(Account(owner="a"))], token=""), "transaction.token"),
        (
            lambda: transact_write_request([Put(Account(owner="a"))], token="x" * 37),
            "transaction.token",
        ),
        (lambda: transact_write_request([Account(owner="a")]), "transaction.action"),  # type: ignore[list-item]
    ],
)
def test_bad_transactions_are_refused(build: Callable[[], Any], rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.rule == rule
