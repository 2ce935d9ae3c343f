"""Dual writes during a table migration, on both engines.

The copy is done; sessions with dual writes then write the source (the table of record) and the
destination in one transaction per write while a catch-up follows the source's stream. After
the switch the destination must hold exactly the source's items, re-derived, attribute by
attribute (`assert_migrated`): every write mirrored or carried by the catch-up, none lost,
none stale, whatever the interleaving (A-B-A toggles included).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import uuid
from collections import Counter
from typing import Any

import pytest

from lsiorm import (
    AsyncSession,
    ConditionCheck,
    Delete,
    DualFallback,
    Entity,
    HookRequest,
    Put,
    Session,
    Table,
    Update,
    cond,
)
from lsiorm.errors import ConditionFailedError, NotFoundError, ValidationError
from support.jobs import Killed, session_on
from support.migration import (
    WRITES,
    assert_migrated,
    creates_only,
    declare_shop,
    source_item,
    stream_table,
    streamed_shop,
)
from support.tables import table_request

SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
ITEMS = 40


@pytest.fixture
def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"src_{tag}", f"dst_{tag}"


def shop(dest: str) -> tuple[Table, dict[str, type[Entity]]]:
    """The destination of `declare_shop`, with a counter entity the writers update by adding,
    toggling a flag and setting or removing an optional field."""
    table, classes = declare_shop(dest)

    class Tally(Entity, table=table, keys={"PK": "T#{k:03d}", "SK": "TALLY"}):
        k: int
        hits: int = 0
        flag: bool = False
        note: str | None = None

    return table, {**classes, "Tally": Tally}


class Requests:
    """Every request a session sends, by operation and declared table."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    def before(self, request: HookRequest) -> None:
        self.sent.append((request.operation, request.params.get("TableName")))

    @property
    def writes(self) -> list[tuple[str, str | None]]:
        return [s for s in self.sent if s[0] in WRITES]


def migrated(
    session: Session, client: Any, names: tuple[str, str], items: int = ITEMS
) -> tuple[Table, dict[str, type[Entity]]]:
    source, dest = names
    table, classes = shop(dest)
    stream_table(client, source, items=items)
    assert session.migrate_table(table, source).ready
    return table, classes


def order(classes: dict[str, type[Entity]], n: int, **fields: Any) -> Any:
    return classes["Order"](group=n % 7, n=n, **{"title": f"o{n}", **fields})


def finish(session: Session, client: Any, names: tuple[str, str], table: Table) -> None:
    final = session.migrate_table(table, names[0], finish=True)
    assert final.phase == "switched", str(final)
    assert_migrated(client, names[0], names[1], table)


# -- the random mix -------------------------------------------------------------------------------


