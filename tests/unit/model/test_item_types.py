"""Telling entity types apart without a type attribute: declarations, writes, decoding, plans."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field
from pydantic import ValidationError as PydanticValidationError

from lsiorm import (
    Entity,
    GlobalIndex,
    KeyAttribute,
    KeyFormat,
    LocalIndex,
    Projection,
    Table,
    decode_item,
    query,
    scan,
)
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_types import entity_class, item_types
from lsiorm._requests.update_plan import UpdateSpec
from lsiorm.errors import DeclarationError, QueryPlanError, ValidationError
from support.updates import update_params

shop = Table(
    "shop",
    "pk",
    "sk",
    global_indexes=[
        GlobalIndex("gsi1", KeyAttribute("gsi1pk"), KeyAttribute("gsi1sk")),
        GlobalIndex("bare", KeyAttribute("gsi2pk"), KeyAttribute("gsi2sk")),
    ],
)


class Customer(
    Entity,
    table=shop,
    keys={"pk": "CUSTOMER#{cid}", "sk": "PROFILE", "gsi2pk": "{city}", "gsi2sk": "C#{cid}"},
    type_attribute=None,
):
    cid: str
    name: str
    city: str | None = None


class Order(
    Entity,
    table=shop,
    keys={
        "pk": "CUSTOMER#{cid}",
        "sk": "ORDER#{oid}",
        "gsi1pk": "ORDER#{oid}",
        "gsi1sk": "ORDER",
        "gsi2pk": "{city}",
        "gsi2sk": "O#{oid}",
    },
    type_attribute=None,
):
    cid: str
    oid: str
    city: str | None = None


class Note(Entity, table=shop, keys={"pk": "CUSTOMER#{cid}", "sk": "NOTE#{n}"}):
    cid: str
    n: str


def test_untyped_items_store_no_type_attribute() -> None:
    assert Customer(cid="1", name="Ann").to_item() == {
        "cid": "1",
        "name": "Ann",
        "pk": "CUSTOMER#1",
        "sk": "PROFILE",
        "gsi2sk": "C#1",
    }
    assert "_type" not in Order(cid="1", oid="7").to_wire()
    assert Note(cid="1", n="a").to_wire()["_type"] == {"S": "Note"}


@pytest.mark.parametrize("entity", [Customer(cid="1", name="Ann"), Order(cid="1", oid="7")])
def test_untyped_items_decode_by_their_keys(entity: Entity) -> None:
    wire = entity.to_wire()
    assert item_types(shop, wire) == [type(entity)]
    assert decode_item(shop, wire) == entity
    assert decode_item(shop, wire, only=[Note]) is None


def test_typed_and_untyped_items_share_a_table() -> None:
    note = Note(cid="1", n="a")
    assert decode_item(shop, note.to_wire()) == note
    # An item whose type attribute names no declared type is of none, whatever its keys.
    wire = {**Order(cid="1", oid="7").to_wire(), "_type": {"S": "Invoice"}}
    assert item_types(shop, wire) == []
    # Keys no declared template parses: no type.
    assert item_types(shop, {"pk": {"S": "CUSTOMER#1"}, "sk": {"S": "RETURN#3"}}) == []


#: Type attributes as items carry them: declared names (typed and untyped), unknown ones,
#: other tags, a value of another JSON type, and what is not an AttributeValue at all.
_TYPE_ATTRIBUTES = st.one_of(
    st.builds(lambda name: {"S": name}, st.sampled_from(["Note", "Customer", "Order", "Invoice"])),
    st.builds(lambda name: {"S": name}, st.text(max_size=6)),
    st.sampled_from([{"N": "1"}, {"S": 1}, {"S": None}, {"S": "Note", "N": "1"}, {}, "Note", None]),
)
_KEYS = st.sampled_from(
    [
        {},
        {"pk": {"S": "CUSTOMER#1"}},
        {"pk": {"S": "CUSTOMER#1"}, "sk": {"S": "PROFILE"}},
        {"pk": {"S": "CUSTOMER#1"}, "sk": {"S": "ORDER#7"}},
        {"pk": {"S": "CUSTOMER#1"}, "sk": {"S": "NOTE#a"}},
    ]
)
_ONLY = st.sampled_from([None, (Note,), (Customer,), (Order,), (Note, Order), ()])


@given(_TYPE_ATTRIBUTES, _KEYS, _ONLY)
def test_entity_class_is_the_one_candidate_item_types_gives(
    type_av: Any, keys: dict[str, Any], only: tuple[type[Entity], ...] | None
) -> None:
    item = keys if type_av is None else {**keys, "_type": type_av}
    found = item_types(shop, item)
    if only is not None:
        found = [cls for cls in found if cls in only]
    assert len(found) <= 1  # the declarations of shop can be told apart
    assert entity_class(shop, item, only) is (found[0] if found else None)
    # ``only`` may be any iterable, read once.
    assert entity_class(shop, item, None if only is None else iter(only)) is (
        found[0] if found else None
    )


def test_an_item_naming_an_untyped_entity_is_of_no_type_on_every_read_path() -> None:
    from lsiorm._query.decode import decode

    ann = Customer(cid="1", name="Ann", city="Oslo")  # every field stored: a whole item
    plan = query(Customer).where(cid="1").plan()
    assert decode(plan, ann.to_wire(), (Customer,)) == ann
    # Its items carry no type attribute: one that names it was written by something else.
    named = {**ann.to_wire(), "_type": {"S": "Customer"}}
    assert decode_item(shop, named) is None
    assert decode(plan, named, (Customer,)) is None
    # Not whole either: the read then cannot take its fields from the stored attributes alone.
    for dropped in ("name", "city"):
        part = {k: v for k, v in named.items() if k != dropped}
        assert decode_item(shop, part) is None
        assert decode(plan, part, (Customer,)) is None


def test_an_item_without_its_primary_key_is_of_no_type() -> None:
    assert item_types(shop, {"pk": {"S": "CUSTOMER#1"}}) == []


def test_entity_class_refuses_to_guess_between_types() -> None:
    # Readable keys: {a} may hold "X#1" (printable text would have escaped its "#").
    loose = Table("loose", "pk", "sk", key_style="readable")

    class A(Entity, table=loose, keys={"pk": "{a}", "sk": "A"}, type_attribute=None):
        a: str

    class B(Entity, table=loose, keys={"pk": "X#{b}", "sk": "B"}, type_attribute=None):
        b: str

    # Declared apart; an item keyed by hand under both shapes at once cannot happen, so a
    # stand-in template makes both parse it.
    meta_of(B).templates["sk"] = meta_of(A).templates["sk"]
    item = {"pk": {"S": "X#1"}, "sk": {"S": "A"}}
    assert item_types(loose, item) == [A, B]
    with pytest.raises(ValidationError) as caught:
        entity_class(loose, item)
    assert caught.value.rule == "item.ambiguous-type"
    assert entity_class(loose, item, only=[B]) is B


def test_declarations_that_cannot_be_told_apart_are_refused() -> None:
    with pytest.raises(DeclarationError) as caught:

        class Shadow(
            Entity, table=shop, keys={"pk": "CUSTOMER#{c}", "sk": "ORDER#{x}"}, type_attribute=None
        ):
            c: str
            x: str

    assert caught.value.rule == "entity.indistinguishable"
    assert "Shadow" not in shop.entities


def test_another_type_attribute_name_is_refused() -> None:
    with pytest.raises(DeclarationError) as caught:

        class Elsewhere(Entity, table=shop, keys={"pk": "E#{e}", "sk": "E"}, type_attribute="kind"):
            e: str

    assert caught.value.rule == "entity.type-attribute"


def test_the_table_type_attribute_by_name_is_the_default() -> None:
    tagged = Table("tagged", "pk", "sk", type_attribute="__edb_e__")

    class Task(Entity, table=tagged, keys={"pk": "T#{t}", "sk": "T"}, type_attribute="__edb_e__"):
        t: str

    assert Task(t="1").to_wire()["__edb_e__"] == {"S": "Task"}


def _params(q: Any) -> dict[str, Any]:
    params: dict[str, Any] = q.plan().requests[0].params
    return params


def test_a_query_keeps_untyped_items_by_the_absence_of_the_type_attribute() -> None:
    shared = Table("shared", "pk", "sk", local_indexes=[LocalIndex("lsi", KeyAttribute("lsk"))])

    class Plain(
        Entity,
        table=shared,
        keys={"pk": "P#{p}", "sk": "A#{x}", "lsk": "X#{x}"},
        type_attribute=None,
    ):
        p: str
        x: str

    class Tagged(Entity, table=shared, keys={"pk": "P#{p}", "sk": "B#{y}", "lsk": "X#{y}"}):
        p: str
        y: str

    params = _params(query(Plain).where(p="1").using("lsi"))
    assert params["FilterExpression"] == "attribute_not_exists(#n2)"
    assert params["ExpressionAttributeNames"]["#n2"] == "_type"
    params = _params(query(Tagged).where(p="1").using("lsi"))
    assert params["FilterExpression"] == "#n2 = :v2"
    assert params["ExpressionAttributeValues"][":v2"] == {"S": "Tagged"}
    both = query(Plain, Tagged).where(p="1").using("lsi").plan()
    assert [r.params.get("FilterExpression") for r in both.requests] == [None]


def test_a_gsi_query_tells_untyped_types_apart_by_a_table_key_prefix() -> None:
    params = _params(query(Order).where(city="Oslo"))
    assert params["IndexName"] == "bare"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND begins_with(#n1, :v1)"
    # Customers of the city are in the same range only if their sk could begin 'ORDER#': not.
    assert "FilterExpression" not in params


def test_an_untyped_scan_filters_on_absence_and_key_prefix() -> None:
    params = _params(scan(Order))
    assert params["FilterExpression"] == "attribute_not_exists(#n0) AND begins_with(#n1, :v0)"
    assert params["ExpressionAttributeNames"] == {"#n0": "_type", "#n1": "sk"}
    assert params["ExpressionAttributeValues"] == {":v0": {"S": "ORDER#"}}


def test_untyped_types_that_no_filter_separates_are_refused() -> None:
    mixed = Table("mixed", "pk", "sk", local_indexes=[LocalIndex("lsi", KeyAttribute("lsk"))])

    class Left(
        Entity, table=mixed, keys={"pk": "P#{p}", "sk": "L#{x}", "lsk": "{x}"}, type_attribute=None
    ):
        p: str
        x: str

    class Right(
        Entity, table=mixed, keys={"pk": "P#{p}", "sk": "R#{y}", "lsk": "{y}"}, type_attribute=None
    ):
        p: str
        y: str

    with pytest.raises(QueryPlanError) as caught:
        query(Left).where(p="1").using("lsi").plan()
    assert caught.value.rule == "query.untyped-types"
    # The table's own key range keeps them apart: no filter needed.
    assert "FilterExpression" not in _params(query(Left).where(p="1"))


def test_upsert_of_an_untyped_entity_guards_on_the_absence_of_the_type() -> None:
    spec = UpdateSpec(set={"city": "Oslo"}, upsert=True)
    params = update_params(meta_of(Order), {"cid": "1", "oid": "7"}, spec)
    assert "attribute_not_exists(#n0) OR attribute_not_exists(" in params["ConditionExpression"]
    assert "_type" in params["ExpressionAttributeNames"].values()
    assert "_type" not in str(params["UpdateExpression"])


class Tier(str, Enum):
    GOLD = "gold"
    TIN = "tin"


by_user = Table("by_user", KeyAttribute("user_id"), KeyAttribute("n", "N"))


class Visit(Entity, table=by_user, keys={"user_id": "{user_id}", "n": "{n}"}, type_attribute=None):
    user_id: str
    n: int
    tier: Tier = Tier.TIN
    kind: Literal["a", "b"] = "a"


def test_a_field_can_be_its_key_attribute() -> None:
    visit = Visit(user_id="u1", n=3)
    assert visit.to_wire() == {
        "user_id": {"S": "u1"},
        "n": {"N": "3"},
        "tier": {"S": "tin"},
        "kind": {"S": "a"},
    }
    assert decode_item(by_user, visit.to_wire()) == visit
    assert meta_of(Visit).own_keys == {"user_id", "n"}


@pytest.mark.parametrize(
    ("annotation", "template"),
    [(float, "{user_id}"), (bytes, "{user_id}"), (str, "U#{user_id}"), (str, "{user_id:>5}")],
)
def test_a_field_under_a_key_name_must_be_that_key(annotation: Any, template: str) -> None:
    table = Table("own", KeyAttribute("user_id"))
    with pytest.raises(DeclarationError) as caught:

        class Wrong(Entity, table=table, keys={"user_id": template}):
            user_id: annotation  # type: ignore[valid-type]

    assert caught.value.rule == "entity.attribute-collision"


def test_a_field_stored_as_the_type_attribute_is_refused() -> None:
    with pytest.raises(DeclarationError) as caught:

        class Clash(Entity, table=shop, keys={"pk": "Z#{z}", "sk": "Z"}, type_attribute=None):
            z: str
            kind: str = Field(alias="_type")

    assert caught.value.rule == "entity.attribute-collision"


def test_an_own_key_index_field_is_updated_once() -> None:
    listed = Table(
        "listed",
        "pk",
        global_indexes=[
            GlobalIndex("by_tier", KeyAttribute("tier"), projection=Projection.keys_only())
        ],
    )

    class Member(Entity, table=listed, keys={"pk": "M#{m}", "tier": "{tier}"}, type_attribute=None):
        m: str
        tier: Tier | None = None

    spec = UpdateSpec(set={"tier": Tier.GOLD})
    params = update_params(meta_of(Member), {"m": "1"}, spec)
    assert list(params["ExpressionAttributeNames"].values()).count("tier") == 1
    assert params["UpdateExpression"].startswith("SET ")


def _plain_table(name: str, index_name: str, projection: Projection | None = None) -> Table:
    """A table keyed in the plain style other tools write, with one GSI on gpk and gsk (that
    projects every attribute unless ``projection`` says otherwise)."""
    index = GlobalIndex(
        index_name, KeyAttribute("gpk"), KeyAttribute("gsk"), projection or Projection.all()
    )
    return Table(name, "pk", "sk", global_indexes=[index], key_style="plain")


def test_key_text_gives_back_only_values_it_determines() -> None:
    table = _plain_table("folded", "by_owner", Projection.keys_only())
    lower = KeyFormat(style="plain", case="lower")

    class Doc(
        Entity,
        table=table,
        keys={
            "pk": "P#{project}#S#{status}",
            "sk": "D#{n}#{title}",
            "gpk": "O#{owner}",
            "gsk": "{n}",
        },
    ):
        project: str
        status: Literal["open", "closed"]
        n: int
        title: str
        owner: Annotated[str, lower]

    templates = meta_of(Doc).templates
    # project may hold "#": where it ends is a guess, so only the attribute gives it.
    assert templates["pk"].recoverable == {"status"}
    assert templates["sk"].recoverable == {"n", "title"}
    assert templates["gpk"].recoverable == frozenset()  # lowercased: "Ann" and "ANN" alike
    # The index holds no owner attribute to check "Ann" against: refused, never guessed.
    with pytest.raises(QueryPlanError) as caught:
        query(Doc).where(owner="Ann").select("n").plan()
    assert caught.value.rule == "query.filter-not-projected"


def test_untyped_items_still_in_the_old_key_form_are_recognised() -> None:
    def declare(**style: Any) -> type[Entity]:
        table = Table("rekeyed", "pk", "sk")

        class Memo(
            Entity,
            table=table,
            keys={"pk": "TOPIC#{topic}#MEMOS", "sk": "MEMO#{memo_id}"},
            type_attribute=None,
            **style,
        ):
            topic: str
            memo_id: str

        return Memo

    before = declare(key_style="plain")
    wire = before(topic="ops", memo_id="1").to_wire()
    assert wire["pk"] == {"S": "TOPIC#ops#MEMOS"}
    after = declare(key_style="readable", rekeying_from="plain")
    assert after(topic="ops", memo_id="1").to_wire()["pk"] == {"S": "TOPIC#ops\x00#MEMOS"}
    table = meta_of(after).table
    assert item_types(table, wire) == [after]
    assert decode_item(table, wire) == after(topic="ops", memo_id="1")
    done = declare(key_style="readable")
    assert item_types(meta_of(done).table, wire) == []


def test_one_entity_with_several_prefixes_on_an_overloaded_index() -> None:
    table = _plain_table("overloaded", "by_kind")

    class Account(
        Entity,
        table=table,
        keys={"pk": "ACCOUNT#{aid}", "sk": "A", "gpk": "{kind}#{region}", "gsk": "{aid}"},
        type_attribute=None,
    ):
        aid: str
        kind: Literal["USER", "ADMIN"]
        region: str

    class Team(
        Entity,
        table=table,
        keys={"pk": "TEAM#{tid}", "sk": "T", "gpk": "TEAM#{region}", "gsk": "{tid}"},
        type_attribute=None,
    ):
        tid: str
        region: str

    admin = Account(aid="a1", kind="ADMIN", region="eu")
    assert admin.to_wire()["gpk"] == {"S": "ADMIN#eu"}
    assert Account(aid="a2", kind="USER", region="eu").to_wire()["gpk"] == {"S": "USER#eu"}
    params = _params(query(Account).where(kind="ADMIN", region="eu"))
    assert params["IndexName"] == "by_kind"
    assert params["ExpressionAttributeValues"][":v0"] == {"S": "ADMIN#eu"}
    # Teams' keys cannot begin with a kind: no filter is needed to keep them out.
    assert "FilterExpression" not in params
    assert decode_item(table, admin.to_wire()) == admin
    assert decode_item(table, Team(tid="t", region="eu").to_wire()) == Team(tid="t", region="eu")


def test_a_field_only_its_key_holds_is_read_from_the_key() -> None:
    # Scripts and other tools often keep a value only in a key: USER#42 and no user_id.
    table = Table("scripted", "pk", "sk", key_style="plain")

    class User(Entity, table=table, keys={"pk": "USER#{user_id}", "sk": "P#{team}#{since}"}):
        user_id: int = Field(exclude=True)
        since: int = Field(exclude=True)
        team: str
        name: str

    wire = {
        "pk": {"S": "USER#42"},
        "sk": {"S": "P#red#blue#2019"},
        "name": {"S": "Ann"},
        "team": {"S": "red#blue"},
        "_type": {"S": "User"},
    }
    assert decode_item(table, wire) == User(user_id=42, team="red#blue", since=2019, name="Ann")
    # The item's own attribute wins over its key text.
    assert decode_item(table, {**wire, "since": {"N": "2020"}}).since == 2020  # type: ignore[union-attr]
    # A field stored as an attribute is never read from a key: its absence is reported.
    with pytest.raises(ValidationError) as caught:
        decode_item(table, {k: v for k, v in wire.items() if k != "team"})
    assert caught.value.rule == "item.invalid"
    assert isinstance(caught.value.__cause__, PydanticValidationError)
    assert "team" in str(caught.value)


def test_key_fields_items_do_not_store() -> None:
    table = _plain_table("keyonly", "by_topic")

    class Memo(
        Entity,
        table=table,
        keys={"pk": "U#{user}", "sk": "T#{topic}", "gpk": "G#{topic}#{user}", "gsk": "M"},
        type_attribute=None,
    ):
        user: int = Field(exclude=True)
        topic: str = Field(exclude=True)
        body: str

    memo = Memo(user=1, topic="a#b", body="hi")
    assert memo.to_item() == {
        "body": "hi",
        "pk": "U#1",
        "sk": "T#a#b",
        "gpk": "G#a#b#1",
        "gsk": "M",
    }
    assert decode_item(table, memo.to_wire()) == memo
    assert meta_of(Memo).key_only_fields == {"user", "topic"}
    # The table's keys give topic back; the index's text cannot, and it has no attribute.
    assert query(Memo).where(user=1, topic="a#b").plan().filter is None
    with pytest.raises(QueryPlanError) as caught:
        query(Memo).where(topic="a#b", user=1).using("by_topic").plan()
    assert caught.value.rule == "query.plain-ambiguous"

    with pytest.raises(DeclarationError) as refused:

        class Loose(Entity, table=table, keys={"pk": "L#{a}#{b}", "sk": "L"}, type_attribute=None):
            a: str = Field(exclude=True)
            b: int

    assert refused.value.rule == "entity.key-only-field"
    # No attribute holds such a value: a filter or a write condition on it is refused.
    with pytest.raises(ValidationError) as filtered:
        query(Memo).where(user=1).filter(topic="a#b").plan()
    assert filtered.value.rule == "condition.key-only-field"
