"""The pytest plugin, used as an app would: a sample app in a folder outside this repository.

Each test writes a small shop app and its tests into a temporary folder and runs pytest there in
a subprocess, so nothing of lsiorm's own test setup (conftest.py, pyproject options) is in play.
"""

from __future__ import annotations

import importlib.util
import os
import re
import textwrap
from pathlib import Path

import pytest

from lsiorm.testing import DYNAMODB_LOCAL_DIR_ENV, ENDPOINT_URL_ENV
from support.apps import run_app
from support.paths import REPO

MODELS = """
from datetime import datetime

from pydantic import Field

from lsiorm import EpochSeconds, Entity, GlobalIndex, KeyAttribute, LocalIndex, Projection, Table

shop = Table(
    "Shop",
    "PK",
    "SK",
    local_indexes=[LocalIndex("ByPlaced", KeyAttribute("LSI1"), Projection.keys_only())],
    global_indexes=[GlobalIndex("ByEmail", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK"))],
    ttl_attribute="expires",
)


class Cart(
    Entity,
    table=shop,
    keys={"PK": "C#{cid}", "SK": "CART"},
    created_at="created",
    updated_at="changed",
):
    cid: str
    items: list[str] = Field(default_factory=list)
    expires: EpochSeconds | None = None
    created: datetime | None = None
    changed: datetime | None = None


class Customer(
    Entity,
    table=shop,
    keys={"PK": "C#{cid}", "SK": "PROFILE", "GSI1PK": "E#{email}", "GSI1SK": "C#{cid}"},
):
    cid: str
    email: str


class Order(
    Entity,
    table=shop,
    keys={"PK": "C#{cid}", "SK": "O#{oid}", "LSI1": "{placed}"},
    version="v",
):
    cid: str
    oid: str
    placed: str
    note: str = ""
    v: int = 0
"""

CONFTEST = """
import pytest

from shopapp.models import shop


@pytest.fixture
def lsiorm_tables():
    return [shop]
"""

TESTS = """
import pytest

from lsiorm import Put, missing_fields, query
from lsiorm.errors import ConditionFailedError
from shopapp.models import Customer, Order


@pytest.mark.parametrize("round_", [1, 2])
def test_each_test_starts_with_empty_tables(lsiorm_session, round_):
    # create_only fails if the item of the other round were still there
    lsiorm_session.put(Customer(cid="c1", email="a@x"), create_only=True)
    with pytest.raises(ConditionFailedError):
        lsiorm_session.put(Customer(cid="c1", email="a@x"), create_only=True)


def test_lsi_query_fetches_what_the_index_does_not_hold(lsiorm_session, lsiorm_engine):
    lsiorm_session.transact_write(
        [Put(Order(cid="c1", oid=str(i), placed=f"2026-01-0{i}", note=f"n{i}")) for i in (1, 2)]
    )
    orders = lsiorm_session.all(query(Order).where(cid="c1").using("ByPlaced"))
    assert [o.oid for o in orders] == ["1", "2"]
    if lsiorm_engine == "moto":  # moto does not fetch attributes outside the index
        assert all("note" in missing_fields(o) for o in orders)
    else:
        assert [o.note for o in orders] == ["n1", "n2"]


def test_gsi_and_drift(lsiorm_session):
    from shopapp.models import shop

    lsiorm_session.put(Customer(cid="c9", email="z@x"))
    assert lsiorm_session.check_table(shop).ok
    assert lsiorm_session.table_name(shop).endswith("-Shop")


def test_cart_upsert_append_ttl_and_timestamps(lsiorm_session):
    from datetime import datetime, timedelta, timezone

    from shopapp.models import Cart, shop

    later = datetime.now(timezone.utc) + timedelta(days=1)
    cart = lsiorm_session.update(
        Cart, cid="c5", append={"items": ["apple"]}, set={"expires": later}, upsert=True
    )
    cart = lsiorm_session.update(Cart, cid="c5", append={"items": ["pear"]}, upsert=True)
    assert cart.items == ["apple", "pear"]
    assert cart.expires == later.replace(microsecond=0)
    assert cart.created is not None and cart.changed >= cart.created
    raw = lsiorm_session.client.get_item(
        TableName=lsiorm_session.table_name(shop), Key={"PK": {"S": "C#c5"}, "SK": {"S": "CART"}}
    )["Item"]
    assert raw["expires"] == {"N": str(int(later.timestamp()))}
    assert lsiorm_session.check_table(shop).ok  # time to live is on


async def test_async_session(lsiorm_async_session):
    await lsiorm_async_session.put(Order(cid="c2", oid="1", placed="2026-02-01"))
    got = await lsiorm_async_session.get(Order, cid="c2", oid="1", consistent=True)
    assert got.placed == "2026-02-01"
"""

