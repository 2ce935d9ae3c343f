"""Typed stream handlers for AWS Lambda: `stream_handler` makes a function of typed changes the
handler of a DynamoDB Streams event source, with Lambda's partial batch response.

A Lambda event of a DynamoDB stream holds a batch of records of one shard, in the shard's
order. The handler decodes each record into a `ChangeEvent` and calls the function with it,
one record after the other. A record whose call raises (or that cannot be decoded) is
*failed*. What follows a failure:

* the records of the same item after it are not processed (*held*): the item's changes must
  apply in order, so they wait for the failed one;
* the response lists the failed and held records in Lambda's partial batch form
  (``{"batchItemFailures": [{"itemIdentifier": <SequenceNumber>}, ...]}``). With
  ``ReportBatchItemFailures`` on the event source mapping, Lambda checkpoints *before the
  lowest sequence number listed* and delivers every record from there again, the ones that
  succeeded after it included;
* so that such a redelivery is harmless: with ``idempotency=`` (a table for marks), every
  applied record is marked and a marked record is skipped when it comes again, and records of
  other items go on after a failure; without it, the batch stops at the first failure (every
  later record is listed too), so no record is applied twice by a redelivery.

Powertools for AWS Lambda: `StreamHandler.record_handler` is a record handler for its batch
utilities, and `StreamHandler.powertools_processor` a ``BatchProcessor`` for DynamoDB Streams
that holds the records of a failed item back as this module does. Powertools is not a
dependency; it is imported only by `powertools_processor`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from lsiorm._model.entity import Entity
from lsiorm._model.schema import Table
from lsiorm._model.stream_record import ChangeEvent, change_of, record_key
from lsiorm._ops.stream_marks import applied_events, check_marks_table, mark_applied
from lsiorm.errors import LsiormError, MissingDependencyError, ValidationError

if TYPE_CHECKING:
    from lsiorm._session import Session

__all__ = [
    "AfterFailure",
    "HeldBackError",
    "RecordFailure",
    "StreamBatch",
    "StreamHandler",
    "UnknownChanges",
    "stream_handler",
]

E = TypeVar("E", bound=Entity)

log = logging.getLogger("lsiorm.streams")

UnknownChanges = Literal["skip", "pass", "fail"]
"""What becomes of a change of no declared entity (`stream_handler`'s ``unknown=``)."""
AfterFailure = Literal["hold-item", "stop"]
"""Which records wait after a failed one: the same item's, or all (``after_failure=``)."""


class HeldBackError(LsiormError):
    """A record was not processed: an earlier record of the same item (or of the batch) failed."""


@dataclass(frozen=True)
class RecordFailure:
    """A record that failed: its sequence number, its eventID and the error it raised."""

    sequence_number: str
    event_id: str
    error: BaseException


@dataclass
class StreamBatch:
    """What a handler did with one batch, record by record, by sequence number.

    ``applied``: the function ran and returned. ``skipped``: not for this function (another
    entity than ``only``, or of no declared entity with ``unknown="skip"``). ``duplicates``:
    marked as applied by an earlier delivery. ``failed``: the function raised, or the record
    could not be decoded. ``held``: not processed after a failure. ``unmarked``: applied, but
    its mark could not be written (see the module doc).
    """

    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    failed: list[RecordFailure] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    unmarked: list[str] = field(default_factory=list)

    @property
    def response(self) -> dict[str, list[dict[str, str]]]:
        """Lambda's partial batch response: the failed and held records, in the batch's order."""
        reported = [f.sequence_number for f in self.failed] + self.held
        return {"batchItemFailures": [{"itemIdentifier": s} for s in reported]}


def _records(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise ValidationError(
            "stream.event",
            "A stream handler takes the Lambda event of a DynamoDB stream, a mapping with a "
            "'Records' list.",
        )
    return records


def _sequence(record: Mapping[str, Any]) -> str:
    body = record.get("dynamodb") if isinstance(record, Mapping) else None
    number = body.get("SequenceNumber") if isinstance(body, Mapping) else None
    return str(number) if number is not None else ""


class StreamHandler(Generic[E]):
    """A function of typed changes, as the handler of a DynamoDB Streams event (see the module).

    Call it as Lambda calls a handler, ``handler(event, context)``: it returns the partial
    batch response. `handle` returns the whole `StreamBatch`. Built by `stream_handler`.
    """

    def __init__(
        self,
        function: Callable[[ChangeEvent[E]], object],
        table: Table,
        *,
        only: Sequence[type[E]] | None = None,
        unknown: UnknownChanges = "skip",
        idempotency: Table | None = None,
        session: Session | None = None,
        keep_marks: timedelta = timedelta(days=2),
        after_failure: AfterFailure | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if unknown not in ("skip", "pass", "fail"):
            raise ValidationError(
                "stream.unknown", f"unknown= is 'skip', 'pass' or 'fail', not {unknown!r}."
            )
        if after_failure not in (None, "hold-item", "stop"):
            raise ValidationError(
                "stream.after-failure",
                f"after_failure= is 'hold-item' or 'stop', not {after_failure!r}.",
            )
        if inspect.iscoroutinefunction(function):
            raise ValidationError(
                "stream.async-function",
                f"{getattr(function, '__name__', function)!r} is an async function; a stream "
                "handler calls its function as Lambda calls a handler, synchronously: make it "
                "a plain def (run async code in it with asyncio.run).",
            )
        if idempotency is not None:
            check_marks_table(idempotency)
        self.function = function
        self.table = table
        self.only = tuple(only) if only is not None else None
        self.unknown = unknown
        self.idempotency = idempotency
        self.keep_marks = keep_marks
        #: What follows a failure: hold back the failed item's later records ("hold-item",
        #: the default with idempotency), or every later record ("stop", the default without).
        self.after_failure: AfterFailure = after_failure or (
            "hold-item" if idempotency is not None else "stop"
        )
        self._session = session
        self._clock = clock
        functools.update_wrapper(self, function)

    # -- Lambda's entry point ---------------------------------------------------------------

    def __call__(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """Handle a Lambda event of a DynamoDB stream; return the partial batch response."""
        return self.handle(event).response

    def handle(self, event: Mapping[str, Any]) -> StreamBatch:
        """Handle a Lambda event of a DynamoDB stream; return what became of each record."""
        records = _records(event)
        batch = StreamBatch()
        applied = self._applied(records)
        stopped = False
        held_items: set[Any] = set()
        for record in records:
            sequence = _sequence(record)
            item = self._item_of(record)
            if stopped or item in held_items:
                batch.held.append(sequence)
                continue
            if not self._one(record, sequence, applied, batch):
                held_items.add(item)
                stopped = self.after_failure == "stop"
        return batch

    @property
    def session(self) -> Session:
        """The session that reads and writes the marks (built from the environment if none
        was given)."""
        if self._session is None:
            from lsiorm._session import Session

            self._session = Session()
        return self._session

    def _item_of(self, record: Mapping[str, Any]) -> Any:
        try:
            return record_key(record)
        except ValidationError:
            return ("unreadable", id(record))  # fails on its own when processed

    def _applied(self, records: Sequence[Mapping[str, Any]]) -> set[str]:
        if self.idempotency is None or not records:
            return set()
        ids = [str(r.get("eventID", "")) for r in records if isinstance(r, Mapping)]
        found: set[str] = self.session.run(applied_events(self.session.ctx, self.idempotency, ids))
        return found

    def _one(
        self, record: Mapping[str, Any], sequence: str, applied: set[str], batch: StreamBatch
    ) -> bool:
        """Process one record into ``batch``; False when it failed."""
        event_id = str(record.get("eventID", "")) if isinstance(record, Mapping) else ""
        try:
            change = self._change(record)
            if change is None:
                batch.skipped.append(sequence)
                return True
            if event_id and event_id in applied:
                batch.duplicates.append(sequence)
                return True
            self.function(change)
        except Exception as exc:
            log.warning("stream record %s (%s) failed: %s", sequence, event_id, exc, exc_info=True)
            batch.failed.append(RecordFailure(sequence, event_id, exc))
            return False
        batch.applied.append(sequence)
        if self.idempotency is not None and event_id and not self._marked(event_id, sequence):
            batch.unmarked.append(sequence)
        return True

    def _change(self, record: Mapping[str, Any]) -> ChangeEvent[E] | None:
        """The record as the function's change, or None when it is not for this function."""
        change: ChangeEvent[Any] = change_of(self.table, record)
        if change.entity_type is None:
            if self.unknown == "skip":
                return None
            if self.unknown == "fail":
                what = "holds only keys that" if change.keys_only else "is an item that"
                raise ValidationError(
                    "stream.unknown-entity",
                    f"Record {change.sequence_number} of table {self.table.name!r} {what} no "
                    f"single declared entity matches (keys {change.keys!r}).",
                    table=self.table.name,
                )
            return change
        if self.only is not None and change.entity_type not in self.only:
            return None
        return change

    def _marked(self, event_id: str, sequence: str) -> bool:
        """Write an applied record's mark; False when it could not be written."""
        assert self.idempotency is not None
        try:
            self.session.run(
                mark_applied(
                    self.session.ctx,
                    self.idempotency,
                    event_id,
                    sequence,
                    self._clock(),
                    self.keep_marks.total_seconds(),
                )
            )
        except LsiormError as exc:
            log.warning(
                "stream record %s (%s) was applied, but its mark could not be written: %s; "
                "should Lambda deliver it again, it is applied again",
                sequence,
                event_id,
                exc,
            )
            return False
        return True

    # -- Powertools for AWS Lambda ------------------------------------------------------------

    def record_handler(self, record: Any) -> None:
        """Handle one record as Powertools' batch utilities hand it over: its DynamoDB
        stream data class (``DynamoDBRecord``), or the record's mapping.

        Raises what the function raised (Powertools reports the record as failed), and
        `HeldBackError` never: holding records back is `powertools_processor`'s part. With
        ``idempotency=``, the record's mark is read before and written after the call.
        """
        raw = _raw_record(record)
        sequence = _sequence(raw)
        applied = self._applied([raw]) if self.idempotency is not None else set()
        batch = StreamBatch()
        if not self._one(raw, sequence, applied, batch):
            raise batch.failed[0].error

    def powertools_processor(self) -> Any:
        """A Powertools ``BatchProcessor`` for DynamoDB Streams that holds back the records of
        a failed item, as this handler does (with ``after_failure="stop"``, every later
        record). Use it with Powertools' ``process_partial_response`` and `record_handler`.

        Raises MissingDependencyError when ``aws-lambda-powertools`` is not installed.
        """
        try:
            from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
        except ImportError as exc:
            raise MissingDependencyError(
                "StreamHandler.powertools_processor", "aws-lambda-powertools", "powertools"
            ) from exc
        return _ordered_processor(BatchProcessor, EventType, self)


def _raw_record(record: Any) -> Mapping[str, Any]:
    """The mapping of a record, from Powertools' data class (``raw_event``) or as given."""
    raw = getattr(record, "raw_event", record)
    if isinstance(raw, Mapping):
        return raw
    raise ValidationError(
        "stream.record",
        f"A {type(record).__name__} is not a DynamoDB stream record this handler reads: pass "
        "Powertools' DynamoDBRecord data class (the default of its BatchProcessor) or the "
        "record's mapping.",
    )


def _ordered_processor(base: type[Any], event_type: Any, handler: StreamHandler[Any]) -> Any:
    """An instance of a subclass of Powertools' ``BatchProcessor`` that holds records back."""

    class OrderedStreamProcessor(base):  # type: ignore[misc]
        """Powertools' BatchProcessor for DynamoDB Streams that keeps each item's order."""

        def _prepare(self) -> None:
            super()._prepare()
            self._held_items: set[Any] = set()
            self._stopped = False

        def _process_record(self, record: dict[str, Any]) -> Any:
            item = handler._item_of(record)
            if self._stopped or item in self._held_items:
                data = self._to_batch_type(record=record, event_type=self.event_type)
                try:
                    raise HeldBackError(
                        f"record {_sequence(record)} was held back: an earlier record "
                        f"{'of the batch' if self._stopped else 'of the same item'} failed"
                    )
                except HeldBackError:
                    import sys

                    return self.failure_handler(record=data, exception=sys.exc_info())
            result = super()._process_record(record)
            if result[0] == "fail":
                self._held_items.add(item)
                self._stopped = handler.after_failure == "stop"
            return result

    return OrderedStreamProcessor(event_type=event_type.DynamoDBStreams)


def stream_handler(
    table: Table,
    *,
    only: Sequence[type[E]] | None = None,
    unknown: UnknownChanges = "skip",
    idempotency: Table | None = None,
    session: Session | None = None,
    keep_marks: timedelta = timedelta(days=2),
    after_failure: AfterFailure | None = None,
) -> Callable[[Callable[[ChangeEvent[E]], object]], StreamHandler[E]]:
    """Make a function of typed changes the Lambda handler of ``table``'s DynamoDB stream.

    The function is called with a `ChangeEvent` per record, in the batch's order. ``only``
    passes changes of these entity classes alone (others are skipped). ``unknown`` says what
    becomes of a change of no declared entity (an item another tool wrote, or a KEYS_ONLY
    record whose keys no single entity's templates parse): ``"skip"`` it (the default),
    ``"pass"`` it to the function (with ``entity_type`` None), or ``"fail"`` it.
    ``idempotency`` is a table for the marks of applied records (its key attributes strings;
    with a ``ttl_attribute``, marks expire after ``keep_marks``), read and written with
    ``session`` (a `Session()` from the environment if None). ``after_failure`` is
    ``"hold-item"`` or ``"stop"``; see the module doc for both and their defaults.
    """

    def decorate(function: Callable[[ChangeEvent[E]], object]) -> StreamHandler[E]:
        return StreamHandler(
            function,
            table,
            only=only,
            unknown=unknown,
            idempotency=idempotency,
            session=session,
            keep_marks=keep_marks,
            after_failure=after_failure,
        )

    return decorate
