"""The stream handler inside Powertools for AWS Lambda's batch utilities (installed with the dev
extra), on records recorded from DynamoDB Local."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)

from lsiorm import ChangeEvent, stream_handler
from lsiorm.errors import MissingDependencyError
from support.stream_records import Order, load_event, shop


def _sequences(event: dict[str, Any]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]


def test_the_record_handler_runs_in_powertools_own_processor() -> None:
    names: list[str] = []

    @stream_handler(shop, only=[Order])
    def orders(change: ChangeEvent[Order]) -> None:
        names.append(change.name)

    event = load_event("new_and_old")
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    response = process_partial_response(
        event=event, record_handler=orders.record_handler, processor=processor, context=None
    )
    assert response == {"batchItemFailures": []}
    assert names == ["INSERT", "MODIFY", "REMOVE"]


def test_the_ordered_processor_holds_a_failed_items_later_records_back() -> None:
    event = load_event("new_and_old")
    sequences = _sequences(event)
    calls: list[str] = []

    @stream_handler(shop, unknown="pass", after_failure="hold-item")
    def handler(change: ChangeEvent[Any]) -> None:
        calls.append(change.sequence_number)
        if change.sequence_number == sequences[1]:
            raise RuntimeError("no")

    response = process_partial_response(
        event=event,
        record_handler=handler.record_handler,
        processor=handler.powertools_processor(),
        context=None,
    )
    assert calls == [sequences[0], sequences[1], sequences[3], sequences[4]]
    # The same records as the handler itself reports when Lambda calls it directly.
    assert response == handler(event, None)
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": s} for s in (sequences[1], sequences[2], sequences[5])
        ]
    }


def test_powertools_own_processor_would_run_the_held_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the ordered processor Powertools hands every record over: the order's MODIFY and
    # REMOVE would run after its INSERT failed. That is why the handler gives its own.
    event = load_event("new_and_old")
    sequences = _sequences(event)
    calls: list[str] = []

    @stream_handler(shop, unknown="pass")
    def handler(change: ChangeEvent[Any]) -> None:
        calls.append(change.sequence_number)
        if change.sequence_number == sequences[1]:
            raise RuntimeError("no")

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    process_partial_response(
        event=event, record_handler=handler.record_handler, processor=processor, context=None
    )
    assert calls == sequences


def test_without_powertools_the_processor_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "aws_lambda_powertools.utilities.batch", None)
    handler = stream_handler(shop)(lambda change: None)
    with pytest.raises(MissingDependencyError) as caught:
        handler.powertools_processor()
    assert caught.value.extra == "powertools"