PYTEST_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


def write_app(root: Path) -> Path:
    app = root / "shop-app"
    (app / "shopapp").mkdir(parents=True)
    (app / "tests").mkdir()
    (app / "shopapp" / "__init__.py").write_text("")
    (app / "shopapp" / "models.py").write_text(textwrap.dedent(MODELS))
    (app / "tests" / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (app / "tests" / "test_shop.py").write_text(textwrap.dedent(TESTS))
    (app / "pytest.ini").write_text(PYTEST_INI)
    return app


@pytest.fixture
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outside-repo")
    assert REPO not in root.parents
    return write_app(root)


def test_sample_app_passes_on_moto_and_dynamodb_local(app: Path) -> None:
    if not os.environ.get(DYNAMODB_LOCAL_DIR_ENV):
        pytest.skip("DynamoDB Local is not configured for this run")
    code, output = run_app(app, "--lsiorm-engine", "moto,dynamodb-local")
    assert code == 0, output
    # 6 tests on each engine: both engines really ran the app's tests.
    if importlib.util.find_spec("aioboto3") is not None:
        assert re.search(r"\b12 passed\b", output), output
        assert "skipped" not in output, output
    else:  # a sync-only install: the async test skips, naming the extra to install
        assert re.search(r"\b10 passed, 2 skipped\b", output), output
        assert 'pip install "lsiorm[async]"' in output
    assert (
        "test_gsi_and_drift[dynamodb-local]"
        in run_app(app, "--collect-only", "-q", "--lsiorm-engine", "moto,dynamodb-local")[1]
    )


def test_a_missing_engine_skips_and_says_how_to_install_it(app: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop(DYNAMODB_LOCAL_DIR_ENV, None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty-cache")
    code, output = run_app(app, "--lsiorm-engine", "dynamodb-local", "-k", "empty_tables", env=env)
    assert code == 0, output
    assert "2 skipped" in output, output
    assert "npm install --prefix" in output
    assert DYNAMODB_LOCAL_DIR_ENV in output
    assert "make ddb-local" not in output


def test_a_missing_engine_fails_when_engines_are_required(app: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop(DYNAMODB_LOCAL_DIR_ENV, None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty-cache")
    args = ("--lsiorm-engine", "dynamodb-local", "--lsiorm-require-engines", "-k", "empty_tables")
    code, output = run_app(app, *args, env=env)
    assert code != 0, output
    assert "2 errors" in output, output
    assert "skipped" not in output, output
    assert "npm install --prefix" in output


def test_an_external_endpoint_is_used_when_set(app: Path) -> None:
    from lsiorm.testing import MotoServer

    with MotoServer() as server:  # stands for a DynamoDB Local the user runs in a container
        env = dict(os.environ, **{ENDPOINT_URL_ENV: server.endpoint_url})
        code, output = run_app(app, "-k", "gsi", env=env, external=True)
        tables = server_tables(server.endpoint_url)
    assert code == 0, output
    assert "1 passed" in output, output
    # The test's table (t<8 hex>-Shop) was created there and deleted after the test.
    assert not [t for t in tables if re.fullmatch(r"t[0-9a-f]{8}-Shop", t)]


def server_tables(url: str) -> list[str]:
    import boto3

    client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1")
    names: list[str] = client.list_tables()["TableNames"]
    return names


def test_tables_from_the_ini_option(app: Path) -> None:
    (app / "tests" / "conftest.py").write_text("")  # no lsiorm_tables fixture of its own
    ini = app / "pytest.ini"
    ini.write_text(ini.read_text() + "lsiorm_tables = shopapp.models:shop\n")
    code, output = run_app(app, "-k", "gsi")
    assert code == 0, output
    assert "1 passed" in output, output


def test_unknown_engine_is_a_usage_error(app: Path) -> None:
    code, output = run_app(app, "--lsiorm-engine", "postgres")
    assert code != 0
    assert "unknown engine 'postgres'" in output
