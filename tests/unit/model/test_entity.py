"""Entity declaration rules, key derivation, sparse slots and item checks (pure, no I/O)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import Entity, GlobalIndex, KeyAttribute, KeyFormat, LocalIndex, Projection, Table
from lsiorm._model.entity import decode_item
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import (
    DeclarationError,
    IndexKeyTypeError,
    ItemTooLargeError,
    KeyEncodingError,
    ValidationError,
)
from support.models import declare_goals


def slots_table(name: str = "App") -> Table:
    return Table.with_reserved_lsi_slots(
        name,
        partition_key="PK",
        sort_key="SK",
        global_indexes=[
            GlobalIndex("GSI1", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK")),
            GlobalIndex("ByGoals", KeyAttribute("GSI2PK"), KeyAttribute("Goals", "N")),
        ],
    )


UTC = timezone.utc


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


def test_keys_are_derived_from_fields_and_type_recorded() -> None:
    table = slots_table()

    class Thread(
        Entity,
        table=table,
        keys={
            "PK": "FORUM#{forum}",
            "SK": "THREAD#{subject}",
            "LSI1SK": "THREAD#LASTPOST#{last_post}",
            "LSI2SK": "THREAD#REPLIES#{replies:06d}",
        },
    ):
        forum: str
        subject: str
        last_post: datetime | None = None
        replies: int = 0

    t = Thread(forum="S3", subject="a b", last_post=datetime(2015, 9, 1, tzinfo=UTC), replies=-5)
    item = t.to_item()
    assert item["PK"] == "FORUM#S3"
    assert item["SK"] == "THREAD#a%20b"  # the printable style escapes the space
    assert item["LSI1SK"] == "THREAD#LASTPOST#2015-09-01T00:00:00.000000Z"
    assert item["LSI2SK"] == "THREAD#REPLIES#-999995"
    assert item["_type"] == "Thread"
    assert item["forum"] == "S3"
    wire = t.to_wire()
    assert wire["PK"] == {"S": "FORUM#S3"}
    back = decode_item(table, wire)
    assert back == t


def test_sparse_slot_left_out_never_null() -> None:
    table = slots_table()

    class Post(
        Entity,
        table=table,
        keys={"PK": "P#{pid}", "SK": "POST", "LSI3SK": "POST#PINNED#{pinned_at}"},
    ):
        pid: str
        pinned_at: datetime | None = None

    wire = Post(pid="1").to_wire()
    assert "LSI3SK" not in wire
    assert "pinned_at" not in wire  # None is stored as absence, never NULL
    pinned = Post(pid="1", pinned_at=datetime(2020, 1, 1, tzinfo=UTC)).to_wire()
    assert pinned["LSI3SK"] == {"S": "POST#PINNED#2020-01-01T00:00:00.000000Z"}


def test_multi_type_partition_decodes_each_as_its_own_class() -> None:
    table = slots_table()

    class Forum(Entity, table=table, keys={"PK": "FORUM#{name}", "SK": "META"}):
        name: str

    class Thread(Entity, table=table, keys={"PK": "FORUM#{forum}", "SK": "THREAD#{subject}"}):
        forum: str
        subject: str

    items = [Forum(name="S3").to_wire(), Thread(forum="S3", subject="x").to_wire()]
    decoded = [decode_item(table, w) for w in items]
    assert [type(d) for d in decoded] == [Forum, Thread]
    assert decode_item(table, items[0], only=(Thread,)) is None


def test_a_keys_only_stream_image_is_refused_saying_why() -> None:
    table = slots_table()

    class Forum(Entity, table=table, keys={"PK": "FORUM#{name}", "SK": "META"}):
        name: str
        posts: int = 0

    whole = Forum(name="S3", posts=2).to_wire()
    image = {"PK": whole["PK"], "SK": whole["SK"]}  # what a KEYS_ONLY stream record carries
    for only in (None, (Forum,)):
        with pytest.raises(ValidationError) as caught:
            decode_item(table, image, only=only)
        assert caught.value.rule == "stream.keys-only"
        assert "KEYS_ONLY" in str(caught.value)
        assert "NEW_IMAGE" in str(caught.value)
    # An item of another application (no type attribute, more than keys) is still skipped.
    assert decode_item(table, {**image, "other": {"S": "x"}}) is None
    assert decode_item(table, whole) == Forum(name="S3", posts=2)


def test_a_keys_only_image_of_an_entity_without_a_type_attribute_is_refused_saying_why() -> None:
    table = slots_table()

    class Person(Entity, table=table, keys={"PK": "P#{pid}", "SK": "PROFILE"}, type_attribute=None):
        pid: str
        name: str

    whole = Person(pid="1", name="Ada").to_wire()
    image = {"PK": whole["PK"], "SK": whole["SK"]}
    with pytest.raises(ValidationError) as caught:
        decode_item(table, image)
    assert caught.value.rule == "stream.keys-only"
    assert "other fields of Person" in str(caught.value)
    assert decode_item(table, whole) == Person(pid="1", name="Ada")


def test_number_key_is_stored_as_number() -> None:
    _, record = declare_goals()  # Goals: the Number sort key of an LSI
    assert record(country="FR", game="2022", goals=16).to_wire()["Goals"] == {"N": "16"}


# -- declaration errors, one per rule ----------------------------------------------------------


def declare(table: Table, keys: dict[str, str], **fields: Any) -> type[Entity]:
    namespace: dict[str, Any] = {"__annotations__": {k: v[0] for k, v in fields.items()}}
    namespace.update({k: v[1] for k, v in fields.items() if v[1] is not ...})
    return type(
        "E" + str(abs(hash(str(keys))) % 10**6), (Entity,), namespace, table=table, keys=keys
    )


@pytest.mark.parametrize(
    ("keys", "fields", "rule"),
    [
        ({"PK": "X#{nope}", "SK": "S"}, {"a": (str, ...)}, "template.unknown-field"),
        ({"PK": "X#{a}", "SK": "S", "Nope": "x"}, {"a": (str, ...)}, "template.unknown-attribute"),
        (
            {"PK": "X#{a}", "SK": "S#{b}"},
            {"a": (str, ...), "b": (list[str], ...)},
            "template.no-encoding",
        ),
        ({"PK": "X#{a}", "SK": "S#{b}"}, {"a": (str, ...), "b": (int, ...)}, "template.int-width"),
        ({"PK": "X#{a}"}, {"a": (str, ...)}, "entity.missing-primary-key"),
        (
            {"PK": "X#{a}", "SK": "S#{b}"},
            {"a": (str, ...), "b": (str | None, None)},
            "entity.optional-key-field",
        ),
        ({"PK": "X#{a}", "SK": "S#{a}#{a}"}, {"a": (str, ...)}, "template.repeated-field"),
        (
            {"PK": "X#{a}", "SK": "S", "Goals": "G{g}"},
            {"a": (str, ...), "g": (int, ...)},
            "template.direct-key",
        ),
        (
            {"PK": "X#{a}", "SK": "S", "Goals": "{g}"},
            {"a": (str, ...), "g": (str, ...)},
            "template.direct-key",
        ),
        ({"PK": "X#{a!r}", "SK": "S"}, {"a": (str, ...)}, "template.syntax"),
        (
            {"PK": "X#{a}", "SK": "S"},
            {"a": (str, ...), "LSI1SK": (str, ...)},
            "entity.attribute-collision",
        ),
    ],
)
def test_declaration_errors_name_their_rule(
    keys: dict[str, str], fields: dict[str, Any], rule: str
) -> None:
    with pytest.raises(DeclarationError) as info:
        declare(slots_table(), keys, **fields)
    assert info.value.rule == rule
    assert rule in str(info.value)


def test_overlapping_namespaces_refused() -> None:
    table = slots_table()

    class Dog(Entity, table=table, keys={"PK": "ZOO#{zoo}", "SK": "A#{n}", "LSI1SK": "dog:{cmd}"}):
        zoo: str
        n: str
        cmd: str

    with pytest.raises(DeclarationError) as info:

        class Doggo(
            Entity, table=table, keys={"PK": "ZOO#{zoo}", "SK": "A#x{n}", "LSI1SK": "dog:x:{cmd}"}
        ):
            zoo: str
            n: str
            cmd: str

    assert info.value.rule == "template.namespace-overlap"
    assert "overwrite" in str(info.value)
    assert "query(Doggo)" in str(info.value)

    # A hierarchy shares a namespace: its keys can never be equal, and queries filter on type.
    class DogTrick(
        Entity, table=table, keys={"PK": "ZOO#{zoo}", "SK": "A#{n}#T#{t:02d}", "LSI1SK": "dog:x"}
    ):
        zoo: str
        n: str
        t: int

    # Distinct namespaces share the slot fine; so do overlapping ones in other partitions.
    class Cat(Entity, table=table, keys={"PK": "ZOO#{zoo}", "SK": "C#{n}", "LSI1SK": "cat:{tree}"}):
        zoo: str
        n: str
        tree: str

    class Elsewhere(
        Entity, table=table, keys={"PK": "USER#{u}", "SK": "A#{n}", "LSI1SK": "dog:{c}"}
    ):
        u: str
        n: str
        c: str

    assert {"Dog", "DogTrick", "Cat", "Elsewhere"} <= set(table.entities)


def test_duplicate_type_name_refused() -> None:
    table = slots_table()

    class A(Entity, table=table, keys={"PK": "A#{a}", "SK": "A"}):
        a: str

    with pytest.raises(DeclarationError) as info:

        class B(Entity, table=table, keys={"PK": "B#{a}", "SK": "B"}, type_name="A"):
            a: str

    assert info.value.rule == "entity.duplicate-type"


def test_version_field_must_be_int() -> None:
    with pytest.raises(DeclarationError) as info:

        class V(Entity, table=slots_table(), keys={"PK": "V#{a}", "SK": "V"}, version="v"):
            a: str
            v: str = ""

    assert info.value.rule == "entity.version-field"


# -- write-time checks -------------------------------------------------------------------------


def test_width_overflow_is_an_error_not_a_longer_key() -> None:
    class Score(Entity, table=slots_table(), keys={"PK": "S#{a}", "SK": "N#{n:03d}"}):
        a: str
        n: int

    assert Score(a="x", n=999).to_item()["SK"] == "N#999"
    with pytest.raises(KeyEncodingError) as info:
        Score(a="x", n=1000).to_item()
    assert info.value.rule == "key.int-overflow"


def test_separator_inside_a_value_is_kept() -> None:
    class Addr(Entity, table=slots_table(), keys={"PK": "A#{a}", "SK": "{city}:{street}"}):
        a: str
        city: str
        street: str

    # The separator may occur in a value: the field's terminator, not the separator, ends it.
    item = Addr(a="x", city="Lon:don", street="Downing St").to_item()
    assert meta_of(Addr).templates["SK"].parse(item["SK"])["city"] == "Lon:don"


def test_naive_datetime_is_refused() -> None:
    class T(Entity, table=slots_table(), keys={"PK": "T#{a}", "SK": "T#{at}"}):
        a: str
        at: datetime

    with pytest.raises(KeyEncodingError) as info:
        T(a="x", at=datetime(2020, 1, 1)).to_item()
    assert info.value.rule == "key.naive-datetime"


def test_empty_key_refused_before_sending() -> None:
    class T(Entity, table=slots_table(), keys={"PK": "{a}", "SK": "T"}):
        a: str

    with pytest.raises(ValidationError) as info:
        T(a="").to_item()
    assert info.value.rule == "key.empty"


def test_index_key_type_mismatch_refused() -> None:
    class G(
        Entity,
        table=slots_table(),
        keys={"PK": "G#{a}", "SK": "G", "GSI2PK": "GOALS", "Goals": "{goals}"},
    ):
        a: str
        goals: int

    # model_construct skips validation, as a buggy caller might: the write must still be refused.
    bad = G.model_construct(a="x", goals="16")
    with pytest.raises(IndexKeyTypeError) as info:
        bad.to_wire()
    assert info.value.rule == "key.attribute-type"


def test_item_over_400kb_refused() -> None:
    class Blob(Entity, table=slots_table(), keys={"PK": "B#{a}", "SK": "B"}):
        a: str
        body: str

    Blob(a="x", body="y" * 300_000).to_wire()
    with pytest.raises(ItemTooLargeError) as info:
        Blob(a="x", body="y" * 410_000).to_wire()
    assert info.value.rule == "item.max-400kb"


def test_key_format_annotation_and_alias() -> None:
    class Score(Entity, table=slots_table(), keys={"PK": "S#{a}", "SK": "N#{n}"}):
        a: str
        n: Annotated[int, KeyFormat("04d")]
        label: str = Field(default="", alias="Label")

    s = Score(a="x", n=7, Label="seven")
    assert s.to_item()["SK"] == "N#0007"
    assert s.to_item()["Label"] == "seven"
    assert Score(a="x", n=7, label="by name").label == "by name"


def test_key_roundtrips_through_template_parse() -> None:
    class Mixed(
        Entity,
        table=slots_table(),
        keys={"PK": "M#{a}", "SK": "M#{when}#{n:05d}#{colour}#{price:09.2f}#{name}"},
    ):
        a: str
        when: datetime
        n: int
        colour: Colour
        price: Decimal
        name: str

    m = Mixed(
        a="x",
        when=datetime(2021, 5, 6, 7, 8, 9, 10, tzinfo=timezone(timedelta(hours=2))),
        n=-42,
        colour=Colour.BLUE,
        price=Decimal("-12.50"),
        name="ünï#côdé",
    )
    tpl = meta_of(Mixed).templates["SK"]
    parsed = tpl.parse(m.to_item()["SK"])
    assert parsed == {f: getattr(m, f) for f in ("when", "n", "colour", "price", "name")}


@given(
    subject=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\U0010ffff"),
        max_size=20,
    ),
    replies=st.integers(-(10**6) + 1, 10**6 - 1),
)
def test_template_render_parse_roundtrip(subject: str, replies: int) -> None:
    tpl = meta_of(RoundTrip).templates["SK"]
    values = {"replies": replies, "subject": subject}
    assert tpl.parse(tpl.render(values)) == values


class RoundTrip(
    Entity, table=slots_table("RoundTrip"), keys={"PK": "R", "SK": "R#{replies:06d}#{subject}"}
):
    replies: int
    subject: str


def test_projection_helpers_exist() -> None:
    lsi = LocalIndex("ByX", KeyAttribute("X"), Projection.keys_only())
    table = Table("Tbl", "PK", "SK", local_indexes=[lsi])
    assert table.has_lsi


def sharded_table() -> Table:
    return Table(
        "Sharded",
        partition_key="PK",
        sort_key="SK",
        global_indexes=[GlobalIndex("ByStatus", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK"))],
    )


def test_shard_is_derived_when_left_out_and_checked_when_given() -> None:
    from lsiorm import Shard, shard_value

    class Order(
        Entity,
        table=sharded_table(),
        keys={
            "PK": "ORDER#{oid}",
            "SK": "ORDER",
            "GSI1PK": "STATUS#{status}#{shard:02d}",
            "GSI1SK": "{oid}",
        },
    ):
        oid: str
        status: str
        shard: Annotated[int | None, Shard(4)] = None

    orders = [Order(oid=f"o{i}", status="PENDING") for i in range(40)]
    shards = {o.shard for o in orders}
    assert shards <= {1, 2, 3, 4}
    assert len(shards) > 1  # 40 keys spread over more than one shard
    for o in orders:
        assert o.shard == shard_value(Order, "shard", {"oid": o.oid})  # stable, from the key
        assert o.to_item()["GSI1PK"] == f"STATUS#PENDING#{o.shard:02d}"
    with pytest.raises(KeyEncodingError) as info:
        Order(oid="x", status="PENDING", shard=7).to_item()
    assert info.value.rule == "shard.range"


def test_shard_in_primary_key_refused() -> None:
    from lsiorm import Shard

    with pytest.raises(DeclarationError) as info:

        class Bad(Entity, table=sharded_table(), keys={"PK": "B#{n:02d}", "SK": "B"}):
            n: Annotated[int, Shard(4)]

    assert info.value.rule == "shard.in-primary-key"


def test_timestamps_are_declared_on_datetime_fields_outside_the_primary_key() -> None:
    table = Table(f"ts_{uuid.uuid4().hex[:6]}", "pk", "sk")
    with pytest.raises(DeclarationError) as info:

        class A(Entity, table=table, keys={"pk": "{a}", "sk": "X"}, created_at="made"):
            a: str

    assert info.value.rule == "entity.timestamp-field"
    with pytest.raises(DeclarationError):

        class B(Entity, table=table, keys={"pk": "{a}", "sk": "X"}, updated_at="n"):
            a: str
            n: int | None = None

    with pytest.raises(DeclarationError):

        class C(Entity, table=table, keys={"pk": "{a}", "sk": "{at}"}, created_at="at"):
            a: str
            at: datetime | None = None
