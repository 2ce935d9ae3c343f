"""Throttles that say why: DynamoDB's throttling reasons, parsed into `ThrottledError`, with the
partition key the request targeted; and the one retry rule every transaction follows."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Table, ThrottledError, ThrottlingReason, TransactionCanceledError
from lsiorm._io import fastjson
from lsiorm._io.fastjson import ResponseFastPath, error_fields
from lsiorm._ops.retry import TRANSIENT_CANCELLATIONS, is_retryable
from lsiorm._ops.service_errors import from_error_response, partition_keys
from lsiorm.errors import CancellationReason, DynamoError

SERVICE = botocore.session.get_session().get_service_model("dynamodb")
ORDERS = Table("Orders", "PK", "SK")
ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/Orders"

KINDS = ("Table", "Index")
OPERATIONS = ("Read", "Write")
LIMITS = (
    "KeyRangeThroughputExceeded",
    "ProvisionedThroughputExceeded",
    "AccountLimitExceeded",
    "MaxOnDemandThroughputExceeded",
)
names = st.text(alphabet="abcXYZ019_.-", min_size=3, max_size=20)


def throttle(code: str, reasons: list[dict[str, str]] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": "Rate of requests exceeds the allowed throughput."},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    if reasons is not None:
        response["throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"] = (
            reasons
        )
    return response


# -- ThrottlingReason -------------------------------------------------------------------------


@given(
    st.sampled_from(KINDS),
    st.sampled_from(OPERATIONS),
    st.sampled_from(LIMITS),
    names,
    st.none() | names,
)
def test_a_reason_is_parsed_into_its_parts(
    kind: str, operation: str, limit: str, table: str, index: str | None
) -> None:
    resource = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
    if index is not None:
        resource += f"/index/{index}"
    reason = ThrottlingReason(f"{kind}{operation}{limit}", resource)
    assert (reason.kind, reason.operation, reason.limit) == (kind, operation, limit)
    assert (reason.table, reason.index) == (table, index)
    assert reason.key_range == (limit == "KeyRangeThroughputExceeded")
    assert reason.where == (table if index is None else f"{table}/index/{index}")


@pytest.mark.parametrize(
    ("text", "resource"),
    [("SomethingNew", "arn:aws:s3:::bucket"), ("", ""), ("TableWrite", "table/Orders")],
)
def test_a_reason_in_an_unknown_form_keeps_its_text(text: str, resource: str) -> None:
    reason = ThrottlingReason(text, resource)
    assert (reason.reason, reason.resource) == (text, resource)
    assert (reason.kind, reason.operation, reason.limit) == (None, None, None)
    assert reason.table is None
    assert not reason.key_range
    assert reason.where == (resource or "?")


# -- the typed error --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    ["ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException"],
)
def test_every_throttle_code_carries_its_reasons_and_the_key(code: str) -> None:
    listed = [
        {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN},
        {"reason": "IndexWriteAccountLimitExceeded", "resource": f"{ARN}/index/GSI1"},
    ]
    params = {"TableName": "Orders", "Item": {"PK": {"S": "USER#1"}, "SK": {"S": "A"}}}
    error = from_error_response(throttle(code, listed), "PutItem", params, (ORDERS,))
    assert isinstance(error, ThrottledError)
    assert error.retryable
    assert [(r.reason, r.resource) for r in error.reasons] == [
        (e["reason"], e["resource"]) for e in listed
    ]
    assert error.key_range
    assert error.partition_key == {"PK": {"S": "USER#1"}}
    assert error.code == code
    assert error.table == "Orders"
    text = str(error)
    assert "TableWriteKeyRangeThroughputExceeded on Orders" in text
    assert "IndexWriteAccountLimitExceeded on Orders/index/GSI1" in text
    assert "partition key PK=USER#1" in text


def test_a_throttle_without_reasons_is_still_typed() -> None:
    params = {"TableName": "Orders", "Key": {"PK": {"S": "a"}, "SK": {"S": "b"}}}
    error = from_error_response(throttle("ThrottlingException"), "GetItem", params, (ORDERS,))
    assert isinstance(error, ThrottledError)
    assert error.reasons == ()
    assert not error.key_range
    assert error.partition_key == {"PK": {"S": "a"}}


@pytest.mark.parametrize(
    "code", ["Throttling", "ThrottledException", "TooManyRequestsException", "RequestThrottled"]
)
def test_other_throttling_codes_are_throttles(code: str) -> None:
    error = from_error_response(throttle(code), "Scan", {"TableName": "Orders"})
    assert isinstance(error, ThrottledError)
    assert error.partition_key is None


def test_a_streams_limit_is_a_throttle_and_a_control_plane_one_is_not() -> None:
    limit = throttle("LimitExceededException")
    assert isinstance(from_error_response(limit, "GetRecords", {}), ThrottledError)
    other = from_error_response(limit, "CreateTable", {"TableName": "Orders"})
    assert type(other) is DynamoError
    assert not is_retryable(other)


def test_an_index_throttle_names_no_table_partition() -> None:
    listed = [{"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": f"{ARN}/index/G"}]
    params = {"TableName": "Orders", "Key": {"PK": {"S": "a"}, "SK": {"S": "b"}}}
    error = from_error_response(
        throttle("ProvisionedThroughputExceededException", listed), "UpdateItem", params, (ORDERS,)
    )
    assert isinstance(error, ThrottledError)
    assert error.key_range
    assert error.partition_key is None


def test_a_transaction_names_the_partition_of_the_throttled_table_only() -> None:
    other = Table("Other", "PK")
    params = {
        "TransactItems": [
            {"Put": {"TableName": "Orders", "Item": {"PK": {"S": "hot"}, "SK": {"S": "1"}}}},
            {"ConditionCheck": {"TableName": "Other", "Key": {"PK": {"S": "x"}}}},
            {"Delete": {"TableName": "Orders", "Key": {"PK": {"S": "hot"}, "SK": {"S": "2"}}}},
        ]
    }
    listed = [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN}]
    error = from_error_response(
        throttle("ProvisionedThroughputExceededException", listed),
        "TransactWriteItems",
        params,
        (ORDERS, other),
    )
    assert isinstance(error, ThrottledError)
    assert error.partition_key == {"PK": {"S": "hot"}}
    # Without reasons, two partitions of two tables: no one key.
    plain = from_error_response(
        throttle("ProvisionedThroughputExceededException"),
        "TransactWriteItems",
        params,
        (ORDERS, other),
    )
    assert isinstance(plain, ThrottledError)
    assert plain.partition_key is None


def test_partition_keys_of_each_request_shape() -> None:
    pk = {"PK": {"S": "p"}}
    assert partition_keys("Scan", {"TableName": "Orders"}, (ORDERS,)) == []
    query = {
        "TableName": "Orders",
        "KeyConditionExpression": "#k0 = :v0 AND begins_with(#k1, :v1)",
        "ExpressionAttributeNames": {"#k0": "PK", "#k1": "SK"},
        "ExpressionAttributeValues": {":v0": {"S": "p"}, ":v1": {"S": "A"}},
    }
    assert partition_keys("Query", query, (ORDERS,)) == [("Orders", pk)]
    assert partition_keys("Query", {**query, "IndexName": "GSI1"}, (ORDERS,)) == []
    batch = {
        "RequestItems": {
            "Orders": [
                {"PutRequest": {"Item": {"PK": {"S": "p"}, "SK": {"S": "1"}}}},
                {"DeleteRequest": {"Key": {"PK": {"S": "p"}, "SK": {"S": "2"}}}},
                {"DeleteRequest": {"Key": {"PK": {"S": "q"}, "SK": {"S": "2"}}}},
            ]
        }
    }
    assert partition_keys("BatchWriteItem", batch, (ORDERS,)) == [
        ("Orders", pk),
        ("Orders", {"PK": {"S": "q"}}),
    ]
    gets = {"RequestItems": {"Orders": {"Keys": [{"PK": {"S": "p"}, "SK": {"S": "1"}}]}}}
    assert partition_keys("BatchGetItem", gets, (ORDERS,)) == [("Orders", pk)]
    # An undeclared table: only a key of one attribute is known to be the partition key.
    assert partition_keys("GetItem", {"TableName": "T", "Key": {"id": {"N": "1"}}}) == [
        ("T", {"id": {"N": "1"}})
    ]
    assert partition_keys("GetItem", {"TableName": "T", "Key": {"a": {"S": "1"}, "b": 2}}) == []


# -- the retry rule ---------------------------------------------------------------------------


def cancelled(*codes: str) -> TransactionCanceledError:
    reasons = [CancellationReason(i, code, "") for i, code in enumerate(codes)]
    return TransactionCanceledError(
        "cancelled", reasons=reasons, code="TransactionCanceledException"
    )


@given(
    st.lists(st.sampled_from([*sorted(TRANSIENT_CANCELLATIONS), "None"]), min_size=1, max_size=5)
)
def test_a_cancellation_only_by_throttles_and_conflicts_is_retried(codes: list[str]) -> None:
    assert is_retryable(cancelled(*codes)) == any(c != "None" for c in codes)


@given(
    st.lists(st.sampled_from([*sorted(TRANSIENT_CANCELLATIONS), "None"]), max_size=4),
    st.sampled_from(["ConditionalCheckFailed", "ItemCollectionSizeLimitExceeded", "Validation"]),
)
def test_a_cancellation_with_any_other_reason_is_not(codes: list[str], other: str) -> None:
    assert not is_retryable(cancelled(*codes, other))


def test_a_transaction_in_progress_is_retried() -> None:
    assert is_retryable(DynamoError("busy", code="TransactionInProgressException"))
    assert not is_retryable(DynamoError("no", code="IdempotentParameterMismatchException"))


# -- the lanes' part: reasons read from the body ----------------------------------------------


def error_body(code: str, reasons: list[dict[str, str]]) -> bytes:
    key = "throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "x", key: reasons}
    return json.dumps(body).encode()


def response_dict(body: bytes, status: int = 400) -> dict[str, Any]:
    return {"status_code": status, "headers": {}, "body": body}


@pytest.mark.parametrize(
    "code",
    ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"],
)
def test_error_fields_read_the_reasons_from_the_body(code: str) -> None:
    listed = [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": ARN}]
    found = error_fields(response_dict(error_body(code, listed)))
    key = "throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"
    assert found == {key: listed}
    assert error_fields(response_dict(error_body(code, listed), status=200)) == {}
    assert error_fields(response_dict(b"<html>ThrottlingReasons</html>")) == {}
    assert error_fields(response_dict(b'["ThrottlingReasons"]')) == {}


@pytest.mark.parametrize("operation", ["TransactWriteItems", "PutItem", "DescribeTable"])
def test_the_handler_hands_the_reasons_over_for_every_operation(operation: str) -> None:
    fast = ResponseFastPath(SERVICE)
    listed = [{"reason": "TableWriteProvisionedThroughputExceeded", "resource": ARN}]
    response = response_dict(error_body("ProvisionedThroughputExceededException", listed))
    customized: dict[str, Any] = {}
    fast.before_parse(
        operation_model=SERVICE.operation_model(operation),
        response_dict=response,
        customized_response_dict=customized,
    )
    assert customized == {"ThrottlingReasons": listed}
    assert response["body"]  # botocore still parses the error itself


def test_the_lean_lane_adds_what_the_model_dropped() -> None:
    from lsiorm._io.lean import with_error_fields

    listed = [{"reason": "TableReadKeyRangeThroughputExceeded", "resource": ARN}]
    parsed: dict[str, Any] = {"Error": {"Code": "ThrottlingException"}}
    with_error_fields(parsed, response_dict(error_body("ThrottlingException", listed)))
    assert parsed["throttlingReasons"] == listed
    kept: dict[str, Any] = {"ThrottlingReasons": [{"reason": "a", "resource": "b"}]}
    with_error_fields(kept, response_dict(error_body("RequestLimitExceeded", listed)))
    assert kept["ThrottlingReasons"] == [{"reason": "a", "resource": "b"}]


def test_fastjson_module_names_the_error_fields() -> None:
    assert "error_fields" in fastjson.__all__
