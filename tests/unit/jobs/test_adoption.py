"""Adoption without an engine: how one item is sorted, and the report's counts and text."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, KeyFormat, Table, decode_item
from lsiorm._jobs.adoption import (
    AdoptionExample,
    AdoptionReport,
    EntityAdoption,
    classify_item,
)
from lsiorm._model.capacity import ReadEstimate

shop = Table("adopt_shop", "pk", "sk", type_attribute="kind")


#: A customer's profile item: the same keys in this table and in the peer's below.
PROFILE_KEYS = {"pk": "CUSTOMER#{cid}", "sk": "PROFILE"}


class Profile(Entity):
    """A customer's profile (abstract: declared on both tables)."""

    cid: str
    name: str


class Customer(Profile, table=shop, keys=PROFILE_KEYS, type_attribute=None):
    pass


class Line(
    Entity,
    table=shop,
    keys={"pk": "ORDER#{oid}", "sk": "ITEM#{line}"},
    type_attribute=None,
):
    oid: str
    line: Annotated[int, KeyFormat("03d")]
    qty: int


class Note(Entity, table=shop, type_name="note", keys={"pk": "NOTE#{n}", "sk": "NOTE"}):
    n: str


def S(text: str) -> dict[str, str]:
    return {"S": text}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"pk": S("CUSTOMER#7"), "sk": S("PROFILE"), "cid": S("7"), "name": S("Ann")}, None),
        ({"pk": S("ORDER#7"), "sk": S("ITEM#002"), "oid": S("7"), "line": {"N": "2"}}, "qty"),
        (
            {
                "pk": S("ORDER#7"),
                "sk": S("ITEM#002"),
                "oid": S("7"),
                "line": {"N": "3"},
                "qty": {"N": "1"},
            },
            "sk is 'ITEM#002', the declaration derives 'ITEM#003'",
        ),
        (
            {"pk": S("NOTE#1"), "sk": S("NOTE"), "kind": S("note"), "n": S("1"), "extra": S("x")},
            None,
        ),
    ],
)
def test_items_of_an_entity_parse_or_say_why_not(
    item: dict[str, Any], expected: str | None
) -> None:
    kind, cls, reason = classify_item(shop, item)
    assert kind == "entity"
    assert cls is not None
    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert expected in reason


def test_a_key_that_does_not_match_its_template_is_named() -> None:
    item = {"pk": S("NOTE#1"), "sk": S("NOTES"), "kind": S("note"), "n": S("1")}
    kind, _, reason = classify_item(shop, item)
    assert kind == "entity"
    assert reason == "sk 'NOTES' does not match the template 'NOTE'"


def test_items_no_declaration_claims_say_why() -> None:
    kind, cls, reason = classify_item(shop, {"pk": S("RETURN#1"), "sk": S("R")})
    assert (kind, cls) == ("unmatched", None)
    assert reason is not None
    assert "pk 'RETURN#1' does not match Customer's template 'CUSTOMER#{cid}'" in reason
    assert "pk 'RETURN#1' does not match Line's template 'ORDER#{oid}'" in reason
    kind, _, reason = classify_item(shop, {"pk": S("NOTE#1"), "sk": S("NOTE"), "kind": S("memo")})
    assert kind == "unmatched"
    assert reason == (
        "its type attribute 'kind' is 'memo', which no entity of the table declares as its "
        "type_name"
    )


def test_a_type_attribute_on_an_untyped_entity_item_is_named() -> None:
    item = {"pk": S("CUSTOMER#7"), "sk": S("PROFILE"), "kind": S("Customer")}
    kind, _, reason = classify_item(shop, item)
    assert kind == "unmatched"
    assert reason is not None
    assert "declared with type_attribute=None" in reason


def test_items_of_other_entities_are_counted_apart_for_one_entity() -> None:
    item = {"pk": S("CUSTOMER#7"), "sk": S("PROFILE"), "cid": S("7"), "name": S("Ann")}
    assert classify_item(shop, item, Line) == ("other", Customer, None)


def test_the_report_adds_parts_and_keeps_a_few_examples() -> None:
    whole = AdoptionReport("t", ReadEstimate("t", 2.0))
    for n in range(3):
        part = AdoptionReport("t", ReadEstimate("t", 2.0), scanned=4, unmatched=1)
        part.unmatched_examples.append(AdoptionExample({"pk": f"X#{n}"}, "no template"))
        part.entities["Line"] = EntityAdoption("Line", items=3, parsed=3 - n % 2)
        whole.add(part, examples=2)
    assert (whole.scanned, whole.unmatched, whole.unparsed) == (12, 3, 1)
    assert [e.key for e in whole.unmatched_examples] == [{"pk": "X#0"}, {"pk": "X#1"}]
    assert not whole.accounted
    text = str(whole)
    assert "  Line: 9 items, 8 parse, 1 do not" in text
    assert "    e.g. {'pk': 'X#0'}: no template" in text
    assert text.endswith("some items are not accounted for: see above")


def test_a_dry_run_is_never_accounted_for() -> None:
    report = AdoptionReport("t", ReadEstimate("t", 2.0), dry_run=True)
    assert not report.accounted
    assert str(report).endswith("dry run: nothing was read")


# Tables written by other tools: no type attribute on most items, plain key text (unpadded
# numbers, another datetime text, lowercased values, separators inside values).
PEER_TIME = "%Y-%m-%dT%H:%M:%S.%f+0000"
peer = Table("adopt_peer", "pk", "sk", type_attribute="__edb_e__", key_style="plain")
Lower = KeyFormat(style="plain", case="lower")
Words = st.text(alphabet="aBc9#_- é", min_size=1, max_size=12)


class PeerCustomer(Profile, table=peer, keys=PROFILE_KEYS, type_attribute=None):
    pass


class PeerOrder(
    Entity, table=peer, keys={"pk": "CUSTOMER#{cid}", "sk": "ORDER#{placed}"}, type_attribute=None
):
    cid: str
    placed: Annotated[datetime, KeyFormat(style="plain", datetime_format=PEER_TIME)]


class PeerLine(
    Entity, table=peer, keys={"pk": "ORDER#{order_no}", "sk": "ITEM#{line}"}, type_attribute=None
):
    order_no: int
    line: int


class PeerTask(
    Entity,
    table=peer,
    type_name="task",
    keys={"pk": "$app#project_{project}", "sk": "$task_1#taskid_{task_id}"},
):
    project: Annotated[str, Lower]
    task_id: Annotated[str, Lower]


peer_entities = st.one_of(
    st.builds(PeerCustomer, cid=Words, name=Words),
    st.builds(
        PeerOrder,
        cid=Words,
        placed=st.datetimes(
            min_value=datetime(2000, 1, 1),
            max_value=datetime(2100, 1, 1),
            timezones=st.just(timezone.utc),
        ),
    ),
    st.builds(PeerLine, order_no=st.integers(0, 10**12), line=st.integers(0, 10**6)),
    st.builds(PeerTask, project=Words, task_id=Words),
)


@given(peer_entities)
def test_every_item_an_entity_writes_is_adopted_as_that_entity(entity: Entity) -> None:
    """Whatever the values, the item parses as its own entity only, and reads back equal."""
    item = entity.to_wire()
    assert classify_item(peer, item) == ("entity", type(entity), None)
    assert decode_item(peer, item) == entity
