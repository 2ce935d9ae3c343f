"""Turn DynamoDB's error responses into lsiorm's typed errors (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lsiorm._model.entity import decode_stored
from lsiorm.errors import (
    CancellationReason,
    ConditionFailedError,
    ConfigurationError,
    DynamoError,
    InternalServerError,
    ItemCollectionSizeLimitError,
    LsiormError,
    ResourceNotFoundError,
    ServiceValidationError,
    ThrottledError,
    TransactionCanceledError,
    TransactionConflictError,
    TransportError,
    ValidationError,
)

if TYPE_CHECKING:
    from lsiorm._model.entity import Entity
    from lsiorm._model.schema import Table

__all__ = [
    "collection_key_of",
    "failed_item",
    "from_botocore_failure",
    "from_error_response",
    "from_transport_failure",
    "restated",
]

D = TypeVar("D", bound=DynamoError)

_BY_CODE: dict[str, type[DynamoError]] = {
    "ConditionalCheckFailedException": ConditionFailedError,
    "ProvisionedThroughputExceededException": ThrottledError,
    "ThrottlingException": ThrottledError,
    "RequestLimitExceeded": ThrottledError,
    "InternalServerError": InternalServerError,
    "InternalFailure": InternalServerError,
    "ServiceUnavailable": InternalServerError,
    "TransactionConflictException": TransactionConflictError,
    "ReplicatedWriteConflictException": TransactionConflictError,
    "ValidationException": ServiceValidationError,
    "ResourceNotFoundException": ResourceNotFoundError,
    # moto answers the time-to-live calls on a missing table with this shorter code.
    "ResourceNotFound": ResourceNotFoundError,
}


def _key_of(params: Mapping[str, Any]) -> dict[str, Any] | None:
    key = params.get("Key")
    return dict(key) if isinstance(key, Mapping) else None


def _declared(tables: Sequence[Table], name: object) -> Table | None:
    return next((t for t in tables if t.name == name), None)


def _partition_of(table: Table, item: object) -> dict[str, Any] | None:
    if not isinstance(item, Mapping):
        return None
    value = item.get(table.partition_key.name)
    return {table.partition_key.name: value} if value is not None else None


def _batch_collection(
    params: Mapping[str, Any], tables: Sequence[Table]
) -> tuple[str | None, dict[str, Any] | None]:
    requests = params.get("RequestItems")
    if not isinstance(requests, Mapping):
        return None, None
    names = list(requests)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for name, writes in requests.items():
        table = _declared(tables, name)
        if table is None or not table.has_lsi:
            continue
        for write in writes or ():
            put, delete = write.get("PutRequest") or {}, write.get("DeleteRequest") or {}
            key = _partition_of(table, put.get("Item") or delete.get("Key"))
            if key is not None:
                found[(name, repr(key))] = key
    if len(found) == 1:
        (name, _), key = next(iter(found.items()))
        return name, key
    return (names[0] if len(names) == 1 else None), None


def collection_key_of(
    operation: str, params: Mapping[str, Any], tables: Sequence[Table] = ()
) -> tuple[str | None, dict[str, Any] | None]:
    """Return the table and item collection key (``{partition attribute: value}``) of a write.

    The key is found through the declared table; without it, only a key of a single attribute
    is known to be the partition key. A batch gives a key only when all its writes to tables
    with LSIs share one collection.
    """
    if operation == "BatchWriteItem":
        return _batch_collection(params, tables)
    name = params.get("TableName")
    table_name = name if isinstance(name, str) else None
    table = _declared(tables, table_name)
    source = params.get("Item") if operation == "PutItem" else params.get("Key")
    if table is not None:
        return table_name, _partition_of(table, source)
    if operation != "PutItem" and isinstance(source, Mapping) and len(source) == 1:
        return table_name, dict(source)
    return table_name, None


def from_error_response(
    response: Mapping[str, Any],
    operation: str,
    params: Mapping[str, Any],
    tables: Sequence[Table] = (),
) -> DynamoError:
    """Return the typed error for a botocore ``ClientError.response``.

    ``tables`` are the declared tables the request touches; they locate the partition key of
    an item collection that reached its size limit.
    """
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
        common["table"], collection_key = collection_key_of(operation, params, tables)
        return ItemCollectionSizeLimitError(message, collection_key=collection_key, **common)
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


def failed_item(table: Table, item: object) -> Entity | None:
    """The item a failed condition found (``ALL_OLD`` on the wire), as its declared entity.

    None when there is no item, or when it is of no declared entity or no longer fits its model
    (the condition's failure is what the caller must see, not a decoding error).
    """
    if not isinstance(item, Mapping) or not item:
        return None
    try:
        return decode_stored(table, item)
    except ValueError:  # ValidationError: an item that no longer fits, or of ambiguous type
        return None


def restated(exc: DynamoError, kind: type[D], message: str, **fields: Any) -> D:
    """Return the failure ``exc`` restated as a ``kind`` error that says ``message``.

    It keeps the code, operation, table, key and response of ``exc`` unless ``fields`` gives
    them; ``fields`` also takes what ``kind`` adds (``reasons=``, ``request=``).
    """
    context: dict[str, Any] = {
        "code": exc.code,
        "operation": exc.operation,
        "table": exc.table,
        "key": exc.key,
        "response": exc.response,
    }
    return kind(message, **{**context, **fields})


def from_transport_failure(
    exc: BaseException, operation: str, params: Mapping[str, Any]
) -> DynamoError:
    """Return the typed error for a connection that failed before a response arrived."""
    table = params.get("TableName")
    return TransportError(
        str(exc) or type(exc).__name__,  # the code (the class name) is shown before it
        code=type(exc).__name__,
        operation=operation,
        table=table if isinstance(table, str) else None,
        key=_key_of(params),
    )


def from_botocore_failure(
    exc: BaseException, operation: str, params: Mapping[str, Any]
) -> LsiormError:
    """Return the typed error for a botocore failure that is neither a response nor transport.

    A request botocore refuses to send (``ParamValidationError``) is a ValidationError; missing
    credentials or region, and any other client-side botocore failure, a ConfigurationError.
    """
    name = type(exc).__name__
    table = params.get("TableName")
    if name == "ParamValidationError":
        return ValidationError(
            "request.invalid-parameter",
            f"botocore refused the {operation} request before sending it: {exc}",
            table=table if isinstance(table, str) else None,
        )
    if name in ("NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"):
        return ConfigurationError(
            "config.no-credentials",
            f"No usable AWS credentials for {operation} ({exc}); configure a profile, the "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables, or an instance role. A local "
            "engine (DynamoDB Local, moto) takes any values: export AWS_ACCESS_KEY_ID=local "
            "AWS_SECRET_ACCESS_KEY=local.",
        )
    if name == "NoRegionError":
        return ConfigurationError(
            "config.no-region",
            "No AWS region is configured: pass region_name=..., or set AWS_DEFAULT_REGION.",
        )
    if name in ("EndpointResolutionError", "EndpointProviderError"):
        return ConfigurationError(
            "config.endpoint",
            f"botocore found no endpoint for {operation}, so it was not sent: {exc}",
        )
    return ConfigurationError("config.client", f"{operation} could not be sent: {name}: {exc}")
