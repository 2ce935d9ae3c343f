"""The DynamoDB JSON protocol as the engine speaks it: targets, errors and consumed capacity.

DynamoDB and DynamoDB Streams take a JSON body and name the operation in the ``X-Amz-Target``
header (``DynamoDB_20120810.PutItem``, ``DynamoDBStreams_20120810.GetRecords``). An error is an
HTTP 400 (500 for a server error) whose body holds ``__type`` (the error code after ``#``),
``message`` and the error's own fields; botocore reads the code from ``__type`` and the fields
its service model names (``ThrottlingReasons``, ``CancellationReasons``, ...) into
``ClientError.response``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "DYNAMODB_TARGET",
    "ERROR_PREFIX",
    "STREAMS_TARGET",
    "ServiceError",
    "cancelled",
    "operation_of",
    "restore_consumed",
]

ERROR_PREFIX: Final = "com.amazonaws.dynamodb.v20120810#"
DYNAMODB_TARGET: Final = "DynamoDB_20120810."
STREAMS_TARGET: Final = "DynamoDBStreams_20120810."


class ServiceError(Exception):
    """An error answer the engine gives in place of the upstream engine's."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 400,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.fields = dict(fields or {})
        super().__init__(f"{code}: {message}")

    def body(self) -> bytes:
        """The JSON body of the answer."""
        return json.dumps(
            {"__type": ERROR_PREFIX + self.code, "message": self.message, **self.fields}
        ).encode()


def operation_of(headers: Mapping[str, str]) -> tuple[str, str]:
    """The service prefix (``DYNAMODB_TARGET``, ``STREAMS_TARGET`` or "") and the operation."""
    target = next((v for k, v in headers.items() if k.lower() == "x-amz-target"), "")
    prefix, _, operation = target.rpartition(".")
    return prefix + "." if prefix else "", operation


def cancelled(reasons: Sequence[tuple[str, str] | None]) -> ServiceError:
    """A ``TransactionCanceledException``: per action, ``(code, message)`` or None (no reason)."""
    listed: list[dict[str, str]] = [
        {"Code": "None"} if r is None else {"Code": r[0], "Message": r[1]} for r in reasons
    ]
    codes = ", ".join(r["Code"] for r in listed)
    return ServiceError(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        fields={"CancellationReasons": listed},
    )


def _total_only(entry: Mapping[str, Any]) -> dict[str, Any]:
    kept = ("TableName", "CapacityUnits", "ReadCapacityUnits", "WriteCapacityUnits")
    return {k: v for k, v in entry.items() if k in kept}


def restore_consumed(answer: dict[str, Any], asked: object) -> None:
    """Give back ``ConsumedCapacity`` as the caller asked for it (``ReturnConsumedCapacity``).

    The engine asks the upstream engine for ``INDEXES`` to charge its buckets; a caller that
    asked for ``TOTAL`` gets the totals only, and one that asked for nothing gets none.
    """
    if "ConsumedCapacity" not in answer or asked == "INDEXES":
        return
    if asked != "TOTAL":
        del answer["ConsumedCapacity"]
        return
    consumed = answer["ConsumedCapacity"]
    if isinstance(consumed, list):
        answer["ConsumedCapacity"] = [_total_only(entry) for entry in consumed]
    elif isinstance(consumed, Mapping):
        answer["ConsumedCapacity"] = _total_only(consumed)
