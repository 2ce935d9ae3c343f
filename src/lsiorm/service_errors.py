"""Turn DynamoDB's error responses into lsiorm's typed errors (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import (
    CancellationReason,
    ConditionFailedError,
    DynamoError,
    InternalServerError,
    ItemCollectionSizeLimitError,
    ResourceNotFoundError,
    ServiceValidationError,
    ThrottledError,
    TransactionCanceledError,
    TransactionConflictError,
    TransportError,
)

__all__ = ["from_error_response", "from_transport_failure"]

_BY_CODE: dict[str, type[DynamoError]] = {
    "ConditionalCheckFailedException": ConditionFailedError,
    "ProvisionedThroughputExceededException": ThrottledError,
    "ThrottlingException": ThrottledError,
    "RequestLimitExceeded": ThrottledError,
    "InternalServerError": InternalServerError,
    "InternalFailure": InternalServerError,
    "ServiceUnavailable": InternalServerError,
    "TransactionConflictException": TransactionConflictError,
    "ValidationException": ServiceValidationError,
    "ResourceNotFoundException": ResourceNotFoundError,
}


def _key_of(params: Mapping[str, Any]) -> dict[str, Any] | None:
    key = params.get("Key")
    return dict(key) if isinstance(key, Mapping) else None


def from_error_response(
    response: Mapping[str, Any], operation: str, params: Mapping[str, Any]
) -> DynamoError:
    """Return the typed error for a botocore ``ClientError.response``."""
    err = response.get("Error", {}) or {}
    code = str(err.get("Code", ""))
    message = str(err.get("Message", "")) or code
    status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    table = params.get("TableName")
    common: dict[str, Any] = {
        "code": code,
        "operation": operation,
        "table": table if isinstance(table, str) else None,
        "key": _key_of(params),
        "response": response,
    }
    if code == "ItemCollectionSizeLimitExceededException":
        return ItemCollectionSizeLimitError(message, collection_key=_key_of(params), **common)
    if code == "TransactionCanceledException":
        reasons = [
            CancellationReason(
                i, str(r.get("Code", "")), str(r.get("Message", "")), item=r.get("Item")
            )
            for i, r in enumerate(response.get("CancellationReasons") or [])
        ]
        return TransactionCanceledError(message, reasons=reasons, **common)
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = InternalServerError if status >= 500 else DynamoError
    return cls(message, **common)


def from_transport_failure(
    exc: BaseException, operation: str, params: Mapping[str, Any]
) -> DynamoError:
    """Return the typed error for a connection that failed before a response arrived."""
    table = params.get("TableName")
    return TransportError(
        f"{type(exc).__name__}: {exc}",
        code=type(exc).__name__,
        operation=operation,
        table=table if isinstance(table, str) else None,
        key=_key_of(params),
    )
