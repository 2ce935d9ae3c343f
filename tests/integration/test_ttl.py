"""Time to live on the engines: create_table enables it once, check reads it, items expire.

The sessions, the command line and the fixtures of lsiorm.testing all enable TTL on the tables
they create.
"""

from __future__ import annotations

import calendar
import contextlib
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lsiorm import AsyncSession, Session, Table, cond, gt, query
from lsiorm._cli import EXIT_FOUND, EXIT_OK
from lsiorm.errors import ConditionFailedError, ResourceNotFoundError, ServiceValidationError
from lsiorm.testing import table_fixture
from support.cli import run
from support.models import TTL_CACHE, Entry, Timed
from support.tables import create_and_wait

UTC = timezone.utc


# -- on the engines -------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.operations: list[str] = []

    def before(self, request: Any) -> None:
        self.operations.append(request.operation)


@pytest.fixture
def session(endpoint_url: str, prefix: str) -> Iterator[Session]:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        yield s
        with contextlib.suppress(ResourceNotFoundError):  # a test that never created it
            s.delete_table(TTL_CACHE, wait=False)


def live_ttl(dynamodb_client: Any, name: str) -> dict[str, Any]:
    description: dict[str, Any] = dynamodb_client.describe_time_to_live(TableName=name)[
        "TimeToLiveDescription"
    ]
    return description


def test_create_table_enables_ttl_once(session: Session, prefix: str, dynamodb_client: Any) -> None:
    recorder = Recorder()
    session.add_hook(recorder)
    assert session.create_table(TTL_CACHE) is True
    live = live_ttl(dynamodb_client, f"{prefix}TtlCache")
    assert live["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    assert live["AttributeName"] == "expires_at"
    assert recorder.operations.count("UpdateTimeToLive") == 1
    report = session.check_table(TTL_CACHE)
    assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"], str(report)
    # Again, on the existing table: described, not enabled twice, no error.
    assert session.create_table(TTL_CACHE, exists_ok=True) is False
    assert recorder.operations.count("UpdateTimeToLive") == 1
    assert recorder.operations[-1] == "DescribeTimeToLive"


def test_check_reports_disabled_ttl_and_exists_ok_fixes_it(
    session: Session, prefix: str, dynamodb_client: Any
) -> None:
    name = f"{prefix}TtlCache"
    # Created by hand, without TTL, as an older deploy would have.
    create_and_wait(dynamodb_client, {**TTL_CACHE.create_table_request(), "TableName": name})
    report = session.check_table(TTL_CACHE)
    assert [d.kind for d in report.drifts] == ["ttl-disabled"]
    assert "never expire" in str(report)
    assert session.create_table(TTL_CACHE, exists_ok=True) is False
    assert live_ttl(dynamodb_client, name)["AttributeName"] == "expires_at"
    report = session.check_table(TTL_CACHE)
    assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"], str(report)


def test_check_reports_ttl_on_another_attribute_and_undeclared_ttl(
    session: Session, prefix: str, dynamodb_client: Any
) -> None:
    name = f"{prefix}TtlCache"
    create_and_wait(dynamodb_client, {**TTL_CACHE.create_table_request(), "TableName": name})
    dynamodb_client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "gone_at"}
    )
    report = session.check_table(TTL_CACHE)
    assert [d.kind for d in report.drifts] == ["ttl-attribute"]
    assert "'gone_at'" in str(report)
    recorder = Recorder()
    session.add_hook(recorder)
    session.create_table(TTL_CACHE, exists_ok=True)  # leaves TTL on another attribute alone
    assert "UpdateTimeToLive" not in recorder.operations
    assert live_ttl(dynamodb_client, name)["AttributeName"] == "gone_at"
    # The same live table seen by a declaration without TTL.
    undeclared = Table("TtlCache", "PK", "SK")
    report = session.check_table(undeclared)
    assert [d.kind for d in report.drifts] == ["ttl-undeclared"]


def test_items_round_trip_and_filter_on_expiry(session: Session, dynamodb_client: Any) -> None:
    session.create_table(TTL_CACHE)
    now = datetime.now(UTC).replace(microsecond=0)
    past = now - timedelta(hours=1)
    future = now + timedelta(hours=1, microseconds=123)
    stale = session.put(Entry(name="a", version=1, expires_at=past))
    fresh = session.put(Entry(name="a", version=2, expires_at=future))
    forever = session.put(Entry(name="a", version=3))
    raw = dynamodb_client.get_item(
        TableName=session.table_name(TTL_CACHE),
        Key={"PK": {"S": "E#a"}, "SK": {"S": "V#002"}},
    )["Item"]
    assert raw["expires_at"] == {"N": str(calendar.timegm(future.timetuple()))}
    got = session.get(Entry, name="a", version=2, consistent=True)
    assert got == fresh
    assert got is not None
    assert got.expires_at == future.replace(microsecond=0)
    # Expiry is asynchronous: a query filters out what has expired but is not deleted yet.
    unexpired = query(Entry).where(name="a").filter(cond("expires_at") > now).consistent()
    assert session.all(unexpired) == [fresh]
    alive = (
        query(Entry)
        .where(name="a")
        .filter(cond("expires_at").not_exists() | (cond("expires_at") > now))
    )
    assert session.all(alive.consistent()) == [fresh, forever]
    # Conditions compare numbers too. They are checked on the unexpired item: the engine's
    # expiry sweep may delete the expired one at any moment (DynamoDB Local does, within
    # seconds), so a condition on it could fail for that reason alone.
    with pytest.raises(ConditionFailedError):
        session.delete(Entry, name="a", version=2, condition=cond("expires_at") < now)
    session.delete(Entry, name="a", version=2, condition=cond("expires_at") > now)
    assert session.get(Entry, name="a", version=2, consistent=True) is None
    # Batches and updates store numbers as well.
    session.batch_write([Entry(name="b", version=n, expires_at=future) for n in (1, 2)])
    pair = session.batch_get(Entry, [{"name": "b", "version": 1}, {"name": "b", "version": 2}])
    assert sorted(e.version for e in pair if e is not None) == [1, 2]
    assert all(e is not None and e.expires_at == fresh.expires_at for e in pair)
    session.update(Entry, name="b", version=1, set={"expires_at": past})
    raw = dynamodb_client.get_item(
        TableName=session.table_name(TTL_CACHE), Key={"PK": {"S": "E#b"}, "SK": {"S": "V#001"}}
    )["Item"]
    assert raw["expires_at"] == {"N": str(calendar.timegm(past.timetuple()))}
    assert stale.expires_at == past


