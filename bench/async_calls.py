"""Async single calls and the async typed query, and each library's client CPU per call.

The async rows compare aioboto3 handed ready wire items, pydynox's async API, lsiorm's
AsyncSession and dynamoxy (async only; in its own worker process, see bench.dynamoxy_peer)
when a Python 3.12+ with dynamoxy is there. The CPU rows time the same calls, sync and async,
with each process's own CPU clock: what a library costs its host beyond waiting for the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lsiorm import query

from .dynamoxy_peer import TABLE as DYNAMOXY_TABLE
from .dynamoxy_peer import Dynamoxy
from .models import LSIORM_TABLE, Order, Row, lsiorm_entities, pydynox_items
from .timing import CPU, WALL, Variant, measure
from .workloads import SINGLE_REPEAT, Engine, Group, check, orders_for_single

ASYNC_PUT = "lsiorm AsyncSession.put"
ASYNC_GET = "lsiorm AsyncSession.get"
ASYNC_QUERY = "lsiorm AsyncSession.all"


def _summary(entities: Sequence[Any]) -> list[list[Any]]:
    """What every library must read back: the order numbers and notes, in order."""
    return [[e.order_no, e.note] for e in entities]


def async_single(engine: Engine, peer: Dynamoxy | None, rounds: int) -> list[Group]:
    """One PutItem and one typed GetItem of the same order, by every async library."""
    data = orders_for_single()
    entity = lsiorm_entities(data)[0]
    wire = entity.to_wire()
    key = {"pk": wire["pk"], "sk": wire["sk"]}
    pdx = pydynox_items(engine.pydynox, data)[0]
    run, client, session = engine.run, engine.aclient, engine.asession

    def get(_: Any) -> Any:
        return run(session.get(Order, customer=entity.customer, order_no=entity.order_no))

    puts = [
        Variant(
            "aioboto3 client put_item (wire item ready)",
            lambda _: run(client.put_item(TableName=LSIORM_TABLE, Item=wire)),
        ),
        Variant("pydynox save (Rust core)", lambda _: run(pdx.save())),
        Variant(ASYNC_PUT, lambda _: run(session.put(entity))),
    ]
    gets = [
        Variant(
            "aioboto3 client get_item (wire dict)",
            lambda _: run(client.get_item(TableName=LSIORM_TABLE, Key=key)),
        ),
        Variant("pydynox get (Rust core)", lambda _: run(engine.pydynox.get(pk=pdx.pk, sk=pdx.sk))),
        Variant(ASYNC_GET, get),
    ]
    if peer is not None:
        peer.rows("single", data)
        puts.append(peer.variant("repository put (adds a write id)", "put", "single"))
        gets.append(peer.variant("repository get", "get", "single"))
    for v in puts:
        v.run(None)  # every library's item exists before the gets
    if peer is not None:
        peer.check("put", "single")
        check("dynamoxy get", peer.check("get", "single") == _summary([entity]))
    check("lsiorm async get", get(None) == entity)
    check("pydynox async get", run(engine.pydynox.get(pk=pdx.pk, sk=pdx.sk)).note == entity.note)
    measure(puts, rounds=rounds, warmup=2, repeat=SINGLE_REPEAT, clock=WALL)
    measure(gets, rounds=rounds, warmup=2, repeat=SINGLE_REPEAT, clock=WALL)
    return [
        Group("put-async", "Single PutItem of one order, async", WALL, puts[0].name, puts, 1),
        Group("get-async", "Single typed GetItem of one order, async", WALL, gets[0].name, gets, 1),
    ]


def async_query(engine: Engine, peer: Dynamoxy | None, data: list[Row], rounds: int) -> Group:
    """Read the query workload's partition (already written by every library), async, typed."""
    customer = data[0].customer
    partition = f"CUST#{customer}"
    lsiorm_query = query(Order).where(customer=customer)
    run, client, session = engine.run, engine.aclient, engine.asession

    async def raw_pages() -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "TableName": LSIORM_TABLE,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": partition}},
        }
        items: list[dict[str, Any]] = []
        while True:
            response = await client.query(**params)
            items.extend(response["Items"])
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            params["ExclusiveStartKey"] = last

    async def pydynox_all() -> list[Any]:
        return [m async for m in engine.pydynox.query(partition_key=partition)]

    def lsiorm(_: Any) -> list[Any]:
        found: list[Any] = run(session.all(lsiorm_query))
        return found

    expected = _summary(lsiorm_entities(data))
    check("aioboto3 query", len(run(raw_pages())) == len(data))
    check("pydynox async query", _summary(run(pydynox_all())) == expected)
    check("lsiorm async query", _summary(lsiorm(None)) == expected)
    variants = [
        Variant("aioboto3 client (wire dicts)", lambda _: run(raw_pages())),
        Variant("pydynox Model.query (Rust core, typed)", lambda _: run(pydynox_all())),
        Variant(ASYNC_QUERY, lsiorm),
    ]
    if peer is not None:
        peer.rows("query", data)
        peer.check("batch", "query")  # writes the partition into dynamoxy's table, untimed
        check("dynamoxy query", peer.check("query", "query") == expected)
        variants.append(peer.variant("repository query().all()", "query", "query"))
    measure(variants, rounds=rounds, warmup=2, clock=WALL)
    return Group(
        "query-async",
        f"Full query of {len(data)} items from DynamoDB Local, typed, async",
        WALL,
        variants[0].name,
        variants,
        len(data),
    )


def client_cpu(groups: dict[str, Group], rounds: int) -> list[Group]:
    """Client CPU per PutItem and per GetItem: the single-call variants again, on CPU clocks."""
    out = []
    for key, sync, asynchronous in (
        ("cpu-put", "put", "put-async"),
        ("cpu-get", "get", "get-async"),
    ):
        variants = [
            Variant(v.name, v.run, v.setup, timed=v.timed)
            for name in (sync, asynchronous)
            if name in groups
            for v in groups[name].variants
        ]
        if not variants:
            continue
        measure(variants, rounds=rounds, warmup=1, repeat=SINGLE_REPEAT, clock=CPU)
        call = "PutItem" if key == "cpu-put" else "GetItem"
        out.append(
            Group(
                key,
                f"Client CPU per {call}, sync and async (each process's own CPU time)",
                CPU,
                variants[0].name,
                variants,
                1,
                notes=[
                    "CPU time of the process making the call, all its threads included (the "
                    "Rust cores' runtime threads too); dynamoxy's is read in its worker process."
                ],
            )
        )
    return out


def count_written(engine: Engine, table: str, data: Sequence[Row]) -> int:
    """How many of ``data``'s orders the table holds (one COUNT query per customer)."""
    total = 0
    for customer in sorted({r.customer for r in data}):
        params: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": f"CUST#{customer}"}},
            "Select": "COUNT",
        }
        while True:
            response = engine.client.query(**params)
            total += response["Count"]
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
    return total


def dynamoxy_batch(peer: Dynamoxy | None, data: list[Row]) -> list[Variant]:
    """dynamoxy's async batch write of ``data`` (batch_put, as many requests in flight)."""
    if peer is None:
        return []
    peer.rows("batch", data)
    return [peer.variant("repository batch_put", "batch", "batch")]


def check_batch(engine: Engine, peer: Dynamoxy | None, data: list[Row]) -> Callable[[], None]:
    """A check that lsiorm's and dynamoxy's tables hold every order of the batch."""

    def written() -> None:
        tables = [LSIORM_TABLE] + ([DYNAMOXY_TABLE] if peer is not None else [])
        for table in tables:
            check(f"batch written to {table}", count_written(engine, table, data) == len(data))

    return written
