"""The one error tree of lsiorm.

Three families hang off [`LsiormError`][lsiorm.errors.LsiormError]:

* [`DeclarationError`][lsiorm.errors.DeclarationError]: a Table or Entity declaration breaks a
  rule. Raised when the class or table is defined, never at request time.
* [`ValidationError`][lsiorm.errors.ValidationError]: a value or a request breaks a rule. Raised
  before anything is sent.
* [`DynamoError`][lsiorm.errors.DynamoError]: DynamoDB (or the connection to it) refused a
  request. The botocore ``ClientError`` that carried it stays available as ``__cause__``.

Every declaration and validation error names the rule it broke in ``rule``, a short stable id
such as ``"lsi.max-five"``; the message is a plain sentence that repeats it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "BatchGetIncompleteError",
    "BatchWriteIncompleteError",
    "CallTimeoutError",
    "CancellationReason",
    "ConditionFailedError",
    "ConfigurationError",
    "CursorError",
    "DeclarationError",
    "DynamoError",
    "IndexKeyTypeError",
    "InternalServerError",
    "ItemCollectionSizeLimitError",
    "ItemTooLargeError",
    "JobError",
    "KeyEncodingError",
    "LsiormError",
    "MigrationWarning",
    "MissingDependencyError",
    "NotFoundError",
    "NumberPrecisionError",
    "OutcomeUnknownError",
    "PartialKeyUpdateError",
    "QueryPlanError",
    "ResourceNotFoundError",
    "RetryableError",
    "ServiceValidationError",
    "StaleVersionError",
    "ThrottledError",
    "TransactionCanceledError",
    "TransactionConflictError",
    "TransportError",
    "ValidationError",
]


class LsiormError(Exception):
    """Base class of every error lsiorm raises."""


class MigrationWarning(UserWarning):
    """A table migration may not go as planned (its copy may outrun the stream's 24 hours)."""


class DeclarationError(LsiormError, TypeError):
    """A Table or Entity declaration breaks a rule; raised when it is defined."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(f"{message} [rule: {rule}]")


class ValidationError(LsiormError, ValueError):
    """A value or request breaks a rule; raised before any request is sent.

    Also raised by a read whose stored item does not fit its entity (rule ``item.invalid``),
    with the item's key and Pydantic's error as ``__cause__``.
    """

    def __init__(
        self,
        rule: str,
        message: str,
        *,
        table: str | None = None,
        key: Mapping[str, Any] | None = None,
    ) -> None:
        self.rule = rule
        self.table = table
        self.key = dict(key) if key is not None else None
        super().__init__(f"{message} [rule: {rule}]")


class KeyEncodingError(ValidationError):
    """A field value cannot be encoded into an order-preserving key string."""


class ItemTooLargeError(ValidationError):
    """The item is over DynamoDB's 400 KB item size limit."""


class IndexKeyTypeError(ValidationError):
    """A value's DynamoDB type does not match the type declared for an index key attribute."""


class PartialKeyUpdateError(ValidationError):
    """An update changes some but not all fields of a key template, which would leave it stale."""


class NumberPrecisionError(ValidationError):
    """A number does not fit its field's type exactly: a float cannot hold all its digits, or
    an int field meets a fraction.

    ``field`` names the field (``Model.field``, with the path inside it), ``value`` the number
    as text. Declare the field ``Decimal`` to keep every digit; a float field annotated
    ``Annotated[float, LossyFloat]`` accepts the rounding instead.
    """

    def __init__(self, rule: str, message: str, *, field: str, value: str) -> None:
        super().__init__(rule, message)
        self.field = field
        self.value = value


class QueryPlanError(ValidationError):
    """No index can answer the query exactly, or a forced index cannot serve it."""


class MissingDependencyError(LsiormError, ImportError):
    """A feature needs an optional package that is not installed.

    ``extra`` is the lsiorm extra that installs it (``pip install "lsiorm[<extra>]"``).
    """

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.rule = "install.missing-extra"
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs {package}, which is not installed; install lsiorm with the "
            f'{extra!r} extra: pip install "lsiorm[{extra}]" [rule: {self.rule}]',
            name=package,
        )


