"""Multi-attribute GSI keys: declaration rules, entity binding, items, CreateTable and drift."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import Entity, GlobalIndex, KeyAttribute, LocalIndex, Projection, Table
from lsiorm._model.capacity import estimate_write, index_entry
from lsiorm._model.entity import decode_item
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import build_item, wire_item
from lsiorm._model.multikey import NativeTextCodec, binds_index, key_field, key_wire
from lsiorm.errors import DeclarationError, ValidationError
from support.describe_table import live_of
from support.models import scheduled_keys

UTC = timezone.utc


def by_tenant(**options: Any) -> GlobalIndex:
    return GlobalIndex(
        "ByTenant",
        partition_key=["tenant", "region"],
        sort_key=[KeyAttribute("prio", "N"), "due"],
        **options,
    )


def tasks_table(name: str = "Tasks", *indexes: GlobalIndex) -> Table:
    return Table(name, "PK", "SK", global_indexes=list(indexes) or [by_tenant()])


class Color(str, Enum):
    RED = "red"
    BLUE = "blue"


def declare_task(table: Table) -> type[Entity]:
    class Task(Entity, table=table, keys=scheduled_keys("TASK")):
        task_id: str
        tenant: str
        region: str | None = None
        priority: int
        due_at: datetime
        note: str = ""

    return Task


# -- the declaration ------------------------------------------------------------------------


def test_keys_given_as_lists_are_multi_attribute_and_names_are_string_attributes() -> None:
    gsi = by_tenant()
    assert gsi.multi_attribute
    assert gsi.partition_attributes == (KeyAttribute("tenant"), KeyAttribute("region"))
    assert gsi.sort_attributes == (KeyAttribute("prio", "N"), KeyAttribute("due"))
    single = GlobalIndex("ByOne", "GSI1PK", "GSI1SK")
    assert not single.multi_attribute
    assert single.partition_key == KeyAttribute("GSI1PK")
    one_each = GlobalIndex("ByOneList", ["tenant"])
    assert one_each.multi_attribute
    assert one_each.sort_attributes == ()
    assert GlobalIndex("ByOneList", ["tenant"]) == one_each  # a value, with equality


@pytest.mark.parametrize(
    ("index", "rule"),
    [
        (GlobalIndex("Five", [f"p{n}" for n in range(5)], ["s"]), "table.gsi-key-attributes"),
        (GlobalIndex("Five", ["p"], [f"s{n}" for n in range(5)]), "table.gsi-key-attributes"),
        (GlobalIndex("None", [], ["s"]), "table.gsi-key-attributes"),
        (GlobalIndex("Twice", ["a", "a"], ["s"]), "key.same-attribute"),
        (GlobalIndex("Twice", ["a", "b"], ["c", "b"]), "key.same-attribute"),
        (GlobalIndex("Bad", ["a", 3], ["s"]), "key.name"),  # type: ignore[list-item]
        (GlobalIndex("Bad", ["a", KeyAttribute("b", "X")]), "key.scalar-type"),  # type: ignore[arg-type]
        (GlobalIndex("Shared", ["PK", "b"], ["s"]), "table.multi-key-shared-attribute"),
        (GlobalIndex("Shared", ["a"], ["LSK"]), "table.multi-key-shared-attribute"),
        (GlobalIndex("Shared", ["a"], ["GPK"]), "table.multi-key-shared-attribute"),
        (GlobalIndex("Shared", ["_type"], ["a"]), "table.multi-key-shared-attribute"),
    ],
)
def test_table_refuses_what_dynamodb_refuses_in_a_multi_attribute_key(
    index: GlobalIndex, rule: str
) -> None:
    classic = GlobalIndex("Classic", KeyAttribute("GPK"), KeyAttribute("GSK"))
    with pytest.raises(DeclarationError) as raised:
        Table(
            "Tab",
            "PK",
            "SK",
            local_indexes=[LocalIndex("Local", KeyAttribute("LSK"))],
            global_indexes=[classic, index],
        )
    assert raised.value.rule == rule


def test_four_and_four_attributes_are_the_most_and_types_must_agree_across_indexes() -> None:
    Table("Tab", "PK", global_indexes=[GlobalIndex("Max", [*"abcd"], [*"efgh"])])
    with pytest.raises(DeclarationError) as raised:
        Table(
            "Tab",
            "PK",
            global_indexes=[
                GlobalIndex("One", ["a"], [KeyAttribute("n", "N")]),
                GlobalIndex("Two", ["a"], [KeyAttribute("n", "S")]),
            ],
        )
    assert raised.value.rule == "attribute.conflicting-types"
    # Two multi-attribute indexes may share attributes.
    Table(
        "Tab",
        "PK",
        global_indexes=[GlobalIndex("One", ["a"], ["b"]), GlobalIndex("Two", ["a", "b"])],
    )


def test_a_local_index_takes_one_sort_key_attribute() -> None:
    with pytest.raises(DeclarationError) as raised:
        Table(
            "Tab",
            "PK",
            "SK",
            local_indexes=[LocalIndex("Local", [KeyAttribute("a"), KeyAttribute("b")])],  # type: ignore[arg-type]
        )
    assert raised.value.rule == "lsi.multi-attribute-key"


def test_create_table_names_every_key_attribute_in_order() -> None:
    table = tasks_table()
    request = table.create_table_request()
    assert request["GlobalSecondaryIndexes"] == [
        {
            "IndexName": "ByTenant",
            "KeySchema": [
                {"AttributeName": "tenant", "KeyType": "HASH"},
                {"AttributeName": "region", "KeyType": "HASH"},
                {"AttributeName": "prio", "KeyType": "RANGE"},
                {"AttributeName": "due", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ]
    assert request["AttributeDefinitions"] == [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "due", "AttributeType": "S"},
        {"AttributeName": "prio", "AttributeType": "N"},
        {"AttributeName": "region", "AttributeType": "S"},
        {"AttributeName": "tenant", "AttributeType": "S"},
    ]
    assert table.index_key_names(table.index("ByTenant")) == ("tenant", "region", "prio", "due")
    with pytest.raises(ValueError, match="multi-attribute"):
        table.index_key_attributes(table.index("ByTenant"))


def _index_with_keys(keys: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ByTenant",
                "KeySchema": [{"AttributeName": n, "KeyType": t} for n, t in keys],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    }


def test_drift_compares_every_attribute_of_a_multi_attribute_key_in_order() -> None:
    table = tasks_table()
    assert table.check(live_of(table)).ok
    swapped = live_of(
        table,
        **_index_with_keys(
            [("region", "HASH"), ("tenant", "HASH"), ("prio", "RANGE"), ("due", "RANGE")]
        ),
    )
    (drift,) = table.check(swapped).drifts
    assert drift.kind == "gsi-key-schema"
    assert drift.index == "ByTenant"
    assert drift.message == (
        "The global secondary index 'ByTenant' of table 'Tasks' has key schema partition key "
        "('region', 'tenant') and sort key ('prio', 'due') but declares partition key "
        "('tenant', 'region') and sort key ('prio', 'due'); the index must be deleted and "
        "created again (UpdateTable can do both)."
    )
    fewer = live_of(table, **_index_with_keys([("tenant", "HASH"), ("prio", "RANGE")]))
    assert [d.kind for d in table.check(fewer).drifts] == ["gsi-key-schema"]
    retyped = live_of(
        table,
        AttributeDefinitions=[
            {**d, "AttributeType": "S"} if d["AttributeName"] == "prio" else d
            for d in table.create_table_request()["AttributeDefinitions"]
        ],
    )
    assert [d.kind for d in table.check(retyped).drifts] == ["attribute-type"]


# -- binding entities -----------------------------------------------------------------------


def test_a_field_stored_under_the_attribute_is_the_key_and_others_are_copied() -> None:
    Task = declare_task(tasks_table())
    meta = meta_of(Task)
    assert meta.stored_keys == {"region": "region", "tenant": "tenant"}
    assert set(meta.templates) == {"PK", "SK", "prio", "due"}
    assert [key_field(meta, a) for a in ("tenant", "region", "prio", "due")] == [
        "tenant",
        "region",
        "priority",
        "due_at",
    ]
    assert binds_index(meta, meta.table.global_indexes[0])
    assert meta.key_fields >= {"tenant", "region", "priority", "due_at"}
    task = Task(
        task_id="t1",
        tenant="acme",
        region="eu",
        priority=3,
        due_at=datetime(2024, 5, 1, tzinfo=UTC),
    )
    assert wire_item(task) == {
        "task_id": {"S": "t1"},
        "tenant": {"S": "acme"},
        "region": {"S": "eu"},
        "priority": {"N": "3"},
        "due_at": {"S": "2024-05-01T00:00:00.000000Z"},
        "note": {"S": ""},
        "PK": {"S": "TASK#t1"},
        "SK": {"S": "TASK"},
        "prio": {"N": "3"},
        "due": {"S": "2024-05-01T00:00:00.000000Z"},
        "_type": {"S": "Task"},
    }
    assert decode_item(meta.table, wire_item(task)) == task


def test_a_missing_key_attribute_leaves_the_item_out_of_the_index() -> None:
    Task = declare_task(tasks_table())
    table = meta_of(Task).table
    gsi = table.index("ByTenant")
    task = Task(task_id="t1", tenant="acme", priority=3, due_at=datetime(2024, 5, 1, tzinfo=UTC))
    item = wire_item(task)
    assert "region" not in item
    assert index_entry(table, gsi, item) is None
    assert estimate_write(table, None, item).per_index == {}
    placed = wire_item(task.model_copy(update={"region": "eu"}))
    entry = index_entry(table, gsi, placed)
    assert entry is not None
    assert {"tenant", "region", "prio", "due"} <= set(entry)
    assert estimate_write(table, None, placed).per_index == {"ByTenant": 1.0}
    # Moving the item in the index (a key attribute changes) deletes one entry and puts one.
    moved = wire_item(task.model_copy(update={"region": "us"}))
    assert estimate_write(table, placed, moved).per_index == {"ByTenant": 2.0}
    renoted = wire_item(task.model_copy(update={"region": "eu", "note": "x"}))
    assert estimate_write(table, placed, renoted).per_index == {"ByTenant": 1.0}


@pytest.mark.parametrize(
    ("annotation", "attr", "ok"),
    [
        (str, "S", True),
        (Color, "S", True),
        (Literal["a", "b"], "S", True),
        (date, "S", True),
        (datetime, "S", True),
        (uuid.UUID, "S", True),
        (int, "N", True),
        (float, "N", True),
        (Decimal, "N", True),
        (bytes, "B", True),
        (int, "S", False),
        (str, "N", False),
        (bool, "N", False),
        (bool, "S", False),
        (bytes, "S", False),
        (Literal[1, 2], "N", False),
        (list[str], "S", False),
    ],
)
@pytest.mark.parametrize("stored", [True, False])
def test_a_bound_field_must_store_the_attribute_type(
    annotation: Any, attr: str, ok: bool, stored: bool
) -> None:
    table = Table("Tab", "PK", global_indexes=[GlobalIndex("ByK", [KeyAttribute("k", attr)])])
    keys = {"PK": "X#{x}"} | ({} if stored else {"k": "{value}"})
    fields = {"x": (str, ...), "value": (annotation, Field(alias="k") if stored else ...)}

    def declare() -> None:
        namespace: dict[str, Any] = {"__annotations__": {n: t for n, (t, _) in fields.items()}}
        namespace.update({n: d for n, (_, d) in fields.items() if d is not ...})
        type("Bound", (Entity,), namespace, table=table, keys=keys)

    if ok:
        declare()
        return
    with pytest.raises(DeclarationError) as raised:
        declare()
    assert raised.value.rule == "key.attribute-type"


@pytest.mark.parametrize(
    ("template", "rule"),
    [
        ("K#{value}", "template.direct-key"),
        ("{value}#{x}", "template.direct-key"),
        ("{value:05d}", "template.direct-key"),
        ("{nothing}", "template.unknown-field"),
    ],
)
def test_a_copy_is_a_single_field_with_no_literal_or_format(template: str, rule: str) -> None:
    table = Table("Tab", "PK", global_indexes=[GlobalIndex("ByK", [KeyAttribute("k", "N")])])
    with pytest.raises(DeclarationError) as raised:

        class Bound(Entity, table=table, keys={"PK": "X#{x}", "k": template}):
            x: str
            value: int

    assert raised.value.rule == rule


def test_a_field_that_is_the_key_takes_no_template_and_backs_one_attribute_per_index() -> None:
    table = Table("Tab", "PK", global_indexes=[GlobalIndex("ByK", ["a"], ["b"])])
    with pytest.raises(DeclarationError) as raised:

        class Twice(Entity, table=table, keys={"PK": "X#{x}", "a": "{a}"}):
            x: str
            a: str

    assert raised.value.rule == "template.key-attribute-is-field"
    with pytest.raises(DeclarationError) as raised:

        class Both(Entity, table=table, keys={"PK": "X#{x}", "a": "{y}", "b": "{y}"}):
            x: str
            y: str

    assert raised.value.rule == "template.repeated-field"


def test_types_sharing_an_index_that_does_not_project_the_type_attribute_are_refused() -> None:
    keys_only = Table(
        "Tab", "PK", global_indexes=[GlobalIndex("ByK", ["a"], ["b"], Projection.keys_only())]
    )

    class One(Entity, table=keys_only, keys={"PK": "ONE#{x}"}):
        x: str
        a: str
        b: str

    with pytest.raises(DeclarationError) as raised:

        class Two(Entity, table=keys_only, keys={"PK": "TWO#{x}"}):
            x: str
            a: str
            b: str

    assert raised.value.rule == "template.namespace-overlap"

    # Binding only part of the index keeps a type out of it; projecting the type attribute
    # lets a filter keep the types apart.
    class Three(Entity, table=keys_only, keys={"PK": "THREE#{x}"}):
        x: str
        a: str

    typed = Table(
        "Tab2",
        "PK",
        global_indexes=[GlobalIndex("ByK", ["a"], ["b"], Projection.include("_type"))],
    )
    for prefix in ("ONE", "TWO"):
        type(
            f"Typed{prefix}",
            (Entity,),
            {"__annotations__": {"x": str, "a": str, "b": str}},
            table=typed,
            keys={"PK": prefix + "#{x}"},
        )


def test_key_checks_run_on_fields_that_are_keys_and_on_copies() -> None:
    table = Table("Tab", "PK", global_indexes=[GlobalIndex("ByK", ["a"], ["b"])])

    class Row(Entity, table=table, keys={"PK": "X#{x}", "b": "{name}"}):
        x: str
        a: str | None = None
        name: str | None = None

    with pytest.raises(ValidationError) as raised:
        build_item(Row(x="1", a=""))
    assert raised.value.rule == "key.empty"
    with pytest.raises(ValidationError) as raised:
        wire_item(Row(x="1", name=""))
    assert raised.value.rule == "key.empty"
    with pytest.raises(ValidationError) as raised:
        wire_item(Row(x="1", a="é" * 1025))
    assert raised.value.rule == "key.partition-max-2048-bytes"
    with pytest.raises(ValidationError) as raised:
        wire_item(Row(x="1", name="x" * 1025))
    assert raised.value.rule == "key.sort-max-1024-bytes"
    assert wire_item(Row(x="1", a="a", name="n"))["b"] == {"S": "n"}


def test_text_is_copied_as_it_is_and_read_back() -> None:
    table = Table("Tab", "PK", global_indexes=[GlobalIndex("ByK", ["a", "c"], ["b"])])

    class Row(Entity, table=table, keys={"PK": "X#{x}", "a": "{text}", "b": "{color}", "c": "{u}"}):
        x: str
        text: str
        color: Color
        u: uuid.UUID

    row = Row(x="1", text="a\x00b\x01#c", color=Color.RED, u=uuid.UUID(int=7))
    item = wire_item(row)
    assert item["a"] == {"S": "a\x00b\x01#c"}
    assert item["b"] == {"S": "red"}
    assert item["c"] == {"S": "00000000-0000-0000-0000-000000000007"}
    meta = meta_of(Row)
    assert key_wire(meta, "a", "p\x00") == {"S": "p\x00"}
    assert key_wire(meta, "b", Color.BLUE) == {"S": "blue"}
    assert {a: meta.templates[a].parse(item[a]["S"]) for a in "abc"} == {
        "a": {"text": row.text},
        "b": {"color": Color.RED},
        "c": {"u": row.u},
    }


@given(st.lists(st.text(), min_size=2, max_size=6))
def test_native_text_keeps_values_and_their_order(values: list[str]) -> None:
    codec = NativeTextCodec(field_name="t")
    encoded = [codec.encode(v) for v in values]
    assert [codec.decode(e) for e in encoded] == values
    assert sorted(range(len(values)), key=lambda n: encoded[n]) == sorted(
        range(len(values)), key=lambda n: values[n]
    )
    assert codec.validate_prefix(values[0]) == values[0]


def test_the_key_attributes_of_one_role_are_limited_together() -> None:
    table = Table(
        "Tab",
        "PK",
        global_indexes=[
            GlobalIndex("ByK", ["a", "b"], ["c", KeyAttribute("n", "N"), KeyAttribute("d", "B")])
        ],
    )

    class Row(Entity, table=table, keys={"PK": "X#{x}", "d": "{blob}"}):
        x: str
        a: str
        b: str | None = None
        c: str = "c"
        n: int = 1
        blob: bytes = b"b"

    # 2048 bytes of partition attributes, 1024 of sort attributes (a number "1" counts 2).
    wire_item(Row(x="1", a="a" * 2047, b="b", c="c" * 1021))
    with pytest.raises(ValidationError) as raised:
        wire_item(Row(x="1", a="a" * 2048, b="b"))
    assert raised.value.rule == "key.partition-max-2048-bytes"
    with pytest.raises(ValidationError) as raised:
        wire_item(Row(x="1", a="a", b="b", c="c" * 1022))
    assert raised.value.rule == "key.sort-max-1024-bytes"
    # Out of the index (b is None): no limit of the index applies.
    wire_item(Row(x="1", a="a" * 2048, c="c" * 1022))
