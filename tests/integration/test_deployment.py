"""Deployment settings: table names per environment, sessions from boto3 sessions and profiles."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import (
    AsyncSession,
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    Session,
    Table,
    fast_json_of,
    query,
)
from lsiorm._ops.naming import from_wire, prefixed, to_wire
from lsiorm._requests.transactions import Get, Put
from lsiorm.errors import MissingDependencyError

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


def test_prefix_and_resolver_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        Session(region_name="us-east-1", table_prefix="a-", table_names=str.upper)


# -- the renaming itself, as a property --------------------------------------------------------

names = st.text(alphabet="abcXYZ09_.-", min_size=3, max_size=12)


@given(tables=st.lists(names, min_size=1, max_size=4, unique=True), prefix=names)
def test_wire_names_round_trip(tables: list[str], prefix: str) -> None:
    resolve = prefixed(prefix)
    params = {
        "RequestItems": {t: {"Keys": [{"PK": {"S": t}}]} for t in tables},
        "TransactItems": [{"Put": {"TableName": t, "Item": {}}} for t in tables],
        "TableName": tables[0],
    }
    wire, back = to_wire(params, resolve)
    assert set(wire["RequestItems"]) == {prefix + t for t in tables}
    assert [a["Put"]["TableName"] for a in wire["TransactItems"]] == [prefix + t for t in tables]
    assert wire["TableName"] == prefix + tables[0]
    assert params["TableName"] == tables[0]  # the caller's params are not changed
    response = {
        "Responses": {prefix + t: [] for t in tables},
        "UnprocessedKeys": {prefix + t: {} for t in tables},
        "ConsumedCapacity": [{"TableName": prefix + t} for t in tables],
        "ItemCollectionMetrics": {prefix + t: [] for t in tables},
        "Table": {"TableName": prefix + tables[0]},
    }
    declared = from_wire("BatchWriteItem", response, back)
    assert set(declared["Responses"]) == set(tables)
    assert set(declared["UnprocessedKeys"]) == set(tables)
    assert [c["TableName"] for c in declared["ConsumedCapacity"]] == tables
    assert set(declared["ItemCollectionMetrics"]) == set(tables)
    assert declared["Table"]["TableName"] == tables[0]


# -- building the client ------------------------------------------------------------------------


def test_session_from_a_boto3_session(endpoint_url: str) -> None:
    base = boto3.session.Session(region_name="us-east-1")
    with Session(boto3_session=base, endpoint_url=endpoint_url) as s:
        assert s.client.meta.region_name == "us-east-1"
        assert fast_json_of(s.client) is not None


def test_session_from_a_profile(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    config.write_text("[profile lsiorm-test]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)  # the environment beats a profile
    with Session(profile_name="lsiorm-test") as s:
        assert s.client.meta.region_name == "eu-west-3"


def test_client_and_session_arguments_conflict() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(TypeError, match="not both"):
        Session(client, profile_name="default")


def test_a_client_passed_in_gets_the_fast_path_unless_turned_off() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    Session(client)
    assert fast_json_of(client) is not None
    other = boto3.client("dynamodb", region_name="us-east-1")
    Session(other, fast_json=False)
    assert fast_json_of(other) is None


def test_async_session_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "aioboto3" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependencyError, match=r"lsiorm\[async\]") as excinfo:
        AsyncSession(region_name="us-east-1")
    assert excinfo.value.extra == "async"
    assert isinstance(excinfo.value, ImportError)


def test_import_lsiorm_loads_no_async_stack() -> None:
    code = (
        "import sys, lsiorm, lsiorm.testing, lsiorm.errors\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aioboto3', 'aiobotocore', 'aiohttp', 'moto'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.skipif(
    importlib.util.find_spec("aioboto3") is not None, reason="the async extra is installed"
)
def test_async_session_without_aioboto3_installed() -> None:
    with pytest.raises(MissingDependencyError, match=r'pip install "lsiorm\[async\]"'):
        AsyncSession(region_name="us-east-1")


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
