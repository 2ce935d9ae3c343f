"""The workloads: each builds its variants (one per library or path), checks them, times them."""

from __future__ import annotations

import asyncio
import copy
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import aioboto3
import boto3
from boto3.dynamodb.conditions import Key
from boto3.dynamodb.transform import TransformationInjector
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config

from lsiorm import AsyncSession, Session, gt, query
from lsiorm._io import fastjson
from lsiorm._model.entity import decode_item
from lsiorm._model.item_encoding import wire_item
from lsiorm._ops import batch as lsiorm_batch
from lsiorm._ops import reads as query_ops
from lsiorm._ops.pipeline import call
from lsiorm._requests.batch import write_entries

from .models import (
    DYNTASTIC_TABLE,
    LSIORM_TABLE,
    PYNAMODB_TABLE,
    START,
    Order,
    Row,
    dyntastic_items,
    dyntastic_model,
    lsiorm_entities,
    orders,
    plain_items,
    pydynox_items,
    pynamodb_items,
    pynamodb_model,
)
from .pydynox_order import PYDYNOX_TABLE, pydynox_model
from .timing import CPU, WALL, Clock, Variant, measure

REGION = "us-east-1"
CONCURRENCY = 8
BATCH = 25
#: Samples a CPU-bound variant takes in a row each round; the first of each run is dropped.
CPU_BLOCK = 6


@dataclass
class Group:
    """The timed variants of one workload; ratios are to the ``baseline`` variant."""

    key: str
    title: str
    clock: Clock
    baseline: str
    variants: list[Variant]
    items: int
    notes: list[str] = field(default_factory=list)
    #: Figures of this run that are not rows of the table, by name (seconds, medians): what
    #: the targets' reasons read, e.g. the async batch's encoding before its first request.
    aside: dict[str, float] = field(default_factory=dict)

    def variant(self, name: str) -> Variant:
        """Return the variant of this name."""
        return next(v for v in self.variants if v.name == name)

    def ratio(self, name: str) -> float:
        """Return the variant's median time over the baseline's."""
        return self.variant(name).median / self.variant(self.baseline).median


@dataclass
class Engine:
    """The engine endpoint and the clients and sessions every workload shares."""

    url: str
    client: Any = None
    fast_client: Any = None
    resource: Any = None
    session: Any = None
    slow_session: Any = None
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    aclient: Any = None
    asession: Any = None
    pynamodb: Any = None
    dyntastic: Any = None
    pydynox: Any = None
    lean_off_session: Any = None

    def open(self) -> None:
        """Create the clients, sessions and tables."""
        self.client = boto3.client("dynamodb", endpoint_url=self.url, region_name=REGION)
        self.fast_client = boto3.client("dynamodb", endpoint_url=self.url, region_name=REGION)
        fastjson.install(self.fast_client)
        self.resource = boto3.resource("dynamodb", endpoint_url=self.url, region_name=REGION)
        self.session = Session(endpoint_url=self.url, region_name=REGION)
        fastjson.install(self.session.client)
        self.slow_session = Session(endpoint_url=self.url, region_name=REGION, lean=False)
        fastjson.uninstall(self.slow_session.client)
        self.aclient = self.run(
            self.stack.enter_async_context(
                aioboto3.Session().client(
                    "dynamodb",
                    endpoint_url=self.url,
                    region_name=REGION,
                    config=Config(max_pool_connections=CONCURRENCY * 2),
                )
            )
        )
        self.asession = self.run(
            self.stack.enter_async_context(AsyncSession(endpoint_url=self.url, region_name=REGION))
        )
        fastjson.install(self.asession.client)
        self.lean_off_session = Session(endpoint_url=self.url, region_name=REGION, lean=False)
        fastjson.install(self.lean_off_session.client)
        self.pynamodb = pynamodb_model(self.url)
        self.dyntastic = dyntastic_model(self.url)
        self.pydynox = pydynox_model(self.url)
        self.session.create_table(orders)
        for name in (PYNAMODB_TABLE, DYNTASTIC_TABLE, PYDYNOX_TABLE):
            self.create_like_orders(name)

    def create_like_orders(self, name: str) -> None:
        """Create a table with the schema (and LSI) of ``orders``, for an equal write cost."""
        request = {**orders.create_table_request(), "TableName": name}
        self.client.create_table(**request)
        self.client.get_waiter("table_exists").wait(TableName=name)

    def run(self, coroutine: Any) -> Any:
        """Run a coroutine on the engine's event loop."""
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        """Close every client and the loop."""
        self.run(self.stack.aclose())
        self.session.close()
        self.slow_session.close()
        self.lean_off_session.close()
        self.loop.close()


