"""Deployment settings on the engines: table names per environment, sessions from boto3 sessions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from lsiorm import (
    AsyncSession,
    ConditionFailedError,
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    Session,
    Table,
    ValidationError,
    cond,
    fast_json_of,
    query,
)
from lsiorm._requests.transactions import Get, Put

shop = Table(
    "Shop",
    "PK",
    "SK",
    local_indexes=[LocalIndex("ByPrice", KeyAttribute("LSI1"), Projection.keys_only())],
)


class Product(Entity, table=shop, keys={"PK": "S#{store}", "SK": "P#{sku}", "LSI1": "{price:06d}"}):
    store: str
    sku: str
    price: int
    note: str = ""


@pytest.fixture
def prefixed_session(endpoint_url: str, prefix: str) -> Iterator[Session]:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        assert s.create_table(shop) is True
        try:
            yield s
        finally:
            s.delete_table(shop, wait=False)


def live_items(dynamodb_client: Any, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dynamodb_client.scan(TableName=name, ConsistentRead=True)["Items"]
    return items


def test_every_operation_uses_the_prefixed_table(
    prefixed_session: Session, prefix: str, dynamodb_client: Any
) -> None:
    s = prefixed_session
    live = f"{prefix}Shop"
    assert s.table_name(shop) == live
    names = dynamodb_client.list_tables()["TableNames"]
    assert live in names
    assert "Shop" not in names  # the declared name alone never reaches the engine

    a, b, c = (Product(store="s1", sku=x, price=p) for x, p in (("a", 3), ("b", 1), ("c", 2)))
    s.put(a)
    s.batch_write([b, c])
    assert len(live_items(dynamodb_client, live)) == 3
    assert s.get(Product, store="s1", sku="a", consistent=True) == a
    assert s.update(Product, store="s1", sku="a", set={"note": "x"}).note == "x"
    assert [p.sku for p in s.all(query(Product).where(store="s1").using("ByPrice"))] == [
        "b",
        "c",
        "a",
    ]
    assert sorted(p.sku for p in s.batch_get(Product, [b, c], consistent=True)) == ["b", "c"]
    s.transact_write([Put(Product(store="s2", sku="d", price=9))])
    (got,) = s.transact_get([Get(Product, {"store": "s2", "sku": "d"})])
    assert isinstance(got, Product)
    assert got.price == 9
    assert s.audit_collection(shop, "S#s1").items == 3
    assert s.check_table(shop).ok
    s.delete(Product, store="s1", sku="a")
    assert len(live_items(dynamodb_client, live)) == 3  # b, c, d
    # The item-collection watcher saw the writes under the declared name.
    assert s.collections is not None
    assert s.collections.estimate(shop, "S#s1") is not None or not s.collections.estimates


def test_create_table_is_idempotent_with_exists_ok(prefixed_session: Session) -> None:
    assert prefixed_session.create_table(shop, exists_ok=True) is False
    assert prefixed_session.check_table(shop).ok


def test_missing_table_is_drift_named_by_its_live_name(endpoint_url: str, prefix: str) -> None:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        report = s.check_table(shop)
    assert not report.ok
    assert report.table == f"{prefix}Shop"
    assert f"{prefix}Shop" in str(report)


def test_errors_name_the_live_table_when_dynamodb_raises_them_and_the_declared_one_otherwise(
    prefixed_session: Session, prefix: str, dynamodb_client: Any
) -> None:
    s = prefixed_session
    s.put(Product(store="s", sku="k", price=1))
    with pytest.raises(ConditionFailedError) as refused:
        s.put(Product(store="s", sku="k", price=2), condition=cond("price") == 5)
    assert refused.value.table == f"{prefix}Shop"
    assert f"{prefix}Shop" in str(refused.value)
    with pytest.raises(ValidationError) as before_sending:
        s.get(Product, store=1, sku="k")
    assert (before_sending.value.rule, before_sending.value.table) == ("key.value-type", "Shop")
    stored = live_items(dynamodb_client, f"{prefix}Shop")[0]
    dynamodb_client.put_item(
        TableName=f"{prefix}Shop", Item={**stored, "price": {"S": "not a number"}}
    )
    with pytest.raises(ValidationError) as read:
        s.get(Product, store="s", sku="k")
    assert (read.value.rule, read.value.table) == ("item.invalid", "Shop")
    assert "of table 'Shop'" in str(read.value)


def test_consumed_capacity_is_under_the_declared_name(
    prefixed_session: Session, dynamodb_client: Any
) -> None:
    s = prefixed_session
    with s.capacity.measure() as measured:
        s.put(Product(store="s", sku="k", price=1))
        page = s.page(query(Product).where(store="s"))
    assert [c.table for c in measured.consumed] == ["Shop"]
    assert [c.table for c in page.consumed] == ["Shop"]
    assert list(s.capacity.totals) == ["Shop"]
    assert page.consumed[0].total > 0


def test_resolver_function(endpoint_url: str, dynamodb_client: Any) -> None:
    stage = uuid.uuid4().hex[:6]
    with Session(
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        table_names=lambda name: f"{name}.{stage}",
    ) as s:
        s.create_table(shop)
        try:
            s.put(Product(store="s", sku="k", price=1))
            assert len(live_items(dynamodb_client, f"Shop.{stage}")) == 1
        finally:
            s.delete_table(shop, wait=False)


def test_session_from_a_boto3_session(endpoint_url: str) -> None:
    base = boto3.session.Session(region_name="us-east-1")
    with Session(boto3_session=base, endpoint_url=endpoint_url) as s:
        assert s.client.meta.region_name == "us-east-1"
        assert fast_json_of(s.client) is not None


async def test_async_session_from_an_aioboto3_session_with_a_prefix(
    endpoint_url: str, prefix: str, dynamodb_client: Any
) -> None:
    aioboto3 = pytest.importorskip("aioboto3", reason="needs the async extra")
    base = aioboto3.Session(region_name="us-east-1")
    async with AsyncSession(
        aioboto3_session=base, endpoint_url=endpoint_url, table_prefix=prefix
    ) as s:
        assert fast_json_of(s.client) is not None
        assert await s.create_table(shop) is True
        try:
            await s.put(Product(store="a", sku="1", price=5))
            assert len(live_items(dynamodb_client, f"{prefix}Shop")) == 1
            got = await s.get(Product, store="a", sku="1", consistent=True)
            assert got is not None
            assert got.price == 5
            assert (await s.check_table(shop)).ok
        finally:
            await s.delete_table(shop, wait=False)
