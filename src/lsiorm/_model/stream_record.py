"""A DynamoDB stream record as a typed change: `ChangeEvent` and `change_of` (pure, no I/O).

A record is what Lambda hands a function for a DynamoDB stream (one entry of the event's
``Records``) or what DynamoDB Streams' GetRecords returns: an ``eventName`` (INSERT, MODIFY,
REMOVE), an ``eventID``, and under ``dynamodb`` the item's ``Keys``, its ``NewImage`` and
``OldImage`` as the stream's view type includes them, its ``SequenceNumber`` and
``ApproximateCreationDateTime`` (epoch seconds in Lambda's JSON; a datetime when boto3 parsed
GetRecords). Images are wire items, decoded by the same decoders as items read from the table.

What a change says about its entity:

* an image of a declared entity decodes to that entity (``new`` for NewImage, ``old`` for
  OldImage), and ``entity_type`` is its class;
* a record with no image at all (a ``KEYS_ONLY`` stream, or a REMOVE on a ``NEW_IMAGE``
  stream) has ``keys_only`` set and neither entity; its ``entity_type`` is the one declared
  entity whose key templates parse its keys, or None when none or several do;
* an image of no declared entity decodes to None and leaves ``entity_type`` None.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, Literal, TypeVar

from lsiorm._model.entity import Entity, decode_item
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.item_types import parses_keys
from lsiorm._model.schema import Table
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import ValidationError

__all__ = ["ChangeEvent", "ChangeName", "change_of", "record_key"]

E = TypeVar("E", bound=Entity)

ChangeName = Literal["INSERT", "MODIFY", "REMOVE"]
_NAMES: frozenset[str] = frozenset(typing.get_args(ChangeName))
#: Who DynamoDB names as the writer of a deletion by time to live.
_TTL_PRINCIPAL = "dynamodb.amazonaws.com"


@dataclass(frozen=True)
class ChangeEvent(Generic[E]):
    """One change of one item, from a DynamoDB stream record.

    ``name`` is ``"INSERT"``, ``"MODIFY"`` or ``"REMOVE"``; ``old`` and ``new`` are the item
    before and after, as entities (None where the stream's view type leaves the image out, or
    where the item is of no declared entity); ``entity_type`` is their class. ``keys`` is the
    item's primary key as Python values. ``keys_only`` says the record carried no image at all;
    ``by_ttl`` that DynamoDB's time to live deleted the item. ``event_id``,
    ``sequence_number``, ``source_arn`` (the stream's ARN, as Lambda gives it) and ``created``
    (the change's approximate time, UTC) identify the record, which ``record`` holds as given.
    """

    name: ChangeName
    entity_type: type[E] | None
    old: E | None
    new: E | None
    keys: dict[str, Any]
    event_id: str
    sequence_number: str
    keys_only: bool = False
    by_ttl: bool = False
    created: datetime | None = None
    source_arn: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def entity(self) -> E | None:
        """The item as it is now (``new``), or as it was for a REMOVE (``old``)."""
        return self.new if self.new is not None else self.old


def _refused(message: str) -> ValidationError:
    return ValidationError("stream.record", f"{message} (not a DynamoDB stream record).")


def _body(record: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise _refused(f"A record must be a mapping, not a {type(record).__name__}")
    body = record.get("dynamodb")
    if not isinstance(body, Mapping) or not isinstance(body.get("Keys"), Mapping):
        raise _refused("The record has no 'dynamodb' part with the item's 'Keys'")
    return body


def record_key(record: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The item a record is about, as a hashable value of its wire key (for ordering per item).

    Raises ValidationError (rule ``stream.record``) for a mapping that is not a stream record.
    """
    keys = _body(record)["Keys"]
    return tuple(sorted((str(name), repr(value)) for name, value in keys.items()))


def _created(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    return None


def _by_ttl(record: Mapping[str, Any]) -> bool:
    who = record.get("userIdentity")
    return (
        isinstance(who, Mapping)
        and who.get("type") == "Service"
        and who.get("principalId") == _TTL_PRINCIPAL
    )


def _image(body: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    image = body.get(name)
    return image if isinstance(image, Mapping) and image else None


def _keyed_entity(table: Table, keys: Mapping[str, Any]) -> type[Entity] | None:
    """The one declared entity whose key templates parse these primary keys, or None."""
    primary = tuple(k for k in table.index_key_attributes(None) if k is not None)
    found: list[type[Entity]] = []
    for cls in table.entities.values():
        meta: EntityMeta[Any] = meta_of(typing.cast("type[Entity]", cls))
        if all(attr in meta.templates for attr in primary) and parses_keys(meta, keys, primary):
            found.append(typing.cast("type[Entity]", cls))
    return found[0] if len(found) == 1 else None


def change_of(table: Table, record: Mapping[str, Any]) -> ChangeEvent[Entity]:
    """Return a stream record of ``table`` as a `ChangeEvent` (see the module doc).

    Raises ValidationError: rule ``stream.record`` for a mapping that is not a DynamoDB
    stream record, and the decoders' rules (``item.invalid``, ...) for an image that does not
    fit its entity.
    """
    body = _body(record)
    name = record.get("eventName")
    if name not in _NAMES:
        raise _refused(f"The record's eventName is {name!r}, not INSERT, MODIFY or REMOVE")
    keys = body["Keys"]
    new_image, old_image = _image(body, "NewImage"), _image(body, "OldImage")
    new = decode_item(table, new_image) if new_image is not None else None
    old = decode_item(table, old_image) if old_image is not None else None
    keys_only = new_image is None and old_image is None
    found = new if new is not None else old
    entity_type: type[Entity] | None = type(found) if found is not None else None
    if keys_only:
        entity_type = _keyed_entity(table, keys)
    source = record.get("eventSourceARN")
    return ChangeEvent(
        name=typing.cast("ChangeName", name),
        entity_type=entity_type,
        old=old,
        new=new,
        keys=item_from_wire(keys),
        event_id=str(record.get("eventID", "")),
        sequence_number=str(body.get("SequenceNumber", "")),
        keys_only=keys_only,
        by_ttl=_by_ttl(record),
        created=_created(body.get("ApproximateCreationDateTime")),
        source_arn=source if isinstance(source, str) else None,
        record=record,
    )
