"""Hierarchies and item collections on both engines, counting the requests actually sent.

The shop keeps a customer, its orders, each order's items and its reviews in one partition:
``PROFILE``, ``ORDER#{order_id}``, ``ORDER#{order_id}#ITEM#{line:03d}``, ``REVIEW#{review_id}``.
Order ids are chosen to be prefixes of each other and to hold characters around the separator,
so a key encoding or a key range that is not exact shows up as a wrong, missing or extra item.
Every answer is compared with a brute-force one computed from the items written.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import AsyncSession, Entity, Session, Table, begins_with, query
from support.engine_examples import engine_examples
from support.models import declare_shop, shop_table
from support.tables import session_with

ORDER_IDS = ["", "o1", "o1!", "o1 ", "o1#", "o1\x00", "o1\x01", "o10", "o2", "é", "\U0001f600"]


class Counter:
    """A hook that records every request sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.scanned: list[int] = []

    def before(self, request: Any) -> None:
        self.sent.append((request.operation, dict(request.params)))

    def after(self, request: Any, response: dict[str, Any]) -> None:
        self.scanned.append(int(response.get("ScannedCount", 0)))

    def queries(self) -> int:
        return sum(1 for operation, _ in self.sent if operation == "Query")

    def reset(self) -> None:
        self.sent.clear()
        self.scanned.clear()


def sample(kinds: dict[str, type[Entity]]) -> list[Entity]:
    rng = random.Random(12)
    items: list[Entity] = []
    for customer in ("c1", "c2"):
        items.append(kinds["Customer"](customer_id=customer, name=customer.upper()))
        for order_id in ORDER_IDS:
            items.append(kinds["Order"](customer_id=customer, order_id=order_id, total=1))
            for line in range(rng.randint(0, 3)):
                items.append(kinds["OrderItem"](customer_id=customer, order_id=order_id, line=line))
        for review in ("r1", "r2"):
            items.append(kinds["Review"](customer_id=customer, review_id=review))
    return items


def _sort_key(entity: Entity) -> tuple[Any, ...]:
    # The order a partition holds items in: by type namespace, then by field values as tuples.
    name = type(entity).__name__
    if name == "Customer":
        return ("PROFILE",)
    if name == "Review":
        return ("REVIEW#", entity.review_id)  # type: ignore[attr-defined]
    order = entity.order_id  # type: ignore[attr-defined]
    line = entity.line if name == "OrderItem" else -1  # type: ignore[attr-defined]
    return ("ORDER#", order, line)


def expected(items: list[Entity], names: set[str], **where: Any) -> list[Entity]:
    out = []
    for item in items:
        if type(item).__name__ not in names:
            continue
        if all(getattr(item, k) == v for k, v in where.items()):
            out.append(item)
    return sorted(out, key=_sort_key)


Shop = tuple[Session, Counter, dict[str, type[Entity]], list[Any]]


def walk_with_cursors(session: Session, q: Any, size: int) -> list[Entity]:
    """Every item of ``q``, read ``size`` at a time, each page resumed from the last cursor."""
    walked: list[Entity] = []
    cursor: str | None = None
    while True:
        page = session.page(q.limit(size).after(cursor))
        walked.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return walked


def asked(shop: Shop, names: tuple[str, ...], **where: Any) -> tuple[Any, list[Entity]]:
    """A query of the shop's types ``names`` over ``where``, and the items it must return."""
    _, _, kinds, items = shop
    q = query(*(kinds[name] for name in names)).where(**where)
    return q, expected(items, set(names), **where)


@pytest.fixture
def shop(
    endpoint_url: str,
) -> Iterator[tuple[Session, Counter, dict[str, type[Entity]], list[Any]]]:
    table = shop_table()
    kinds = declare_shop(table)
    counter = Counter()
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[counter]) as session:
        session.create_table(table)
        items = sample(kinds)
        session.batch_write(items)
        counter.reset()
        try:
            yield session, counter, kinds, items
        finally:
            session.delete_table(table, wait=False)


def test_order_and_its_items_in_one_query(shop: Any) -> None:
    session, counter, kinds, items = shop
    Order, OrderItem = kinds["Order"], kinds["OrderItem"]
    for order_id in ORDER_IDS:
        counter.reset()
        found = session.all(query(Order, OrderItem).where(customer_id="c1", order_id=order_id))
        want = expected(items, {"Order", "OrderItem"}, customer_id="c1", order_id=order_id)
        assert found == want, order_id
        assert counter.queries() == 1
        assert "FilterExpression" not in counter.sent[0][1]
        # Nothing but the order and its items was read.
        assert sum(counter.scanned) == len(want)


