"""Sending transactions: one token for every retry, which cancellations are retried, reasons."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import RetryPolicy, Session, Table, cond
from lsiorm._ops.transactions import TransactWriteResult, transact_write
from lsiorm._requests.transactions import Put, Update
from lsiorm.errors import DynamoError, ItemCollectionSizeLimitError, TransactionCanceledError
from support.fakes import ScriptedClient
from support.models import declare_ledger

accounts = Table("tx_accounts", "pk", "sk")
Account, Entry = declare_ledger(accounts)

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