def _operation_model(name: str) -> Any:
    client = boto3.session.Session().client("dynamodb", region_name=REGION)
    return client.meta.service_model.operation_model(name)


def check(what: str, condition: bool) -> None:
    if not condition:
        raise AssertionError(f"benchmark self-check failed: {what}")


# -- decode and encode: pure computation, CPU time ------------------------------------------------


def decode(data: list[Row], rounds: int) -> Group:
    """Decode a page of wire items into typed objects (dicts for the boto3 baselines)."""
    entities = lsiorm_entities(data)
    page = [e.to_wire() for e in entities]
    deserialize = TypeDeserializer().deserialize
    injector = TransformationInjector(deserializer=TypeDeserializer())
    query_model = _operation_model("Query")
    pynamo = pynamodb_model("http://127.0.0.1:9")
    pynamo_page = [m.serialize() for m in pynamodb_items(pynamo, data)]
    dyn = dyntastic_model("http://127.0.0.1:9")
    plan = query(Order).where(customer=data[0].customer).plan()

    def boto3_dicts(_: Any) -> list[dict[str, Any]]:
        return [{k: deserialize(v) for k, v in item.items()} for item in page]

    def resource(response: dict[str, Any]) -> list[dict[str, Any]]:
        injector.inject_attribute_value_output(parsed=response, model=query_model)
        items: list[dict[str, Any]] = response["Items"]
        return items

    def pynamodb(_: Any) -> list[Any]:
        return [pynamo.from_raw_data(item) for item in pynamo_page]

    def dyntastic(_: Any) -> list[Any]:
        return [
            dyn._dyntastic_load_model({k: deserialize(v) for k, v in item.items()}) for item in page
        ]

    def lsiorm(_: Any) -> list[Any]:
        return [decode_item(orders, item) for item in page]

    def lsiorm_query_path(_: Any) -> list[Any]:
        return [query_ops.decode(plan, item, (Order,)) for item in page]

    check("lsiorm decode", lsiorm(None) == entities)
    check("query path decode", lsiorm_query_path(None) == entities)
    check("boto3 decode", [d["order_no"] for d in boto3_dicts(None)] == [r.order_no for r in data])
    check(
        "pynamodb decode", [int(m.order_no) for m in pynamodb(None)] == [r.order_no for r in data]
    )
    check("dyntastic decode", [m.order_no for m in dyntastic(None)] == [r.order_no for r in data])
    check("resource decode", resource({"Items": copy.deepcopy(page)}) == boto3_dicts(None))
    variants = [
        Variant("boto3 TypeDeserializer to dicts", boto3_dicts),
        Variant(
            "boto3 Table resource transform to dicts",
            resource,
            setup=lambda: {"Items": copy.deepcopy(page)},
        ),
        Variant("PynamoDB from_raw_data", pynamodb),
        Variant("dyntastic (TypeDeserializer + its model load)", dyntastic),
        Variant("lsiorm decode_item", lsiorm),
        Variant("lsiorm query result decoding (what Session.all calls)", lsiorm_query_path),
    ]
    measure(variants, rounds=rounds, warmup=1, block=CPU_BLOCK, clock=CPU)
    group = Group(
        "decode",
        f"Decode a {len(data)}-item page (11 attributes) into typed objects",
        CPU,
        variants[0].name,
        variants,
        len(data),
    )
    # The same three paths again, but one run each right after another library's run.
    cold = [
        Variant(variants[0].name, boto3_dicts),
        Variant("PynamoDB from_raw_data", pynamodb),
        Variant("lsiorm decode_item", lsiorm),
    ]
    measure(cold, rounds=rounds * (CPU_BLOCK - 1), warmup=1, clock=CPU)
    base = cold[0].median
    group.notes.append(
        "Interleaved single runs instead, each one right after another path's run (so with the "
        "allocator and caches as that path left them): lsiorm decode_item "
        f"{cold[2].median / base:.2f}x the TypeDeserializer, PynamoDB "
        f"{cold[1].median / base:.2f}x."
    )
    return group


