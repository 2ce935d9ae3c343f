"""Telemetry without an engine: span attributes from requests and responses, retries on spans,
metrics, the providers that record nothing, and who wraps botocore's ``_make_api_call``."""

from __future__ import annotations

import functools
import subprocess
import sys
from decimal import Decimal
from typing import Any
from unittest import mock

import boto3
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from lsiorm import AsyncSession, RetryPolicy, Session, Table, Telemetry, query
from lsiorm._io.api_call_wrappers import ApiCallWatch
from lsiorm._io.telemetry import (
    entity_types,
    recorder_of,
    request_attributes,
    response_attributes,
    table_names,
    telemetry_for,
)
from lsiorm._ops.steps import Call, RetryNote
from lsiorm._requests.transactions import ConditionCheck, Put
from lsiorm.errors import OutcomeUnknownError
from support.fakes import AsyncScriptedClient, ScriptedClient, client_error
from support.models import declare_ledger
from support.otel import Recording, otel
from support.paths import TESTS

__all__ = ["otel"]  # the fixture

FAST = RetryPolicy(max_attempts=4, initial=0.0, maximum=0.0)
LEDGER = Table("ledger", "pk", "sk")
Account, Entry = declare_ledger(LEDGER)


def test_table_names_of_each_request_shape() -> None:
    assert table_names({"TableName": "a"}) == ("a",)
    assert table_names({"RequestItems": {"a": [], "b": []}}) == ("a", "b")
    transact = {
        "TransactItems": [
            {"Put": {"TableName": "a", "Item": {}}},
            {"ConditionCheck": {"TableName": "b", "Key": {}}},
            {"Update": {"TableName": "a", "Key": {}}},
        ]
    }
    assert table_names(transact) == ("a", "b")
    assert table_names({}) == ()


def test_request_attributes_follow_the_dynamodb_conventions() -> None:
    call = Call(
        "Query",
        {
            "TableName": "live",
            "IndexName": "ByScore",
            "ConsistentRead": True,
            "Limit": 10,
            "ProjectionExpression": "#p0, #p1",
            "Select": "SPECIFIC_ATTRIBUTES",
            "KeyConditionExpression": "#k = :v",
            "ExpressionAttributeValues": {":v": {"S": "secret value"}},
        },
        retry=RetryNote(3, "ThrottlingException", 0.25),
    )
    assert request_attributes(call, {"rpc.system": "aws-api"}) == {
        "rpc.system": "aws-api",
        "rpc.method": "Query",
        "db.operation": "Query",
        "aws.dynamodb.table_names": ("live",),
        "aws.dynamodb.index_name": "ByScore",
        "aws.dynamodb.consistent_read": True,
        "aws.dynamodb.limit": 10,
        "aws.dynamodb.projection": "#p0, #p1",
        "aws.dynamodb.select": "SPECIFIC_ATTRIBUTES",
        "lsiorm.attempt": 3,
    }


def test_response_attributes_follow_the_dynamodb_conventions() -> None:
    response = {
        "Count": 2,
        "ScannedCount": 5,
        "ConsumedCapacity": {"TableName": "live", "CapacityUnits": 1.5},
        "ItemCollectionMetrics": {
            "ItemCollectionKey": {"pk": {"B": b"\x00\x01"}},
            "SizeEstimateRangeGB": [Decimal("1.5"), Decimal("2.0")],
        },
        "ResponseMetadata": {"RequestId": "r-1"},
        "Items": [{"secret": {"S": "never an attribute"}}],
    }
    assert response_attributes(response) == {
        "aws.dynamodb.consumed_capacity": ('{"TableName":"live","CapacityUnits":1.5}',),
        "aws.dynamodb.count": 2,
        "aws.dynamodb.scanned_count": 5,
        "aws.dynamodb.item_collection_metrics": (
            '{"ItemCollectionKey":{"pk":{"B":"AAE="}},"SizeEstimateRangeGB":["1.5","2.0"]}'
        ),
        "aws.request_id": "r-1",
    }


def test_entity_types_are_read_from_every_kind_of_argument() -> None:
    account = Account(owner="o")
    entry = Entry(owner="o", n=1)
    assert entity_types([account]) == ("Account",)
    assert entity_types([Entry, {"owner": "o"}]) == ("Entry",)
    assert entity_types([[account, entry, account]]) == ("Account", "Entry")
    assert entity_types([query(Account)]) == ("Account",)
    assert entity_types([[Put(account), ConditionCheck(entry)]]) == ("Account", "Entry")
    assert entity_types([[(Entry, {"owner": "o", "n": 2})]]) == ("Entry",)
    assert entity_types(["text", 3, None]) == ()


