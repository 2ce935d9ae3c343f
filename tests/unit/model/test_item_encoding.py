"""The one-pass item encoder gives exactly what the two-pass path gave: wire item and size."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, PlainSerializer, computed_field, field_serializer

from lsiorm import Entity, KeyAttribute, KeyFormat, LocalIndex, Projection, Table
from lsiorm._model import item_encoding
from lsiorm._model.field_types import plain_model
from lsiorm._model.item_encoding import build_item, encode_entity
from lsiorm._model.wire import (
    MAX_ITEM_BYTES,
    attribute_value_size,
    item_size,
    item_to_wire,
    to_wire,
    to_wire_sized,
)
from lsiorm.errors import ItemTooLargeError, LsiormError
from support.strategies import finite_floats, in_dynamo_range, values

table = Table(
    "one_pass",
    partition_key="pk",
    sort_key="sk",
    local_indexes=[LocalIndex("ByWhen", KeyAttribute("lsi1"), Projection.all())],
)


class Color(Enum):
    RED = "red"
    BLUE = 2


class Inner(BaseModel):
    a: int
    b: str = "x"


class Plain(
    Entity,
    table=table,
    keys={"pk": "P#{name}", "sk": "N#{n:08d}", "lsi1": "{when}"},
):
    name: str
    n: int
    when: datetime | None = None
    total: Decimal = Decimal(0)
    ratio: float = 0.0
    flag: bool = False
    blob: bytes = b""
    day: date | None = None
    ident: uuid.UUID | None = None
    tags: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    labels: set[str] = Field(default_factory=set)
    color: Color | None = None
    kind: Literal["a", "b"] = "a"
    renamed: str | None = Field(default=None, alias="Renamed")
    pair: tuple[int, str] | None = None


class Nested(Entity, table=table, keys={"pk": "Q#{name}", "sk": "N#{n:08d}"}):
    name: str
    n: int
    inner: Inner | None = None
    anything: Any = None
    shown: Annotated[int, PlainSerializer(lambda v: v * 10)] = 1

    @computed_field  # type: ignore[prop-decorator]
    @property
    def double(self) -> int:
        return self.n * 2

    @field_serializer("name")
    def _upper(self, value: str) -> str:
        return value


def test_plain_and_non_plain_classes_are_told_apart() -> None:
    assert plain_model(Plain)
    assert not plain_model(Nested)


def old_path(entity: Entity) -> tuple[dict[str, Any], int]:
    wire = item_to_wire(build_item(entity))
    return wire, item_size(wire)


def outcome(encode: Callable[[Entity], Any], entity: Entity) -> Any:
    """What ``encode`` gives for the entity, or the type and rule of the error it raises."""
    try:
        return encode(entity)
    except LsiormError as exc:
        return (type(exc), exc.rule)


def encoded_fast_and_general(entity: Entity, writer_of: Callable[[], Any]) -> tuple[Any, Any]:
    """The outcome of encode_entity, then the same with the class's generated encoder off."""
    expected = outcome(encode_entity, entity)
    writer = writer_of()  # asked for after the first encoding, which makes it
    assert writer is not None
    fast, writer.fast = writer.fast, None
    try:
        general = outcome(encode_entity, entity)
    finally:
        writer.fast = fast
    return expected, general


def same_outcome(entity: Entity) -> Any:
    """Assert both paths give the same item and size, or the same refusal; return it."""
    expected = outcome(old_path, entity)
    got = outcome(encode_entity, entity)
    assert got == expected
    if not isinstance(expected[0], type):
        # Dict order is kept too: fields in declaration order, then keys, then the type.
        assert list(got[0]) == list(expected[0])
    return got