def encode(data: list[Row], rounds: int) -> Group:
    """Encode entities (dicts for the boto3 baselines) into wire items."""
    entities = lsiorm_entities(data)
    plain = plain_items(data)
    serialize = TypeSerializer().serialize
    injector = TransformationInjector(serializer=TypeSerializer())
    put_model = _operation_model("PutItem")
    pynamo_items = pynamodb_items(pynamodb_model("http://127.0.0.1:9"), data)
    dyn_items = dyntastic_items(dyntastic_model("http://127.0.0.1:9"), data)
    from dyntastic import attr as dyntastic_attr

    def boto3_wire(_: Any) -> list[dict[str, Any]]:
        return [{k: serialize(v) for k, v in item.items()} for item in plain]

    def resource(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for request in requests:
            injector.inject_attribute_value_input(params=request, model=put_model)
        return [r["Item"] for r in requests]

    def pynamodb(_: Any) -> list[Any]:
        return [m.serialize() for m in pynamo_items]

    def dyntastic(_: Any) -> list[Any]:
        out = []
        for m in dyn_items:
            data_ = dyntastic_attr.serialize(m.model_dump(by_alias=True))
            out.append({k: serialize(v) for k, v in data_.items()})
        return out

    def lsiorm(_: Any) -> list[Any]:
        return [wire_item(e) for e in entities]

    def requests() -> list[dict[str, Any]]:
        return [{"TableName": LSIORM_TABLE, "Item": dict(item)} for item in plain]

    numbers = [{"N": str(r.order_no)} for r in data]
    check("lsiorm encode", [w["order_no"] for w in lsiorm(None)] == numbers)
    check("resource encode", resource(requests()) == boto3_wire(None))
    check("dyntastic encode", len(dyntastic(None)) == len(data))
    check("pynamodb encode", pynamodb(None)[0]["note"] == {"S": data[0].note})
    variants = [
        Variant("boto3 TypeSerializer from dicts", boto3_wire),
        Variant("boto3 Table resource transform from dicts", resource, setup=requests),
        Variant("PynamoDB serialize", pynamodb),
        Variant("dyntastic (model_dump + its serialize + TypeSerializer)", dyntastic),
        Variant("lsiorm wire_item", lsiorm),
    ]
    measure(variants, rounds=rounds, warmup=1, block=CPU_BLOCK, clock=CPU)
    return Group(
        "encode",
        f"Encode {len(data)} entities into wire items",
        CPU,
        variants[0].name,
        variants,
        len(data),
    )


# -- a full query from DynamoDB Local, wall time ------------------------------------------------


def load(engine: Engine, data: list[Row]) -> None:
    """Write the rows with every library's own model, each into its own table."""
    entities = lsiorm_entities(data)
    engine.run(engine.asession.run(lsiorm_batch.batch_write(engine.asession.ctx, puts=entities)))
    with engine.pynamodb.batch_write() as writer:
        for m in pynamodb_items(engine.pynamodb, data):
            writer.save(m)
    with engine.dyntastic.batch_writer():
        for m in dyntastic_items(engine.dyntastic, data):
            m.save()
    from pydynox import SyncBatchWriter

    with SyncBatchWriter(engine.pydynox.model_config.client, PYDYNOX_TABLE) as writer:
        for m in pydynox_items(engine.pydynox, data):
            writer.put(m.to_dict())


def full_query(engine: Engine, data: list[Row], rounds: int) -> Group:
    """Read one partition of ``len(data)`` items, every page, into typed objects."""
    customer = data[0].customer
    partition = f"CUST#{customer}"
    load(engine, data)
    lsiorm_query = query(Order).where(customer=customer)

    def raw(client: Any) -> Callable[[Any], list[dict[str, Any]]]:
        def run(_: Any) -> list[dict[str, Any]]:
            params: dict[str, Any] = {
                "TableName": LSIORM_TABLE,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": partition}},
            }
            items: list[dict[str, Any]] = []
            while True:
                response = client.query(**params)
                items.extend(response["Items"])
                last = response.get("LastEvaluatedKey")
                if not last:
                    return items
                params["ExclusiveStartKey"] = last

        return run

    table = engine.resource.Table(LSIORM_TABLE)

    def resource(_: Any) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"KeyConditionExpression": Key("pk").eq(partition)}
        items: list[dict[str, Any]] = []
        while True:
            response = table.query(**params)
            items.extend(response["Items"])
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            params["ExclusiveStartKey"] = last

    def pynamodb(_: Any) -> list[Any]:
        return list(engine.pynamodb.query(partition))

    def dyntastic(_: Any) -> list[Any]:
        return list(engine.dyntastic.query(partition))

    def pydynox(_: Any) -> list[Any]:
        return list(engine.pydynox.sync_query(partition_key=partition))

    def lsiorm(session: Any) -> Callable[[Any], list[Any]]:
        def run(_: Any) -> list[Any]:
            found: list[Any] = session.run(query_ops.all(session.ctx, lsiorm_query))
            return found

        return run

    def lsiorm_decode_item(_: Any) -> list[Any]:
        session = engine.session
        found: list[Any] = session.run(_decode_item_pages(session.ctx, lsiorm_query.compile()))
        return found

    count = len(data)
    check("raw query", len(raw(engine.client)(None)) == count)
    check("fast raw query", raw(engine.fast_client)(None) == raw(engine.client)(None))
    check("resource query", len(resource(None)) == count)
    check("pynamodb query", len(pynamodb(None)) == count)
    check("dyntastic query", len(dyntastic(None)) == count)
    check("pydynox query", len(pydynox(None)) == count)
    check("lsiorm query", lsiorm(engine.session)(None) == lsiorm_entities(data))
    check("slow lsiorm query", len(lsiorm(engine.slow_session)(None)) == count)
    check("decode_item pages", lsiorm_decode_item(None) == lsiorm_entities(data))
    variants = [
        Variant("boto3 client (wire dicts)", raw(engine.client)),
        Variant("boto3 client + lsiorm.fastjson (wire dicts)", raw(engine.fast_client)),
        Variant("boto3 Table resource (dicts)", resource),
        Variant("PynamoDB Model.query", pynamodb),
        Variant("dyntastic Model.query", dyntastic),
        Variant("pydynox Model.sync_query (Rust core, typed)", pydynox),
        Variant("lsiorm Session.all (fast path)", lsiorm(engine.session)),
        Variant("lsiorm Session.all (fast path off)", lsiorm(engine.slow_session)),
        Variant(PROPOSED_QUERY, lsiorm_decode_item),
    ]
    stats = fastjson.fast_path_of(engine.session.client)
    before = stats.stats.parsed if stats else 0
    measure(variants, rounds=rounds, warmup=2, clock=WALL)
    group = Group(
        "query",
        f"Full query of {count} items from DynamoDB Local, typed",
        WALL,
        variants[0].name,
        variants,
        count,
    )
    if stats is not None:
        group.notes.append(
            f"lsiorm's fast path parsed {stats.stats.parsed - before} Query responses and left "
            f"{stats.stats.fallbacks} to botocore."
        )
    return group


