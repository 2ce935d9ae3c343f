"""EpochSeconds: a datetime stored as whole epoch seconds, the form DynamoDB's TTL reads."""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import pydantic
import pytest
from boto3.dynamodb.types import TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, cond, decode_item, gt, item_size, query
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.epoch import MAX_EPOCH_SECONDS, MIN_EPOCH_SECONDS, epoch_seconds
from lsiorm._model.item_encoding import encode_entity
from lsiorm._model.wire import attribute_value_size
from lsiorm._requests.items import put_request
from lsiorm.errors import ValidationError
from support.models import TTL_CACHE, Entry, Timed

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


offsets = st.timedeltas(
    min_value=timedelta(hours=-23, minutes=-59, seconds=-59),
    max_value=timedelta(hours=23, minutes=59, seconds=59),
).map(timezone)
aware = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=offsets
)


def truncated(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(microsecond=0)


def stored(entity: Entity, attribute: str = "expires_at") -> Any:
    return entity.to_wire().get(attribute)


@given(aware)
def test_any_aware_datetime_is_stored_as_whole_epoch_seconds_and_reads_back_truncated(
    value: datetime,
) -> None:
    entry = Entry(name="k", expires_at=value)
    wire = entry.to_wire()
    # An oracle independent of the implementation: calendar.timegm of the UTC time tuple.
    assert wire["expires_at"] == {"N": str(calendar.timegm(value.astimezone(UTC).timetuple()))}
    back = decode_item(TTL_CACHE, wire)
    assert isinstance(back, Entry)
    assert back.expires_at == truncated(value)
    assert back.expires_at is not None
    assert back.expires_at.tzinfo is UTC
    assert back == entry  # validation already truncated: what is stored is what is held
    # decode(store(x)) is a fixed point.
    again = decode_item(TTL_CACHE, back.to_wire())
    assert again == back
    assert back.to_wire() == wire


@given(st.integers(MIN_EPOCH_SECONDS, MAX_EPOCH_SECONDS))
def test_an_int_epoch_validates_and_is_stored_unchanged(seconds: int) -> None:
    entry = Entry(name="k", expires_at=seconds)
    assert entry.expires_at == EPOCH + timedelta(seconds=seconds)
    assert stored(entry) == {"N": str(seconds)}
    assert entry.model_dump()["expires_at"] == seconds


@given(st.floats(min_value=MIN_EPOCH_SECONDS, max_value=MAX_EPOCH_SECONDS, allow_nan=False))
def test_a_float_or_decimal_epoch_is_floored_to_the_second(seconds: float) -> None:
    whole = int(Decimal(seconds).to_integral_value(rounding=ROUND_FLOOR))
    assert Entry(name="k", expires_at=seconds).expires_at == EPOCH + timedelta(seconds=whole)
    assert Entry(name="k", expires_at=Decimal(seconds)).expires_at == EPOCH + timedelta(
        seconds=whole
    )


def test_accepted_forms() -> None:
    moment = datetime(2030, 5, 1, 12, 0, 7, tzinfo=UTC)
    seconds = calendar.timegm(moment.timetuple())
    plus_two = timezone(timedelta(hours=2))
    for given_value in (
        moment,
        moment.replace(microsecond=999_999),
        moment.astimezone(plus_two),
        seconds,
        float(seconds) + 0.5,
        Decimal(seconds),
        str(seconds),
        "2030-05-01T12:00:07Z",
        "2030-05-01T14:00:07.25+02:00",
    ):
        assert Entry(name="k", expires_at=given_value).expires_at == moment, given_value
    # Before the epoch, truncation goes toward the past, as datetime's seconds do.
    assert Entry(name="k", expires_at=-0.5).expires_at == EPOCH - timedelta(seconds=1)
    assert stored(Entry(name="k", expires_at=-0.5)) == {"N": "-1"}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (datetime(2030, 1, 1), "ambiguous"),
        ("2030-01-01T00:00:00", "ambiguous"),
        (True, "bool"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (MAX_EPOCH_SECONDS + 1, "years 1 to 9999"),
        ("soon", "neither"),
        (b"1", "expected"),
    ],
)
def test_refused_values_say_why(value: Any, why: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=why):
        Entry(name="k", expires_at=value)


def test_naive_datetime_in_a_condition_is_a_typed_error() -> None:
    entry = Entry(name="k")
    with pytest.raises(ValidationError) as caught:
        put_request(entry, condition=cond("expires_at") < datetime(2030, 1, 1))
    assert caught.value.rule == "field.invalid"
    assert "ambiguous" in str(caught.value)


def test_none_is_absence() -> None:
    entry = Entry(name="k")
    assert "expires_at" not in entry.to_wire()
    back = decode_item(TTL_CACHE, entry.to_wire())
    assert isinstance(back, Entry)
    assert back.expires_at is None


def test_json_round_trip() -> None:
    entry = Entry(name="k", expires_at=datetime(2030, 1, 1, tzinfo=UTC))
    text = entry.model_dump_json()
    assert '"expires_at":1893456000' in text
    assert Entry.model_validate_json(text) == entry


@given(aware, aware)
def test_key_text_orders_as_the_values(a: datetime, b: datetime) -> None:
    meta = meta_of(Timed)
    later = datetime(2030, 1, 1, tzinfo=UTC)

    def key(value: datetime) -> str:
        entity = Timed(topic="t", at=value, expires_at=later)
        sort: str = meta.key({"topic": "t", "at": entity.at})["SK"]
        assert entity.to_wire()["SK"] == {"S": sort}
        return sort

    ka, kb = key(a), key(b)
    ta, tb = truncated(a), truncated(b)
    assert (ka < kb) == (ta < tb)
    assert (ka == kb) == (ta == tb)


def test_condition_and_filter_compare_numbers() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    request, _ = put_request(Entry(name="k"), condition=cond("expires_at") < moment)
    assert "<" in request["ConditionExpression"]
    assert {"N": "1893456000"} in request["ExpressionAttributeValues"].values()
    compiled = query(Entry).where(name="k").filter(expires_at=gt(moment)).compile()
    assert "FilterExpression" in compiled
    assert {"N": "1893456000"} in compiled["ExpressionAttributeValues"].values()


def test_stream_images_decode() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    wire = Entry(name="k", expires_at=moment).to_wire()
    # A writer that stored a fraction, and a plain image turned back with boto3's serializer.
    fractional = {**wire, "expires_at": {"N": "1893456000.75"}}
    back = decode_item(TTL_CACHE, fractional)
    assert isinstance(back, Entry)
    assert back.expires_at == moment
    plain = {"PK": "E#k", "SK": "V#001", "_type": "Entry", "name": "k", "version": 1}
    plain["expires_at"] = Decimal(1893456000)
    serialize = TypeSerializer().serialize
    image = {name: serialize(value) for name, value in plain.items()}
    assert decode_item(TTL_CACHE, image) == Entry(name="k", expires_at=moment)


def test_size_estimate_counts_a_number() -> None:
    entry = Entry(name="k", expires_at=datetime(2030, 1, 1, tzinfo=UTC))
    wire, size = encode_entity(entry)
    assert size == item_size(wire)
    without = Entry(name="k")
    value_size = attribute_value_size({"N": "1893456000"})
    assert size == item_size(without.to_wire()) + len("expires_at") + value_size
    assert value_size < len("2030-01-01T00:00:00.000000Z")


def test_epoch_seconds_of_the_datetime_range() -> None:
    assert epoch_seconds(datetime(1, 1, 1, tzinfo=UTC)) == MIN_EPOCH_SECONDS
    assert epoch_seconds(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == (
        MAX_EPOCH_SECONDS
    )