class CursorError(ValidationError):
    """A cursor was edited, truncated, or made by another query; caught before any request."""


class ConfigurationError(LsiormError):
    """The client cannot send at all: no credentials, no region, or an unusable setting.

    ``rule`` names what is missing (``"config.no-credentials"``, ``"config.no-region"``, ...);
    botocore's own exception is kept as ``__cause__``.
    """

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(f"{message} [rule: {rule}]")


class JobError(LsiormError):
    """A key job could not go on, though no request failed: a unit's worker kept dying
    (``"jobs.worker-failed"``), or the run made no progress for too long (``"jobs.stalled"``).

    ``job`` is the run's id and ``units`` the ids of the units concerned. The run is paused
    when this is raised; running the same job again resumes it.
    """

    def __init__(self, rule: str, message: str, *, job: str, units: Sequence[str] = ()) -> None:
        self.rule = rule
        self.job = job
        self.units = tuple(units)
        super().__init__(f"{message} [rule: {rule}]")


class CallTimeoutError(LsiormError, TimeoutError):
    """A call ran out of its ``timeout=`` before it was done, and it had applied nothing: none
    of its writes was sent, or each was refused.

    Once a write of the call was sent, running out of time raises `OutcomeUnknownError`
    instead (with this error as ``__cause__``). ``timeout`` is the seconds the call was given,
    ``operation`` the request it was sending or about to send. A ``TimeoutError`` too.
    """

    def __init__(
        self, message: str, *, timeout: float, operation: str = "", in_flight: bool = False
    ) -> None:
        self.rule = "call.timeout"
        self.timeout = timeout
        self.operation = operation
        #: Whether ``operation`` had been sent and its answer was not awaited any longer.
        self.in_flight = in_flight
        super().__init__(message)


class NotFoundError(LsiormError, LookupError):
    """The requested item does not exist."""

    def __init__(self, message: str, *, table: str | None = None, key: Any = None) -> None:
        self.table = table
        self.key = key
        super().__init__(message)


class DynamoError(LsiormError):
    """DynamoDB refused a request, or the connection to it failed.

    ``code`` is DynamoDB's error code (``"ConditionalCheckFailedException"``, ...),
    ``operation`` the API operation, ``table`` and ``key`` what it was about when known.
    """

    #: Whether lsiorm's retry policy may send the same request again.
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        operation: str = "",
        table: str | None = None,
        key: Mapping[str, Any] | None = None,
        response: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.operation = operation
        self.table = table
        self.key = dict(key) if key is not None else None
        self.response = dict(response) if response is not None else {}
        where = f" on table {table!r}" if table else ""
        super().__init__(
            f"{operation or 'request'}{where} failed: {code + ': ' if code else ''}{message}"
        )


class RetryableError(DynamoError):
    """A transient failure that the retry policy may retry."""

    retryable = True


class ThrottledError(RetryableError):
    """Throughput was exceeded (ProvisionedThroughputExceeded, Throttling, RequestLimitExceeded)."""


class InternalServerError(RetryableError):
    """DynamoDB answered with an internal error or was unavailable (HTTP 5xx)."""


class TransportError(RetryableError):
    """The connection failed or was dropped before a response arrived."""


class TransactionConflictError(RetryableError):
    """Another transaction touched the same item at the same time."""


class ConditionFailedError(DynamoError):
    """A ConditionExpression evaluated to false.

    ``item`` is the item the condition was checked against, as its entity: DynamoDB returns it
    with the failure (lsiorm's writes ask for it with ``ReturnValuesOnConditionCheckFailure``,
    so no read is made). None when there was no item, or when it is of no declared entity (or
    no longer fits it); a raw request (``Session.call``) leaves it None and its ``response``
    holds the item as DynamoDB sent it.
    """

    def __init__(self, message: str, *, item: Any = None, **kw: Any) -> None:
        self.item = item
        super().__init__(message, **kw)