PROPOSED_QUERY = "lsiorm fast path, pages decoded by decode_item by hand"


def _decode_item_pages(ctx: Any, params: dict[str, Any]) -> Any:
    """Read every page of one compiled Query and decode its items with ``decode_item``.

    A stand-in for ``query_ops.decode`` calling ``decode_item`` when an item carries its type
    and every field (see docs/performance.md); it shows what the query path would cost then.
    """
    found: list[Any] = []
    while True:
        response = yield from call(ctx, "Query", params, (orders,))
        for item in response["Items"]:
            found.append(decode_item(orders, item, only=(Order,)))
        last = response.get("LastEvaluatedKey")
        if not last:
            return found
        params = {**params, "ExclusiveStartKey": last}


# -- batch writes, sync and async, wall time ------------------------------------------------------


def _raw_batches(items: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    requests = [{"PutRequest": {"Item": item}} for item in items]
    return [requests[i : i + BATCH] for i in range(0, len(requests), BATCH)]


def batch_write(
    engine: Engine,
    data: list[Row],
    rounds: int,
    peers: Sequence[Variant] = (),
    written: Callable[[], None] = lambda: None,
) -> list[Group]:
    """Write ``len(data)`` items with BatchWriteItem, sync and async.

    ``peers`` are more async variants (libraries in other processes) timed in the async rounds;
    ``written`` checks what the async rounds left in the tables.
    """
    entities = lsiorm_entities(data)
    wire = [wire_item(e) for e in entities]
    plain = plain_items(data)
    batches = _raw_batches(wire)
    pynamo_items = pynamodb_items(engine.pynamodb, data)
    dyn_items = dyntastic_items(engine.dyntastic, data)
    pdx_items = pydynox_items(engine.pydynox, data)
    table = engine.resource.Table(LSIORM_TABLE)

    def pydynox(_: Any) -> None:
        from pydynox import SyncBatchWriter

        with SyncBatchWriter(engine.pydynox.model_config.client, PYDYNOX_TABLE) as writer:
            for m in pdx_items:
                writer.put(m.to_dict())

    def lsiorm_botocore(_: Any) -> None:
        session = engine.lean_off_session
        session.run(lsiorm_batch.batch_write(session.ctx, puts=entities))

    def raw(_: Any) -> None:
        for chunk in batches:
            pending = chunk
            delay = 0.05
            while pending:
                response = engine.client.batch_write_item(RequestItems={LSIORM_TABLE: pending})
                pending = response.get("UnprocessedItems", {}).get(LSIORM_TABLE, [])
                if pending:
                    time.sleep(delay)
                    delay *= 2

    def resource(_: Any) -> None:
        with table.batch_writer() as writer:
            for item in plain:
                writer.put_item(Item=item)

    def pynamodb(_: Any) -> None:
        with engine.pynamodb.batch_write() as writer:
            for m in pynamo_items:
                writer.save(m)

    def dyntastic(_: Any) -> None:
        with engine.dyntastic.batch_writer():
            for m in dyn_items:
                m.save()

    def lsiorm(_: Any) -> None:
        engine.session.run(lsiorm_batch.batch_write(engine.session.ctx, puts=entities))

    async def raw_async_run() -> None:
        # CONCURRENCY writers, each taking the next ready chunk as soon as its last one is
        # written (unprocessed items sent again after a back-off), as an application does.
        chunks = iter(batches)

        async def writer() -> None:
            for chunk in chunks:
                pending = chunk
                delay = 0.05
                while pending:
                    response = await engine.aclient.batch_write_item(
                        RequestItems={LSIORM_TABLE: pending}
                    )
                    pending = response.get("UnprocessedItems", {}).get(LSIORM_TABLE, [])
                    if pending:
                        await asyncio.sleep(delay)
                        delay *= 2

        await asyncio.gather(*(writer() for _ in range(CONCURRENCY)))

    def raw_async(_: Any) -> None:
        engine.run(raw_async_run())

    def lsiorm_async(_: Any) -> None:
        # What a user calls: the public method, entities in, written out (with the session's
        # tracing, capacity meter and deadline, which the operation alone would skip).
        result = engine.run(engine.asession.batch_write(entities, concurrency=CONCURRENCY))
        if result.written != len(entities):
            raise RuntimeError(f"batch_write wrote {result.written} of {len(entities)}")

    async def lsiorm_async_new_run() -> int:
        async with AsyncSession(endpoint_url=engine.url, region_name=REGION) as session:
            result = await session.batch_write(entities, concurrency=CONCURRENCY)
        return int(result.written)

    def lsiorm_async_new(_: Any) -> None:
        # The same, as a script or a Lambda cold start runs it: the session (its aioboto3
        # client and connections) is made for the batch.
        written = engine.run(lsiorm_async_new_run())
        if written != len(entities):
            raise RuntimeError(f"batch_write wrote {written} of {len(entities)}")

    sync = [
        Variant("boto3 client batch_write_item", raw),
        Variant("boto3 Table resource batch_writer", resource),
        Variant("PynamoDB batch_write", pynamodb),
        Variant("dyntastic batch_writer", dyntastic),
        Variant("pydynox SyncBatchWriter (Rust core)", pydynox),
        Variant(LEAN_BATCH, lsiorm),
        Variant("lsiorm batch_write (Session, botocore lane)", lsiorm_botocore),
    ]
    concurrent = [
        Variant(f"aioboto3 client batch_write_item, {CONCURRENCY} writers", raw_async),
        Variant(ASYNC_BATCH, lsiorm_async),
        Variant(ASYNC_BATCH_NEW_SESSION, lsiorm_async_new),
        *peers,
    ]
    measure(sync, rounds=rounds, warmup=1, clock=WALL)
    # What comes before lsiorm's first request, every item encoded and checked, is timed in
    # the same rounds (it is not a row of the table).
    before = Variant(ENCODE_BEFORE, lambda _: write_entries(entities, ()))
    measure([*concurrent, before], rounds=rounds * 2, warmup=1, clock=WALL)
    written()
    count = len(data)
    raw_median, mine_median = concurrent[0].median, concurrent[1].median
    note = (
        f"Before its first request lsiorm encodes and checks all {count:,} items: "
        f"{before.median:.2f} s here, while the engine waits. The sending that follows takes "
        f"about {mine_median - before.median:.2f} s, "
        f"{(mine_median - before.median) / raw_median:.2f}x the raw client's whole run."
    )
    return [
        Group("batch-sync", f"Batch write of {count} items, sync", WALL, sync[0].name, sync, count),
        Group(
            "batch-async",
            f"Batch write of {count} items, async",
            WALL,
            concurrent[0].name,
            concurrent,
            count,
            notes=[note],
            aside={ENCODE_BEFORE: before.median},
        ),
    ]


LEAN_BATCH = "lsiorm batch_write (Session, lean lane)"
ASYNC_BATCH = f"lsiorm AsyncSession.batch_write, {CONCURRENCY} concurrent"
ASYNC_BATCH_NEW_SESSION = f"{ASYNC_BATCH}, a new session per batch"
#: The async batch's encoding and checking of every entity, before its first request, timed
#: on its own in the batch's rounds (``Group.aside`` of the async batch).
ENCODE_BEFORE = "lsiorm: encode and check the batch"


# -- single put and get, wall time ---------------------------------------------------------------

SINGLE_REPEAT = 20


def single_calls(engine: Engine, rounds: int) -> list[Group]:
    """One PutItem and one typed GetItem of the same order, by every library."""
    data = orders_for_single()
    entity = lsiorm_entities(data)[0]
    wire = wire_item(entity)
    key = {"pk": wire["pk"], "sk": wire["sk"]}
    pynamo = pynamodb_items(engine.pynamodb, data)[0]
    dyn = dyntastic_items(engine.dyntastic, data)[0]
    pdx = pydynox_items(engine.pydynox, data)[0]
    lean, botocore_lane = engine.session, engine.lean_off_session

    def put(session: Any) -> Callable[[Any], Any]:
        return lambda _: session.put(entity)

    def get(session: Any) -> Callable[[Any], Any]:
        return lambda _: session.get(Order, customer=entity.customer, order_no=entity.order_no)

    puts = [
        Variant(
            "boto3 client put_item (wire item ready)",
            lambda _: engine.client.put_item(TableName=LSIORM_TABLE, Item=wire),
        ),
        Variant("PynamoDB save", lambda _: pynamo.save()),
        Variant("dyntastic save", lambda _: dyn.save()),
        Variant("pydynox sync_save (Rust core)", lambda _: pdx.sync_save()),
        Variant(LEAN_PUT, put(lean)),
        Variant("lsiorm Session.put (botocore lane)", put(botocore_lane)),
    ]
    for v in puts:
        v.run(None)  # the items exist before the gets
    gets = [
        Variant(
            "boto3 client get_item (wire dict)",
            lambda _: engine.client.get_item(TableName=LSIORM_TABLE, Key=key),
        ),
        Variant("PynamoDB get", lambda _: engine.pynamodb.get(pynamo.pk, pynamo.sk)),
        Variant("dyntastic get", lambda _: engine.dyntastic.get(dyn.pk, dyn.sk)),
        Variant(
            "pydynox sync_get (Rust core)", lambda _: engine.pydynox.sync_get(pk=pdx.pk, sk=pdx.sk)
        ),
        Variant(LEAN_GET, get(lean)),
        Variant("lsiorm Session.get (botocore lane)", get(botocore_lane)),
    ]
    check("lsiorm get", get(lean)(None) == entity)
    check("lsiorm get, botocore lane", get(botocore_lane)(None) == entity)
    check("pydynox get", engine.pydynox.sync_get(pk=pdx.pk, sk=pdx.sk).note == entity.note)
    measure(puts, rounds=rounds, warmup=2, repeat=SINGLE_REPEAT, clock=WALL)
    measure(gets, rounds=rounds, warmup=2, repeat=SINGLE_REPEAT, clock=WALL)
    return [
        Group("put", "Single PutItem of one order", WALL, puts[0].name, puts, 1),
        Group("get", "Single typed GetItem of one order", WALL, gets[0].name, gets, 1),
    ]


LEAN_PUT = "lsiorm Session.put (lean lane)"
LEAN_GET = "lsiorm Session.get (lean lane)"


def orders_for_single() -> list[Row]:
    """The one order the single-call workloads write and read."""
    from .models import rows

    return rows(1, prefix="s")


# -- lsiorm's own CPU per written item, with a client that does nothing ---------------------------


class _StubClient:
    """A client whose BatchWriteItem does nothing: what is left is lsiorm's own work."""

    def batch_write_item(self, **params: Any) -> dict[str, Any]:
        return {"UnprocessedItems": {}}


def write_cpu(data: list[Row], rounds: int) -> Group:
    """lsiorm's CPU per written item (encode, size, identity, duplicates, chunks, hooks)."""
    entities = lsiorm_entities(data)
    plain = plain_items(data)
    serialize = TypeSerializer().serialize
    stub = Session(client=_StubClient())

    def boto3_wire(_: Any) -> Any:
        return [{k: serialize(v) for k, v in item.items()} for item in plain]

    def lsiorm(_: Any) -> Any:
        return stub.run(lsiorm_batch.batch_write(stub.ctx, puts=entities))

    check("stub batch", lsiorm(None).written == len(data))
    variants = [
        Variant("boto3 TypeSerializer from dicts (no request)", boto3_wire),
        Variant(STUB_WRITE, lsiorm),
    ]
    measure(variants, rounds=rounds, warmup=1, block=CPU_BLOCK, clock=CPU)
    return Group(
        "write-cpu",
        f"lsiorm's own CPU for a batch write of {len(data)} items to a stub client",
        CPU,
        variants[0].name,
        variants,
        len(data),
    )


STUB_WRITE = "lsiorm batch_write to a stub client (watcher on)"


# -- query compile and index choice against one round trip ---------------------------------------


def compile_and_choose(engine: Engine, rounds: int) -> Group:
    """Build a query, choose its index and compile the request; compare with one round trip."""
    customer = "c00000"

    def plan(_: Any) -> Any:
        return query(Order).where(customer=customer, status="PAID", created=gt(START)).plan()

    chosen = plan(None)
    check("index choice", chosen.index_name == "ByStatus")
    key = {"pk": {"S": f"CUST#{customer}"}, "sk": {"S": "ORDER#00000000"}}

    def round_trip(_: Any) -> Any:
        return engine.client.get_item(TableName=LSIORM_TABLE, Key=key)

    variants = [
        Variant("boto3 client GetItem round trip", round_trip),
        Variant("lsiorm query().where().plan(): compile + index choice", plan),
    ]
    measure(variants, rounds=rounds, warmup=2, repeat=50, clock=WALL)
    return Group(
        "compile",
        "Query compile + index choice, against one DynamoDB Local round trip",
        WALL,
        variants[0].name,
        variants,
        1,
        notes=[f"The plan chose {chosen.index_name!r} among the table and its LSI."],
    )


# -- import time ----------------------------------------------------------------------------------

#: The imports timed, baseline first: what a program runs to use each library. lsiorm's names
#: are looked up on first use, so ``import lsiorm`` alone loads little: its row imports what a
#: program's first get needs (the entity base class and the session).
LSIORM_IMPORT = "from lsiorm import Entity, Session"
IMPORTED = ("import boto3", LSIORM_IMPORT, "import pynamodb.models", "import pydynox")
_TIME_IMPORT = (
    "import sys, time; started = time.perf_counter(); {statement}; "
    "print(time.perf_counter() - started, 'aiohttp' in sys.modules)"
)


@dataclass
class ImportResult:
    """The import times (baseline ``import boto3``), and whether lsiorm pulled in aiohttp."""

    group: Group
    lsiorm_imports_aiohttp: bool


def _import_seconds(statement: str, env: dict[str, str]) -> tuple[float, bool]:
    """Run the import ``statement`` in a fresh interpreter: how long it took there, and whether
    it loaded aiohttp."""
    done = subprocess.run(
        [sys.executable, "-c", _TIME_IMPORT.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    seconds, aiohttp = done.stdout.split()
    return float(seconds), aiohttp == "True"


def import_time(rounds: int) -> ImportResult:
    """Time the import of each of ``IMPORTED``, each in a fresh subprocess, interleaved.

    The time is taken inside the subprocess around the import statement alone, so interpreter
    start-up is left out. Every round runs the imports in a new random order after one
    discarded warm-up round, which fills the OS file cache and writes the bytecode of every
    module imported (into a temporary folder, so as users have it even where
    PYTHONDONTWRITEBYTECODE is set).
    """
    variants = [Variant(statement, lambda _: None) for statement in IMPORTED]
    order = list(zip(IMPORTED, variants, strict=True))
    shuffle = random.Random(1).shuffle
    aiohttp = False
    with tempfile.TemporaryDirectory(prefix="lsiorm-bench-pyc-") as pyc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pyc
        for round_number in range(1 + rounds):
            shuffle(order)
            for statement, variant in order:
                seconds, pulled = _import_seconds(statement, env)
                if round_number:
                    variant.samples.append(seconds)
                aiohttp = aiohttp or (statement == LSIORM_IMPORT and pulled)
    extra = variants[1].median - variants[0].median
    group = Group(
        "import",
        "Import time, each in a fresh interpreter",
        WALL,
        variants[0].name,
        variants,
        1,
        notes=[
            f"{LSIORM_IMPORT} takes {extra * 1e3:.0f} ms more than import boto3. It loads "
            "pydantic, botocore's exceptions and lsiorm's model and session modules; boto3, "
            "the rest of botocore, aioboto3, aiohttp, asyncio, tenacity and orjson are "
            "imported when first needed (a session's first use), the query planner with the "
            "first query. import lsiorm alone loads only its error tree."
            + (" This run's import of lsiorm loaded aiohttp." if aiohttp else "")
        ],
    )
    return ImportResult(group, aiohttp)


# -- memory while iterating a large query ---------------------------------------------------------


@dataclass
class MemoryResult:
    """Peak traced memory (bytes) of three ways to read one large partition."""

    items: int
    pages: int
    one_page: int
    lazy: int
    eager: int


@contextmanager
def _traced() -> Iterator[list[int]]:
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def memory(engine: Engine, data: list[Row]) -> MemoryResult:
    """Trace peak memory while iterating a query lazily, against one page and a full list."""
    entities = lsiorm_entities(data)
    op = lsiorm_batch.batch_write(engine.asession.ctx, puts=entities, concurrency=CONCURRENCY)
    engine.run(engine.asession.run(op))
    del entities, op
    session = engine.session
    q = query(Order).where(customer=data[0].customer)
    with _traced() as one_page:
        for page in session.driver.iterate(query_ops.pages(session.ctx, q)):
            first = len(page.items)
            del page
            break
    count = pages = 0
    with _traced() as lazy:
        for page in session.driver.iterate(query_ops.pages(session.ctx, q)):
            count += len(page.items)
            pages += 1
            del page
    check("lazy iteration count", count == len(data))
    with _traced() as eager:
        everything = session.run(query_ops.all(session.ctx, q))
        check("eager count", len(everything) == len(data))
        del everything
    check("first page", first > 0)
    return MemoryResult(len(data), pages, one_page[0], lazy[0], eager[0])
