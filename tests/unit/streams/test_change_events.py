"""Stream records recorded from DynamoDB Local, as Lambda wraps them, decoded into changes."""

from __future__ import annotations

import copy
from datetime import datetime, timezone

import pytest

from lsiorm import ChangeEvent, change_of
from lsiorm.errors import ValidationError
from support.stream_records import Customer, Order, load_event, shop


def _changes(name: str) -> list[ChangeEvent[object]]:  # type: ignore[type-var]
    return [change_of(shop, record) for record in load_event(name)["Records"]]


def test_new_and_old_images_become_typed_changes() -> None:
    changes = _changes("new_and_old")
    assert [c.name for c in changes] == ["INSERT", "INSERT", "MODIFY", "INSERT", "MODIFY", "REMOVE"]
    assert [c.entity_type for c in changes] == [Customer, Order, Order, None, Customer, Order]
    ann = Customer(cid="c1", email="ann@example.com")
    assert (changes[0].old, changes[0].new) == (None, ann)
    assert changes[2].old == Order(cid="c1", oid="7", total=42, v=1)
    assert changes[2].new == Order(cid="c1", oid="7", total=40, v=2)
    assert changes[4].old == ann
    assert changes[4].new == Customer(cid="c1", email="ann@example.org")
    assert (changes[5].old, changes[5].new) == (Order(cid="c1", oid="7", total=40, v=2), None)
    assert changes[5].entity == changes[5].old
    # The item another tool wrote is of no declared entity: no entity, its keys all the same.
    assert (changes[3].old, changes[3].new, changes[3].keys) == (
        None,
        None,
        {"PK": "AUDIT#1", "SK": "X"},
    )


def test_a_change_keeps_what_identifies_its_record() -> None:
    event = load_event("new_and_old")
    first = event["Records"][0]
    change = change_of(shop, first)
    assert change.event_id == first["eventID"]
    assert change.sequence_number == first["dynamodb"]["SequenceNumber"]
    assert change.source_arn == first["eventSourceARN"]
    assert change.keys == {"PK": "C#c1", "SK": "PROFILE"}
    stamp = first["dynamodb"]["ApproximateCreationDateTime"]
    assert change.created == datetime.fromtimestamp(stamp, tz=timezone.utc)
    assert change.record is first
    assert not change.keys_only
    assert not change.by_ttl


def test_keys_only_records_name_the_entity_their_keys_parse_as() -> None:
    changes = _changes("keys_only")
    assert all(c.keys_only and c.old is None and c.new is None for c in changes)
    assert [c.entity_type for c in changes] == [Customer, Order, Order, None, Customer, Order]
    assert changes[1].keys == {"PK": "C#c1", "SK": "O#7"}


def test_a_new_image_stream_gives_no_old_entity_and_a_keys_only_remove() -> None:
    changes = _changes("new_image")
    assert changes[2].old is None
    assert changes[2].new == Order(cid="c1", oid="7", total=40, v=2)
    remove = changes[5]
    assert remove.name == "REMOVE"
    assert remove.keys_only
    assert remove.entity_type is Order


def test_a_deletion_by_time_to_live_is_said() -> None:
    record = copy.deepcopy(load_event("new_and_old")["Records"][5])
    record["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert change_of(shop, record).by_ttl


@pytest.mark.parametrize(
    "record",
    [
        {"eventName": "INSERT"},
        {"eventName": "INSERT", "dynamodb": {"NewImage": {}}},
        {"eventName": "UPSERT", "dynamodb": {"Keys": {"PK": {"S": "a"}, "SK": {"S": "b"}}}},
        "INSERT",
    ],
)
def test_what_is_not_a_stream_record_is_refused(record: object) -> None:
    with pytest.raises(ValidationError) as caught:
        change_of(shop, record)  # type: ignore[arg-type]
    assert caught.value.rule == "stream.record"