def test_telemetry_is_off_when_asked_and_recorder_less_without_an_sdk() -> None:
    assert telemetry_for(False) is None
    telemetry = telemetry_for(True)
    assert isinstance(telemetry, Telemetry)
    # No test sets OpenTelemetry's global providers: they are the API's own, which record
    # nothing, so no span or instrument is even made.
    assert recorder_of(telemetry) is None
    given = Telemetry(tracer_provider=Recording().tracer_provider)
    assert telemetry_for(given) is given
    assert recorder_of(given) is not None
    assert Session(client=ScriptedClient(), telemetry=False).telemetry is None


def _scripted(kind: str, script: list[Any]) -> ScriptedClient:
    return ScriptedClient(script) if kind == "sync" else AsyncScriptedClient(script)


async def _put(kind: str, client: ScriptedClient, otel: Recording) -> Any:
    account = Account(owner="o")
    if kind == "sync":
        return Session(client=client, retry=FAST, telemetry=otel.telemetry).put(account)
    session = AsyncSession(client=client, retry=FAST, telemetry=otel.telemetry)
    return await session.put(account)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_retried_request_shows_each_attempt_and_its_retry(
    kind: str, otel: Recording
) -> None:
    throttled = client_error("ProvisionedThroughputExceededException", 400, "PutItem")
    client = _scripted(kind, [throttled, throttled, {}])
    await _put(kind, client, otel)

    first, second, third = otel.requests()
    operation = otel.operations()[0]
    assert operation.name == ("Session.put" if kind == "sync" else "AsyncSession.put")
    assert operation.attributes["lsiorm.request_count"] == 3
    assert operation.attributes["lsiorm.retry_count"] == 2
    assert operation.status.status_code != StatusCode.ERROR
    for span in (first, second, third):
        assert span.kind == SpanKind.CLIENT
        assert span.name == "DynamoDB.PutItem"
        assert otel.parent_of(span) == operation
    for failed in (first, second):
        assert failed.status.status_code == StatusCode.ERROR
        assert failed.attributes["error.type"] == "ProvisionedThroughputExceededException"
    assert [e.name for e in first.events] == ["exception"]
    assert [e.name for e in second.events] == ["retry", "exception"]
    assert [e.name for e in third.events] == ["retry"]
    assert "lsiorm.attempt" not in first.attributes
    assert (second.attributes["lsiorm.attempt"], third.attributes["lsiorm.attempt"]) == (2, 3)
    retry = [e for e in third.events if e.name == "retry"]
    assert retry[0].attributes["error.type"] == "ProvisionedThroughputExceededException"
    assert third.status.status_code != StatusCode.ERROR
    assert otel.total("lsiorm.retries", **{"rpc.method": "PutItem"}) == 2
    assert otel.total("lsiorm.throttles", **{"rpc.method": "PutItem"}) == 2
    assert otel.total("lsiorm.request.duration", **{"rpc.method": "PutItem"}) == 3


async def test_a_failed_operation_fails_its_span_and_counts_as_unknown_when_it_is(
    otel: Recording,
) -> None:
    failed = client_error("InternalServerError", 500, "UpdateItem")
    client = ScriptedClient([failed])
    session = Session(client=client, retry=FAST, telemetry=otel.telemetry)
    with pytest.raises(OutcomeUnknownError):
        session.update(Account, owner="o", add={"balance": 1})
    (operation,) = otel.operations()
    assert operation.status.status_code == StatusCode.ERROR
    assert operation.attributes["error.type"] == "InternalServerError"
    assert otel.total("lsiorm.outcome_unknown", **{"lsiorm.operation": "Session.update"}) == 1


def test_consumed_capacity_and_collection_sizes_become_metrics(otel: Recording) -> None:
    def answer(low: float, high: float) -> dict[str, Any]:
        return {
            "ConsumedCapacity": {
                "TableName": "ledger",
                "CapacityUnits": 3.0,
                "Table": {"CapacityUnits": 1.0},
                "LocalSecondaryIndexes": {"ByDate": {"CapacityUnits": 2.0}},
            },
            "ItemCollectionMetrics": {
                "ItemCollectionKey": {"pk": {"S": "A#o"}},
                "SizeEstimateRangeGB": [low, high],
            },
        }

    client = ScriptedClient([answer(7.5, 8.5), answer(0.5, 1.0)])
    session = Session(client=client, telemetry=otel.telemetry, watch_collections=False)
    session.put(Account(owner="o"))
    session.put(Account(owner="o"))
    assert otel.total("lsiorm.consumed_capacity", **{"db.collection.name": "ledger"}) == 6.0
    assert otel.total("lsiorm.consumed_capacity", **{"aws.dynamodb.index_name": "ByDate"}) == 4.0
    (largest,) = otel.points("lsiorm.item_collection.largest_size")
    assert (largest.attributes["db.collection.name"], largest.value) == ("ledger", 8.5)


