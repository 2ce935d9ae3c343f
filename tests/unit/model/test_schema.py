"""Tests of table declarations, their CreateTable request and drift checks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._model.drift import Drift, DriftReport
from lsiorm._model.indexes import (
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    Projection,
    ProjectionType,
)
from lsiorm._model.schema import Table
from lsiorm.errors import DeclarationError, ValidationError
from support.describe_table import describe, live_of
from support.models import forum_table


def reserved_table() -> Table:
    return Table.with_reserved_lsi_slots(
        "App",
        "PK",
        "SK",
        global_indexes=[GlobalIndex("GSI1", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK"))],
    )


def kinds(report: DriftReport) -> list[tuple[str, str | None]]:
    return [(d.kind, d.index) for d in report.drifts]


# --- declarations -------------------------------------------------------------------------


def test_str_keys_are_string_key_attributes() -> None:
    table = Table("Thread", "ForumName", KeyAttribute("Subject", "N"))
    assert table.partition_key == KeyAttribute("ForumName", "S")
    assert table.sort_key == KeyAttribute("Subject", "N")
    assert Table("Thread", "ForumName").sort_key is None


def test_table_defaults() -> None:
    table = Table("Thread", "ForumName", "Subject")
    assert table.local_indexes == ()
    assert table.global_indexes == ()
    assert table.billing_mode == "PAY_PER_REQUEST"
    assert table.type_attribute == "_type"
    assert table.collection_warning_gb == 8.0
    assert table.entities == {}
    assert not table.has_lsi
    assert forum_table().has_lsi


def test_entities_are_per_table() -> None:
    first, second = forum_table(), forum_table()
    first.entities["Thread"] = object
    assert second.entities == {}


def test_index_sequences_become_tuples() -> None:
    lsi = LocalIndex("ByDate", KeyAttribute("Date"))
    gsi = GlobalIndex("ByOwner", KeyAttribute("Owner"))
    table = Table("Thread", "ForumName", "Subject", local_indexes=[lsi], global_indexes=[gsi])
    assert table.local_indexes == (lsi,)
    assert table.global_indexes == (gsi,)


def test_projection_constructors() -> None:
    assert Projection.keys_only() == Projection("KEYS_ONLY", ())
    assert Projection.all() == Projection("ALL", ())
    assert Projection() == Projection.all()
    assert Projection.include("b", "a", "b") == Projection("INCLUDE", ("b", "a"))
    assert LocalIndex("ByDate", KeyAttribute("Date")).projection == Projection.all()
    assert GlobalIndex("ByOwner", KeyAttribute("Owner")).projection == Projection.all()


def test_reserved_lsi_slots_follow_adr_123() -> None:
    table = reserved_table()
    assert [i.name for i in table.local_indexes] == ["LSI1", "LSI2", "LSI3", "LSI4", "LSI5"]
    for n, index in enumerate(table.local_indexes, start=1):
        assert index.sort_key == KeyAttribute(f"LSI{n}SK", "S")
        expected = "ALL" if n % 2 == 1 else "KEYS_ONLY"
        assert index.projection.type == expected
    assert [g.name for g in table.global_indexes] == ["GSI1"]
    assert table.name == "App"
    assert table.sort_key == KeyAttribute("SK")


def test_reserved_lsi_slots_pass_billing_through() -> None:
    table = Table.with_reserved_lsi_slots(
        "App", "PK", "SK", billing_mode="PROVISIONED", read_capacity=5, write_capacity=6
    )
    assert table.billing_mode == "PROVISIONED"
    assert table.create_table_request()["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 6,
    }


def test_reserved_lsi_slots_refuse_more_local_indexes() -> None:
    with pytest.raises(DeclarationError) as info:
        Table.with_reserved_lsi_slots(
            "App", "PK", "SK", local_indexes=[LocalIndex("More", KeyAttribute("X"))]
        )
    assert info.value.rule == "lsi.max-five"


def test_index_lookup() -> None:
    table = reserved_table()
    assert table.index("LSI3") is table.local_indexes[2]
    assert table.index("GSI1") is table.global_indexes[0]


def test_unknown_index_lists_known_names() -> None:
    with pytest.raises(ValidationError) as info:
        forum_table().index("Nope")
    assert info.value.rule == "index.unknown"
    assert info.value.table == "Thread"
    assert "'Nope'" in str(info.value)
    assert "'LastPostIndex'" in str(info.value)


def test_key_attributes() -> None:
    table = Table(
        "Thread",
        "ForumName",
        "Subject",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("LastPostDateTime", "N"))],
        global_indexes=[
            GlobalIndex("ByUser", KeyAttribute("User"), KeyAttribute("LastPostDateTime", "N")),
            GlobalIndex("ByBlob", KeyAttribute("Blob", "B")),
        ],
    )
    assert table.key_attributes == {
        "ForumName": "S",
        "Subject": "S",
        "LastPostDateTime": "N",
        "User": "S",
        "Blob": "B",
    }


def test_index_key_attributes() -> None:
    table = reserved_table()
    assert table.index_key_attributes(None) == ("PK", "SK")
    assert table.index_key_attributes(table.index("LSI2")) == ("PK", "LSI2SK")
    assert table.index_key_attributes(table.index("GSI1")) == ("GSI1PK", "GSI1SK")
    hash_only = Table("T_1", "PK", global_indexes=[GlobalIndex("G_1", KeyAttribute("GPK"))])
    assert hash_only.index_key_attributes(None) == ("PK", None)
    assert hash_only.index_key_attributes(hash_only.index("G_1")) == ("GPK", None)


def test_projected_attributes() -> None:
    table = Table(
        "Thread",
        "ForumName",
        "Subject",
        local_indexes=[
            LocalIndex("ByDate", KeyAttribute("Date"), Projection.include("Replies", "Tags")),
            LocalIndex("ByViews", KeyAttribute("Views", "N"), Projection.keys_only()),
            LocalIndex("Everything", KeyAttribute("Other")),
        ],
        global_indexes=[GlobalIndex("ByUser", KeyAttribute("User"), None, Projection.keys_only())],
    )
    by_date = {"ForumName", "Subject", "Date", "Replies", "Tags"}
    assert table.projected_attributes(table.index("ByDate")) == frozenset(by_date)
    by_views = {"ForumName", "Subject", "Views"}
    assert table.projected_attributes(table.index("ByViews")) == frozenset(by_views)
    assert table.projected_attributes(table.index("Everything")) is None
    by_user = {"ForumName", "Subject", "User"}
    assert table.projected_attributes(table.index("ByUser")) == frozenset(by_user)


# --- create_table_request -----------------------------------------------------------------


def test_create_table_request_thread() -> None:
    assert forum_table().create_table_request() == {
        "TableName": "Thread",
        "KeySchema": [
            {"AttributeName": "ForumName", "KeyType": "HASH"},
            {"AttributeName": "Subject", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "ForumName", "AttributeType": "S"},
            {"AttributeName": "LastPostDateTime", "AttributeType": "S"},
            {"AttributeName": "Subject", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "LocalSecondaryIndexes": [
            {
                "IndexName": "LastPostIndex",
                "KeySchema": [
                    {"AttributeName": "ForumName", "KeyType": "HASH"},
                    {"AttributeName": "LastPostDateTime", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["Replies"]},
            }
        ],
    }


def test_create_table_request_thread_provisioned() -> None:
    request = forum_table(
        billing_mode="PROVISIONED", read_capacity=10, write_capacity=5
    ).create_table_request()
    assert request["BillingMode"] == "PROVISIONED"
    assert request["ProvisionedThroughput"] == {"ReadCapacityUnits": 10, "WriteCapacityUnits": 5}


def test_create_table_request_reserved_slots() -> None:
    def lsi(n: int, projection: str) -> dict[str, Any]:
        return {
            "IndexName": f"LSI{n}",
            "KeySchema": [
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": f"LSI{n}SK", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": projection},
        }

    assert reserved_table().create_table_request() == {
        "TableName": "App",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "GSI1PK", "AttributeType": "S"},
            {"AttributeName": "GSI1SK", "AttributeType": "S"},
            {"AttributeName": "LSI1SK", "AttributeType": "S"},
            {"AttributeName": "LSI2SK", "AttributeType": "S"},
            {"AttributeName": "LSI3SK", "AttributeType": "S"},
            {"AttributeName": "LSI4SK", "AttributeType": "S"},
            {"AttributeName": "LSI5SK", "AttributeType": "S"},
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "LocalSecondaryIndexes": [
            lsi(1, "ALL"),
            lsi(2, "KEYS_ONLY"),
            lsi(3, "ALL"),
            lsi(4, "KEYS_ONLY"),
            lsi(5, "ALL"),
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                    {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }


def test_create_table_request_provisioned_gsi_and_shared_attribute() -> None:
    table = Table(
        "Orders",
        KeyAttribute("Id", "B"),
        global_indexes=[
            GlobalIndex(
                "ByCustomer",
                KeyAttribute("Customer"),
                KeyAttribute("Total", "N"),
                Projection.keys_only(),
                read_capacity=3,
                write_capacity=4,
            ),
            GlobalIndex(
                "ByTotal",
                KeyAttribute("Total", "N"),
                None,
                Projection.include("Customer", "Note"),
                read_capacity=1,
                write_capacity=2,
            ),
        ],
        billing_mode="PROVISIONED",
        read_capacity=7,
        write_capacity=8,
    )
    assert table.create_table_request() == {
        "TableName": "Orders",
        "KeySchema": [{"AttributeName": "Id", "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": "Customer", "AttributeType": "S"},
            {"AttributeName": "Id", "AttributeType": "B"},
            {"AttributeName": "Total", "AttributeType": "N"},
        ],
        "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 7, "WriteCapacityUnits": 8},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ByCustomer",
                "KeySchema": [
                    {"AttributeName": "Customer", "KeyType": "HASH"},
                    {"AttributeName": "Total", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
            },
            {
                "IndexName": "ByTotal",
                "KeySchema": [{"AttributeName": "Total", "KeyType": "HASH"}],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": ["Customer", "Note"],
                },
                "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
            },
        ],
    }


def test_create_table_request_is_a_fresh_dict() -> None:
    table = forum_table()
    first = table.create_table_request()
    first["LocalSecondaryIndexes"][0]["Projection"]["NonKeyAttributes"].append("Tags")
    assert table.create_table_request()["LocalSecondaryIndexes"][0]["Projection"] == {
        "ProjectionType": "INCLUDE",
        "NonKeyAttributes": ["Replies"],
    }


# --- declaration rules --------------------------------------------------------------------


def lsis(count: int) -> list[LocalIndex]:
    return [LocalIndex(f"LSI{n}", KeyAttribute(f"LSI{n}SK")) for n in range(1, count + 1)]


def gsis(count: int) -> list[GlobalIndex]:
    return [GlobalIndex(f"GSI{n}", KeyAttribute(f"GSI{n}PK")) for n in range(1, count + 1)]


def raises_rule(rule: str, **kwargs: Any) -> DeclarationError:
    args = {"name": "Thread", "partition_key": "ForumName", "sort_key": "Subject", **kwargs}
    with pytest.raises(DeclarationError) as info:
        Table(**args)
    assert info.value.rule == rule
    assert f"[rule: {rule}]" in str(info.value)
    return info.value


def test_five_local_indexes_are_allowed() -> None:
    assert len(Table("Thread", "ForumName", "Subject", local_indexes=lsis(5)).local_indexes) == 5


def test_rule_lsi_max_five() -> None:
    error = raises_rule("lsi.max-five", local_indexes=lsis(6))
    assert "6 local secondary indexes" in str(error)
    assert "at most 5" in str(error)


def test_twenty_global_indexes_are_allowed() -> None:
    assert len(Table("Thread", "ForumName", global_indexes=gsis(20)).global_indexes) == 20


def test_rule_gsi_max_twenty() -> None:
    error = raises_rule("gsi.max-twenty", global_indexes=gsis(21))
    assert "21 global secondary indexes" in str(error)


def test_rule_lsi_needs_sort_key() -> None:
    raises_rule("lsi.needs-sort-key", sort_key=None, local_indexes=lsis(1))


@pytest.mark.parametrize("bad", ["BOOL", "SS", "NS", "BS", "L", "M", "NULL", "s"])
@pytest.mark.parametrize("where", ["partition", "sort", "lsi", "gsi-pk", "gsi-sk"])
def test_rule_key_scalar_type(bad: Any, where: str) -> None:
    attribute = KeyAttribute("Odd", bad)
    cases: dict[str, dict[str, Any]] = {
        "partition": {"partition_key": attribute},
        "sort": {"sort_key": attribute},
        "lsi": {"local_indexes": [LocalIndex("ByOdd", attribute)]},
        "gsi-pk": {"global_indexes": [GlobalIndex("ByOdd", attribute)]},
        "gsi-sk": {"global_indexes": [GlobalIndex("ByOdd", KeyAttribute("X"), attribute)]},
    }
    raises_rule("key.scalar-type", **cases[where])


def test_rule_projection_include_needs_attributes() -> None:
    raises_rule(
        "projection.include-needs-attributes",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"), Projection.include())],
    )
    raises_rule(
        "projection.include-needs-attributes",
        global_indexes=[GlobalIndex("ByUser", KeyAttribute("User"), None, Projection("INCLUDE"))],
    )


@pytest.mark.parametrize("type_", ["KEYS_ONLY", "ALL"])
def test_rule_projection_attributes_only_for_include(type_: Any) -> None:
    raises_rule(
        "projection.attributes-only-for-include",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"), Projection(type_, ("Replies",)))],
    )


def test_rule_projection_type() -> None:
    raises_rule(
        "projection.type",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"), Projection("SOME"))],  # type: ignore[arg-type]
    )


def test_rule_projection_max_attributes() -> None:
    many = Projection.include(*(f"a{n}" for n in range(60)))
    Table(
        "Thread",
        "ForumName",
        "Subject",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"), many)],
    )
    raises_rule(
        "projection.max-attributes",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"), many)],
        global_indexes=[GlobalIndex("ByUser", KeyAttribute("User"), None, many)],
    )


CONFLICTS: list[dict[str, Any]] = [
    {
        "partition_key": KeyAttribute("ForumName", "N"),
        "global_indexes": [
            GlobalIndex("ByForum", KeyAttribute("Subject"), KeyAttribute("ForumName"))
        ],
    },
    {
        "local_indexes": [LocalIndex("ByDate", KeyAttribute("Date", "N"))],
        "global_indexes": [GlobalIndex("ByDate2", KeyAttribute("Date"))],
    },
    {"global_indexes": [GlobalIndex("ByUser", KeyAttribute("Subject", "B"))]},
    {
        "global_indexes": [
            GlobalIndex("ByUser", KeyAttribute("User"), KeyAttribute("When", "N")),
            GlobalIndex("ByWhen", KeyAttribute("When", "S")),
        ]
    },
]


@pytest.mark.parametrize("kwargs", CONFLICTS)
def test_rule_attribute_conflicting_types(kwargs: dict[str, Any]) -> None:
    raises_rule("attribute.conflicting-types", **kwargs)


@pytest.mark.parametrize("name", ["ab", "a" * 256, "has space", "bad/name", "ümlaut", ""])
def test_rule_index_name(name: str) -> None:
    raises_rule("index.name", local_indexes=[LocalIndex(name, KeyAttribute("Date"))])
    raises_rule("index.name", global_indexes=[GlobalIndex(name, KeyAttribute("User"))])


@pytest.mark.parametrize("name", ["abc", "a" * 255, "A-z_0.9"])
def test_valid_names(name: str) -> None:
    table = Table(name, "PK", "SK", local_indexes=[LocalIndex(name, KeyAttribute("Date"))])
    assert table.index(name).name == name


@pytest.mark.parametrize("name", ["ab", "a" * 256, "has space", "bad/name", ""])
def test_rule_table_name(name: str) -> None:
    raises_rule("table.name", name=name)


def test_rule_index_duplicate_name() -> None:
    raises_rule(
        "index.duplicate-name",
        local_indexes=[LocalIndex("ByDate", KeyAttribute("Date"))],
        global_indexes=[GlobalIndex("ByDate", KeyAttribute("User"))],
    )
    raises_rule(
        "index.duplicate-name",
        global_indexes=[
            GlobalIndex("ByUser", KeyAttribute("User")),
            GlobalIndex("ByUser", KeyAttribute("Owner")),
        ],
    )


@pytest.mark.parametrize("key", ["Subject", "ForumName"])
def test_rule_lsi_sort_key_is_table_key(key: str) -> None:
    raises_rule("lsi.sort-key-is-table-key", local_indexes=[LocalIndex("ByKey", KeyAttribute(key))])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"billing_mode": "PROVISIONED"},
        {"billing_mode": "PROVISIONED", "read_capacity": 5},
        {"billing_mode": "PROVISIONED", "write_capacity": 5},
        {"billing_mode": "PROVISIONED", "read_capacity": 0, "write_capacity": 5},
        {"billing_mode": "PROVISIONED", "read_capacity": 5, "write_capacity": True},
        {
            "billing_mode": "PROVISIONED",
            "read_capacity": 5,
            "write_capacity": 5,
            "global_indexes": [GlobalIndex("ByUser", KeyAttribute("User"), read_capacity=1)],
        },
        {"read_capacity": 5},
        {"write_capacity": 5},
        {"global_indexes": [GlobalIndex("ByUser", KeyAttribute("User"), write_capacity=1)]},
    ],
)
def test_rule_provisioned_capacity(kwargs: dict[str, Any]) -> None:
    raises_rule("provisioned.capacity", **kwargs)


def test_rule_key_same_attribute() -> None:
    raises_rule("key.same-attribute", sort_key="ForumName")
    raises_rule(
        "key.same-attribute",
        global_indexes=[GlobalIndex("ByUser", KeyAttribute("User"), KeyAttribute("User"))],
    )


@pytest.mark.parametrize("name", ["", "x" * 256, "é" * 128])
def test_rule_key_name(name: str) -> None:
    raises_rule("key.name", sort_key=name)


def test_rule_table_billing_mode() -> None:
    raises_rule("table.billing-mode", billing_mode="ON_DEMAND")


def test_rule_table_type_attribute() -> None:
    raises_rule("table.type-attribute", type_attribute="")


@pytest.mark.parametrize("gb", [0.0, -1.0, 10.0, 12.0])
def test_rule_table_collection_warning(gb: float) -> None:
    raises_rule("table.collection-warning", collection_warning_gb=gb)


def test_message_is_a_plain_sentence() -> None:
    error = raises_rule("lsi.max-five", local_indexes=lsis(6))
    assert str(error) == (
        "Table 'Thread' declares 6 local secondary indexes; DynamoDB allows at most 5. "
        "[rule: lsi.max-five]"
    )


# --- check() ------------------------------------------------------------------------------


@pytest.mark.parametrize("table", [forum_table(), reserved_table()], ids=["thread", "adr123"])
def test_check_matches_own_request(table: Table) -> None:
    live = describe(table.create_table_request())
    report = table.check(live)
    assert report == DriftReport(table.name, ())
    assert report.ok
    assert str(report) == f"Table {table.name!r} matches its declaration."
    assert table.check(live["Table"]).ok


def test_check_ignores_index_and_attribute_order() -> None:
    table = Table(
        "Thread",
        "ForumName",
        "Subject",
        local_indexes=[
            LocalIndex("A_1", KeyAttribute("A"), Projection.include("x", "y", "z")),
            LocalIndex("B_1", KeyAttribute("B")),
        ],
        global_indexes=[
            GlobalIndex("C_1", KeyAttribute("C")),
            GlobalIndex("D_1", KeyAttribute("D")),
        ],
    )
    live = describe(table.create_table_request())["Table"]
    for field in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes", "AttributeDefinitions"):
        live[field].reverse()
    live["LocalSecondaryIndexes"][1]["Projection"]["NonKeyAttributes"].reverse()
    assert table.check(live).ok


def test_check_provisioned_without_summary() -> None:
    table = forum_table(billing_mode="PROVISIONED", read_capacity=1, write_capacity=1)
    request = table.create_table_request()
    assert "BillingModeSummary" not in describe(request)["Table"]
    assert table.check(describe(request)).ok
    assert table.check(describe(request, summary=True)).ok
    assert not forum_table().check(describe(request)).ok


def test_drift_key_schema() -> None:
    table = forum_table()
    live = live_of(table)
    live["KeySchema"][1]["AttributeName"] = "Title"
    report = table.check(live)
    assert kinds(report) == [("key-schema", None)]
    assert "'Title'" in report.drifts[0].message
    assert "recreated" in report.drifts[0].message
    del live["KeySchema"][1]
    assert kinds(table.check(live)) == [("key-schema", None)]


def test_drift_attribute_type() -> None:
    table = forum_table()
    live = live_of(table)
    for definition in live["AttributeDefinitions"]:
        if definition["AttributeName"] == "LastPostDateTime":
            definition["AttributeType"] = "N"
    report = table.check(live)
    assert kinds(report) == [("attribute-type", None)]
    message = report.drifts[0].message
    assert "'LastPostDateTime'" in message
    assert "number (N)" in message
    assert "string (S)" in message


def test_drift_lsi_missing() -> None:
    table = forum_table()
    live = live_of(table)
    del live["LocalSecondaryIndexes"]
    report = table.check(live)
    assert kinds(report) == [("lsi-missing", "LastPostIndex")]
    message = report.drifts[0].message
    assert "cannot be added to an existing table" in message
    assert "recreated" in message
    assert "migrated" in message


def test_drift_lsi_extra() -> None:
    table = forum_table()
    live = live_of(table)
    extra = copy.deepcopy(live["LocalSecondaryIndexes"][0])
    extra["IndexName"] = "RepliesIndex"
    extra["KeySchema"][1]["AttributeName"] = "Replies"
    live["LocalSecondaryIndexes"].append(extra)
    report = table.check(live)
    assert kinds(report) == [("lsi-extra", "RepliesIndex")]
    assert "not declared" in report.drifts[0].message


def test_drift_lsi_key_schema() -> None:
    table = forum_table()
    live = live_of(table)
    live["LocalSecondaryIndexes"][0]["KeySchema"][1]["AttributeName"] = "Replies"
    assert kinds(table.check(live)) == [("lsi-key-schema", "LastPostIndex")]


@pytest.mark.parametrize(
    "projection",
    [
        {"ProjectionType": "ALL"},
        {"ProjectionType": "KEYS_ONLY"},
        {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["Replies", "Tags"]},
        {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["Tags"]},
    ],
)
def test_drift_lsi_projection(projection: dict[str, Any]) -> None:
    table = forum_table()
    live = live_of(table)
    live["LocalSecondaryIndexes"][0]["Projection"] = projection
    report = table.check(live)
    assert kinds(report) == [("lsi-projection", "LastPostIndex")]
    message = report.drifts[0].message
    assert "cannot be changed in place" in message
    assert "table must be recreated" in message
    assert "INCLUDE (Replies)" in message


def with_gsi(**kwargs: Any) -> Table:
    return Table(
        "Thread",
        "ForumName",
        "Subject",
        global_indexes=[
            GlobalIndex(
                "ByUser", KeyAttribute("User"), KeyAttribute("When"), Projection.keys_only()
            )
        ],
        **kwargs,
    )


def test_drift_gsi_missing() -> None:
    table = with_gsi()
    live = live_of(table)
    live["GlobalSecondaryIndexes"] = []
    report = table.check(live)
    assert kinds(report) == [("gsi-missing", "ByUser")]
    assert "UpdateTable" in report.drifts[0].message


def test_drift_gsi_extra() -> None:
    table = forum_table()
    live = live_of(table)
    live["GlobalSecondaryIndexes"] = live_of(with_gsi())["GlobalSecondaryIndexes"]
    report = table.check(live)
    assert kinds(report) == [("gsi-extra", "ByUser")]


def test_drift_gsi_key_schema() -> None:
    table = with_gsi()
    live = live_of(table)
    del live["GlobalSecondaryIndexes"][0]["KeySchema"][1]
    report = table.check(live)
    assert kinds(report) == [("gsi-key-schema", "ByUser")]
    assert "no sort key" in report.drifts[0].message


def test_drift_gsi_projection() -> None:
    table = with_gsi()
    live = live_of(table)
    live["GlobalSecondaryIndexes"][0]["Projection"] = {"ProjectionType": "ALL"}
    report = table.check(live)
    assert kinds(report) == [("gsi-projection", "ByUser")]
    message = report.drifts[0].message
    assert "cannot be changed in place" in message
    assert "deleted and created again" in message


def test_drift_billing_mode() -> None:
    table = forum_table()
    live = live_of(table)
    live["BillingModeSummary"] = {"BillingMode": "PROVISIONED"}
    assert kinds(table.check(live)) == [("billing-mode", None)]
    del live["BillingModeSummary"]
    report = table.check(live)
    assert kinds(report) == [("billing-mode", None)]
    assert "PROVISIONED" in report.drifts[0].message


def test_drift_report_lists_every_drift() -> None:
    table = with_gsi()
    live = live_of(table)
    live["GlobalSecondaryIndexes"] = []
    live["BillingModeSummary"] = {"BillingMode": "PROVISIONED"}
    report = table.check({"Table": live})
    assert not report.ok
    assert report.table == "Thread"
    assert kinds(report) == [("gsi-missing", "ByUser"), ("billing-mode", None)]
    assert str(report).splitlines() == [d.message for d in report.drifts]
    assert all(isinstance(d, Drift) for d in report.drifts)


# --- properties ---------------------------------------------------------------------------

KEY_NAMES = [f"k{n}" for n in range(10)]
NON_KEY_NAMES = [f"v{n}" for n in range(6)]
index_names = st.text("abcXYZ019_.-", min_size=3, max_size=8)


@st.composite
def projections(draw: st.DrawFn) -> Projection:
    kinds_: list[ProjectionType] = ["KEYS_ONLY", "INCLUDE", "ALL"]
    kind = draw(st.sampled_from(kinds_))
    if kind == "INCLUDE":
        names = draw(st.lists(st.sampled_from(NON_KEY_NAMES), min_size=1, max_size=4))
        return Projection.include(*names)
    return Projection(kind)


@st.composite
def tables(draw: st.DrawFn) -> Table:
    scalar: list[KeyType] = ["S", "N", "B"]
    types = draw(st.fixed_dictionaries({n: st.sampled_from(scalar) for n in KEY_NAMES}))

    def key(name: str) -> KeyAttribute:
        return KeyAttribute(name, types[name])

    pk = draw(st.sampled_from(KEY_NAMES))
    lsi_count = draw(st.integers(0, 5))
    sk = draw(
        st.sampled_from([n for n in KEY_NAMES if n != pk] + ([None] if not lsi_count else []))
    )
    gsi_count = draw(st.integers(0, 3))
    names = draw(
        st.lists(
            index_names, min_size=lsi_count + gsi_count, max_size=lsi_count + gsi_count, unique=True
        )
    )
    others = [n for n in KEY_NAMES if n not in (pk, sk)]
    local = [
        LocalIndex(names[i], key(draw(st.sampled_from(others))), draw(projections()))
        for i in range(lsi_count)
    ]
    provisioned = draw(st.booleans())
    capacity = st.integers(1, 100) if provisioned else st.none()
    global_ = []
    for i in range(lsi_count, lsi_count + gsi_count):
        gpk = draw(st.sampled_from(KEY_NAMES))
        gsk = draw(st.sampled_from([None, *(n for n in KEY_NAMES if n != gpk)]))
        global_.append(
            GlobalIndex(
                names[i],
                key(gpk),
                key(gsk) if gsk is not None else None,
                draw(projections()),
                draw(capacity),
                draw(capacity),
            )
        )
    return Table(
        "Random",
        key(pk),
        key(sk) if sk is not None else None,
        local_indexes=local,
        global_indexes=global_,
        billing_mode="PROVISIONED" if provisioned else "PAY_PER_REQUEST",
        read_capacity=draw(capacity),
        write_capacity=draw(capacity),
    )


@given(tables())
def test_any_table_matches_its_own_request(table: Table) -> None:
    request = table.create_table_request()
    assert table.check(describe(request)).ok
    names = [d["AttributeName"] for d in request["AttributeDefinitions"]]
    assert names == sorted(set(names))
    used = {k["AttributeName"] for k in request["KeySchema"]}
    for field in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
        for index in request.get(field, []):
            used |= {k["AttributeName"] for k in index["KeySchema"]}
    assert set(names) == used
    assert {d["AttributeName"]: d["AttributeType"] for d in request["AttributeDefinitions"]} == (
        table.key_attributes
    )
    assert ("LocalSecondaryIndexes" in request) == table.has_lsi
    assert ("GlobalSecondaryIndexes" in request) == bool(table.global_indexes)
    assert ("ProvisionedThroughput" in request) == (table.billing_mode == "PROVISIONED")


@given(tables(), st.data())
def test_dropping_any_index_is_reported(table: Table, data: st.DataObject) -> None:
    indexes: list[LocalIndex | GlobalIndex] = [*table.local_indexes, *table.global_indexes]
    if not indexes:
        return
    dropped = data.draw(st.sampled_from(indexes))
    live = live_of(table)
    field = "LocalSecondaryIndexes" if dropped in table.local_indexes else "GlobalSecondaryIndexes"
    live[field] = [i for i in live[field] if i["IndexName"] != dropped.name]
    kind = "lsi-missing" if field == "LocalSecondaryIndexes" else "gsi-missing"
    assert kinds(table.check(live)) == [(kind, dropped.name)]


@given(tables())
def test_projected_attributes_hold_every_key(table: Table) -> None:
    table_keys = {k for k in table.index_key_attributes(None) if k is not None}
    indexes: list[LocalIndex | GlobalIndex] = [*table.local_indexes, *table.global_indexes]
    for index in indexes:
        projected = table.projected_attributes(index)
        if index.projection.type == "ALL":
            assert projected is None
            continue
        assert projected is not None
        index_keys = {k for k in table.index_key_attributes(index) if k is not None}
        assert projected == table_keys | index_keys | set(index.projection.attributes)