def test_epoch_seconds_in_a_sort_key_queries_in_order(session: Session) -> None:
    session.create_table(TTL_CACHE)
    base = datetime(2030, 1, 1, tzinfo=UTC)
    moments = [base + timedelta(seconds=s) for s in (5, -3, 40, 0)]
    session.batch_write([Timed(topic="t", at=m, expires_at=m) for m in moments])
    found = session.all(query(Timed).where(topic="t", at=gt(base)).consistent())
    assert [t.at for t in found] == sorted(m for m in moments if m > base)


async def test_async_session_enables_and_checks_ttl(endpoint_url: str, prefix: str) -> None:
    async with AsyncSession(
        endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix
    ) as s:
        assert await s.create_table(TTL_CACHE) is True
        try:
            report = await s.check_table(TTL_CACHE)
            assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"]
            assert await s.create_table(TTL_CACHE, exists_ok=True) is False
        finally:
            await s.delete_table(TTL_CACHE, wait=False)


MODELS = """
from lsiorm import Entity, EpochSeconds, Table

cache = Table("{name}", "PK", "SK", ttl_attribute="expires_at")
bare = Table("{name}", "PK", "SK")
"""


def test_cli_create_table_enables_ttl_and_check_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoint_url: str, dynamodb_client: Any
) -> None:
    module = f"ttl_app_{uuid.uuid4().hex[:8]}"
    name = f"ttl_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODELS).format(name=name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    url = ("--endpoint-url", endpoint_url)

    try:
        code, out = run("create-table", f"{module}:bare", *url)
        assert code == EXIT_OK
        assert "time to live" not in out
        code, out = run("check", f"{module}:cache", *url)
        assert code == EXIT_FOUND
        assert "Time to live is disabled" in out
        code, out = run("create-table", f"{module}:cache", "--exists-ok", *url)
        assert code == EXIT_OK
        assert "enabled time to live on 'expires_at'" in out
        code, out = run("check", f"{module}:cache", *url)
        assert code == EXIT_OK or "being enabled" in out, out
        code, out = run("check", f"{module}:bare", *url)
        assert code == EXIT_FOUND
        assert "the declaration sets no ttl_attribute" in out
    finally:
        dynamodb_client.delete_table(TableName=name)
        sys.modules.pop(module, None)


def test_dynamodb_refuses_to_enable_ttl_twice_as_a_typed_error(
    session: Session, backend: str
) -> None:
    """Why enable_ttl describes first: DynamoDB refuses to enable TTL that is already on."""
    if backend == "moto":
        pytest.skip("moto accepts enabling TTL twice; DynamoDB and DynamoDB Local refuse it")
    session.create_table(TTL_CACHE)
    with pytest.raises(ServiceValidationError, match="already enabled") as caught:
        session.call("UpdateTimeToLive", TTL_CACHE.update_ttl_request(), tables=[TTL_CACHE])
    assert caught.value.code == "ValidationException"
    assert session.create_table(TTL_CACHE, exists_ok=True) is False  # and this is no error


fixture_cache = Table(f"TtlFixture_{uuid.uuid4().hex[:8]}", "PK", "SK", ttl_attribute="expires_at")
ttl_tables = table_fixture(fixture_cache, name="ttl_tables")


def test_the_fresh_tables_of_lsiorm_testing_have_ttl_enabled(ttl_tables: Session) -> None:
    live = ttl_tables.client.describe_time_to_live(TableName=fixture_cache.name)
    assert live["TimeToLiveDescription"]["AttributeName"] == "expires_at"
    assert ttl_tables.check_table(fixture_cache).ok


class TestThePytestPlugin:
    @pytest.fixture
    def lsiorm_tables(self) -> list[Table]:
        return [TTL_CACHE]

    def test_its_fresh_tables_have_ttl_enabled(self, lsiorm_session: Session) -> None:
        live = lsiorm_session.client.describe_time_to_live(
            TableName=lsiorm_session.table_name(TTL_CACHE)
        )
        assert live["TimeToLiveDescription"]["AttributeName"] == "expires_at"
        assert lsiorm_session.check_table(TTL_CACHE).ok