def test_an_order_alone_reads_no_item(shop: Any) -> None:
    session, counter, kinds, items = shop
    Order = kinds["Order"]
    for order_id in ORDER_IDS:
        counter.reset()
        found = session.all(query(Order).where(customer_id="c1", order_id=order_id))
        assert found == expected(items, {"Order"}, customer_id="c1", order_id=order_id)
        assert counter.queries() == 1
        assert counter.scanned == [1]


def test_the_items_of_one_order_only(shop: Any) -> None:
    session, counter, kinds, items = shop
    OrderItem = kinds["OrderItem"]
    for order_id in ORDER_IDS:
        counter.reset()
        q = query(OrderItem).where(customer_id="c1", order_id=order_id)
        want = expected(items, {"OrderItem"}, customer_id="c1", order_id=order_id)
        assert session.all(q) == want
        assert counter.queries() == 1
        assert sum(counter.scanned) == len(want)
        assert session.count(q) == len(want)


def test_all_orders_filter_out_items_and_count_exactly(shop: Any) -> None:
    session, counter, _, _ = shop
    q, want = asked(shop, ("Order",), customer_id="c1")
    assert session.all(q) == want
    assert counter.queries() == 1
    assert "FilterExpression" in counter.sent[0][1]
    assert "filtered on the type attribute" in str(q.explain())
    assert session.count(q) == len(want)
    assert session.all(q.descending()) == want[::-1]
    assert session.all(q.limit(3)) == want[:3]


def test_a_whole_collection_in_one_query(shop: Any) -> None:
    session, counter, _, _ = shop
    q, want = asked(shop, ("Customer", "Order", "OrderItem"), customer_id="c1")
    assert session.all(q) == want
    assert counter.queries() == 1
    assert "FilterExpression" not in counter.sent[0][1]
    assert sum(counter.scanned) == len(want)
    assert "one Query for Customer+Order+OrderItem" in str(q.explain())
    assert session.count(q) == len(want)
    assert session.all(q.descending()) == want[::-1]
    for size in (1, 2, 5):
        assert session.all(q.limit(size)) == want[:size]
        assert session.first(q.descending()) == want[-1]
        # Pages and cursors walk the collection exactly, whatever the page size.
        assert walk_with_cursors(session, q, size) == want
        assert [e for p in session.pages(q.page_size(size)) for e in p.items] == want


def test_types_with_another_type_between_them_get_one_query_each(shop: Any) -> None:
    session, counter, _, _ = shop
    q, want = asked(shop, ("Order", "Review"), customer_id="c2")
    assert session.all(q) == want
    # The customer's PROFILE lies between ORDER# and REVIEW#; separate Queries never read it.
    assert counter.queries() == 2
    assert "would also read Customer items" in str(q.explain())
    assert session.count(q) == len(want)
    assert session.all(q.descending().limit(4)) == want[::-1][:4]


def test_types_whose_separate_queries_read_the_same_others_share_one(shop: Any) -> None:
    session, counter, _, _ = shop
    q, want = asked(shop, ("Customer", "Order"), customer_id="c2")
    assert session.all(q) == want
    # Order items lie inside the orders' own range, so one filtered Query costs no more reads.
    assert counter.queries() == 1
    assert "FilterExpression" in counter.sent[0][1]
    assert "filtered on the type attribute to drop OrderItem" in str(q.explain())
    assert session.count(q) == len(want)


def test_begins_with_on_the_order_id_over_orders_and_items(shop: Any) -> None:
    session, counter, kinds, items = shop
    Order, OrderItem = kinds["Order"], kinds["OrderItem"]
    q = query(Order, OrderItem).where(customer_id="c1", order_id=begins_with("o1"))
    want = [
        e
        for e in expected(items, {"Order", "OrderItem"}, customer_id="c1")
        if e.order_id.startswith("o1")  # type: ignore[attr-defined]
    ]
    assert session.all(q) == want
    assert counter.queries() == 1
    assert session.count(q) == len(want)


async def test_a_whole_collection_in_one_query_async(endpoint_url: str) -> None:
    table = shop_table()
    kinds = declare_shop(table)
    counter = Counter()
    async with AsyncSession(
        endpoint_url=endpoint_url, region_name="us-east-1", hooks=[counter]
    ) as session:
        await session.create_table(table)
        items = sample(kinds)
        await session.batch_write(items)
        counter.reset()
        try:
            q = query(kinds["Customer"], kinds["Order"], kinds["OrderItem"]).where(customer_id="c2")
            want = expected(items, {"Customer", "Order", "OrderItem"}, customer_id="c2")
            assert await session.all(q) == want
            assert counter.queries() == 1
            assert await session.count(q) == len(want)
        finally:
            await session.delete_table(table, wait=False)