# -- who wraps _make_api_call ---------------------------------------------------------------------


def _client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")


def test_a_plain_client_is_not_wrapped() -> None:
    watch = ApiCallWatch(_client())
    assert (watch.wrapped(), watch.traced_by_opentelemetry()) == (False, False)


def test_a_patched_client_is_wrapped_and_the_verdict_follows_the_patch() -> None:
    client = _client()
    watch = ApiCallWatch(client)
    with mock.patch.object(client, "_make_api_call"):
        assert (watch.wrapped(), watch.traced_by_opentelemetry()) == (True, False)
    assert watch.wrapped() is False


def test_a_decorator_on_the_class_is_a_wrapper() -> None:
    from botocore.client import BaseClient

    original = BaseClient.__dict__["_make_api_call"]

    @functools.wraps(original)
    def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        return original(self, *args, **kwargs)

    watch = ApiCallWatch(_client())
    with mock.patch.object(BaseClient, "_make_api_call", traced):
        assert (watch.wrapped(), watch.traced_by_opentelemetry()) == (True, False)
    assert watch.wrapped() is False


def test_opentelemetry_botocore_instrumentation_is_recognised(otel: Recording) -> None:
    from opentelemetry.instrumentation.botocore import BotocoreInstrumentor

    watch = ApiCallWatch(_client())
    instrumentor = BotocoreInstrumentor()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        assert (watch.wrapped(), watch.traced_by_opentelemetry()) == (True, True)
    finally:
        instrumentor.uninstrument()
    assert (watch.wrapped(), watch.traced_by_opentelemetry()) == (False, False)


def test_without_opentelemetry_sessions_run_untraced_and_telemetry_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import lsiorm\n"
        "from support.fakes import ScriptedClient\n"
        "assert lsiorm.Session(client=ScriptedClient()).telemetry is None\n"
        "try:\n"
        "    lsiorm.Telemetry()\n"
        "except lsiorm.MissingDependencyError as exc:\n"
        "    assert exc.extra == 'otel', exc\n"
        "else:\n"
        "    raise AssertionError('Telemetry() without opentelemetry-api')\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=TESTS, check=True)


def _throttled_with_reasons(operation: str) -> Any:
    from botocore.exceptions import ClientError

    return ClientError(
        {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "hot"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
            "ThrottlingReasons": [
                {
                    "reason": "TableWriteKeyRangeThroughputExceeded",
                    "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/ledger",
                }
            ],
        },
        operation,
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_throttled_request_names_its_reasons_and_its_partition(
    kind: str, otel: Recording
) -> None:
    client = _scripted(kind, [_throttled_with_reasons("PutItem"), {}])
    await _put(kind, client, otel)
    throttled, written = otel.requests()
    attributes = throttled.attributes
    assert attributes["lsiorm.throttle.reasons"] == ("TableWriteKeyRangeThroughputExceeded",)
    assert attributes["lsiorm.throttle.resources"] == (
        "arn:aws:dynamodb:us-east-1:123456789012:table/ledger",
    )
    assert attributes["lsiorm.throttle.partition_keys"] == ("pk=A#o",)
    assert not any(name.startswith("lsiorm.throttle") for name in written.attributes)
    reason = {"lsiorm.throttle.reason": "TableWriteKeyRangeThroughputExceeded"}
    assert otel.total("lsiorm.throttles", **{"rpc.method": "PutItem", **reason}) == 1
    # The partition key is never a metric's attribute.
    for point in otel.points("lsiorm.throttles"):
        assert all("A#o" not in str(value) for value in point.attributes.values())


def test_a_transaction_cancelled_as_throttled_names_the_throttled_action(otel: Recording) -> None:
    from botocore.exceptions import ClientError

    cancelled = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
            "CancellationReasons": [{"Code": "None"}, {"Code": "ThrottlingError"}],
        },
        "TransactWriteItems",
    )
    client = ScriptedClient([cancelled, {}])
    session = Session(client=client, retry=FAST, telemetry=otel.telemetry)
    session.transact_write([Put(Account(owner="a")), Put(Entry(owner="b", n=1))])
    throttled, _ = otel.requests()
    assert throttled.attributes["lsiorm.throttle.reasons"] == ("ThrottlingError",)
    assert throttled.attributes["lsiorm.throttle.partition_keys"] == ("pk=A#b",)
    reason = {"lsiorm.throttle.reason": "ThrottlingError"}
    assert otel.total("lsiorm.throttles", **{"rpc.method": "TransactWriteItems", **reason}) == 1
