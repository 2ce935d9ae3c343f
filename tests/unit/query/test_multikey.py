"""Queries of multi-attribute GSIs, without I/O: exact requests, index choice, every refusal."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from pydantic import Field

from lsiorm import Entity, GlobalIndex, KeyAttribute, Projection, Table
from lsiorm._conditions import begins_with, between, ge, gt, le, lt
from lsiorm._io.drivers import SyncDriver
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import wire_item
from lsiorm._ops.pipeline import Context
from lsiorm._ops.reads import all as all_items
from lsiorm._ops.retry import RetryPolicy
from lsiorm._query.decode import decode, missing_fields
from lsiorm._query.values import Query, query, scan
from lsiorm.errors import QueryPlanError, ValidationError
from support.fakes import ScriptedClient
from support.models import TaskStatus, declare_tasks, tasks_table

TASKS = tasks_table("MultiKeyTasks")
Task, Bug, Note = declare_tasks(TASKS)
DUE = datetime(2024, 5, 1, tzinfo=timezone.utc)
DUE_TEXT = "2024-05-01T00:00:00.000000Z"


def s(text: str) -> dict[str, str]:
    return {"S": text}


def n(text: str) -> dict[str, str]:
    return {"N": text}


def names(count: int, *attrs: str) -> dict[str, str]:
    assert len(attrs) == count
    return {f"#n{k}": a for k, a in enumerate(attrs)}


def refused(q: Query[Any]) -> QueryPlanError:
    """Plan and run the query on a client that fails any request; return the refusal."""
    client = ScriptedClient([])
    with pytest.raises(QueryPlanError) as raised:
        SyncDriver(client).run(all_items(Context(RetryPolicy()), q))
    assert client.calls == []
    return raised.value


# -- compiled requests -------------------------------------------------------------------------


def test_equality_on_every_partition_attribute_reads_the_partition() -> None:
    assert query(Task).where(tenant="acme", region="eu").compile() == {
        "TableName": "MultiKeyTasks",
        "IndexName": "ByTenant",
        "KeyConditionExpression": "#n0 = :v0 AND #n1 = :v1",
        # Bug items share the index, and no key text keeps them apart: the type attribute does.
        "FilterExpression": "#n2 = :v2",
        "ExpressionAttributeNames": names(3, "tenant", "region", "_type"),
        "ExpressionAttributeValues": {":v0": s("acme"), ":v1": s("eu"), ":v2": s("Task")},
    }


def test_sort_attributes_take_equalities_from_the_left_then_one_range() -> None:
    q = query(Task, Bug).where(tenant="acme", region="eu", priority=2, due_at=gt(DUE))
    assert q.compile() == {
        "TableName": "MultiKeyTasks",
        "IndexName": "ByTenant",
        "KeyConditionExpression": "#n0 = :v0 AND #n1 = :v1 AND #n2 = :v2 AND #n3 > :v3",
        "ExpressionAttributeNames": names(4, "tenant", "region", "prio", "due"),
        "ExpressionAttributeValues": {
            ":v0": s("acme"),
            ":v1": s("eu"),
            ":v2": n("2"),
            ":v3": s(DUE_TEXT),
        },
    }
    plan = q.plan()
    assert plan.collection == ("one Query for Task+Bug: the same key condition",)
    assert plan.merge_attributes == ("prio", "due", "title")
    assert plan.key_use == (
        "tenant (partition, Task.tenant): equality",
        "region (partition, Task.region): equality",
        "prio (sort 1, Task.priority): equality",
        "due (sort 2, Task.due_at): >, the last sort attribute used",
        "title (sort 3, Task.title): not used (no condition)",
    )
    text = str(q.explain())
    assert "ByTenant (GSI with a multi-attribute key: tenant + region, sorted by prio + due" in text
    assert "key use     tenant (partition, Task.tenant): equality" in text


@pytest.mark.parametrize(
    ("conditions", "key", "values"),
    [
        (
            {"priority": between(1, 3)},
            "#n2 BETWEEN :v2 AND :v3",
            [n("1"), n("3")],
        ),
        (
            {"priority": 1, "due_at": DUE, "title": begins_with("Fix")},
            "#n2 = :v2 AND #n3 = :v3 AND begins_with(#n4, :v4)",
            [n("1"), s(DUE_TEXT), s("Fix")],
        ),
        (
            {"priority": 1, "due_at": DUE, "title": le("m")},
            "#n2 = :v2 AND #n3 = :v3 AND #n4 <= :v4",
            [n("1"), s(DUE_TEXT), s("m")],
        ),
        ({"priority": [ge(1), le(1)]}, "#n2 = :v2", [n("1")]),
        ({"priority": [gt(1), lt(9), gt(0)]}, None, None),
    ],
)
def test_the_last_sort_attribute_used_takes_one_condition(
    conditions: dict[str, Any], key: str | None, values: list[dict[str, str]] | None
) -> None:
    q = query(Task, Bug).where(tenant="acme", region="eu")
    for name, ops in conditions.items():
        for op in ops if isinstance(ops, list) else [ops]:
            q = q.where(**{name: op})
    params = q.compile()
    if key is None:  # two exclusive ends: closed on the next ints, with no filter
        assert (
            params["KeyConditionExpression"]
            == "#n0 = :v0 AND #n1 = :v1 AND #n2 BETWEEN :v2 AND :v3"
        )
        assert "FilterExpression" not in params
        assert [params["ExpressionAttributeValues"][f":v{k}"] for k in range(2, 4)] == [
            n("2"),
            n("8"),
        ]
        assert q.plan().residual_filters == ()
        return
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 = :v1 AND " + key
    assert values is not None
    got = [params["ExpressionAttributeValues"][f":v{k}"] for k in range(2, 2 + len(values))]
    assert got == values
    assert "FilterExpression" not in params


def test_a_field_stored_as_the_key_compares_its_own_values() -> None:
    q = query(Task).where(owner="ann", status=TaskStatus.DONE, score=gt(Decimal("2.5"))).partial()
    assert q.compile() == {
        "TableName": "MultiKeyTasks",
        "IndexName": "ByOwner",
        "KeyConditionExpression": "#n0 = :v0 AND #n1 = :v1 AND #n2 > :v2",
        "ExpressionAttributeNames": names(3, "owner", "status", "score"),
        "ExpressionAttributeValues": {":v0": s("ann"), ":v1": s("done"), ":v2": n("2.5")},
    }
    # task_id is parsed from the table key, which every index entry holds.
    assert q.plan().unavailable == ("tenant", "region", "priority", "due_at")


@pytest.mark.parametrize(
    "conditions",
    [
        {"priority": [1, 2]},
        {"tenant": "other"},
        {"region": ""},
        {"priority": 1, "due_at": DUE, "title": le("")},
        {"priority": 1, "due_at": DUE, "title": ""},
        {"priority": between(3, 1)},
        {"priority": [gt(1), lt(1)]},
        {"priority": [ge(1), lt(1)]},
    ],
)
def test_conditions_no_item_meets_send_no_request(conditions: dict[str, Any]) -> None:
    q = query(Task).where(tenant="acme", region="eu")
    for name, ops in conditions.items():
        for op in ops if isinstance(ops, list) else [ops]:
            q = q.where(**{name: op})
    plan = q.plan()
    assert plan.empty is not None
    assert plan.requests == ()


def test_a_range_from_the_empty_string_bounds_nothing() -> None:
    q = query(Task).where(tenant="acme", region="eu", priority=1, due_at=DUE, title=gt(""))
    assert (
        q.compile()["KeyConditionExpression"]
        == "#n0 = :v0 AND #n1 = :v1 AND #n2 = :v2 AND #n3 = :v3"
    )
    assert q.plan().key_use[-1] == (
        "title (sort 3, Task.title): its condition bounds no stored value, so none is sent"
    )


# -- refusals, before any request ---------------------------------------------------------------


def test_a_range_before_an_equality_is_refused() -> None:
    error = refused(query(Task).where(tenant="acme", region="eu", priority=gt(1), due_at=DUE))
    assert error.rule == "query.multi-key-order"
    assert "due_at is sort attribute 2 of ByTenant (due) and follows priority (prio)" in str(error)


def test_a_gap_in_the_sort_attributes_is_refused() -> None:
    error = refused(query(Task).where(tenant="acme", region="eu", title="x"))
    assert error.rule == "query.multi-key-order"
    assert "needs an equality on priority (prio) before it" in str(error)


def test_a_missing_partition_attribute_is_refused() -> None:
    error = refused(query(Task).where(tenant="acme", priority=1))
    assert error.rule == "query.no-index"
    assert "ByTenant: its partition key attributes (tenant, region) each need an equality" in str(
        error
    )
    error = refused(query(Task).where(tenant="acme", region=ge("a")))
    assert "region has none" in str(error)


def test_begins_with_needs_text() -> None:
    assert (
        refused(
            query(Task).where(tenant="acme", region="eu", priority=1, due_at=begins_with("2024"))
        ).rule
        == "query.begins-with-type"
    )


def test_out_of_order_conditions_are_filtered_when_the_query_allows_it() -> None:
    q = (
        query(Task)
        .where(tenant="acme", region="eu", priority=gt(1), due_at=DUE)
        .allow_filter_fallback()
    )
    params = q.compile()
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 = :v1 AND #n2 > :v2"
    # due is a copy of due_at, which has its own attribute to filter on.
    assert params["FilterExpression"] == "(#n3 = :v3) AND #n4 = :v4"
    assert params["ExpressionAttributeNames"]["#n3"] == "due_at"
    assert params["ExpressionAttributeValues"][":v3"] == s(DUE_TEXT)
    assert len(q.plan().fallback_filters) == 1
    (chosen,) = [c for c in q.plan().candidates if c.chosen]
    assert (
        chosen.reason
        == "chosen: absorbs 3 conditions (tenant, region, priority); due_at out of key order"
    )


def test_an_optional_sort_field_makes_the_index_sparse() -> None:
    # Task.score may be None: such tasks are not in ByOwner, so it answers only when asked to.
    error = refused(query(Task).where(owner="ann", status=TaskStatus.OPEN))
    assert error.rule == "query.sparse-index"
    wide = query(Task).where(owner="ann", score=ge(0), status=TaskStatus.OPEN).partial()
    assert wide.plan().index_name == "ByOwner"
    forced = query(Task).where(owner="ann").using("ByOwner").partial()
    assert forced.plan().sparse == ("Task items whose score is None (they are not in ByOwner)",)


def test_an_open_end_on_a_copy_the_index_does_not_project_closes_on_the_key() -> None:
    table = tasks_table("MultiKeyInclude", projection=Projection.include("_type"))
    task, _, _ = declare_tasks(table)
    q = query(task).where(tenant="a", region="b").where(priority=gt(1)).where(priority=lt(5))
    both = q.partial().compile()
    assert both["KeyConditionExpression"].endswith("#n2 BETWEEN :v2 AND :v3")
    assert [both["ExpressionAttributeValues"][k] for k in (":v2", ":v3")] == [n("2"), n("4")]
    assert both["ExpressionAttributeNames"][both["FilterExpression"].split(" ")[0]] == "_type"
    # A datetime's key text closes on its neighbour too ("created in May": ge, then lt).
    may = query(task).where(tenant="a", region="b", priority=1)
    may = may.where(due_at=ge(DUE)).where(due_at=lt(DUE + timedelta(days=31)))
    params = may.partial().compile()
    assert params["KeyConditionExpression"].endswith("#n3 BETWEEN :v3 AND :v4")
    assert params["ExpressionAttributeValues"][":v4"]["S"].endswith("Y\U0010ffff")
    # One bound needs no filter of its own (the type filter keeps Bug items out).
    one = query(task).where(tenant="a", region="b", priority=gt(1)).partial().compile()
    assert one["FilterExpression"] == "#n3 = :v3"
    assert one["ExpressionAttributeNames"]["#n3"] == "_type"


# -- index choice -------------------------------------------------------------------------------


def test_a_multi_attribute_index_competes_with_templates_on_what_it_absorbs() -> None:
    table = Table(
        "MultiKeyChoice",
        "PK",
        global_indexes=[
            GlobalIndex("ByText", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK")),
            GlobalIndex("ByAttrs", ["tenant", "region"], [KeyAttribute("prio", "N")]),
        ],
    )

    class Job(
        Entity,
        table=table,
        keys={
            "PK": "J#{job}",
            "GSI1PK": "T#{tenant}",
            "GSI1SK": "{priority:05d}",
            "prio": "{priority}",
        },
    ):
        job: str
        tenant: str
        region: str
        priority: int

    both = query(Job).where(tenant="a", region="b", priority=gt(3)).plan()
    assert both.index_name == "ByAttrs"
    assert [(c.label, c.score) for c in both.candidates] == [
        ("table", None),
        ("ByText", 2),
        ("ByAttrs", 3),
    ]
    assert query(Job).where(tenant="a", priority=gt(3)).plan().index_name == "ByText"
    # A tie goes to the index declared first.
    assert query(Job).where(tenant="a", region="b").allow_filter_fallback().plan().index_name == (
        "ByAttrs"
    )


# -- reading several requests -------------------------------------------------------------------


def test_requests_of_several_types_merge_in_key_order() -> None:
    table = Table(
        "MultiKeyMerge",
        "PK",
        global_indexes=[GlobalIndex("ByAttrs", ["tenant"], [KeyAttribute("prio", "N"), "title"])],
    )

    class Left(Entity, table=table, keys={"PK": "L#{n:03d}", "prio": "{priority}"}):
        n: int
        tenant: str
        priority: int
        title: str
        extra: int = 0

    class Right(Entity, table=table, keys={"PK": "R#{n:03d}", "prio": "{priority}"}):
        n: int
        tenant: str
        priority: int
        title: str
        extra: int = Field(default=0, alias="Extra")

    # One filter text per type (the field is stored under other names), so one request each.
    q = query(Left, Right).where(tenant="t").filter(extra=0)
    plan = q.plan()
    assert len(plan.requests) == 2
    lefts = [
        Left(n=k, tenant="t", priority=p, title=t) for k, (p, t) in enumerate([(1, "b"), (2, "a")])
    ]
    rights = [
        Right(n=k, tenant="t", priority=p, title=t) for k, (p, t) in enumerate([(1, "a"), (1, "c")])
    ]
    client = ScriptedClient(
        [
            {"Items": [wire_item(e) for e in lefts], "Count": 2, "ScannedCount": 2},
            {"Items": [wire_item(e) for e in rights], "Count": 2, "ScannedCount": 2},
        ]
    )
    got = SyncDriver(client).run(all_items(Context(RetryPolicy()), q))
    assert [(type(e).__name__, e.priority, e.title) for e in got] == [
        ("Right", 1, "a"),
        ("Left", 1, "b"),
        ("Right", 1, "c"),
        ("Left", 2, "a"),
    ]


def test_exclusive_ends_of_text_close_on_their_neighbours() -> None:
    # title is stored as its key attribute: no filter could drop an excluded end.
    q = query(Task, Bug).where(tenant="a", region="b", priority=1, due_at=DUE)
    params = q.where(title=gt("m")).where(title=lt("q\x00")).compile()
    assert params["KeyConditionExpression"].endswith("#n4 BETWEEN :v4 AND :v5")
    assert [params["ExpressionAttributeValues"][k] for k in (":v4", ":v5")] == [
        s("m\x00"),
        s("q"),
    ]
    assert "FilterExpression" not in params
    error = refused(q.where(title=ge("m")).where(title=lt("q")))
    assert error.rule == "query.inexact-range"
    assert "DynamoDB does not filter on 'title', a key attribute of the index" in str(error)


def test_a_filter_on_a_key_attribute_of_the_index_is_refused() -> None:
    error = refused(query(Task).where(tenant="a", region="b").filter(title="x"))
    assert error.rule == "query.filter-on-key"
    assert "ByTenant: a filter would read title, key attributes of the index" in str(error)
    fallback = query(Task).where(tenant="a", region="b", priority=gt(1), title="x")
    assert refused(fallback.allow_filter_fallback()).rule == "query.filter-on-key"
    # A copy's field has its own attribute, which a filter may read.
    copied = query(Task).where(tenant="a", region="b", title="x").filter(priority=1)
    assert refused(copied).rule == "query.multi-key-order"
    assert (
        "#n2 = :v2"
        in query(Task)
        .where(tenant="a", region="b")
        .filter(priority=1)
        .compile()["FilterExpression"]
    )


def test_a_keys_only_index_decodes_without_the_type_attribute() -> None:
    table = Table(
        "MultiKeyKeysOnly",
        "PK",
        global_indexes=[
            GlobalIndex("ByK", ["a"], [KeyAttribute("n", "N")], Projection.keys_only())
        ],
    )

    class Row(Entity, table=table, keys={"PK": "R#{x}", "n": "{num}"}):
        x: str
        a: str
        num: int
        other: str = "o"

    plan = query(Row).where(a="q", num=ge(5)).partial().plan()
    entry = {k: v for k, v in wire_item(Row(x="1", a="q", num=5)).items() if k in ("PK", "a", "n")}
    got = decode(plan, entry, (Row,))
    assert got is not None
    assert (got.x, got.a, got.num) == ("1", "q", 5)
    assert missing_fields(got) == {"other"}


def test_a_scan_of_a_multi_attribute_index_keeps_its_types() -> None:
    assert scan(Task).using("ByTenant").compile_all() == [
        {
            "TableName": "MultiKeyTasks",
            "IndexName": "ByTenant",
            "FilterExpression": "#n0 = :v0",
            "ExpressionAttributeNames": {"#n0": "_type"},
            "ExpressionAttributeValues": {":v0": s("Task")},
        }
    ]


def test_an_update_checks_a_field_stored_as_a_key() -> None:
    from lsiorm._requests.update_plan import plan_update, update_spec

    meta = meta_of(Task)
    with pytest.raises(ValidationError) as raised:
        plan_update(meta, {"task_id": "t1"}, update_spec({"region": ""}))
    assert raised.value.rule == "key.empty"
    # A copy is rewritten with its field.
    plan = plan_update(meta, {"task_id": "t1"}, update_spec({"priority": 4}))
    assert [(a.op, a.path, a.value) for a in plan.actions] == [
        ("set", ("priority",), n("4")),
        ("set", ("prio",), n("4")),
    ]