class StaleVersionError(ConditionFailedError):
    """Optimistic locking: the stored version is not the one this write expected.

    ``expected_version`` is the version the write expected, ``stored_version`` the one the
    stored item holds (None when the item is gone), and ``item`` the stored entity, so a caller
    sees what changed without reading it again.
    """

    def __init__(
        self,
        message: str,
        *,
        expected_version: int | None = None,
        stored_version: int | None = None,
        **kw: Any,
    ) -> None:
        self.expected_version = expected_version
        self.stored_version = stored_version
        super().__init__(message, **kw)


class OutcomeUnknownError(DynamoError):
    """A write may or may not have been applied, and lsiorm could not find out which.

    Raised when an attempt failed after the request may have reached DynamoDB (the connection
    dropped after sending, a timeout, a 5xx answer) and sending it again could apply it twice
    (an ADD), or when the retries ran out after such a failure. Raised too when a call's
    ``timeout=`` ran out, or an async call was cancelled, after one of its writes was sent: its
    message says whether that write was answered (applied) or still in flight. ``request``
    holds the operation and the params as sent; ``__cause__`` is the last failure (the
    `CallTimeoutError`, the ``asyncio.CancelledError``). Read the item to see what happened
    before writing again.
    """

    def __init__(self, message: str, *, request: Mapping[str, Any], **kw: Any) -> None:
        self.request = dict(request)
        super().__init__(message, **kw)


class ServiceValidationError(DynamoError):
    """DynamoDB rejected the request as invalid (ValidationException)."""


class ResourceNotFoundError(DynamoError):
    """The table or index does not exist (or is not active)."""


class ItemCollectionSizeLimitError(DynamoError):
    """An item collection reached DynamoDB's 10 GB limit on a table with LSIs.

    Never retried: the write cannot succeed until the collection shrinks. ``collection_key``
    holds the partition key value of the full collection.
    """

    def __init__(
        self, message: str, *, collection_key: Mapping[str, Any] | None, **kw: Any
    ) -> None:
        self.collection_key = dict(collection_key) if collection_key is not None else None
        super().__init__(message, **kw)


class CancellationReason:
    """Why one action of a cancelled transaction failed."""

    __slots__ = ("code", "entity", "index", "item", "message")

    def __init__(
        self, index: int, code: str, message: str, entity: Any = None, item: Any = None
    ) -> None:
        self.index = index
        self.code = code
        self.message = message
        self.entity = entity
        self.item = item

    def __repr__(self) -> str:
        return f"CancellationReason(index={self.index}, code={self.code!r}, entity={self.entity!r})"


class TransactionCanceledError(DynamoError):
    """A transaction was cancelled; ``reasons`` has one entry per action, in order."""

    def __init__(self, message: str, *, reasons: Sequence[CancellationReason], **kw: Any) -> None:
        self.reasons = list(reasons)
        super().__init__(message, **kw)

    @property
    def failed(self) -> list[CancellationReason]:
        """The reasons of the actions that did fail (code other than ``"None"``)."""
        return [r for r in self.reasons if r.code not in ("None", "")]


class BatchWriteIncompleteError(LsiormError):
    """A batch write gave up; ``unprocessed`` holds exactly the entities not written."""

    def __init__(self, message: str, *, unprocessed: Sequence[Any], cause_code: str = "") -> None:
        self.unprocessed = list(unprocessed)
        self.cause_code = cause_code
        super().__init__(message)


class BatchGetIncompleteError(LsiormError):
    """A batch get gave up; ``unprocessed`` holds exactly the keys not read, ``found`` the rest."""

    def __init__(self, message: str, *, unprocessed: Sequence[Any], found: Sequence[Any]) -> None:
        self.unprocessed = list(unprocessed)
        self.found = list(found)
        super().__init__(message)