texts = st.text(max_size=20)
aware = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(timezone.utc)
) | st.datetimes(
    min_value=datetime(2, 1, 1),
    max_value=datetime(9998, 1, 1),
    timezones=st.builds(
        lambda m: timezone(timedelta(minutes=m)), st.integers(min_value=-900, max_value=900)
    ),
)
entity_decimals = st.decimals(allow_nan=False, allow_infinity=False) | st.builds(
    Decimal, st.sampled_from(["0.0", "-0", "12.500", "1E+3", "1E-40", "1" * 39, "0.0001000"])
)
decimals = entity_decimals | st.decimals()
plain_entities = st.builds(
    Plain,
    name=texts,
    n=st.integers(min_value=-(10**9), max_value=10**9),
    when=st.none() | aware,
    total=entity_decimals,
    ratio=finite_floats,
    flag=st.booleans(),
    blob=st.binary(max_size=10),
    day=st.none() | st.dates(),
    ident=st.none() | st.uuids(),
    tags=st.lists(texts, max_size=4),
    counts=st.dictionaries(texts, st.integers(), max_size=3),
    labels=st.sets(texts, max_size=3),
    color=st.none() | st.sampled_from(Color),
    kind=st.sampled_from(["a", "b"]),
    Renamed=st.none() | texts,
    pair=st.none() | st.tuples(st.integers(), texts),
)


@given(plain_entities)
def test_plain_entity_matches_the_two_pass_path(entity: Plain) -> None:
    same_outcome(entity)


@given(
    st.builds(
        Nested,
        name=texts,
        n=st.integers(min_value=0, max_value=10**8 - 1),
        inner=st.none() | st.builds(Inner, a=st.integers(), b=texts),
        anything=values,
        shown=st.integers(),
    )
)
def test_model_dump_classes_match_the_two_pass_path(entity: Nested) -> None:
    result = same_outcome(entity)
    if entity.inner is not None and not isinstance(result[0], type):
        # Refused items (a serialised number beyond DynamoDB's 38 digits) have no item to read.
        assert result[0]["double"] == {"N": str(entity.n * 2)}


@given(values)
def test_to_wire_sized_is_to_wire_and_its_size(value: Any) -> None:
    av, size = to_wire_sized(value)
    assert av == to_wire(value)
    assert size == attribute_value_size(av)


@given(decimals | finite_floats.filter(in_dynamo_range) | st.integers())
def test_numbers_sized_in_one_pass(number: Any) -> None:
    try:
        expected: Any = to_wire(number)
    except LsiormError as exc:
        expected = exc.rule
    try:
        got: Any = to_wire_sized(number)
        assert got[1] == attribute_value_size(got[0])
        got = got[0]
    except LsiormError as exc:
        got = exc.rule
    assert got == expected


def test_size_limit_is_checked_on_the_one_pass_size() -> None:
    fits = Plain(name="x", n=1, tags=["y" * 1000] * 395)
    wire, size = encode_entity(fits)
    assert size == item_size(wire) <= MAX_ITEM_BYTES
    with pytest.raises(ItemTooLargeError):
        encode_entity(Plain(name="x", n=1, tags=["y" * 1000] * 420))


key_avs = (
    st.builds(lambda s: {"S": s}, st.text(min_size=1, max_size=8))
    | st.builds(lambda n: {"N": str(n)}, st.integers())
    | st.builds(lambda b: {"B": b}, st.binary(min_size=1, max_size=6))
)


@given(key_avs, key_avs, st.sampled_from([("pk", "sk"), ("zz", "aa"), ("k", None)]))
def test_batch_identity_shortcut_is_key_identity(
    first: dict[str, Any], second: dict[str, Any], names: tuple[str, str | None]
) -> None:
    from lsiorm._requests.batch import item_identity, key_identity, primary_key_of

    pk, sk = names
    t = Table("ident", partition_key=pk, sort_key=sk)
    item = {pk: first, "other": {"S": "x"}}
    if sk is not None:
        item[sk] = second
    assert item_identity(t, item) == key_identity(t.name, primary_key_of(t, item))


# -- the generated per-class encoder ---------------------------------------------------------

status_table = Table(
    "one_pass_status",
    partition_key="pk",
    sort_key="sk",
    local_indexes=[LocalIndex("ByState", KeyAttribute("lsi1"), Projection.all())],
)


class Shipment(
    Entity,
    table=status_table,
    keys={
        "pk": "S#{owner}",
        "sk": "{state}#{at:ms}",  # a terminated str, then a datetime at millisecond precision
        "lsi1": "{label}#{seq:04d}",  # sparse: left out when label or seq is None
    },
):
    owner: str
    state: str
    at: datetime
    label: str | None = None
    seq: int | None = None
    note: str = ""


