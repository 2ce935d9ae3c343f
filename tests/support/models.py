"""Entity and table declarations that several test files use.

A declaration a single test file needs stays in that file; one that two or more files need
lives here, once. Functions that take a table name declare a fresh table and fresh entity
classes on each call, for tests that create their tables on an engine.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from lsiorm import (
    Entity,
    EpochSeconds,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    Projection,
    Shard,
    Table,
)

# -- the forum of the DynamoDB LSI guide -------------------------------------------------------


def forum_table(
    name: str = "Thread", *, more_local_indexes: Sequence[LocalIndex] = (), **options: Any
) -> Table:
    """The Thread table of the DynamoDB LSI guide, with LastPostIndex projecting Replies.

    ``options`` go to :class:`Table` (global indexes, billing mode, ...).
    """
    return Table(
        name,
        "ForumName",
        "Subject",
        local_indexes=[
            LocalIndex(
                "LastPostIndex", KeyAttribute("LastPostDateTime"), Projection.include("Replies")
            ),
            *more_local_indexes,
        ],
        **options,
    )


#: The forum's index of threads by author, newest post last (keys only).
AUTHOR_INDEX = GlobalIndex(
    "AuthorIndex", KeyAttribute("Author"), KeyAttribute("LastPostDateTime"), Projection.keys_only()
)


def declare_thread(table: Table, *, type_name: str = "Thread") -> type[Entity]:
    """A forum thread on ``table`` (one of :func:`forum_table`'s); ``body`` is not projected."""

    class Thread(
        Entity,
        table=table,
        keys={"ForumName": "{forum}", "Subject": "{subject}", "LastPostDateTime": "{last_post}"},
        type_name=type_name,
    ):
        forum: str
        subject: str
        last_post: datetime | None = None
        replies: int = Field(default=0, alias="Replies")
        tags: list[str] = Field(default_factory=list, alias="Tags")
        body: str = ""

    return Thread


FORUM = forum_table()
Thread = declare_thread(FORUM)

# -- numbered items in groups, for tests of sessions and transports ----------------------------


def declare_grouped(stem: str) -> tuple[Table, type[Any]]:
    """A fresh table (its name starts with ``stem``) and an item numbered within its group."""
    table = Table(f"{stem}_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Item(Entity, table=table, keys={"pk": "G#{group}", "sk": "N#{n:04d}"}):
        group: str
        n: int
        body: str = ""
        hits: int = 0

    return table, Item


# -- orders and goals -------------------------------------------------------------------------


def declare_orders(name: str = "Orders") -> tuple[Table, type[Entity]]:
    """Orders by id, with a GSI by customer (status, then date) and one by status in 4 shards."""
    table = Table(
        name,
        partition_key="OrderId",
        global_indexes=[
            GlobalIndex("CustomerIndex", KeyAttribute("CustomerId"), KeyAttribute("StatusDate")),
            GlobalIndex("StatusIndex", KeyAttribute("StatusShard"), KeyAttribute("OrderDate")),
        ],
    )

    class Order(
        Entity,
        table=table,
        keys={
            "OrderId": "{order_id}",
            "CustomerId": "{customer}",
            "StatusDate": "{status}#{order_date}",
            "StatusShard": "{status}#{shard:02d}",
            "OrderDate": "{order_date}",
        },
    ):
        order_id: str
        customer: str
        status: str
        order_date: datetime
        shard: Annotated[int | None, Shard(4)] = None

    return table, Order


def declare_goals(name: str = "Goals") -> tuple[Table, type[Entity]]:
    """A country's goals per tournament, with an LSI on the goals (a Number sort key)."""
    table = Table(
        name,
        partition_key="Country",
        sort_key="Game",
        local_indexes=[
            LocalIndex("GoalsIndex", KeyAttribute("Goals", "N"), Projection.include("Matches"))
        ],
    )

    class Record(
        Entity, table=table, keys={"Country": "{country}", "Game": "{game}", "Goals": "{goals}"}
    ):
        country: str
        game: str
        goals: int
        matches: int = Field(default=0, alias="Matches")
        venue: str = ""

    return table, Record


# -- the key jobs: a document in two releases ------------------------------------------------


def _doc_keys(width: int, **slots: str | None) -> dict[str, str]:
    keys = {"PK": "USER#{user}", "SK": f"DOC#{{n:0{width}d}}"}
    keys.update({f"{slot}SK": template for slot, template in slots.items() if template})
    return keys


def declare_doc(name: str, *, lsi3: bool, width: int = 4) -> tuple[Table, type[Entity]]:
    """The key jobs' document, as an old release (no LSI3) or a new one (LSI3) declares it.

    ``width`` is the number of digits of ``n`` in the sort key (a re-key changes it).
    """
    table = Table.with_reserved_lsi_slots(name, "PK", "SK")
    keys = _doc_keys(width, LSI1="TITLE#{title}", LSI3="SIZE#{size:06d}#{n:06d}" if lsi3 else None)

    class Doc(Entity, table=table, keys=keys, type_name="Doc"):
        user: str
        n: int
        title: str
        size: int = 0
        hits: int = 0

    return table, Doc


def declare_dated_doc(name: str, *, lsi3: bool, width: int = 4) -> tuple[Table, type[Entity]]:
    """A document filed by day; the new release (``lsi3``) adds LSI3 to sort them by day."""
    table = Table.with_reserved_lsi_slots(name, "PK", "SK")
    keys = _doc_keys(width, LSI3="DAY#{day}#{n:06d}" if lsi3 else None)

    class Doc(Entity, table=table, keys=keys, type_name="Doc"):
        user: str
        n: int
        day: date
        body: str = ""

    return table, Doc


def declare_readings(name: str) -> tuple[Table, type[Entity]]:
    """A sensor's readings in one collection, with an LSI by day (what relief moves out)."""
    table = Table(name, "PK", "SK", local_indexes=[LocalIndex("ByDay", KeyAttribute("D"))])

    class Reading(Entity, table=table, keys={"PK": "S#{sensor}", "SK": "R#{n:05d}", "D": "{day}"}):
        sensor: str
        n: int
        day: date
        note: str = ""

    return table, Reading


# -- batches: a forum's posts and tags in one table, its users in another ----------------------


def declare_posts(posts: Table, users: Table) -> tuple[type[Entity], type[Entity], type[Entity]]:
    """A forum's posts and tags in one table, and its users in another."""

    class Post(Entity, table=posts, keys={"pk": "F#{forum}", "sk": "P#{n:04d}"}):
        forum: str
        n: int
        body: str = ""

    class Tag(Entity, table=posts, keys={"pk": "F#{forum}", "sk": "T#{tag}"}):
        forum: str
        tag: str

    class User(Entity, table=users, keys={"id": "{name}"}):
        name: str
        age: int = 0

    return Post, Tag, User


#: The posts, tags and users of the batch tests that build requests without an engine.
POSTS = Table("batch_posts", "pk", "sk")
USERS = Table("batch_users", "id")
Post, Tag, User = declare_posts(POSTS, USERS)


# -- transactions: an account and its ledger in one collection ---------------------------------


def declare_ledger(table: Table) -> tuple[type[Entity], type[Entity]]:
    """An account and the entries of its ledger, in one collection."""

    class Account(Entity, table=table, keys={"pk": "A#{owner}", "sk": "ACCOUNT"}):
        owner: str
        balance: int = 0

    class Entry(Entity, table=table, keys={"pk": "A#{owner}", "sk": "E#{n:05d}"}):
        owner: str
        n: int
        amount: int = 0

    return Account, Entry


# -- the forum ranked by tier and score -------------------------------------------------------


def ranked_forum_table(name: str) -> Table:
    """The forum's table, with a second LSI ranking threads by tier and score (keys only)."""
    return forum_table(
        name,
        more_local_indexes=[LocalIndex("ByRank", KeyAttribute("RankKey"), Projection.keys_only())],
    )


def declare_ranked_thread(table: Table) -> tuple[type[Entity], type[Entity]]:
    """A thread ranked by tier and score on ``table`` (a :func:`ranked_forum_table`), and a doc."""

    class Thread(
        Entity,
        table=table,
        keys={
            "ForumName": "{forum}",
            "Subject": "T#{subject}",
            "LastPostDateTime": "{last_post}",
            "RankKey": "RANK#{tier}#{score:04d}",
        },
    ):
        forum: str
        subject: str
        last_post: datetime | None = None
        tier: str | None = None
        score: int | None = None
        replies: int = Field(default=0, alias="Replies")
        tags: set[str] = Field(default_factory=set)

    class Doc(
        Entity, table=table, keys={"ForumName": "{forum}", "Subject": "D#{name}"}, version="v"
    ):
        forum: str
        name: str
        body: str = ""
        v: int = 0

    return Thread, Doc


# -- updates: a document with nested models, lists, sets and maps ------------------------------


class Line(BaseModel):
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    sku: str
    qty: int = Field(default=1, alias="q")


class Address(BaseModel):
    city: str
    zip: str | None = None
    lines: list[str] = Field(default_factory=list)


def declare_nested_doc() -> tuple[Table, type[Any]]:
    """A fresh table with an LSI and a GSI, and a document with nested models, lists and sets."""

    table = Table(
        f"upd_{uuid.uuid4().hex[:10]}",
        "pk",
        "sk",
        local_indexes=[LocalIndex("LSI1", KeyAttribute("lsi1"), projection=Projection.all())],
        global_indexes=[GlobalIndex("GSI1", KeyAttribute("gpk"), KeyAttribute("gsk"))],
    )

    class Doc(
        Entity,
        table=table,
        keys={"pk": "D#{did}", "sk": "DOC", "lsi1": "T#{title}", "gpk": "S#{status}"},
    ):
        did: str
        title: str
        status: str | None = "new"
        address: Address | None = None
        lines: list[Line] = Field(default_factory=list)
        labels: set[str] | None = None
        attrs: dict[str, int] = Field(default_factory=dict)
        views: int = 0
        history: list[str] = Field(default_factory=list)

    return table, Doc


# -- time to live: a cache whose entries expire -----------------------------------------------

#: A table with a TTL attribute; its entries expire at ``expires_at``.
TTL_CACHE = Table("TtlCache", "PK", "SK", ttl_attribute="expires_at")


class Entry(Entity, table=TTL_CACHE, keys={"PK": "E#{name}", "SK": "V#{version:03d}"}):
    name: str
    version: int = 1
    value: str = ""
    expires_at: EpochSeconds | None = None


class Timed(Entity, table=TTL_CACHE, keys={"PK": "T#{topic}", "SK": "AT#{at}"}):
    """EpochSeconds in a key template, and as a required TTL field."""

    topic: str
    at: EpochSeconds
    expires_at: EpochSeconds


# -- a document of every attribute type, scored on an LSI ---------------------------------------


def declare_scored_doc(name: str) -> tuple[Table, type[Entity]]:
    """A fresh table and a document with bytes, sets, decimals and lists, scored on an LSI."""

    table = Table(
        name,
        partition_key="pk",
        sort_key="sk",
        local_indexes=[LocalIndex("ByScore", KeyAttribute("lsi1", "N"), Projection.all())],
    )

    class Doc(Entity, table=table, keys={"pk": "D#{owner}", "sk": "{n:06d}", "lsi1": "{score}"}):
        owner: str
        n: int
        score: int | None = None
        blob: bytes = b""
        blobs: set[bytes] = Field(default_factory=set)
        price: Decimal = Decimal("0")
        note: str = ""
        tags: list[str] = Field(default_factory=list)

    return table, Doc


# -- kittens and puppies in one zoo: a sparse LSI slot, partition-only GSIs ---------------------

PETS = Table(
    f"exact_{uuid.uuid4().hex[:8]}",
    "PK",
    "SK",
    local_indexes=[
        LocalIndex("ByAge", KeyAttribute("AgeSK"), Projection.all()),
        LocalIndex("ByName", KeyAttribute("NameSK"), Projection.all()),
    ],
    global_indexes=[
        GlobalIndex("ByZone", KeyAttribute("Zone"), None, Projection.all()),
        GlobalIndex("ByZoneKeys", KeyAttribute("ZoneK"), None, Projection.keys_only()),
        GlobalIndex("ByZoneType", KeyAttribute("ZoneT"), None, Projection.include("_type")),
        GlobalIndex("ByMass", KeyAttribute("Area"), KeyAttribute("Mass", "N"), Projection.all()),
    ],
)


class Kitten(
    Entity,
    table=PETS,
    keys={
        "PK": "Z#{zoo}",
        "SK": "KITTEN#{name}",
        "AgeSK": "KITTEN#{age:03d}#{color}",
        "NameSK": "KITTEN#{name}#{indoor}",
        "Zone": "{zone}",
        "ZoneK": "{zone}",
        "ZoneT": "{zone}",
        "Area": "{zone}",
        "Mass": "{mass}",
    },
):
    zoo: str
    name: str
    age: int
    color: str | None = None
    zone: str = "north"
    mass: int = 0
    indoor: bool = False


class Puppy(
    Entity,
    table=PETS,
    keys={
        "PK": "Z#{zoo}",
        "SK": "PUPPY#{name}",
        "AgeSK": "PUPPY#{age:03d}",
        "Zone": "{zone}",
        "ZoneK": "{zone}",
        "ZoneT": "{zone}",
    },
):
    zoo: str
    name: str
    age: int
    zone: str = "north"


# -- the shop: a customer's orders, their items and its reviews in one partition --------------


def shop_table() -> Table:
    """A fresh table for :func:`declare_shop`."""
    return Table(f"shop_{uuid.uuid4().hex[:10]}", partition_key="PK", sort_key="SK")


class CustomerItem(Entity):
    """An item of a customer's partition in the shop (abstract: no table)."""

    customer_id: str


def _customer_keys(sort_key: str) -> dict[str, str]:
    return {"PK": "CUSTOMER#{customer_id}", "SK": sort_key}


def declare_shop(table: Table) -> dict[str, type[Entity]]:
    """A customer, its orders, each order's items and its reviews, in one partition."""

    class Customer(CustomerItem, table=table, keys=_customer_keys("PROFILE")):
        name: str = ""

    class Order(CustomerItem, table=table, keys=_customer_keys("ORDER#{order_id}")):
        order_id: str
        total: int = 0

    class OrderItem(
        CustomerItem, table=table, keys=_customer_keys("ORDER#{order_id}#ITEM#{line:03d}")
    ):
        order_id: str
        line: int
        sku: str = ""

    class Review(CustomerItem, table=table, keys=_customer_keys("REVIEW#{review_id}")):
        review_id: str

    return {
        "Customer": Customer,
        "Order": Order,
        "OrderItem": OrderItem,
        "Review": Review,
    }


# -- None is absence: optional fields, with and without defaults ------------------------------


def declare_optional_doc() -> tuple[Table, type[Any]]:
    """A fresh table and a document whose fields (keys of a GSI among them) may be None."""

    table = Table(
        f"absent_{uuid.uuid4().hex[:10]}",
        "pk",
        "sk",
        global_indexes=[
            GlobalIndex("GSI1", KeyAttribute("gpk"), KeyAttribute("gsk")),
        ],
    )

    class Doc(
        Entity,
        table=table,
        keys={"pk": "D#{did}", "sk": "D", "gpk": "S#{status}", "gsk": "R#{rev:05d}"},
    ):
        did: str
        status: str | None = None
        rev: int | None = None
        hits: int | None = None
        note: str | None
        tags: list[str] | None = None

    return table, Doc


DEFAULTS_TABLE = Table(f"absdef_{uuid.uuid4().hex[:8]}", "pk", "sk")


class WithDefaults(Entity, table=DEFAULTS_TABLE, keys={"pk": "W#{wid}", "sk": "W"}):
    """A document whose optional fields default to something other than None."""

    wid: str
    count: int | None = 5
    labels: list[str] | None = Field(default_factory=lambda: ["x"])
    note: str | None = None
    must: str | None


# -- multi-attribute GSI keys: tasks and bugs of a tenant, by priority, due date and title -----


class TaskStatus(str, Enum):
    """A task's state (a str enum, stored as its value)."""

    OPEN = "open"
    DONE = "done"


def tasks_table(name: str, *, projection: Projection | None = None) -> Table:
    """A table with two multi-attribute GSIs.

    ByTenant: partition (tenant, region), sorted by prio (N), due and title. ByOwner: partition
    owner, sorted by status and score (N), projecting the type attribute and title.
    """
    return Table(
        name,
        "PK",
        "SK",
        global_indexes=[
            GlobalIndex(
                "ByTenant",
                partition_key=["tenant", "region"],
                sort_key=[KeyAttribute("prio", "N"), "due", "title"],
                projection=projection or Projection.all(),
            ),
            GlobalIndex(
                "ByOwner",
                partition_key=["owner"],
                sort_key=["status", KeyAttribute("score", "N")],
                projection=Projection.include("_type", "title"),
            ),
        ],
    )


class TenantItem(Entity):
    """What a tenant's tasks, bugs and notes all carry (an abstract entity: no table)."""

    task_id: str
    tenant: str
    region: str


class Scheduled(TenantItem):
    """A tenant's item with a priority and a due date (the ByTenant sort key), and a title."""

    priority: int
    due_at: datetime
    title: str


def scheduled_keys(kind: str) -> dict[str, str]:
    """The keys of a scheduled item of ``kind``: its id, and its priority and due date for
    ByTenant's sort key."""
    return {"PK": f"{kind}#{{task_id}}", "SK": kind, "prio": "{priority}", "due": "{due_at}"}


def declare_tasks(table: Table) -> tuple[type[Entity], type[Entity], type[Entity]]:
    """Task and Bug share ByTenant (priority and due date copied, the rest stored as the keys);
    only Task is in ByOwner; Note binds part of ByTenant only, so it is in neither."""

    class Task(Scheduled, table=table, keys=scheduled_keys("TASK")):
        owner: str | None = None
        status: TaskStatus = TaskStatus.OPEN
        score: Decimal | None = None

    class Bug(Scheduled, table=table, keys=scheduled_keys("BUG")):
        severity: int = 1

    class Note(TenantItem, table=table, keys={"PK": "NOTE#{task_id}", "SK": "NOTE"}):
        title: str

    return Task, Bug, Note
