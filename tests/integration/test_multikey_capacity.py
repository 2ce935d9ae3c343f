"""The capacity model on multi-attribute GSIs, against DynamoDB Local's ConsumedCapacity.

Random writes of Task, Bug and Note items (puts new and over old items, updates of copied and
stored key fields, deletes, batch writes, one-action transactions) move items into, within and
out of two multi-attribute indexes. Each request is priced by the capacity model from snapshots
of the table before and after it, and every figure, the table's and each index's, must equal
what DynamoDB Local reported; dry runs must price puts and updates as they are written. Queries
of both indexes are priced from the items they read.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import boto3
import pytest

from lsiorm import (
    ConsumedCapacity,
    Delete,
    Put,
    Session,
    Table,
    Update,
    WriteEstimate,
    decode_item,
    dry_run_put,
    dry_run_update,
    estimate_request,
    estimate_write,
    item_size,
    query,
)
from lsiorm._model.capacity import write_units
from support.hooks import Recorder
from support.jobs import session_on
from support.models import TaskStatus, declare_tasks, tasks_table

START = datetime(2024, 5, 1, tzinfo=timezone.utc)
OPERATIONS = 160

Key = tuple[str, str]
Wire = dict[str, Any]


def key_of(item: dict[str, Any]) -> Key:
    return (item["PK"]["S"], item["SK"]["S"])


def consumed(response: dict[str, Any]) -> ConsumedCapacity:
    raw = response["ConsumedCapacity"]
    (entry,) = raw if isinstance(raw, list) else [raw]
    return ConsumedCapacity.from_consumed(entry)


@pytest.fixture
def tables(
    capacity_endpoint_url: str, table_name: str
) -> Iterator[tuple[Session, Recorder, Any, Table]]:
    table = tasks_table(table_name)
    recorder = Recorder()
    with session_on(capacity_endpoint_url, recorder, consumed_capacity=True) as session:
        session.create_table(table)
        raw = boto3.client("dynamodb", endpoint_url=capacity_endpoint_url, region_name="us-east-1")
        try:
            yield session, recorder, raw, table
        finally:
            session.delete_table(table, wait=False)


class Workload:
    """Random public writes of the three types; each returns a function of the session."""

    def __init__(self, table: Any, rng: random.Random) -> None:
        self.table = table
        self.task, self.bug, self.note = declare_tasks(table)
        self.rng = rng
        self.state: dict[Key, Wire] = {}
        self.dry: list[WriteEstimate] = []

    def title(self) -> str:
        return self.rng.choice("abc") * self.rng.choice([1, 5, 120, 300])

    def task_fields(self) -> dict[str, Any]:
        rng = self.rng
        return {
            "tenant": rng.choice(["acme", "beta"]),
            "region": rng.choice(["eu", "us"]),
            "priority": rng.choice([-3, 0, 1, 12345678901234]),
            "due_at": START + timedelta(hours=rng.randint(0, 30)),
            "title": self.title(),
            "owner": rng.choice([None, "ann", "bob" * 40]),
            "status": rng.choice(list(TaskStatus)),
            "score": rng.choice([None, Decimal("0.5"), Decimal(10) ** 20]),
        }

    def stored(self, prefix: str) -> list[Key]:
        return sorted(k for k in self.state if k[0].startswith(prefix))

    def put(self) -> Callable[[Session], Any]:
        rng = self.rng
        kind = rng.choice(["TASK", "TASK", "BUG", "NOTE"])
        n = rng.randint(0, 9)
        if kind == "TASK":
            entity = self.task(task_id=f"{n}", **self.task_fields())
        elif kind == "BUG":
            fields = self.task_fields()
            keep = ("tenant", "region", "priority", "due_at", "title")
            entity = self.bug(task_id=f"{n}", **{k: fields[k] for k in keep})
        else:
            entity = self.note(task_id=f"{n}", tenant="acme", region="eu", title=self.title())
        old = self.state.get(key_of(entity.to_wire()))
        self.dry.append(dry_run_put(entity, old=old, assume_new=old is None))
        return lambda s: s.put(entity)

    def update(self) -> Callable[[Session], Any]:
        tasks = self.stored("TASK#")
        if not tasks:
            return self.put()
        pk, _ = self.rng.choice(tasks)
        fields = self.task_fields()
        changed = self.rng.sample(sorted(fields), self.rng.randint(1, 3))
        changes = {name: fields[name] for name in changed}
        key = {"task_id": pk.removeprefix("TASK#")}
        stored = decode_item(self.table, self.state[(pk, "TASK")])
        self.dry.append(dry_run_update(stored, set=changes))
        return lambda s: s.update(self.task, key, set=changes)

    def delete(self) -> Callable[[Session], Any]:
        kind = self.rng.choice([self.task, self.bug, self.note])
        key = {"task_id": f"{self.rng.randint(0, 9)}"}
        return lambda s: s.delete(kind, key)

    def batch(self) -> Callable[[Session], Any]:
        puts = [
            self.task(task_id=f"{n}", **self.task_fields()) for n in self.rng.sample(range(10), 3)
        ]
        deletes = [(self.bug, {"task_id": f"{self.rng.randint(0, 9)}"})]
        return lambda s: s.batch_write(puts, deletes)

    def transaction(self) -> Callable[[Session], Any]:
        rng = self.rng
        tasks = self.stored("TASK#")
        choice = rng.choice(["put", "update", "delete"]) if tasks else "put"
        if choice == "put":
            action: Any = Put(self.task(task_id=f"{rng.randint(0, 9)}", **self.task_fields()))
        else:
            pk, _ = rng.choice(tasks)
            key = {"task_id": pk.removeprefix("TASK#")}
            if choice == "update":
                action = Update(self.task, key, set={"priority": rng.randint(-5, 5)})
            else:
                action = Delete(self.task, key)
        return lambda s: s.transact_write([action])

    def choose(self) -> Callable[[Session], Any]:
        self.dry = []
        pick = self.rng.choices(
            [self.put, self.update, self.delete, self.batch, self.transaction],
            weights=[5, 5, 2, 1, 2],
        )[0]
        return pick()


def snapshot(raw: Any, name: str) -> dict[Key, Wire]:
    items: dict[Key, Wire] = {}
    params: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
    while True:
        response = raw.scan(**params)
        items.update({key_of(i): i for i in response["Items"]})
        if "LastEvaluatedKey" not in response:
            return items
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


#: One item a write changes: (old item, new item, transactional).
Change = tuple[Wire | None, Wire | None, bool]


def _written(
    operation: str, params: dict[str, Any], before: dict[Key, Wire], after: dict[Key, Wire]
) -> list[Change]:
    """(old item, new item, transactional) of each item one write request changes."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        key = key_of(params["Item"] if operation == "PutItem" else params["Key"])
        new = None if operation == "DeleteItem" else after.get(key)
        return [(before.get(key), new, False)]
    if operation == "BatchWriteItem":
        out: list[Change] = []
        for request in params["RequestItems"][next(iter(params["RequestItems"]))]:
            if "PutRequest" in request:
                key = key_of(request["PutRequest"]["Item"])
                out.append((before.get(key), after.get(key), False))
            else:
                out.append((before.get(key_of(request["DeleteRequest"]["Key"])), None, False))
        return out
    ((kind, body),) = params["TransactItems"][0].items()
    key = key_of(body["Item"] if kind == "Put" else body["Key"])
    return [(before.get(key), None if kind == "Delete" else after.get(key), True)]