class DualWriters:
    """Writer threads on one session with dual writes, over a shared pool of orders and tallies:
    put, update (set, add, toggle and toggle back, set and remove an optional field), delete,
    re-create, and writes whose condition fails. Typed refusals are counted; anything else is
    kept in ``errors``."""

    def __init__(self, dual: Session, classes: dict[str, type[Entity]], writes: int) -> None:
        self.dual = dual
        self.classes = classes
        self.writes = writes
        self.refused: Counter[str] = Counter()
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def run(self, threads: int) -> None:
        workers = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(300)

    def _run(self, number: int) -> None:
        rng = random.Random(number)
        try:
            for _ in range(self.writes):
                try:
                    self._one(rng)
                except (ConditionFailedError, NotFoundError) as exc:
                    with self.lock:
                        self.refused[type(exc).__name__] += 1
        except BaseException as exc:
            self.errors.append(exc)

    def _one(self, rng: random.Random) -> None:
        dual, classes = self.dual, self.classes
        Order, Tally = classes["Order"], classes["Tally"]
        n = rng.randrange(ITEMS // 5) * 5 + 1  # the orders of the source
        key = {"group": n % 7, "n": n}
        k = {"k": rng.randrange(6)}
        operation = rng.choice(
            (
                *("put", "status", "toggle", "delete", "re-create", "false-condition"),
                *("add", "flag", "note", "remove", "batch", "transaction"),
            )
        )
        if operation == "put":
            dual.put(order(classes, n, title=f"p{rng.randrange(99)}"))
        elif operation == "status":
            dual.update(Order, key, set={"status": rng.choice(("new", "paid", "sent"))})
        elif operation == "toggle":  # A-B-A: the destination must not keep B
            before = dual.get(Order, key, consistent=True)
            if before is not None:
                dual.update(Order, key, set={"status": "held"})
                dual.update(Order, key, set={"status": before.status})
        elif operation == "delete":
            dual.delete(Order, key)
        elif operation == "re-create":
            dual.put(order(classes, n, status="again"), create_only=True)
        elif operation == "false-condition":
            dual.update(Order, key, set={"title": "never"}, condition=cond("status") == "none")
        elif operation == "add":
            dual.update(Tally, k, add={"hits": rng.randrange(1, 4)}, upsert=True)
        elif operation == "flag":  # A-B-A on a boolean
            dual.update(Tally, k, set={"flag": True}, upsert=True)
            dual.update(Tally, k, set={"flag": False})
        elif operation == "note":
            dual.update(Tally, k, set={"note": f"n{rng.randrange(9)}"}, upsert=True)
        elif operation == "remove":
            dual.update(Tally, k, remove=["note"], upsert=True)
        elif operation == "batch":
            others = [m * 5 + 1 for m in rng.sample(range(ITEMS // 5), 3)]
            dual.batch_write(
                puts=[order(classes, m, title=f"b{rng.randrange(99)}") for m in others[:2]],
                deletes=[(Order, {"group": others[2] % 7, "n": others[2]})],
            )
        else:
            other = (n + 5) % ITEMS
            dual.transact_write(
                [
                    Put(order(classes, n, title=f"x{rng.randrange(99)}")),
                    Delete(Order, {"group": other % 7, "n": other}),
                ]
            )


class Follower:
    """A catch-up that follows the source's stream until stopped (a thread)."""

    def __init__(self, session: Session, table: Table, source: str) -> None:
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

        def run() -> None:
            try:
                while not self.stop.is_set():
                    session.migrate_table(table, source, follow=1.0)
            except BaseException as exc:
                self.errors.append(exc)

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        self.thread.join(300)
        assert self.errors == []


@pytest.mark.slow
def test_dual_writes_from_threads_converge_while_the_catch_up_follows(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, _ = names
    table, classes = migrated(session, dynamodb_client, names)
    dual = session.dual_writes(table, source)
    follower = Follower(session, table, source)
    writers = DualWriters(dual, classes, writes=max(30, int(2000 * SCALE)))
    try:
        writers.run(threads=3)
    finally:
        follower.end()
    assert writers.errors == []
    assert writers.refused["ConditionFailedError"] > 0  # the false conditions, typed
    assert dual.dual is not None
    assert dual.dual.mirrored > sum(dual.dual.fallbacks.values()), dual.dual
    finish(session, dynamodb_client, names, table)


# -- fallbacks ------------------------------------------------------------------------------------


class Meddler:
    """Changes the source item before each dual transaction while armed: the item changes
    between every read and transaction of the write, which then falls back."""

    def __init__(self, client: Any, source: str, n: int) -> None:
        self.client = client
        self.source = source
        self.n = n
        self.armed = False
        self.changes = 0

    def before(self, request: HookRequest) -> None:
        if self.armed and request.operation == "TransactWriteItems":
            self.changes += 1
            item = {**source_item(self.n), "title": {"S": f"meddled {self.changes}"}}
            self.client.put_item(TableName=self.source, Item=item)


def test_writes_that_cannot_be_mirrored_fall_back_are_reported_and_converge(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, _ = names
    meddler = Meddler(dynamodb_client, source, 6)
    with session_on(endpoint_url, meddler) as session:
        table, classes = migrated(session, dynamodb_client, names)
        Order, Tally = classes["Order"], classes["Tally"]
        fell: list[DualFallback] = []
        dual = session.dual_writes(table, source, on_fallback=fell.append)
        meddler.armed = True
        stored = dual.update(Order, group=6, n=6, set={"status": "paid"})
        meddler.armed = False
        assert (stored.status, meddler.changes) == ("paid", 4)  # one per try
        dual.transact_write([Update(Order, {"group": 1, "n": 1}, set={"title": "in a tx"})])
        dual.put(Tally(k=1))
        dual.update(Tally, k=1, add={"hits": 2}, idempotency="transaction")
        dual.call(
            "UpdateItem",
            {
                "TableName": table.name,
                "Key": {"PK": {"S": "G#004"}, "SK": {"S": "ORDER#000011"}},
                "UpdateExpression": "SET title = :t",
                "ExpressionAttributeValues": {":t": {"S": "raw"}},
            },
        )
        dual.put(order(classes, 16, title="mirrored"))
        assert dual.dual is not None
        assert dual.dual.fallbacks == {
            "source-changed": 1,
            "update-in-transaction": 2,
            "update-effect-unknown": 1,
        }
        assert fell == [
            DualFallback("UpdateItem", "source-changed"),
            DualFallback("TransactWriteItems", "update-in-transaction"),
            DualFallback("TransactWriteItems", "update-in-transaction"),  # idempotency=
            DualFallback("UpdateItem", "update-effect-unknown"),
        ]
        assert dual.dual.mirrored == 2
        status = dual.migrate_table(table, source, status=True)  # runs as on the plain one
        assert status.dual_writes is not None
        assert status.dual_writes["reads"] == "source"
        finish(session, dynamodb_client, names, table)


def test_a_raw_request_naming_the_source_is_routed_as_one_naming_the_table(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    """`call` with the source's name (the table an app wrote before the migration) is a write
    of the migrated data too: mirrored, or counted as a fallback, never sent around the route."""
    source, dest = names
    with session_on(endpoint_url) as session:
        table, _ = migrated(session, dynamodb_client, names)
        fell: list[DualFallback] = []
        dual = session.dual_writes(table, source, on_fallback=fell.append)
        key = {"PK": {"S": "G#004"}, "SK": {"S": "ORDER#000011"}}
        dual.call(
            "UpdateItem",
            {
                "TableName": source,
                "Key": key,
                "UpdateExpression": "SET title = :t",
                "ExpressionAttributeValues": {":t": {"S": "raw"}},
            },
        )
        item = source_item(12, title="raw put")
        dual.call("PutItem", {"TableName": source, "Item": item})
        assert dual.dual is not None
        assert dual.dual.fallbacks == {"update-effect-unknown": 1}
        assert fell == [DualFallback("UpdateItem", "update-effect-unknown")]
        assert dual.dual.mirrored == 1
        there = dynamodb_client.get_item(TableName=dest, Key=key_of_item(item))["Item"]
        assert there["title"] == {"S": "raw put"}
        finish(session, dynamodb_client, names, table)


def key_of_item(item: dict[str, Any]) -> dict[str, Any]:
    return {"PK": item["PK"], "SK": item["SK"]}


# -- refusals -------------------------------------------------------------------------------------


def test_dual_writes_are_refused_with_a_rule_before_any_write(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest = names
    table, _ = shop(dest)
    seen = Requests()
    with session_on(endpoint_url, seen) as session:
        with pytest.raises(ValidationError) as caught:
            session.dual_writes(table, source, reads="sideways")
        assert (caught.value.rule, seen.sent) == ("dual.reads", [])
        stream_table(dynamodb_client, source, items=20)
        with pytest.raises(ValidationError) as caught:
            session.dual_writes(table, source)
        assert (caught.value.rule, seen.writes) == ("dual.no-migration", [])

    class KillCopy:
        copies = 0

        def before(self, request: HookRequest) -> None:
            params = request.params
            if params.get("TableName") == dest and creates_only(request.operation, params):
                self.copies += 1
                if self.copies > 5:
                    raise Killed

    killer = session_on(endpoint_url, KillCopy())
    with killer, pytest.raises(Killed):
        killer.migrate_table(table, source, segments=1)
    seen.sent.clear()
    with session_on(endpoint_url, seen) as session:
        with pytest.raises(ValidationError) as caught:
            session.dual_writes(table, source)
        assert (caught.value.rule, seen.writes) == ("dual.copy-not-done", [])
        session.migrate_table(table, source)
        session.migrate_table(table, source, finish=True)
        seen.sent.clear()
        with pytest.raises(ValidationError) as caught:
            session.dual_writes(table, source)
        assert (caught.value.rule, seen.writes) == ("dual.switched", [])


def test_a_new_primary_key_refuses_dual_writes(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, _, table = streamed_shop(dynamodb_client, names, items=10, declare=shop)
    # An order stored under another key format than the declaration derives.
    item = {**source_item(6), "SK": {"S": "ORDER#6"}}
    dynamodb_client.put_item(TableName=source, Item=item)
    session.migrate_table(table, source)
    with pytest.raises(ValidationError) as caught:
        session.dual_writes(table, source)
    assert caught.value.rule == "dual.key-format"
    assert "finish=True" in str(caught.value)


def test_a_source_keyed_otherwise_refuses_dual_writes(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest = names
    table, _ = shop(dest)
    streamed = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    dynamodb_client.create_table(**table_request(source, "PK", StreamSpecification=streamed))
    dynamodb_client.get_waiter("table_exists").wait(TableName=source)
    dynamodb_client.put_item(TableName=source, Item=source_item(1))
    session.migrate_table(table, source)
    with pytest.raises(ValidationError) as caught:
        session.dual_writes(table, source)
    assert caught.value.rule == "dual.key-schema"


# -- reads, transactions and batches, async -------------------------------------------------------


def test_reads_go_where_told_and_transactions_and_batches_are_mirrored(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest = names
    seen = Requests()
    with session_on(endpoint_url, seen) as session:
        table, classes = migrated(session, dynamodb_client, names)
        Order = classes["Order"]
        to_source = session.dual_writes(table, source)
        to_dest = session.dual_writes(table, source, reads="destination")
        seen.sent.clear()
        assert to_source.get(Order, group=1, n=1) is not None
        assert to_dest.get(Order, group=1, n=1) is not None
        assert [s for s in seen.sent if s[0] == "GetItem"] == [
            ("GetItem", source),
            ("GetItem", dest),
        ]
        to_source.transact_write(
            [
                Put(order(classes, 1, title="tx")),
                Delete(Order, {"group": 6, "n": 6}),
                ConditionCheck(Order, cond("title") == "item 11", key={"group": 4, "n": 11}),
            ]
        )
        to_source.batch_write(
            puts=[order(classes, n, title="batch") for n in (16, 21)],
            deletes=[(Order, {"group": 26 % 7, "n": 26})],
        )
        assert to_source.dual is not None
        assert (to_source.dual.mirrored, to_source.dual.fallbacks) == (2, {})
        # Nothing reached the destination but through the dual transactions.
        assert {s for s in seen.writes if s[1] is not None} == set()
        assert dynamodb_client.get_item(
            TableName=dest, Key={"PK": {"S": "G#001"}, "SK": {"S": "ORDER#000001"}}
        )["Item"]["title"] == {"S": "tx"}
    with session_on(endpoint_url) as session:
        finish(session, dynamodb_client, names, table)


def test_an_async_session_writes_both_tables(
    endpoint_url: str, session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, _ = names
    table, classes = migrated(session, dynamodb_client, names)
    Order = classes["Order"]

    async def main() -> None:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as plain:
            dual = await plain.dual_writes(table, source)
            await dual.put(order(classes, 1, title="async"))
            await dual.update(Order, group=6, n=6, set={"status": "paid"})
            await dual.delete(Order, group=11 % 7, n=11)
            with pytest.raises(ConditionFailedError):
                await dual.put(order(classes, 16), create_only=True)
            assert dual.dual is not None
            assert (dual.dual.mirrored, dual.dual.fallbacks) == (3, {})

    asyncio.run(main())
    finish(session, dynamodb_client, names, table)