zones = st.just(timezone.utc) | st.builds(
    lambda m: timezone(timedelta(minutes=m)), st.integers(min_value=-900, max_value=900)
)
key_texts = st.text(max_size=12) | st.sampled_from(
    ["", "\x00", "a\x01b", "é", "x" * 300, "a\u0100"]
)
shipments = st.builds(
    Shipment,
    owner=key_texts,
    state=key_texts,
    at=st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 1, 1), timezones=zones)
    | st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=timezone.utc)
    ),
    label=st.none() | key_texts,
    seq=st.none() | st.integers(min_value=-20_000, max_value=20_000),
    note=st.text(max_size=30),
)


def test_plain_classes_get_a_generated_encoder() -> None:
    from lsiorm._model.item_encoding import WRITERS

    for entity in (
        Plain(name="x", n=1),
        Shipment(owner="o", state="s", at=datetime(2024, 1, 1, tzinfo=timezone.utc)),
    ):
        encode_entity(entity)
        assert WRITERS[type(entity)].fast is not None
    encode_entity(Nested(name="x", n=1))
    assert WRITERS[Nested].fast is None  # model_dump classes keep the general path


@given(shipments)
def test_generated_encoder_matches_the_two_pass_path(entity: Shipment) -> None:
    # Terminated and final str keys (escapes, non-ASCII, empty, over the key limit), int keys
    # out of their width, datetimes off UTC or finer than the key precision, sparse index keys.
    same_outcome(entity)


@given(shipments)
def test_generated_encoder_matches_the_general_path(entity: Shipment) -> None:

    writer = item_encoding.WRITERS.get(Shipment)
    expected, general = encoded_fast_and_general(entity, lambda: writer)
    assert expected == general
    if not isinstance(expected[0], type):
        assert list(expected[0]) == list(general[0])


readable_status_table = Table(
    "one_pass_status_readable",
    partition_key="pk",
    sort_key="sk",
    local_indexes=[LocalIndex("ByState", KeyAttribute("lsi1"), Projection.all())],
    key_style="readable",
)


class ReadableShipment(
    Entity,
    table=readable_status_table,
    keys={"pk": "S#{owner}", "sk": "{state}#{at:ms}", "lsi1": "{label}#{seq:04d}"},
):
    """Shipment in the readable style: its text ends with U+0000, not with the '#'."""

    owner: str
    state: str
    at: datetime
    label: str | None = None
    seq: int | None = None
    note: str = ""


@given(shipments)
def test_generated_encoder_matches_the_general_path_in_the_readable_style(
    entity: Shipment,
) -> None:
    readable = ReadableShipment.model_construct(**dict(entity))
    writer = lambda: item_encoding.WRITERS.get(ReadableShipment)  # noqa: E731
    expected, general = encoded_fast_and_general(readable, writer)
    assert expected == general
    if not isinstance(expected[0], type):
        assert list(expected[0]) == list(general[0])
        # The printable encoder of the same values writes no control character in a key.
        printable, _ = encoded_fast_and_general(entity, lambda: item_encoding.WRITERS.get(Shipment))
        assert not isinstance(printable[0], type)  # refused in one style, refused in both
        keys = [av["S"] for name, av in printable[0].items() if name in ("pk", "sk", "lsi1")]
        assert not any(c < " " for key in keys for c in key)


class Checked(Entity, table=status_table, keys={"pk": "C#{name}", "sk": "{n:06d}"}):
    """Every type the generated encoder checks by itself instead of asking Pydantic."""

    name: str
    n: int
    flag: bool = False
    ratio: float = 0.0
    total: Decimal = Decimal(0)
    when: datetime | None = None
    day: date | None = None
    tags: list[str] = Field(default_factory=list)
    maybe: str | None = None


class Constrained(Entity, table=status_table, keys={"pk": "K#{name}", "sk": "{n:06d}"}):
    """Same types, but constraints Pydantic enforces: the shortcut must not apply."""

    name: str = Field(max_length=3)
    n: int = Field(ge=0)


anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**7), max_value=10**7),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(),
    st.text(max_size=6),
    st.binary(max_size=4),
    st.dates(),
    st.datetimes(timezones=st.none() | st.just(timezone.utc)),
    st.lists(st.text(max_size=3) | st.integers(), max_size=3),
)


