"""A transaction cancelled for a full item collection raises the typed 10 GB error, once."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import ANY, Stubber

from lsiorm import Entity, KeyAttribute, LocalIndex, Put, RetryPolicy, Session, Table
from lsiorm.errors import ItemCollectionSizeLimitError, TransactionCanceledError

table = Table("TxFull", "PK", "SK", local_indexes=[LocalIndex("ByRank", KeyAttribute("RankKey"))])


class Note(Entity, table=table, keys={"PK": "USER#{user}", "SK": "NOTE#{n:04d}"}):
    user: str
    n: int


def stubbed_session(reasons: list[dict[str, str]]) -> tuple[Session, Stubber]:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    stubber = Stubber(client)
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        service_message="Transaction cancelled",
        http_status_code=400,
        expected_params={
            "TransactItems": ANY,
            "ClientRequestToken": ANY,
            "ReturnItemCollectionMetrics": ANY,
        },
        modeled_fields={"CancellationReasons": reasons},
    )
    stubber.activate()
    return Session(client, retry=RetryPolicy(max_attempts=5, initial=0.0, maximum=0.0)), stubber


def test_full_collection_in_a_transaction_is_typed_and_not_retried() -> None:
    session, stubber = stubbed_session(
        [
            {"Code": "None"},
            {"Code": "ItemCollectionSizeLimitExceeded", "Message": "Collection size exceeded"},
        ]
    )
    with pytest.raises(ItemCollectionSizeLimitError) as info:
        session.transact_write([Put(Note(user="a", n=1)), Put(Note(user="b", n=2))])
    err = info.value
    assert err.table == "TxFull"
    assert err.collection_key == {"PK": {"S": "USER#b"}}
    assert isinstance(err.__cause__, TransactionCanceledError)
    assert [r.code for r in err.__cause__.failed] == ["ItemCollectionSizeLimitExceeded"]
    stubber.assert_no_pending_responses()  # exactly one attempt: the stub had one answer


def test_other_cancellations_stay_transaction_errors() -> None:
    session, _ = stubbed_session(
        [{"Code": "ConditionalCheckFailed", "Message": "no"}, {"Code": "None"}]
    )
    with pytest.raises(TransactionCanceledError) as info:
        session.transact_write([Put(Note(user="a", n=1)), Put(Note(user="b", n=2))])
    assert not isinstance(info.value, ItemCollectionSizeLimitError)
