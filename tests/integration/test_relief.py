"""Collection relief on each engine: copy, verify, delete; resumable; relieves a full collection."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Entity, KeyAttribute, LocalIndex, Session, Table, read_relief_file
from lsiorm._model.wire import item_from_wire
from lsiorm._ops.hooks import HookRequest
from lsiorm.errors import ItemCollectionSizeLimitError
from lsiorm.testing import FaultInjector, ItemCollectionProxy
from support.raw import set_attributes


def declare(name: str) -> tuple[Table, type[Entity], type[Entity]]:
    table = Table(name, "PK", "SK", local_indexes=[LocalIndex("ByDay", KeyAttribute("DaySK"))])

    class Event(
        Entity,
        table=table,
        keys={"PK": "DEV#{device}", "SK": "EV#{n:05d}", "DaySK": "DAY#{day}#{n:05d}"},
    ):
        device: str
        n: int
        day: date
        body: str = ""

    class Setting(Entity, table=table, keys={"PK": "DEV#{device}", "SK": "SET#{name}"}):
        device: str
        name: str
        value: str

    return table, Event, Setting


CUTOFF = date(2024, 3, 1)


def seed(session: Session, name: str, count: int = 40) -> tuple[Table, Any, Any, list[Any]]:
    table, event, setting = declare(name)
    session.create_table(table)
    rng = random.Random(9)
    events = [
        event(device="d1", n=n, day=date(2024, 1 + rng.randrange(5), 1 + rng.randrange(28)))
        for n in range(count)
    ]
    session.batch_write([*events, setting(device="d1", name="mode", value="fast")])
    session.batch_write([event(device="d2", n=n, day=date(2024, 1, 1)) for n in range(5)])
    return table, event, setting, events


def canon(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def older(entity: Any) -> bool:
    return bool(entity.day < CUTOFF)


def stored(session: Session, table: Table, pk: str) -> list[dict[str, Any]]:
    response = session.call(
        "Query",
        {
            "TableName": table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True,
        },
    )
    return [item_from_wire(i) for i in response["Items"]]


def test_relief_to_another_table(session: Session, table_name: str) -> None:
    table, event, _, events = seed(session, table_name)
    archive = Table(f"{table_name}_archive", "PK", "SK")
    session.create_table(archive)
    try:
        before = stored(session, table, "DEV#d1")
        old = [e for e in events if e.day < CUTOFF]
        dry = session.relieve_collection(
            table, "DEV#d1", entity=event, match=older, to_table=archive, dry_run=True
        )
        assert dry.moved == len(old)
        assert stored(session, table, "DEV#d1") == before
        report = session.relieve_collection(
            table, "DEV#d1", entity=event, match=older, to_table=archive, page_size=7
        )
        assert (report.moved, report.kept, report.failed) == (
            len(old),
            len(events) - len(old) + 1,
            [],
        )
        assert report.bytes_after == session.audit_collection(table, "DEV#d1").total_bytes
        assert report.shrank_bytes == report.bytes_before - report.bytes_after > 0
        assert report.shrank_bytes == dry.shrank_bytes  # the dry run priced the same shrink
        # The run's report prices its writes as the dry run did: a delete (with its LSI entry)
        # and a put into the archive per moved item.
        assert report.estimate is not None
        assert dry.estimate is not None
        assert report.estimate.total == dry.estimate.total > 0
        assert report.estimate.per_index == dry.estimate.per_index
        left = stored(session, table, "DEV#d1")
        copied = stored(session, archive, "DEV#d1")
        assert sorted(i["SK"] for i in copied) == sorted(f"EV#{e.n:05d}" for e in old)
        assert sorted(map(canon, left + copied)) == sorted(map(canon, before))  # nothing lost
        assert len(stored(session, table, "DEV#d2")) == 5  # other collections untouched
        assert "moved: " in str(report)
    finally:
        session.delete_table(archive)
        session.delete_table(table)


def test_a_relief_whose_delete_lost_its_answer_counts_that_move_unverified(
    session: Session, endpoint_url: str, table_name: str
) -> None:
    """The delete of one original applies and its answer is lost: its resend finds the item
    gone. The item is moved (its copy kept), and counted as unverified: what a writer added to
    it just before the delete could not be known."""
    table, event, _, events = seed(session, table_name)
    archive = Table(f"{table_name}_archive", "PK", "SK")
    session.create_table(archive)
    try:
        before = stored(session, table, "DEV#d1")
        old = [e for e in events if e.day < CUTOFF]
        with (
            Session(endpoint_url=endpoint_url, region_name="us-east-1") as job,
            FaultInjector(session=job) as faults,
        ):
            faults.lose_answer(
                "DeleteItem", when=lambda _, params: params.get("ReturnValues") == "ALL_OLD"
            )
            report = job.relieve_collection(
                table, "DEV#d1", entity=event, match=older, to_table=archive
            )
        assert faults.count("DeleteItem", fault="lost-answer") == 1
        assert (report.moved, report.unverified, report.retried, report.failed) == (
            len(old),
            1,
            0,
            [],
        )
        assert "the original's delete unconfirmed (its answer lost): 1" in str(report)
        left = stored(session, table, "DEV#d1")
        copied = stored(session, archive, "DEV#d1")
        assert sorted(map(canon, left + copied)) == sorted(map(canon, before))  # nothing lost
    finally:
        session.delete_table(archive)
        session.delete_table(table)


class Killed(BaseException):
    """The job was killed."""


class StopAfter:
    def __init__(self, deletes: int) -> None:
        self.deletes = deletes
        self.seen: Counter[str] = Counter()

    def before(self, request: HookRequest) -> None:
        if request.operation == "DeleteItem" and sum(self.seen.values()) >= self.deletes:
            raise Killed

    def after(self, request: HookRequest, response: dict[str, Any]) -> None:
        if request.operation == "DeleteItem":
            self.seen[request.params["Key"]["SK"]["S"]] += 1


@pytest.mark.parametrize("stop_at", [3, 11])
def test_relief_to_a_file_stopped_and_resumed_moves_each_item_once(
    session: Session, endpoint_url: str, table_name: str, tmp_path: Path, stop_at: int
) -> None:
    table, event, _, events = seed(session, table_name)
    target = tmp_path / "archive.jsonl"
    before = stored(session, table, "DEV#d1")
    hook = StopAfter(stop_at)
    try:
        with (
            Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[hook]) as doomed,
            pytest.raises(Killed),
        ):
            doomed.relieve_collection(table, "DEV#d1", entity=event, to_file=target, page_size=4)
        hook.deletes = 10**9
        with Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[hook]) as again:
            report = again.relieve_collection(
                table, "DEV#d1", entity=event, to_file=target, page_size=4
            )
        assert report.resumed  # the stopped run, from the ledger in the table
        # Every item counted once, those the cut-short page moved before the stop included.
        assert (report.scanned, report.moved, report.kept) == (len(events) + 1, len(events), 1)
        assert set(hook.seen.values()) == {1}  # every original deleted exactly once
        assert len(hook.seen) == len(events)
        lines = read_relief_file(target)
        keys = [i["SK"]["S"] for i in lines]
        assert len(keys) == len(set(keys)) == len(events)  # no item lost, none duplicated
        left = stored(session, table, "DEV#d1")
        assert [i["SK"] for i in left] == ["SET#mode"]
        assert sorted(map(canon, left + [item_from_wire(i) for i in lines])) == sorted(
            map(canon, before)
        )
    finally:
        session.delete_table(table)


def test_relief_frees_a_full_collection_behind_the_collection_proxy(
    endpoint_url: str, table_name: str, tmp_path: Path
) -> None:
    table, event, _ = declare(table_name)
    with (
        ItemCollectionProxy(endpoint_url, bytes_per_gb=4_000) as proxy,
        Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1") as session,
    ):
        session.create_table(table)
        try:
            n = 0
            with pytest.raises(ItemCollectionSizeLimitError):  # noqa: PT012
                while n < 100:
                    day = date(2024, 1 + n % 6, 1)
                    session.put(event(device="full", n=n, day=day, body="x" * 1_000))
                    n += 1
            report = session.relieve_collection(
                table, "DEV#full", entity=event, match=older, to_file=tmp_path / "old.jsonl"
            )
            assert report.moved > 0
            assert report.shrank_bytes > 0
            after = proxy.collection_bytes(table.name, {"PK": {"S": "DEV#full"}})
            assert after == report.bytes_after  # the proxy and the audit agree
            session.put(event(device="full", n=n, day=date(2024, 6, 1), body="x" * 1_000))
            estimate = session.collections.estimate(table, "DEV#full")
            assert estimate is not None
            assert estimate.high_gb < 10
        finally:
            session.delete_table(table)


def test_a_concurrent_writer_loses_no_update_during_relief(
    session: Session, endpoint_url: str, table_name: str
) -> None:
    import threading

    from lsiorm.errors import NotFoundError

    table = Table(table_name, "PK", "SK", local_indexes=[LocalIndex("ByDay", KeyAttribute("D"))])

    class Counter_(Entity, table=table, keys={"PK": "C#{box}", "SK": "N#{n:04d}", "D": "{day}"}):
        box: str
        n: int
        day: date
        hits: int = 0

    archive = Table(f"{table_name}_a", "PK", "SK")
    session.create_table(table)
    session.create_table(archive)
    session.batch_write([Counter_(box="b", n=n, day=date(2024, 1 + n % 4, 1)) for n in range(30)])
    applied: Counter[int] = Counter()
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(1)
        with Session(endpoint_url=endpoint_url, region_name="us-east-1") as other:
            while not stop.is_set():
                n = rng.randrange(30)
                try:
                    other.update(Counter_, box="b", n=n, add={"hits": 1})
                except NotFoundError:
                    continue  # already moved: the update did not apply
                applied[n] += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = session.relieve_collection(
            table, "C#b", match=lambda c: c.day < date(2024, 3, 1), to_table=archive, page_size=3
        )
    finally:
        stop.set()
        thread.join(timeout=120)
    try:
        assert report.failed == []
        left = {int(i["SK"][2:]): i for i in stored(session, table, "C#b")}
        moved = {int(i["SK"][2:]): i for i in stored(session, archive, "C#b")}
        assert set(left) | set(moved) == set(range(30))
        assert not set(left) & set(moved)
        for n in range(30):
            item = left.get(n) or moved[n]
            assert item.get("hits", 0) == applied[n], n  # every applied update is kept
        assert all(i["D"] < "2024-03-01" for i in moved.values())
    finally:
        session.delete_table(table)
        session.delete_table(archive)


def test_async_relief_matches_the_sync_one(
    session: Session, endpoint_url: str, table_name: str, tmp_path: Path
) -> None:
    import asyncio

    from lsiorm import AsyncSession

    table, event, _, events = seed(session, table_name, count=20)

    async def run() -> Any:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as s:
            return await s.relieve_collection(
                table, "DEV#d1", entity=event, match=older, to_file=tmp_path / "a.jsonl"
            )

    try:
        report = asyncio.run(run())
        assert report.moved == sum(1 for e in events if e.day < CUTOFF)
        assert len(read_relief_file(tmp_path / "a.jsonl")) == report.moved
    finally:
        session.delete_table(table)


class LateWriter:
    """Before relief deletes an original, another writer sets attributes on it (once each)."""

    def __init__(self, session: Session, table: str, updates: dict[str, Any]) -> None:
        self.session, self.table, self.updates = session, table, updates
        self.done: set[str] = set()

    def before(self, request: HookRequest) -> None:
        params = request.params
        if request.operation != "DeleteItem" or params["TableName"] != self.table:
            return
        sk = params["Key"]["SK"]["S"]
        if not sk.startswith("EV#") or sk in self.done:
            return
        self.done.add(sk)
        values = {name: {"S": v} for name, v in self.updates.items()}
        set_attributes(self.session, self.table, params["Key"], values)


@pytest.mark.parametrize("late", [{"body": "late"}, {"note": "late"}, {"note": "a", "body": "b"}])
@pytest.mark.parametrize("to", ["table", "file"])
def test_an_attribute_set_between_read_and_delete_is_moved_with_the_item(
    session: Session, endpoint_url: str, table_name: str, tmp_path: Path, late: Any, to: str
) -> None:
    """``body`` is a field of the model, ``note`` an attribute no model declares."""
    table, event, _, events = seed(session, table_name, count=12)
    archive = Table(f"{table_name}_archive", "PK", "SK")
    target = tmp_path / "moved.jsonl"
    if to == "table":
        session.create_table(archive)
    hook = LateWriter(session, table.name, late)
    try:
        with Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[hook]) as job:
            report = job.relieve_collection(
                table,
                "DEV#d1",
                entity=event,
                to_table=archive if to == "table" else None,
                to_file=target if to == "file" else None,
                page_size=5,
            )
        assert (report.moved, report.failed) == (len(events), [])
        assert len(hook.done) == len(events)  # every original was written to before its delete
        if to == "table":
            moved = stored(session, archive, "DEV#d1")
        else:
            moved = list(
                {i["SK"]["S"]: item_from_wire(i) for i in read_relief_file(target)}.values()
            )
        assert len(moved) == len(events)
        for item in moved:
            assert {k: item.get(k) for k in late} == late, item  # no late write lost
        assert [i["SK"] for i in stored(session, table, "DEV#d1")] == ["SET#mode"]
    finally:
        if to == "table":
            session.delete_table(archive)
        session.delete_table(table)
