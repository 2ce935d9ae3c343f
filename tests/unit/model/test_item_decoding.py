"""The typed decode: decode_item decodes only what the model reads, with the same result."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, Field, model_validator

from lsiorm import Entity, Table
from lsiorm._model.entity import decode_item
from lsiorm._model.number_fit import check_values, field_checks
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import LsiormError
from support.outcomes import typed


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


DECODE_TABLE = Table("fastjson_decode", partition_key="pk")


class Everything(Entity, table=DECODE_TABLE, keys={"pk": "E#{name}"}):
    """One field of each kind the decoder treats specially, and some it does not."""

    name: str
    count: int = 0
    ratio: float = 0.0
    amount: Decimal | None = None
    flag: bool = False
    data: bytes | None = None
    tags: list[str] = Field(default_factory=list)
    when: datetime | None = None
    day: date | None = None
    ident: uuid.UUID | None = None
    colour: Colour | None = None
    level: Level | None = None
    either: int | str | None = None
    mapping: dict[str, Any] = Field(default_factory=dict)
    nested: list[Any] = Field(default_factory=list)
    renamed: str | None = Field(default=None, alias="Renamed")


class SeesEverything(Entity, table=DECODE_TABLE, keys={"pk": "S#{name}"}):
    """A before-validator may read any attribute, so nothing may be left out."""

    name: str
    partition: str = ""

    @model_validator(mode="before")
    @classmethod
    def copy_partition(cls, data: Any) -> Any:
        return {**data, "partition": data.get("pk", "")}


class KeepsExtras(Entity, table=DECODE_TABLE, keys={"pk": "K#{name}"}):
    model_config = ConfigDict(extra="allow")

    name: str


FIELD_KEYS = sorted(
    {key for name, info in Everything.model_fields.items() for key in (name, info.alias) if key}
)

plain_avs = st.recursive(
    st.one_of(
        st.text(max_size=6).map(lambda s: {"S": s}),
        st.sampled_from(["0", "7", "-3", "1.50", "1e3", "2E-2", "abc", "", " 5", "1_0"]).map(
            lambda n: {"N": n}
        ),
        st.binary(max_size=4).map(lambda b: {"B": b}),
        st.booleans().map(lambda b: {"BOOL": b}),
        st.just({"NULL": True}),
        st.sampled_from(["red", "blue", "2024-01-02", "2024-01-02T03:04:05+00:00"]).map(
            lambda s: {"S": s}
        ),
        st.just({"S": str(uuid.UUID(int=7))}),
        st.lists(st.text(max_size=3), min_size=1, max_size=3).map(lambda v: {"SS": v}),
        st.lists(st.sampled_from(["1", "2.5"]), min_size=1, max_size=2).map(lambda v: {"NS": v}),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.text(max_size=3), children, max_size=2).map(lambda v: {"M": v}),
    ),
    max_leaves=6,
)


MALFORMED_AVS: list[Any] = [
    {},
    {"S": "x", "N": "1"},
    {"S": None},
    {"N": 5},
    {"N": b"5"},
    {"N": None},
    {"N": "1", "S": "1"},
    {"L": [{"S": "a"}, "b"]},
    {"L": [{"S": "a", "N": "1"}]},
    {"L": [{"S": None}]},
    {"L": [{"N": "1"}]},
    {"L": "ab"},
    {"L": ({"S": "a"},)},
    {"X": 1},
    {"BOOL": None},
    {"BOOL": True, "S": "x"},
    {"B": b"x", "S": "x"},
    "S",
    None,
]


def decoded_outcome(decode: Any, wire: dict[str, Any]) -> Any:
    try:
        try:
            entity = decode(wire)
        except LsiormError as exc:
            if getattr(exc, "rule", None) != "item.invalid":
                raise
            # A read names the stored item; what Pydantic refused is kept as the cause.
            raise exc.__cause__ or exc from None
    except LsiormError as exc:
        return ("lsiorm", type(exc), getattr(exc, "rule", None))
    except ValueError as exc:  # pydantic's ValidationError
        errors = getattr(exc, "errors", None)
        if errors is None:
            return ("invalid", type(exc), str(exc))
        # A missing field's error shows the whole input, which now holds only what the model reads.
        shown = [
            {k: v for k, v in e.items() if not (k == "input" and e["type"] == "missing")}
            for e in errors(include_url=False)
        ]
        return ("invalid", type(exc), shown)
    if entity is None:
        return None
    return ("ok", type(entity), typed(entity.model_dump()), entity.model_fields_set)


def reference_decode(wire: dict[str, Any]) -> Any:
    """decode_item as it was: the whole item through item_from_wire, each number checked to
    fit its field exactly (Pydantic would round a float, and names a fraction in an int
    otherwise), then model_validate."""
    item = item_from_wire(wire)
    check_values(field_checks(Everything), item)
    return Everything.model_validate(item)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=st.dictionaries(
        st.sampled_from(FIELD_KEYS),
        plain_avs | st.sampled_from(MALFORMED_AVS),
        max_size=len(FIELD_KEYS),
    ),
    dropped=st.sets(st.sampled_from(FIELD_KEYS)),
)
def test_decode_item_equals_model_validate_of_the_whole_item(
    changes: dict[str, Any], dropped: set[str]
) -> None:
    wire = Everything(
        name="n",
        count=3,
        amount=Decimal("1.25"),
        tags=["a", "b"],
        when=datetime(2024, 1, 2, tzinfo=timezone.utc),
        colour=Colour.RED,
        level=Level.HIGH,
        renamed="r",
    ).to_wire()
    for key in dropped:
        wire.pop(key, None)
    wire.update(changes)
    assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire) == decoded_outcome(
        reference_decode, wire
    )


@pytest.mark.parametrize("key", FIELD_KEYS)
def test_each_field_given_each_malformed_value_decodes_as_before(key: str) -> None:
    for av in MALFORMED_AVS:
        wire = Everything(name="n").to_wire()
        wire[key] = av
        assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire) == decoded_outcome(
            reference_decode, wire
        ), av


def test_a_one_shot_iterable_is_read_once() -> None:
    def wire() -> dict[str, Any]:
        item = Everything(name="n").to_wire()
        item["tags"] = {"L": iter([{"S": "a"}, {"N": "1"}])}
        return item

    assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire()) == decoded_outcome(
        reference_decode, wire()
    )


def test_attributes_the_model_ignores_are_not_decoded() -> None:
    wire = Everything(name="n").to_wire()
    wire["unrelated"] = {"N": "not a number"}
    assert decode_item(DECODE_TABLE, wire) == Everything(name="n")
    with pytest.raises(LsiormError):
        item_from_wire(wire)


def test_a_before_validator_still_sees_every_attribute() -> None:
    wire = SeesEverything(name="x").to_wire()
    decoded = decode_item(DECODE_TABLE, wire)
    assert isinstance(decoded, SeesEverything)
    assert decoded.partition == "S#x"


def test_extra_attributes_are_kept_when_the_model_allows_them() -> None:
    wire = KeepsExtras(name="x").to_wire()
    wire["more"] = {"N": "2"}
    decoded = decode_item(DECODE_TABLE, wire)
    assert decoded is not None
    assert decoded.model_extra == {"pk": "K#x", "_type": "KeepsExtras", "more": 2}
