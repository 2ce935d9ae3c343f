"""GSI design for an Orders table and a Business directory, on moto or any endpoint.

Run it with ``.venv/bin/python examples/orders.py``. It shows one GSI (CustomerId, OrderDate)
answering several questions, the composite sort key Status:OrderDate (pending orders more than
five days old), a status GSI write-sharded over four partition keys and read with fan-out, and the
Business table's BusinessType / Country:State:City GSI queried with begins_with at each level.
Set LSIORM_ENDPOINT_URL to run it against another endpoint (DynamoDB Local, AWS).
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import date, timedelta
from decimal import Decimal
from enum import Enum
from typing import Annotated

from lsiorm import (
    Entity,
    GlobalIndex,
    KeyAttribute,
    Projection,
    Session,
    Shard,
    Table,
    begins_with,
    between,
    lt,
    query,
    shard_value,
)
from lsiorm.testing import example_endpoint

SHARDS = 4
TODAY = date(2024, 3, 20)
SUFFIX = uuid.uuid4().hex[:8]  # a fresh table name per run: the engine may be shared

orders = Table(
    f"Orders-{SUFFIX}",
    partition_key="OrderId",
    global_indexes=[
        # Seed query 1-3: by customer, sorted or ranged by date; projects OrderId/Date/Status.
        GlobalIndex(
            "CustomerDateIndex",
            KeyAttribute("CustomerId"),
            KeyAttribute("OrderDate"),
            Projection.include("status"),
        ),
        # Seed query 4: a customer's orders in one status, ranged by date.
        GlobalIndex("CustomerStatusIndex", KeyAttribute("CustomerId"), KeyAttribute("StatusDate")),
        # Orders in one status across all customers: a low-cardinality key, so it is sharded.
        GlobalIndex(
            "StatusIndex",
            KeyAttribute("StatusShard"),
            KeyAttribute("OrderDate"),
            Projection.keys_only(),
        ),
    ],
)


class Status(str, Enum):
    """An order's status."""

    PENDING = "PENDING"
    SHIPPED = "SHIPPED"
    DELIVERED = "DELIVERED"


class Order(
    Entity,
    table=orders,
    keys={
        "OrderId": "{order_id}",
        "CustomerId": "{customer_id}",
        "OrderDate": "{order_date}",
        "StatusDate": "{status}:{order_date}",
        "StatusShard": "{status}#{shard:02d}",
    },
):
    """An order; ``shard`` spreads one status over SHARDS partition keys of StatusIndex."""

    order_id: str
    customer_id: str
    order_date: date
    status: Status
    total: Decimal
    shard: Annotated[int, Shard(SHARDS)]


def new_order(order_id: str, customer_id: str, days_ago: int, status: Status, total: str) -> Order:
    """Build an order dated ``days_ago`` days before TODAY, with its shard derived from its key."""
    return Order(
        order_id=order_id,
        customer_id=customer_id,
        order_date=TODAY - timedelta(days=days_ago),
        status=status,
        total=Decimal(total),
        shard=shard_value(Order, "shard", {"order_id": order_id}),
    )


businesses = Table(
    f"Business-{SUFFIX}",
    partition_key="BusinessId",
    global_indexes=[
        GlobalIndex("TypeLocationIndex", KeyAttribute("BusinessType"), KeyAttribute("Location"))
    ],
)


class Business(
    Entity,
    table=businesses,
    keys={
        "BusinessId": "{business_id}",
        "BusinessType": "{business_type}",
        "Location": "{country}:{state}:{city}",
    },
):
    """A business listing; its GSI sort key is the composite Country:State:City."""

    business_id: str
    business_type: str
    country: str
    state: str
    city: str
    name: str
    phone: str


