"""A table to migrate, writers that keep changing it, and the oracle of a migration.

The source table is as an older release wrote it: keys ``PK``/``SK``, the fields and the type
attribute, no index slots, and a stream with both images. The destination declaration
(`declare_shop`) has the five reserved local index slots, and ``Order`` fills LSI1SK from its
status. `assert_migrated` compares the destination with the source's final state item by item
and attribute by attribute, with a derivation of its own (every source attribute kept, LSI1SK
added to orders), and checks every derived key with the key audit.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lsiorm import Entity, Table
from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._model.key_check import check_item_keys, derived_keys
from lsiorm._model.wire import from_wire, same_item
from support.jobs import Killed
from support.tables import table_request
from support.writers import WriterThreads

__all__ = [
    "TYPES",
    "WRITES",
    "PageReads",
    "ShopRecord",
    "SourceWriters",
    "assert_migrated",
    "creates_only",
    "declare_shop",
    "scan_all",
    "source_item",
    "source_request",
    "stream_records",
    "stream_table",
    "streamed_shop",
]

TYPES = ("Customer", "Order", "Product", "Review", "Ticket")
#: The operations that write items (what a hook watching for writes to a table looks at).
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


_CREATE_ONLY = re.compile(r"attribute_not_exists\((#\w+)\)")


def creates_only(operation: str, params: Mapping[str, Any], partition_key: str = "PK") -> bool:
    """Whether a request puts an item only where none is (a migration's copy of an item, or a
    replayed insert), told by its condition on ``partition_key``, whatever its placeholder."""
    found = _CREATE_ONLY.fullmatch(params.get("ConditionExpression", ""))
    names = params.get("ExpressionAttributeNames") or {}
    return operation == "PutItem" and found is not None and names.get(found[1]) == partition_key


class ShopRecord(Entity):
    """What every type of the migrated shop carries (an abstract entity: no table)."""

    group: int
    n: int
    title: str
    status: str = "new"


def declare_shop(name: str) -> tuple[Table, dict[str, type[Entity]]]:
    """The destination: five reserved slots, the five `TYPES`; Order uses slot 1."""
    table = Table.with_reserved_lsi_slots(name, "PK", "SK")
    classes: dict[str, type[Entity]] = {}
    for kind in TYPES:
        keys = {"PK": "G#{group:03d}", "SK": kind.upper() + "#{n:06d}"}
        if kind == "Order":
            keys["LSI1SK"] = "STATUS#{status}#{n:06d}"
        classes[kind] = type(kind, (ShopRecord,), {}, table=table, keys=keys)
    return table, classes


def _key(n: int) -> dict[str, Any]:
    kind = TYPES[n % len(TYPES)]
    return {"PK": {"S": f"G#{n % 7:03d}"}, "SK": {"S": f"{kind.upper()}#{n:06d}"}}


def source_item(n: int, **fields: Any) -> dict[str, Any]:
    """Item ``n`` as the older release stored it (no slot attributes)."""
    item = {
        **_key(n),
        "_type": {"S": TYPES[n % len(TYPES)]},
        "group": {"N": str(n % 7)},
        "n": {"N": str(n)},
        "title": {"S": str(fields.get("title", f"item {n}"))},
        "status": {"S": str(fields.get("status", "new"))},
    }
    if "note" in fields:
        item["note"] = {"S": str(fields["note"])}
    return item


def source_request(operation: str, table: str, n: int, **fields: Any) -> dict[str, Any]:
    """The low-level request that puts, updates (``set`` the fields) or deletes item ``n``."""
    if operation == "put":
        return {"TableName": table, "Item": source_item(n, **fields)}
    if operation == "delete":
        return {"TableName": table, "Key": _key(n)}
    names = {f"#f{i}": name for i, name in enumerate(fields)}
    values = {f":f{i}": _wire(value) for i, value in enumerate(fields.values())}
    return {
        "TableName": table,
        "Key": _key(n),
        "UpdateExpression": "SET " + ", ".join(f"#f{i} = :f{i}" for i in range(len(fields))),
        "ConditionExpression": "attribute_exists(PK)",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _wire(value: Any) -> dict[str, Any]:
    return {"N": str(value)} if isinstance(value, int) else {"S": str(value)}


def stream_table(client: Any, name: str, *, items: int, stream: str | None = None) -> None:
    """Create the source table (with a stream of ``stream`` images, both by default; "" for no
    stream) and put items 0..items-1, plus one item of a type no model declares."""
    spec: dict[str, Any] = {"StreamEnabled": True, "StreamViewType": stream or "NEW_AND_OLD_IMAGES"}
    streamed = {"StreamSpecification": spec} if stream != "" else {}
    client.create_table(**table_request(name, "PK", "SK", **streamed))
    client.get_waiter("table_exists").wait(TableName=name)
    for n in range(items):
        client.put_item(TableName=name, Item=source_item(n))
    legacy = {"PK": {"S": "LEGACY"}, "SK": {"S": "X"}, "_type": {"S": "Gone"}, "v": {"N": "1"}}
    client.put_item(TableName=name, Item=legacy)


def streamed_shop(
    client: Any,
    names: tuple[str, str],
    *,
    items: int,
    stream: str | None = None,
    prefix: str = "",
    declare: Callable[[str], tuple[Table, dict[str, type[Entity]]]] = declare_shop,
) -> tuple[str, str, Table]:
    """A migration's two ends: the source ``names[0]`` made by `stream_table` (under ``prefix``,
    as a session with that table prefix finds it) and the destination ``names[1]`` declared by
    ``declare``. Returns the source's and the destination's names and the destination table."""
    source, dest = names
    table, _ = declare(dest)
    stream_table(client, f"{prefix}{source}", items=items, stream=stream)
    return source, dest, table


def scan_all(client: Any, name: str) -> Iterator[dict[str, Any]]:
    """Every item of a table, read consistently."""
    for page in client.get_paginator("scan").paginate(TableName=name, ConsistentRead=True):
        yield from page["Items"]


def _expected(item: dict[str, Any], order: type[Entity]) -> dict[str, Any]:
    """The destination item of a source item: the same, and an order's keys as an order built
    from its fields derives them (LSI1SK, and a global index's where it declares one)."""
    out = dict(item)
    if item.get("_type") == {"S": "Order"}:
        fields = {name: from_wire(item[name]) for name in ("group", "n", "title", "status")}
        out.update(derived_keys(order(**fields)))
    return out


def assert_migrated(client: Any, source: str, destination: str, table: Table) -> None:
    """The destination holds exactly the source's items, derived: none lost, none resurrected,
    none stale; every key the declaration derives is correct."""

    def key(item: dict[str, Any]) -> tuple[str, str]:
        return item["PK"]["S"], item["SK"]["S"]

    order = table.entities["Order"]
    expected = {key(i): _expected(i, order) for i in scan_all(client, source)}
    held = {key(i): i for i in scan_all(client, destination) if i["PK"] != {"S": NAMESPACE}}
    lost = sorted(set(expected) - set(held))
    resurrected = sorted(set(held) - set(expected))
    stale = sorted(k for k in expected.keys() & held.keys() if not same_item(expected[k], held[k]))
    assert (lost, resurrected, stale) == ([], [], []), (
        f"{len(lost)} lost {lost[:5]}, {len(resurrected)} resurrected {resurrected[:5]}, "
        f"{len(stale)} stale {[(expected[k], held[k]) for k in stale[:3]]}"
    )
    for item in held.values():
        check = check_item_keys(table, item)
        assert check is None or check.current, check


class SourceWriters(WriterThreads):
    """``threads`` writers of the source table, each over its own items: put, update (a field,
    or an attribute no model declares), delete and re-create, until stopped. Each thread waits
    ``pause`` seconds between its writes: the rate of changes the migration must catch up with
    is the test's choice, not the machine's speed."""

    def __init__(
        self,
        make_client: Any,
        table: str,
        items: int,
        *,
        threads: int = 2,
        hot: float = 0.0,
        pause: float = 0.01,
    ) -> None:
        super().__init__(threads)
        self.make_client = make_client
        self.table = table
        self.items = items
        #: The share of writes that go to the items of one partition (``G#000``): a hot key.
        self.hot = hot
        self.pause = pause
        self.writes = 0

    def _run(self, number: int) -> None:
        from botocore.exceptions import ClientError

        rng = random.Random(number)
        client = self.make_client()
        mine = [n for n in range(self.items + 50) if n % self.threads == number]
        hot = [n for n in mine if n % 7 == 0]
        try:
            while not self._stop.wait(self.pause):
                n = rng.choice(hot if hot and rng.random() < self.hot else mine)
                operation = rng.choice(("put", "set", "status", "new-attribute", "delete"))
                try:
                    if operation == "put":
                        request = source_request("put", self.table, n, title=f"p{rng.random()}")
                        client.put_item(**request)
                    elif operation == "delete":
                        client.delete_item(**source_request("delete", self.table, n))
                    elif operation == "set":
                        fields = {"title": f"t{rng.randrange(1000)}"}
                        client.update_item(**source_request("update", self.table, n, **fields))
                    elif operation == "status":
                        fields = {"status": rng.choice(("new", "paid", "sent"))}
                        client.update_item(**source_request("update", self.table, n, **fields))
                    else:
                        fields = {f"x{rng.randrange(3)}": rng.randrange(10**6)}
                        client.update_item(**source_request("update", self.table, n, **fields))
                except ClientError as exc:
                    if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                        raise
                self.writes += 1
        except BaseException as exc:
            self.errors.append(exc)


class PageReads:
    """Counts the verification's page reads of ``table`` (a BatchGetItem naming it: the
    destination while the source's items are compared, the source while the destination is
    scanned for extras); kills the migration past ``limit`` of them, when given. `reached` is
    called with the count at each read, one read at a time (the units run in threads)."""

    def __init__(self, table: str, limit: int | None = None) -> None:
        self.table = table
        self.limit = limit
        self.reads = 0
        self.lock = threading.Lock()

    def before(self, request: Any) -> None:
        if request.operation != "BatchGetItem":
            return
        if self.table not in request.params.get("RequestItems", {}):
            return
        with self.lock:
            self.reads += 1
            self.reached(self.reads)

    def reached(self, reads: int) -> None:
        if self.limit is not None and reads > self.limit:
            raise Killed


def stream_records(endpoint_url: str, table: str) -> int:
    """How many records the stream of ``table`` holds, every shard read to its newest record
    with boto3's own client (brute force, for exact counts)."""
    import boto3
    from botocore.config import Config

    # Past five GetRecords a second on a shard a stream refuses (LimitExceededException, one of
    # botocore's throttling codes): try again after a pause.
    patient = Config(retries={"max_attempts": 30, "mode": "standard"})
    streams = boto3.client(
        "dynamodbstreams", endpoint_url=endpoint_url, region_name="us-east-1", config=patient
    )
    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shards, start = [], None
    while True:
        page = streams.describe_stream(
            StreamArn=arn, **({"ExclusiveStartShardId": start} if start else {})
        )["StreamDescription"]
        shards += page["Shards"]
        start = page.get("LastEvaluatedShardId")
        if not start:
            break
    total = 0
    for shard in shards:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            answer = streams.get_records(ShardIterator=iterator, Limit=1000)
            total += len(answer["Records"])
            if not answer["Records"]:
                break
            iterator = answer.get("NextShardIterator")
    return total
