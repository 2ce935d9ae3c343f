"""Multi-attribute GSI keys on the engines: types sharing an index, every kind of write, updates,
the drift check, the key audit and the backfill; and what DynamoDB Local refuses, lsiorm
refuses first."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from lsiorm import (
    AsyncSession,
    GlobalIndex,
    KeyAttribute,
    Put,
    Session,
    Table,
    Update,
    begins_with,
    between,
    ge,
    gt,
    lt,
    query,
)
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import DeclarationError, LsiormError, QueryPlanError
from support.models import TaskStatus, declare_tasks, tasks_table
from support.tables import session_with

START = datetime(2024, 5, 1, tzinfo=timezone.utc)


@pytest.fixture
def world(endpoint_url: str, table_name: str) -> Iterator[tuple[Session, Any, Any, Any]]:
    table = tasks_table(table_name)
    task, bug, note = declare_tasks(table)
    with session_with(endpoint_url, table) as session:
        yield session, task, bug, note


def seed(session: Session, task: Any, bug: Any, note: Any) -> tuple[list[Any], list[Any]]:
    """Tasks by put and in a transaction, bugs by batch write, notes that no index holds."""
    titles = ["Fix login", "Fix logout", "Add export", "Review", "Fix build", "Plan"]
    tasks = [
        task(
            task_id=f"t{n}",
            tenant="acme",
            region="eu" if n % 4 else "us",
            priority=n % 3,
            due_at=START + timedelta(days=n % 5),
            title=titles[n % len(titles)],
            owner="ann" if n % 2 else None,
            status=TaskStatus.DONE if n % 3 == 0 else TaskStatus.OPEN,
            score=Decimal(n) / 4 if n % 5 else None,
        )
        for n in range(12)
    ]
    for t in tasks[:9]:
        session.put(t)
    session.transact_write([Put(t) for t in tasks[9:]])
    bugs = [
        bug(
            task_id=f"b{n}",
            tenant="acme",
            region="eu",
            priority=n % 3,
            due_at=START + timedelta(days=n % 5),
            title=titles[(n + 1) % len(titles)],
        )
        for n in range(7)
    ]
    session.batch_write(bugs)
    session.put(note(task_id="n1", tenant="acme", region="eu", title="Fix login"))
    return tasks, bugs


def order(e: Any) -> tuple[Any, ...]:
    return (e.priority, e.due_at, e.title)


def test_types_share_a_multi_attribute_index(world: tuple[Session, Any, Any, Any]) -> None:
    session, task, bug, note = world
    tasks, bugs = seed(session, task, bug, note)
    eu_tasks = [t for t in tasks if t.region == "eu"]

    def ids(found: list[Any]) -> list[str]:
        return [e.task_id for e in found]

    base = query(task).where(tenant="acme", region="eu")
    got = session.all(base)
    assert sorted(got, key=order) == got  # in key order
    assert sorted(ids(got)) == sorted(ids(eu_tasks))
    assert session.count(base) == len(eu_tasks)
    assert sorted(ids(session.all(query(bug).where(tenant="acme", region="eu")))) == sorted(
        ids(bugs)
    )
    both = session.all(query(task, bug).where(tenant="acme", region="eu").descending())
    assert [order(e) for e in both] == sorted((order(e) for e in both), reverse=True)
    assert len(both) == len(eu_tasks) + len(bugs)

    # Equalities from the left, then one range; begins_with on the last text attribute.
    ranged = base.where(priority=1, due_at=between(START, START + timedelta(days=2)))
    expected = [
        t for t in eu_tasks if t.priority == 1 and START <= t.due_at <= START + timedelta(days=2)
    ]
    assert ids(session.all(ranged)) == ids(sorted(expected, key=order))
    fixes = query(task, bug).where(
        tenant="acme", region="eu", priority=1, due_at=START + timedelta(days=1)
    )
    fixes = fixes.where(title=begins_with("Fix"))
    expected = [
        e
        for e in [*eu_tasks, *bugs]
        if e.priority == 1 and e.due_at == START + timedelta(days=1) and e.title.startswith("Fix")
    ]
    assert sorted(ids(session.all(fixes))) == sorted(ids(expected))

    # Pages and cursors.
    pages: list[str] = []
    cursor = None
    for _ in range(20):
        page = session.page(base.page_size(2).after(cursor))
        pages.extend(ids(page.items))
        cursor = page.cursor
        if cursor is None:
            break
    assert pages == ids(got)

    # A field stored as the key (owner, status, score): Task only; hydrated from the table.
    owned = query(task).where(owner="ann", status=TaskStatus.OPEN, score=ge(Decimal(1)))
    expected = [
        t
        for t in tasks
        if t.owner == "ann" and t.status is TaskStatus.OPEN and (t.score or -1) >= 1
    ]
    assert ids(session.all(owned.hydrate())) == ids(
        sorted(expected, key=lambda t: (t.status.value, t.score))
    )


def test_updates_keep_copies_and_keys_consistent(world: tuple[Session, Any, Any, Any]) -> None:
    session, task, bug, note = world
    tasks, _ = seed(session, task, bug, note)
    first = next(t for t in tasks if t.region == "eu" and t.priority == 1)
    at = query(task).where(tenant="acme", region="eu", priority=7)
    assert session.all(at) == []
    moved = session.update(first, set={"priority": 7})
    assert session.all(at) == [moved]
    assert first.task_id not in [
        t.task_id for t in session.all(query(task).where(tenant="acme", region="eu", priority=1))
    ]
    # An update that changes a stored key attribute moves the item between partitions.
    session.update(moved, set={"region": "apac"})
    assert [t.task_id for t in session.all(query(task).where(tenant="acme", region="apac"))] == [
        first.task_id
    ]
    # Through a transaction too; and a key field set to None leaves the index.
    session.transact_write([Update(task, {"task_id": first.task_id}, set={"due_at": START})])
    again = session.all(query(task).where(tenant="acme", region="apac", priority=7, due_at=START))
    assert [t.task_id for t in again] == [first.task_id]
    owner = next(t for t in tasks if t.owner == "ann" and t.score is not None)
    session.update(owner, set={"score": None})
    forced = query(task).where(owner="ann").using("ByOwner").partial()
    assert owner.task_id not in [t.task_id for t in session.all(forced)]
    report = session.audit_keys(task, segments=1)
    assert report.clean, str(report)


def test_audit_and_backfill_repair_copies(world: tuple[Session, Any, Any, Any]) -> None:
    session, task, bug, note = world
    tasks, _ = seed(session, task, bug, note)
    table = meta_of(task).table
    name = table.name

    def raw_update(pk: str, sk: str, expression: str, values: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {
            "TableName": name,
            "Key": {"PK": {"S": pk}, "SK": {"S": sk}},
            "UpdateExpression": expression,
        }
        if values:
            params["ExpressionAttributeValues"] = values
        session.call("UpdateItem", params)

    stale, missing = tasks[1], tasks[2]
    raw_update(f"TASK#{stale.task_id}", "TASK", "SET prio = :p", {":p": {"N": "99"}})
    raw_update(f"TASK#{missing.task_id}", "TASK", "REMOVE due")
    raw_update("NOTE#n1", "NOTE", "SET prio = :p, due = :d", {":p": {"N": "1"}, ":d": {"S": "x"}})
    report = session.audit_keys(table, segments=2)
    tallies = report.entities["Task"].attributes
    assert (tallies["prio"].stale, tallies["due"].missing) == (1, 1)
    notes = report.entities["Note"].attributes
    assert (notes["prio"].extra, notes["due"].extra) == (1, 1)
    # The stale copy misplaces the task: the index finds it under the wrong priority.
    wrong = query(task).where(tenant="acme", region=stale.region, priority=99)
    assert [t.task_id for t in session.all(wrong)] == [stale.task_id]
    done = session.backfill(task, segments=2)
    assert done.rewritten == 2
    session.backfill(note, segments=1)
    assert session.audit_keys(table, segments=2).clean
    assert session.all(wrong) == []
    right = query(task).where(tenant="acme", region=stale.region, priority=stale.priority)
    assert stale.task_id in [t.task_id for t in session.all(right)]


def test_the_drift_check_compares_live_multi_attribute_keys(
    session: Session, table_name: str
) -> None:
    table = tasks_table(table_name)
    session.create_table(table)
    try:
        assert session.check_table(table).ok
        swapped = Table(
            table_name,
            "PK",
            "SK",
            global_indexes=[
                GlobalIndex(
                    "ByTenant", ["region", "tenant"], [KeyAttribute("prio", "N"), "due", "title"]
                ),
                table.index("ByOwner"),  # type: ignore[list-item]
            ],
        )
        (drift,) = session.check_table(swapped).drifts
        assert (drift.kind, drift.index) == ("gsi-key-schema", "ByTenant")
        assert "partition key ('tenant', 'region')" in drift.message
    finally:
        session.delete_table(table)


async def test_an_async_session_creates_writes_queries_and_audits(
    endpoint_url: str, table_name: str
) -> None:
    table = tasks_table(table_name)
    task, _, _ = declare_tasks(table)
    async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        await session.create_table(table)
        try:
            assert (await session.check_table(table)).ok
            tasks = [
                task(
                    task_id=f"t{n}",
                    tenant="acme",
                    region="eu",
                    priority=n % 2,
                    due_at=START + timedelta(days=n),
                    title=f"T{n}",
                )
                for n in range(5)
            ]
            await session.batch_write(tasks[:3])
            for t in tasks[3:]:
                await session.put(t)
            q = query(task).where(tenant="acme", region="eu", priority=1, due_at=gt(START))
            assert [t.task_id for t in await session.all(q)] == ["t1", "t3"]
            moved = await session.update(tasks[1], set={"priority": 0})
            assert moved.priority == 0
            assert [t.task_id for t in await session.all(q)] == ["t3"]
            assert (await session.audit_keys(table, segments=2)).clean
        finally:
            await session.delete_table(table)


# -- what DynamoDB Local refuses, lsiorm refuses before sending ------------------------------------


def _request(name: str, hash_keys: list[str], range_keys: list[str]) -> dict[str, Any]:
    attributes = dict.fromkeys(["PK", *hash_keys, *range_keys], "S")
    return {
        "TableName": name,
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": a, "AttributeType": t} for a, t in attributes.items()
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "Multi",
                "KeySchema": [{"AttributeName": a, "KeyType": "HASH"} for a in hash_keys]
                + [{"AttributeName": a, "KeyType": "RANGE"} for a in range_keys],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }


@pytest.mark.parametrize(
    ("hash_keys", "range_keys", "rule"),
    [
        (["a", "b", "c", "d", "e"], ["s"], "table.gsi-key-attributes"),
        (["a"], ["s", "t", "u", "v", "w"], "table.gsi-key-attributes"),
        (["a", "b"], ["b"], "key.same-attribute"),
    ],
)
def test_declarations_dynamodb_refuses_are_refused_first(
    backend: str,
    session: Session,
    table_name: str,
    hash_keys: list[str],
    range_keys: list[str],
    rule: str,
) -> None:
    with pytest.raises(DeclarationError) as raised:
        Table(table_name, "PK", global_indexes=[GlobalIndex("Multi", hash_keys, range_keys)])
    assert raised.value.rule == rule
    if backend == "moto":
        pytest.skip(
            "moto (5.x) creates a GSI with more than four HASH or RANGE attributes, or with one "
            "attribute as both, without the ValidationException DynamoDB gives"
        )
    with pytest.raises(LsiormError, match="key"):
        session.call("CreateTable", _request(table_name, hash_keys, range_keys))


@pytest.mark.parametrize(
    ("where", "rule"),
    [
        ({"tenant": "acme"}, "query.no-index"),
        ({"tenant": "acme", "region": "eu", "due_at": START}, "query.multi-key-order"),
        (
            {"tenant": "acme", "region": "eu", "priority": gt(1), "due_at": START},
            "query.multi-key-order",
        ),
        (
            {"tenant": "acme", "region": "eu", "priority": lt(1), "due_at": gt(START)},
            "query.multi-key-order",
        ),
    ],
)
def test_queries_dynamodb_refuses_are_refused_first(
    world: tuple[Session, Any, Any, Any], where: dict[str, Any], rule: str
) -> None:
    """Both engines refuse these key conditions (moto checks the order rules too)."""
    session, task, _, _ = world
    q = query(task).where(**where)
    with pytest.raises(QueryPlanError) as raised:
        session.all(q)
    assert raised.value.rule == rule
    # The same conditions, all in the key condition, as DynamoDB would get them.
    table = meta_of(task).table
    attrs = {"tenant": "tenant", "region": "region", "priority": "prio", "due_at": "due"}
    parts, values = [], {}
    for n, (name, op) in enumerate(where.items()):
        value = getattr(op, "value", op)
        wire = {"N": str(value)} if name == "priority" else {"S": str(value)}
        if isinstance(value, datetime):
            wire = {"S": value.strftime("%Y-%m-%dT%H:%M:%S.000000Z")}
        symbol = getattr(op, "op", "=")
        parts.append(f"{attrs[name]} {symbol} :v{n}")
        values[f":v{n}"] = wire
    with pytest.raises(LsiormError):
        session.call(
            "Query",
            {
                "TableName": table.name,
                "IndexName": "ByTenant",
                "KeyConditionExpression": " AND ".join(parts),
                "ExpressionAttributeValues": values,
            },
        )


def test_every_order_of_conditions_is_answered_or_refused(
    world: tuple[Session, Any, Any, Any],
) -> None:
    """Each subset of the sort attributes, with an equality or a range on each."""
    session, task, bug, note = world
    tasks, _ = seed(session, task, bug, note)
    eu = [t for t in tasks if t.region == "eu"]
    sample = eu[3]
    conditions = {
        "priority": (sample.priority, ge(sample.priority)),
        "due_at": (sample.due_at, lt(sample.due_at + timedelta(days=1))),
        "title": (sample.title, begins_with(sample.title[:3])),
    }
    checks = {
        "priority": (
            lambda t: t.priority == sample.priority,
            lambda t: t.priority >= sample.priority,
        ),
        "due_at": (
            lambda t: t.due_at == sample.due_at,
            lambda t: t.due_at < sample.due_at + timedelta(days=1),
        ),
        "title": (
            lambda t: t.title == sample.title,
            lambda t: t.title.startswith(sample.title[:3]),
        ),
    }
    fields = list(conditions)
    answered = refused = 0
    for picks in itertools.product([None, 0, 1], repeat=3):
        q = query(task).where(tenant="acme", region="eu")
        for name, pick in zip(fields, picks, strict=True):
            if pick is not None:
                q = q.where(**{name: conditions[name][pick]})
        used = [(f, p) for f, p in zip(fields, picks, strict=True) if p is not None]
        # In order: a prefix of the sort attributes, each an equality but the last.
        prefix = [p for p in picks]
        ok = all(p is not None for p in prefix[: len(used)]) and all(p == 0 for _, p in used[:-1])
        if not ok:
            with pytest.raises(QueryPlanError) as raised:
                session.all(q)
            assert raised.value.rule == "query.multi-key-order"
            refused += 1
            continue
        expected = [t for t in eu if all(checks[f][p](t) for f, p in used)]
        assert [t.task_id for t in session.all(q)] == [
            t.task_id for t in sorted(expected, key=order)
        ]
        answered += 1
    assert (answered, refused) == (1 + 2 + 2 + 2, 27 - 7)