def main(endpoint_url: str) -> None:
    """Run the orders and business walkthroughs against one endpoint."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        for table in (orders, businesses):
            session.create_table(table)
            gsis = ", ".join(i.name for i in table.global_indexes)
            print(f"created table {table.name!r} with GSIs {gsis}")
        try:
            order_queries(session)
            business_queries(session)
        finally:
            for table in (orders, businesses):
                session.delete_table(table)
                print(f"deleted table {table.name!r}")


def order_queries(session: Session) -> None:
    """Write orders and answer the order questions through the three GSIs."""
    batch = [
        new_order("O-1001", "C-1", 30, Status.DELIVERED, "19.99"),
        new_order("O-1002", "C-1", 12, Status.PENDING, "5.00"),
        new_order("O-1003", "C-1", 7, Status.PENDING, "42.50"),
        new_order("O-1004", "C-1", 5, Status.PENDING, "8.25"),
        new_order("O-1005", "C-1", 2, Status.PENDING, "13.00"),
        new_order("O-1006", "C-1", 1, Status.SHIPPED, "99.00"),
        new_order("O-2001", "C-2", 20, Status.PENDING, "7.75"),
        new_order("O-2002", "C-2", 9, Status.SHIPPED, "61.10"),
        new_order("O-3001", "C-3", 15, Status.SHIPPED, "3.40"),
        new_order("O-3002", "C-3", 3, Status.SHIPPED, "25.00"),
    ]
    result = session.batch_write(batch)
    print(f"\nbatch_write: {result.written} orders in {result.calls} call(s); today is {TODAY}")
    for order in batch:
        print(
            f"  put {order.order_id} {order.customer_id} {order.order_date} "
            f"{order.status.value:<9} shard {order.shard}"
        )

    fields = ("order_id", "order_date", "status")
    by_customer = query(Order).where(customer_id="C-1").select(*fields)
    print("\nC-1's orders by date, with OrderId, OrderDate and Status (CustomerDateIndex):")
    print(by_customer.explain())
    for order in session.all(by_customer):
        print(f"  by customer: {order.order_id} {order.order_date} {order.status.value}")

    week = between(TODAY - timedelta(days=7), TODAY - timedelta(days=2))
    ranged = query(Order).where(customer_id="C-1", order_date=week).select(*fields)
    print(f"\nC-1's orders from {week.low} to {week.high}, the same index with a date range:")
    for order in session.all(ranged):
        print(f"  in range: {order.order_id} {order.order_date} {order.status.value}")

    days = 5
    cutoff = TODAY - timedelta(days=days)
    stale = query(Order).where(customer_id="C-1", status=Status.PENDING, order_date=lt(cutoff))
    print(f"\nC-1's PENDING orders more than {days} days old (before {cutoff}), Status:OrderDate:")
    print(stale.explain())
    for order in session.all(stale):
        print(f"  stale pending: {order.order_id} {order.order_date} total={order.total:.2f}")

    # Through the instance: the update knows order_date and shard, so both keys are rewritten.
    ships = session.get(Order, order_id="O-1003", consistent=True)
    assert ships is not None
    shipped = session.update(ships, set={"status": Status.SHIPPED})
    print(
        f"\nupdate {shipped.order_id} to {shipped.status.value}: "
        "its StatusDate and StatusShard keys move with it"
    )

    per_status = query(Order).where(status=Status.SHIPPED).select(*fields)
    print(f"\nevery SHIPPED order, from all {SHARDS} shards of StatusIndex, merged by OrderDate:")
    print(per_status.explain())
    for order in session.all(per_status):
        print(f"  shipped: {order.order_id} {order.order_date}")
    pending = query(Order).where(status=Status.PENDING)
    print(f"count of PENDING orders over all shards: {session.count(pending)}")
    spread = Counter(o.shard for o in batch)
    print(f"orders per shard: {dict(sorted(spread.items()))}")


def business_queries(session: Session) -> None:
    """Write business listings and query the BusinessType / Country:State:City GSI."""
    listings = [
        ("B1", "FitnessCenter", "USA", "Washington", "Seattle", "Business1", "111-111-1111"),
        ("B2", "CoffeeShop", "USA", "California", "PaloAlto", "Business2", "222-222-2222"),
        ("B3", "Restaurant", "India", "Maharashtra", "Mumbai", "Business3", "123-456-7890"),
        ("B4", "CoffeeShop", "USA", "Washington", "Seattle", "Business4", "444-444-4444"),
        ("B5", "CoffeeShop", "USA", "California", "San Jose", "Business5", "555-555-5555"),
        ("B6", "CoffeeShop", "USA", "California", "San Francisco", "Business6", "666-666-6666"),
        ("B7", "CoffeeShop", "Canada", "British Columbia", "Vancouver", "Business7", "777-7777"),
        ("B8", "Restaurant", "USA", "Washington", "Spokane", "Business8", "888-888-8888"),
        ("B9", "Restaurant", "USA", "Oregon", "Portland", "Business9", "999-999-9999"),
        ("B10", "FitnessCenter", "USA", "Washington", "Tacoma", "Business10", "101-010-1010"),
        ("B11", "Restaurant", "USA", "Washington", "Seattle", "Business11", "111-222-3333"),
    ]
    result = session.batch_write(
        [
            Business(
                business_id=bid,
                business_type=kind,
                country=country,
                state=state,
                city=city,
                name=name,
                phone=phone,
            )
            for bid, kind, country, state, city, name, phone in listings
        ]
    )
    print(f"\nbatch_write: {result.written} business listings")

    coffee_usa = query(Business).where(business_type="CoffeeShop", country="USA")
    print("\nall coffee shops in the USA (country level):")
    print(coffee_usa.explain())
    show(session.all(coffee_usa), "coffee shop in USA")

    washington = query(Business).where(
        business_type="Restaurant", country="USA", state="Washington"
    )
    print("\nall restaurants in the State of Washington (state level):")
    print(washington.explain())
    show(session.all(washington), "restaurant in Washington")

    seattle = query(Business).where(
        business_type="FitnessCenter", country="USA", state="Washington", city="Seattle"
    )
    print("\nall fitness centers in Seattle (city level, the whole key):")
    print(seattle.explain())
    show(session.all(seattle), "fitness center in Seattle")

    san = query(Business).where(
        business_type="CoffeeShop", country="USA", state="California", city=begins_with("San")
    )
    print("\ncoffee shops in Californian cities beginning with 'San' (a prefix of the city):")
    print(san.explain())
    show(session.all(san), "coffee shop in San*")


def show(found: list[Business], label: str) -> None:
    """Print each business found, one line each."""
    for b in found:
        print(f"  {label}: {b.name} ({b.city}, {b.state}, {b.country}) {b.phone}")
    print(f"  ({len(found)} found)")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
