"""One order row, modelled the way each library under test stores it, and the rows to store.

Every library stores the same 11 attributes per item: the keys ``pk`` and ``sk``, the LSI sort
key ``lsi1``, the type attribute ``_type``, and seven fields (two numbers, a timestamp, a list
of strings and a ~450-character note), about 700 bytes of DynamoDB JSON per item.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from pydantic import Field

from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Table

STATUSES = ("NEW", "PAID", "PACKED", "SHIPPED", "DELIVERED")
START = datetime(2024, 1, 1, tzinfo=timezone.utc)

LSIORM_TABLE = "bench_lsiorm"
PYNAMODB_TABLE = "bench_pynamodb"
DYNTASTIC_TABLE = "bench_dyntastic"

orders = Table(
    LSIORM_TABLE,
    partition_key="pk",
    sort_key="sk",
    local_indexes=[
        LocalIndex("ByStatus", KeyAttribute("lsi1"), Projection.all()),
    ],
)


class Order(
    Entity,
    table=orders,
    keys={
        "pk": "CUST#{customer}",
        "sk": "ORDER#{order_no:08d}",
        "lsi1": "{status}#{created}",
    },
):
    """An order: a customer's partition holds its orders, by number and by status and date."""

    customer: str
    order_no: int
    status: str
    total: Decimal
    created: datetime
    tags: list[str] = Field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class Row:
    """The library-neutral values of one order."""

    customer: str
    order_no: int
    status: str
    total: Decimal
    created: datetime
    tags: list[str]
    note: str


def rows(count: int, *, customers: int = 1, prefix: str = "c", seed: int = 7) -> list[Row]:
    """Return ``count`` orders spread evenly over ``customers`` partitions named ``prefix...``."""
    rnd = random.Random(seed)
    letters = string.ascii_letters + "      "
    out = []
    for i in range(count):
        out.append(
            Row(
                customer=f"{prefix}{i % customers:05d}",
                order_no=i,
                status=rnd.choice(STATUSES),
                total=Decimal(rnd.randint(100, 10_000_000)) / 100,
                created=START + timedelta(seconds=37 * i),
                tags=["gift", "express", "fragile", "bulk"][: i % 5],
                note="".join(rnd.choices(letters, k=450)),
            )
        )
    return out


def lsiorm_entities(data: list[Row]) -> list[Order]:
    """Return the rows as lsiorm entities."""
    return [
        Order(
            customer=r.customer,
            order_no=r.order_no,
            status=r.status,
            total=r.total,
            created=r.created,
            tags=list(r.tags),
            note=r.note,
        )
        for r in data
    ]


def plain_items(data: list[Row]) -> list[dict[str, Any]]:
    """Return the rows as the Python dicts a boto3 user writes (what lsiorm stores, unwrapped)."""
    return [
        {
            "pk": f"CUST#{r.customer}",
            "sk": f"ORDER#{r.order_no:08d}",
            "lsi1": f"{r.status}#{r.created.isoformat()}",
            "_type": "Order",
            "customer": r.customer,
            "order_no": r.order_no,
            "status": r.status,
            "total": r.total,
            "created": r.created.isoformat(),
            "tags": list(r.tags),
            "note": r.note,
        }
        for r in data
    ]


def pynamodb_model(host: str) -> Any:
    """Return a PynamoDB model class of the order, bound to the engine at ``host``."""
    from pynamodb.attributes import (
        ListAttribute,
        NumberAttribute,
        UnicodeAttribute,
        UTCDateTimeAttribute,
    )
    from pynamodb.models import Model

    class PynamoOrder(Model):
        class Meta:
            table_name = PYNAMODB_TABLE
            region = "us-east-1"

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        lsi1 = UnicodeAttribute()
        type_name = UnicodeAttribute(attr_name="_type")
        customer = UnicodeAttribute()
        order_no = NumberAttribute()
        status = UnicodeAttribute()
        total = NumberAttribute()
        created = UTCDateTimeAttribute()
        tags = ListAttribute(of=UnicodeAttribute)
        note = UnicodeAttribute()

    PynamoOrder.Meta.host = host
    return PynamoOrder


def pynamodb_items(model: Any, data: list[Row]) -> list[Any]:
    """Return the rows as instances of a :func:`pynamodb_model` class."""
    return [
        model(
            pk=f"CUST#{r.customer}",
            sk=f"ORDER#{r.order_no:08d}",
            lsi1=f"{r.status}#{r.created.isoformat()}",
            type_name="Order",
            customer=r.customer,
            order_no=r.order_no,
            status=r.status,
            total=float(r.total),
            created=r.created,
            tags=list(r.tags),
            note=r.note,
        )
        for r in data
    ]


def dyntastic_model(host: str) -> Any:
    """Return a dyntastic model class of the order, bound to the engine at ``host``."""
    from dyntastic import Dyntastic

    class DyntasticOrder(Dyntastic):
        __table_name__ = DYNTASTIC_TABLE
        __hash_key__ = "pk"
        __range_key__ = "sk"
        __table_host__ = host
        __table_region__ = "us-east-1"

        pk: str
        sk: str
        lsi1: str
        type_name: str = Field(alias="_type")
        customer: str
        order_no: int
        status: str
        total: Decimal
        created: datetime
        tags: list[str]
        note: str

    return DyntasticOrder


def dyntastic_items(model: Any, data: list[Row]) -> list[Any]:
    """Return the rows as instances of a :func:`dyntastic_model` class."""
    return [model(**item) for item in plain_items(data)]


def pydynox_items(model: Any, data: list[Row]) -> list[Any]:
    """Return the rows as instances of a :func:`pydynox_model` class."""
    out = []
    for item in plain_items(data):
        item["type_name"] = item.pop("_type")
        item["created"] = datetime.fromisoformat(item["created"])
        out.append(model(**item))
    return out
