"""Transactions on the engines: commits, cancellations with their reasons, reads, tokens."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from lsiorm import Entity, Session, Table, cond
from lsiorm._ops.transactions import transact_get, transact_write
from lsiorm._requests.transactions import (
    ConditionCheck,
    Delete,
    Get,
    Put,
    Update,
    transact_write_request,
)
from lsiorm.errors import DynamoError, ServiceValidationError, TransactionCanceledError
from support.models import declare_ledger
from support.tables import session_with

live = Table(f"tx_live_{uuid.uuid4().hex[:8]}", "pk", "sk")
Wallet, Ledger = declare_ledger(live)


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
