"""Transactions: exact requests, limits, tokens, retries, and cancellation reasons per entity."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import Entity, RetryPolicy, Session, Table, cond, where
from lsiorm._conditions import eq
from lsiorm._ops.transactions import TransactWriteResult, transact_get, transact_write
from lsiorm._requests.transactions import (
    ConditionCheck,
    Delete,
    Get,
    Put,
    Update,
    transact_get_request,
    transact_write_request,
)
from lsiorm.errors import (
    DynamoError,
    ItemCollectionSizeLimitError,
    ServiceValidationError,
    TransactionCanceledError,
    ValidationError,
)
from support.fakes import ScriptedClient
from support.tables import session_with


def declare(table: Table) -> tuple[type[Entity], type[Entity]]:
    """An account and the entries of its ledger, in one collection."""

    class Account(Entity, table=table, keys={"pk": "A#{owner}", "sk": "ACCOUNT"}):
        owner: str
        balance: int = 0

    class Entry(Entity, table=table, keys={"pk": "A#{owner}", "sk": "E#{n:05d}"}):
        owner: str
        n: int
        amount: int = 0

    return Account, Entry


accounts = Table("tx_accounts", "pk", "sk")
Account, Entry = declare(accounts)


class Profile(Entity, table=accounts, keys={"pk": "P#{owner}", "sk": "PROFILE"}, version="v"):
    owner: str
    email: str = ""
    v: int = 0


FAST = RetryPolicy(max_attempts=6, initial=0.0, maximum=0.0)


def cancelled(*codes: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "CancellationReasons": [
                {"Code": c, **({"Message": f"{c}!"} if c != "None" else {})} for c in codes
            ],
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        "TransactWriteItems",
    )


def service_error(code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": 400}},
        "TransactWriteItems",
    )


# -- requests -----------------------------------------------------------------------------------


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


# -- retries and reasons, with a scripted client ------------------------------------------------


def test_every_retry_sends_the_same_token() -> None:
    client = ScriptedClient(
        [
            service_error("ThrottlingException"),
            cancelled("None", "TransactionConflict"),
            service_error("TransactionInProgressException"),
            cancelled("ThrottlingError", "ProvisionedThroughputExceeded"),
            {},
        ],
        {},
    )
    session = Session(client=client, retry=FAST)
    actions = [Put(Account(owner="a")), Put(Account(owner="b"))]
    result = session.run(transact_write(session.ctx, actions))
    assert len(client.params) == 5
    assert {p["ClientRequestToken"] for p in client.params} == {result.token}
    assert all(p == client.params[0] for p in client.params)
    assert result == TransactWriteResult(result.token, (Account(owner="a"), Account(owner="b")))


@settings(max_examples=80, deadline=None)
@given(
    codes=st.lists(
        st.sampled_from(
            [
                "None",
                "TransactionConflict",
                "ThrottlingError",
                "ProvisionedThroughputExceeded",
                "ConditionalCheckFailed",
                "ValidationError",
                "ItemCollectionSizeLimitExceeded",
            ]
        ),
        min_size=2,
        max_size=2,
    )
)
def test_a_cancellation_is_retried_only_when_every_reason_is_transient(codes: list[str]) -> None:
    client = ScriptedClient([cancelled(*codes), {}], {})
    session = Session(client=client, retry=FAST)
    actions = [Put(Account(owner="a")), Put(Account(owner="b"))]
    failing = [c for c in codes if c != "None"]
    transient = bool(failing) and set(failing) <= {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
    }
    if transient:
        session.run(transact_write(session.ctx, actions))
        assert len(client.params) == 2
    else:
        # A full item collection is raised as the typed 10 GB error, the cancellation its cause.
        with pytest.raises((TransactionCanceledError, ItemCollectionSizeLimitError)) as caught:
            session.run(transact_write(session.ctx, actions))
        assert len(client.params) == 1
        cancelled_error = caught.value
        if "ItemCollectionSizeLimitExceeded" in codes:
            assert isinstance(cancelled_error, ItemCollectionSizeLimitError)
            cancelled_error = cancelled_error.__cause__
        assert isinstance(cancelled_error, TransactionCanceledError)
        assert [r.code for r in cancelled_error.reasons] == codes
        assert [r.entity for r in cancelled_error.failed] == [
            a.entity for a, c in zip(actions, codes, strict=True) if c != "None"
        ]


@pytest.mark.parametrize("code", ["IdempotentParameterMismatchException", "ValidationException"])
def test_other_transaction_errors_are_not_retried(code: str) -> None:
    client = ScriptedClient([service_error(code), {}], {})
    session = Session(client=client, retry=FAST)
    with pytest.raises(DynamoError) as caught:
        session.run(transact_write(session.ctx, [Put(Account(owner="a"))]))
    assert caught.value.code == code
    assert len(client.params) == 1


def test_reasons_are_tied_to_entities_and_old_items() -> None:
    error = cancelled("None", "ConditionalCheckFailed")
    error.response["CancellationReasons"][1]["Item"] = Account(owner="b", balance=3).to_wire()
    client = ScriptedClient([error], {})
    session = Session(client=client)
    with pytest.raises(TransactionCanceledError) as caught:
        session.run(
            transact_write(
                session.ctx,
                [
                    Put(Account(owner="a")),
                    Update(
                        Account, {"owner": "b"}, set={"balance": 1}, condition=cond("balance") > 5
                    ),
                ],
            )
        )
    (failed,) = caught.value.failed
    assert failed.index == 1
    assert failed.entity == (Account, {"owner": "b"})
    assert failed.item == Account(owner="b", balance=3)
    assert caught.value.reasons[0].entity == Account(owner="a")
    assert "action 1 (Update Account): ConditionalCheckFailed" in str(caught.value)


# -- on the engines -----------------------------------------------------------------------------

live = Table(f"tx_live_{uuid.uuid4().hex[:8]}", "pk", "sk")
Wallet, Ledger = declare(live)


class Card(Entity, table=live, keys={"pk": "C#{owner}", "sk": "CARD"}, version="v"):
    owner: str
    limit: int = 0
    v: int = 0


@pytest.fixture(scope="module")
def session(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, live, wait=False) as s:
        yield s


def test_a_transaction_commits_every_action(session: Session) -> None:
    ann, bob = f"ann-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    session.put(Wallet(owner=ann, balance=10))
    session.put(Ledger(owner=ann, n=1, amount=10))
    card = session.put(Card(owner=ann, limit=5))
    result = session.run(
        transact_write(
            session.ctx,
            [
                Update(Wallet, {"owner": ann}, add={"balance": -4}, condition=cond("balance") >= 4),
                Put(Wallet(owner=bob, balance=4), create_only=True),
                Delete(Ledger, {"owner": ann, "n": 1}),
                ConditionCheck(card),
            ],
        )
    )
    assert result.stored[1] == Wallet(owner=bob, balance=4)
    assert session.get(Wallet, owner=ann, consistent=True) == Wallet(owner=ann, balance=6)
    assert session.get(Wallet, owner=bob, consistent=True) == Wallet(owner=bob, balance=4)
    assert session.get(Ledger, owner=ann, n=1, consistent=True) is None


def test_a_cancelled_transaction_changes_nothing_and_says_why(session: Session) -> None:
    ann = f"ann-{uuid.uuid4().hex[:6]}"
    wallet = session.put(Wallet(owner=ann, balance=3))
    card = session.put(Card(owner=ann, limit=5))
    stale = card.model_copy(update={"v": card.v - 1})
    with pytest.raises(TransactionCanceledError) as caught:
        session.run(
            transact_write(
                session.ctx,
                [
                    Put(Ledger(owner=ann, n=2, amount=-5)),
                    Update(wallet, add={"balance": -5}, condition=cond("balance") >= 5),
                    ConditionCheck(stale),
                ],
            )
        )
    assert [r.code for r in caught.value.reasons] == [
        "None",
        "ConditionalCheckFailed",
        "ConditionalCheckFailed",
    ]
    assert [r.entity for r in caught.value.failed] == [wallet, stale]
    assert [r.item for r in caught.value.failed] == [wallet, card]
    assert session.get(Ledger, owner=ann, n=2, consistent=True) is None
    assert session.get(Wallet, owner=ann, consistent=True) == wallet


def test_the_engine_refuses_what_lsiorm_would_not_send(session: Session) -> None:
    # lsiorm checks duplicates itself; the raw request shows the engine agrees.
    ann = f"ann-{uuid.uuid4().hex[:6]}"
    items = transact_write_request([Put(Wallet(owner=ann))])["TransactItems"] * 2
    with pytest.raises(ClientError) as caught:
        session.client.transact_write_items(TransactItems=items)
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_transact_get_reads_in_order(session: Session) -> None:
    ann = f"ann-{uuid.uuid4().hex[:6]}"
    wallet = session.put(Wallet(owner=ann, balance=8))
    entry = session.put(Ledger(owner=ann, n=3, amount=8))
    got = session.run(
        transact_get(
            session.ctx,
            [
                Get(Ledger, {"owner": ann, "n": 3}),
                Get(Wallet, {"owner": "nobody"}),
                Get(wallet),
                Get(Card, {"owner": ann}),
            ],
        )
    )
    assert got == [entry, None, wallet, None]


def test_the_same_token_applies_a_transaction_once(session: Session, backend: str) -> None:
    if backend == "moto":
        pytest.skip("moto ignores ClientRequestToken and applies every call")
    ann = f"ann-{uuid.uuid4().hex[:6]}"
    session.put(Wallet(owner=ann, balance=0))
    action = [Update(Wallet, {"owner": ann}, add={"balance": 1})]
    token = uuid.uuid4().hex
    for _ in range(3):
        session.run(transact_write(session.ctx, action, token=token))
    assert session.get(Wallet, owner=ann, consistent=True) == Wallet(owner=ann, balance=1)
    other = [Update(Wallet, {"owner": ann}, add={"balance": 2})]
    with pytest.raises(DynamoError) as caught:
        session.run(transact_write(session.ctx, other, token=token))
    assert caught.value.code == "IdempotentParameterMismatchException"
    assert not isinstance(caught.value, ServiceValidationError)