def artifact_of(table: Table, changes: list[Change]) -> WriteEstimate:
    """What DynamoDB Local charges beyond the model for items outside a multi-attribute index.

    When an item is outside the index before and after a write, but the key attributes it had
    and those it has together make the whole key, DynamoDB Local charges the index the units
    of the old item's entry, as if that entry were removed. The model, as documented, charges
    an index nothing for an item that is in it neither before nor after.
    """
    per_index: dict[str, float] = {}
    for old, new, transactional in changes:
        if old is None or new is None:
            continue
        for gsi in table.global_indexes:
            keys = set(table.index_key_names(gsi))
            had, has = keys & set(old), keys & set(new)
            if had and has and had != keys and has != keys and had | has == keys:
                keep = table.projected_attributes(gsi)
                entry = {k: v for k, v in old.items() if keep is None or k in keep}
                units = write_units(item_size(entry)) * (2 if transactional else 1)
                per_index[gsi.name] = per_index.get(gsi.name, 0.0) + units
    return WriteEstimate(table.name, 0.0, per_index)


def model_of(table: Table, operation: str, changes: list[Change]) -> WriteEstimate:
    """The capacity model's price of one write request, from the table before and after it."""
    total = WriteEstimate(table.name, 0.0)
    for old, new, transactional in changes:
        batched = operation == "BatchWriteItem"
        total = total + estimate_write(
            table, old, new, transactional=transactional, batched=batched
        )
    return total


def test_writes_and_reads_of_multi_attribute_indexes_cost_what_the_model_says(
    tables: tuple[Session, Recorder, Any, Table],
) -> None:
    session, recorder, raw, table = tables
    work = Workload(table, random.Random(2212))
    checked: Counter[str] = Counter()
    for _ in range(OPERATIONS):
        before = work.state = snapshot(raw, table.name)
        thunk = work.choose()
        recorder.calls.clear()
        thunk(session)
        after = snapshot(raw, table.name)
        for operation, params, response in recorder.calls:
            if operation == "GetItem":
                continue  # the read an update of a class and key does not send (none here)
            changes = _written(operation, params, before, after)
            model = model_of(table, operation, changes)
            got = consumed(response)
            artifact = artifact_of(table, changes)
            if artifact.per_index and got.matches(model + artifact):
                checked["DynamoDB Local artifact"] += 1
                continue
            assert got.matches(model), (operation, params, got, model)
            indexes = "+".join(sorted(model.per_index)) or "no index"
            checked[f"{operation} {indexes}"] += 1
            if work.dry and operation in ("PutItem", "UpdateItem"):
                (dry,) = work.dry
                assert got.matches(dry), ("dry run", operation, got, dry)
                checked[f"dry-run {operation}"] += 1
    work.state = before = snapshot(raw, table.name)
    for q in (
        query(work.task, work.bug).where(tenant="acme", region="eu"),
        query(work.task).where(owner="ann").using("ByOwner").partial(),
    ):
        recorder.calls.clear()
        session.all(q)
        for _, params, response in recorder.calls:
            items = [before[key_of(i)] for i in response["Items"]]
            model = estimate_request(table, "Query", params, items)
            got = consumed(response)
            assert got.matches(model), (params, got, model)
            checked[f"Query {params['IndexName']}"] += 1
    print(sorted(checked.items()))
    # The run reaches every kind of write, and writes that touch each index and both.
    for kind in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"):
        assert any(k.startswith(kind) for k in checked), (kind, checked)
    assert any("ByOwner+ByTenant" in k for k in checked), checked
    assert any(k.endswith(" ByTenant") for k in checked), checked
    assert any(k.endswith("no index") for k in checked), checked
    assert checked["dry-run PutItem"] > 20, checked
    assert checked["dry-run UpdateItem"] > 20, checked
    assert checked["Query ByTenant"], checked
    assert checked["Query ByOwner"], checked
