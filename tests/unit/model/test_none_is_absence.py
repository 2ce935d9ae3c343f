"""None is absence in the item: never a NULL in a field, at any depth; sized as written, read
back as None (and so is a NULL an older lsiorm wrote)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from lsiorm import (
    Entity,
    Table,
    ValidationError,
    decode_item,
    dry_run_put,
    dry_run_update,
    item_size,
)
from lsiorm._model.item_encoding import wire_item
from lsiorm._requests.update_plan import plan_update, update_spec
from support.models import DEFAULTS_TABLE, WithDefaults, declare_optional_doc
from support.nested import Contact, Phone, contacts, declare_people, null_form, reject_null

optional_text = st.none() | st.text(min_size=1, max_size=8)


@settings(max_examples=60)
@given(
    status=optional_text,
    rev=st.none() | st.integers(min_value=0, max_value=99999),
    hits=st.none() | st.integers(min_value=-5, max_value=5),
    note=optional_text,
    tags=st.none() | st.lists(st.text(max_size=3), max_size=3),
)
def test_no_top_level_null_and_sizes_agree_with_the_capacity_model(
    status: str | None, rev: int | None, hits: int | None, note: str | None, tags: Any
) -> None:
    _table, doc = declare_optional_doc()
    entity = doc(did="x", status=status, rev=rev, hits=hits, note=note, tags=tags)
    wire = wire_item(entity)
    assert not any("NULL" in av for av in wire.values())
    assert {k for k, v in entity.model_dump().items() if v is None}.isdisjoint(wire)
    assert doc.__lsiorm__.table.entities["Doc"] is doc
    # The capacity model sizes the very item that is written.
    estimate = dry_run_put(entity, assume_new=True)
    assert estimate.table_units == max(1, -(-item_size(wire) // 1024))
    cleared = dry_run_update(entity, set={"note": None, "hits": None})
    assert cleared.table_units >= 1


@given(
    count=st.none() | st.integers(-3, 3),
    labels=st.none() | st.lists(st.text(max_size=2), max_size=2),
    note=st.none() | st.text(max_size=2),
    must=st.none() | st.text(max_size=2),
)
def test_none_reads_back_as_none_whatever_the_default(
    count: int | None, labels: list[str] | None, note: str | None, must: str | None
) -> None:
    entity = WithDefaults(wid="a", count=count, labels=labels, note=note, must=must)
    assert decode_item(DEFAULTS_TABLE, wire_item(entity)) == entity


# -- None inside nested models ----------------------------------------------------------------


PEOPLE, PERSON = declare_people("people_unit")


@settings(max_examples=80)
@given(contact=contacts, backup=st.none() | contacts)
def test_none_in_a_nested_model_is_absence_and_both_forms_read_back(
    contact: Contact, backup: Contact | None
) -> None:
    entity = PERSON(pid="p", contact=contact, backup=backup)
    wire = wire_item(entity)
    reject_null(wire)
    assert decode_item(PEOPLE, wire) == entity
    assert decode_item(PEOPLE, null_form(entity)) == entity  # as an older lsiorm wrote it
    # The capacity model sizes the very item that is written.
    assert dry_run_put(entity, assume_new=True).table_units == max(1, -(-item_size(wire) // 1024))


def test_set_none_removes_a_field_of_a_nested_model_and_keeps_null_in_maps_and_lists() -> None:
    meta = PERSON.__lsiorm__
    plan = plan_update(
        meta,
        {"pid": "p"},
        update_spec(
            set={
                "contact.phone": None,
                "contact.address.phone.ext": None,
                "backup": Contact(phone=Phone(number=None, ext=None)),
            }
        ),
    )
    actions = {(a.op, a.path): a.value for a in plan.actions if not a.derived}
    assert actions == {
        ("remove", ("contact", "phone")): None,
        ("remove", ("contact", "address", "phone", "ext")): None,
        ("set", ("backup",)): {
            "M": {"phone": {"M": {}}, "phones": {"L": []}, "by_kind": {"M": {}}}
        },
    }
    with pytest.raises(ValidationError) as caught:  # None where the model does not allow it
        plan_update(meta, {"pid": "p"}, update_spec(set={"contact.address.city": None}))
    assert caught.value.rule == "field.invalid"


class Leaf(BaseModel):
    v: int | None


@dataclass
class Pair:
    left: int | None
    right: str | None = "r"


class Shape(TypedDict):
    size: int | None


class Tree(BaseModel):
    label: str | None
    children: list[Tree] = []


NESTING = Table("nesting_unit", "pk", "sk")


class Holder(Entity, table=NESTING, keys={"pk": "H#{hid}", "sk": "H"}):
    hid: str
    pair: Pair
    shape: Shape
    tree: Tree
    leaves: dict[str, Leaf] = Field(default_factory=dict)
    grid: list[list[Leaf]] = Field(default_factory=list)
    either: Leaf | int = 0
    fixed: tuple[Leaf, int] | None = None


def test_absent_none_reads_back_in_dataclasses_typed_dicts_and_models_inside_themselves() -> None:
    holder = Holder(
        hid="h",
        pair=Pair(None, None),
        shape={"size": None},
        tree=Tree(label=None, children=[Tree(label=None, children=[Tree(label="x")])]),
        leaves={"a": Leaf(v=None)},
        grid=[[Leaf(v=None)], []],
        either=Leaf(v=None),
        fixed=(Leaf(v=None), 3),
    )
    wire = wire_item(holder)
    reject_null(wire)
    assert decode_item(NESTING, wire) == holder
    assert decode_item(NESTING, null_form(holder)) == holder