def test_an_address_hierarchy_level_by_level(endpoint_url: str) -> None:
    table = Table(f"map_{uuid.uuid4().hex[:10]}", partition_key="PK", sort_key="SK")

    class City(Entity, table=table, keys={"PK": "MAP#{book}", "SK": "{city}"}):
        book: str
        city: str

    class District(Entity, table=table, keys={"PK": "MAP#{book}", "SK": "{city}:{district}"}):
        book: str
        city: str
        district: str

    class Street(
        Entity, table=table, keys={"PK": "MAP#{book}", "SK": "{city}:{district}:{street}"}
    ):
        book: str
        city: str
        district: str
        street: str

    cities = ["London", "London ", "London!", "London:", "London:Westminster", "Londo", "Lo\x00"]
    districts = ["Westminster", "West", "Westminster:", "Westminster ", "\x01"]
    items: list[Entity] = []
    for city in cities:
        items.append(City(book="uk", city=city))
        for district in districts:
            items.append(District(book="uk", city=city, district=district))
            for street in ("Downing St", "", ":"):
                items.append(Street(book="uk", city=city, district=district, street=street))

    def tuple_key(e: Entity) -> tuple[Any, ...]:
        parts = [e.city, getattr(e, "district", None), getattr(e, "street", None)]  # type: ignore[attr-defined]
        return tuple((p is not None, p or "") for p in parts)

    counter = Counter()
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[counter]) as session:
        session.create_table(table)
        try:
            session.batch_write(items)
            for city in cities:
                counter.reset()
                q = query(City, District, Street).where(book="uk", city=city)
                want = sorted((e for e in items if e.city == city), key=tuple_key)  # type: ignore[attr-defined]
                assert session.all(q) == want, city
                assert counter.queries() == 1
                assert sum(counter.scanned) == len(want)
                assert session.count(q) == len(want)
                counter.reset()
                q = query(District, Street).where(book="uk", city=city, district="Westminster")
                want = [
                    e
                    for e in want
                    if isinstance(e, (District, Street)) and e.district == "Westminster"
                ]
                assert session.all(q) == want
                assert counter.queries() == 1
                assert sum(counter.scanned) == len(want)
        finally:
            session.delete_table(table, wait=False)


# -- random queries over the whole shop, against a brute-force answer ----------------------------


@pytest.fixture(scope="module")
def stocked(endpoint_url: str) -> Iterator[Shop]:
    table = shop_table()
    kinds = declare_shop(table)
    counter = Counter()
    with session_with(endpoint_url, table, wait=False, hooks=[counter]) as session:
        items = sample(kinds)
        session.batch_write(items)
        yield session, counter, kinds, items


@engine_examples(20)
@given(data=st.data())
def test_random_collection_queries_equal_brute_force(stocked: Shop, data: st.DataObject) -> None:
    session, counter, kinds, items = stocked
    names = data.draw(
        st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=4, unique=True), label="types"
    )
    customer = data.draw(st.sampled_from(["c1", "c2"]), label="customer")
    where: dict[str, Any] = {"customer_id": customer}
    prefix: str | None = None
    if set(names) <= {"Order", "OrderItem"}:
        choice = data.draw(st.sampled_from(["none", "eq", "prefix"]), label="order condition")
        if choice == "eq":
            where["order_id"] = data.draw(st.sampled_from(ORDER_IDS), label="order_id")
        elif choice == "prefix":
            prefix = data.draw(st.sampled_from(["", "o", "o1", "o1!", "é"]), label="prefix")
    q = query(*(kinds[n] for n in names)).where(**where)
    if prefix is not None:
        q = q.where(order_id=begins_with(prefix))
    want = [
        e
        for e in expected(items, set(names), **where)
        if prefix is None or e.order_id.startswith(prefix)  # type: ignore[attr-defined]
    ]
    if data.draw(st.booleans(), label="descending"):
        q, want = q.descending(), want[::-1]
    counter.reset()
    assert session.all(q) == want
    # Never more requests than types, and never more than needed by the key ranges.
    assert counter.queries() <= len(names)
    assert session.count(q) == len(want)
    size = data.draw(st.integers(1, 4), label="page size")
    assert walk_with_cursors(session, q, size) == want
    assert session.first(q) == (want[0] if want else None)