#: Mostly values of the declared type (with their edge cases: NaN, infinities, naive
#: datetimes, subclasses), sometimes anything at all.
typed = {
    "name": st.text(max_size=6),
    "n": st.integers(min_value=-(10**7), max_value=10**7),
    "flag": st.booleans(),
    "ratio": st.floats(),
    "total": st.decimals(),
    "when": st.none() | st.datetimes(timezones=st.none() | st.just(timezone.utc)),
    "day": st.none() | st.dates(),
    "tags": st.lists(st.text(max_size=3), max_size=3),
    "maybe": st.none() | st.text(max_size=3),
}


@given(
    st.fixed_dictionaries(typed),
    st.sampled_from([None, *sorted(typed)]),
    anything,
    st.sampled_from([None, *sorted(typed)]),
    st.sampled_from([Checked, Constrained]),
)
def test_values_checked_without_pydantic_give_the_general_outcome(
    values: dict[str, Any], wild: str | None, value: Any, dropped: str | None, cls: type[Entity]
) -> None:
    # model_construct skips validation: wrong types, NaN, missing fields all reach the writer.

    if wild is not None:
        values[wild] = value
    fields = {k: v for k, v in values.items() if k in cls.model_fields and k != dropped}
    entity = cls.model_construct(**fields)
    for name in cls.model_fields:
        if name not in fields:
            entity.__dict__.pop(name, None)  # a partial entity (entity.partial)
    expected, general = encoded_fast_and_general(entity, lambda: item_encoding.WRITERS[cls])
    assert expected == general


def test_the_shortcut_is_taken_only_where_it_is_sure() -> None:
    from lsiorm._model.entity_meta import meta_of
    from lsiorm._model.generated_encoder import validity_source

    assert validity_source(meta_of(Checked)) is not None
    assert validity_source(meta_of(Constrained)) is None  # field constraints
    assert validity_source(meta_of(Plain)) is None  # enums, literals, sets, ...


# -- plain text in readable keys: closed sets and alphabets ----------------------------------


class Hue(str, Enum):
    RED = "red"
    REDDISH = "reddish"
    BLUE = "blue"


class Labelled(
    Entity,
    table=status_table,
    keys={
        "pk": "L#{slug}!{code}",  # a pattern's alphabet, then a declared one
        "sk": "{hue}#{kind}-{tag}#{n:03d}",  # an Enum, a Literal, then text
        "lsi1": "{folded}#{hue}",  # plain text folded to lowercase, then an Enum last
    },
):
    slug: Annotated[str, Field(pattern=r"^[a-z0-9-]+$")]
    code: Annotated[str, KeyFormat(alphabet="A-Z0-9")]
    hue: Hue
    kind: Literal["aa", "bb", "a"]
    tag: str
    n: int
    folded: Annotated[str | None, KeyFormat(style="plain", case="lower")] = None


slugs = st.text(st.sampled_from("abz09-#A"), max_size=5)
codes = st.text(st.sampled_from("AZ09a!é"), max_size=4)
labelled = st.builds(
    Labelled.model_construct,
    slug=slugs,
    code=codes,
    hue=st.sampled_from(Hue) | st.sampled_from(["red", "green"]),
    kind=st.sampled_from(["aa", "bb", "a", "cc", "a#"]),
    tag=key_texts,
    n=st.integers(min_value=-2000, max_value=2000),
    folded=st.none() | st.text(st.sampled_from("aB#é\x00"), max_size=4),
)


def test_plain_text_codecs_get_their_fast_branch() -> None:
    from lsiorm._model.entity_meta import meta_of
    from lsiorm._model.generated_encoder import generate_encoder
    from lsiorm._model.item_writer import ItemWriter

    encoder = generate_encoder(ItemWriter(meta_of(Labelled)))
    assert encoder is not None
    source = "\n".join(__import__("linecache").getlines(encoder.__code__.co_filename))
    assert "in {'a', 'aa', 'bb'}" in source  # the Literal's members, inlined
    assert "_text(p) is not None" in source  # the alphabets' compiled patterns


@given(labelled)
def test_generated_encoder_matches_the_general_path_on_plain_text(entity: Labelled) -> None:
    # Members and alphabet text take the inlined branch; values outside them (refused by
    # validation or by the codec), non-ASCII text and folded text take the codec's own path.
    expected, general = encoded_fast_and_general(
        entity, lambda: item_encoding.WRITERS.get(Labelled)
    )
    assert expected == general
    if not isinstance(expected[0], type):
        assert list(expected[0]) == list(general[0])
