"""CRUD on both engines: put, get, update and delete, conditions, versions, drift, async."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from botocore.exceptions import ClientError

from lsiorm import AsyncSession, Entity, KeyAttribute, LocalIndex, Session, Table, cond, gt, where
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import (
    ConditionFailedError,
    NotFoundError,
    ServiceValidationError,
    StaleVersionError,
)
from support.models import declare_ranked_thread, ranked_forum_table

UTC = timezone.utc


@pytest.fixture
def forum(session: Session) -> Iterator[tuple[Table, type[Entity], type[Entity]]]:
    table = ranked_forum_table(f"crud_{uuid.uuid4().hex[:10]}")
    thread, doc = declare_ranked_thread(table)
    session.create_table(table)
    yield table, thread, doc
    session.delete_table(table, wait=False)


def raw(session: Session, table: Table, subject: str) -> dict[str, dict[str, str]]:
    item: dict[str, dict[str, str]] = session.client.get_item(
        TableName=table.name,
        Key={"ForumName": {"S": "S3"}, "Subject": {"S": subject}},
        ConsistentRead=True,
    )["Item"]
    return item


def test_put_get_update_delete(session: Session, forum: tuple[Table, type, type]) -> None:
    table, Thread, _ = forum
    t = Thread(forum="S3", subject="a", replies=3, tags={"x", "y"})
    session.put(t)
    got = session.get(Thread, forum="S3", subject="a", consistent=True)
    assert got == t
    assert "LastPostDateTime" not in raw(session, table, "T#a")  # sparse: no value, no key

    at = datetime(2015, 9, 1, 10, tzinfo=UTC)
    moved = session.update(
        Thread, forum="S3", subject="a", set={"last_post": at}, add={"replies": 2}
    )
    assert moved.last_post == at
    assert moved.replies == 5
    assert raw(session, table, "T#a")["LastPostDateTime"] == {"S": "2015-09-01T10:00:00.000000Z"}

    later = datetime(2016, 1, 1, tzinfo=UTC)
    moved2 = session.update(moved, set={"last_post": later})
    assert raw(session, table, "T#a")["LastPostDateTime"]["S"].startswith("2016-01-01")
    cleared = session.update(moved2, set={"last_post": None})
    assert cleared.last_post is None
    assert "LastPostDateTime" not in raw(session, table, "T#a")

    deleted = session.delete(Thread, forum="S3", subject="a")
    assert deleted is not None
    assert deleted.subject == "a"
    assert session.get(Thread, forum="S3", subject="a", consistent=True) is None
    with pytest.raises(NotFoundError):
        session.get(Thread, forum="S3", subject="a", consistent=True, required=True)


def test_update_through_instance_fills_unchanged_template_fields(
    session: Session, forum: tuple[Table, type, type]
) -> None:
    table, Thread, _ = forum
    t = session.put(Thread(forum="S3", subject="r", tier="gold", score=10))
    assert raw(session, table, "T#r")["RankKey"] == {"S": "RANK#gold#0010"}
    bumped = session.update(t, set={"score": 11})
    assert bumped.score == 11
    assert raw(session, table, "T#r")["RankKey"] == {"S": "RANK#gold#0011"}
    # The instance t still says score=10 while the tier is changed behind it: refused, not stale.
    session.update(bumped, set={"tier": "silver"})
    with pytest.raises(ConditionFailedError):
        session.update(t, set={"score": 12})
    assert raw(session, table, "T#r")["RankKey"] == {"S": "RANK#silver#0011"}


def test_create_only_and_conditions(session: Session, forum: tuple[Table, type, type]) -> None:
    _, Thread, _ = forum
    t = Thread(forum="S3", subject="c", replies=1)
    session.put(t, create_only=True)
    with pytest.raises(ConditionFailedError) as info:
        session.put(t, create_only=True)
    assert info.value.code == "ConditionalCheckFailedException"
    assert info.value.table is not None
    assert isinstance(info.value.__cause__, ClientError)

    with pytest.raises(ConditionFailedError):
        session.update(t, set={"replies": 5}, condition=cond("replies") > 3)
    updated = session.update(t, set={"replies": 5}, condition=cond("replies") == 1)
    assert updated.replies == 5
    with pytest.raises(ConditionFailedError):
        session.delete(t, condition=where(replies=gt(10)))


def test_update_of_missing_item_is_not_found(
    session: Session, forum: tuple[Table, type, type]
) -> None:
    _, Thread, _ = forum
    with pytest.raises(NotFoundError):
        session.update(Thread, forum="S3", subject="ghost", set={"replies": 1})
    assert session.get(Thread, forum="S3", subject="ghost", consistent=True) is None


def test_optimistic_locking(session: Session, forum: tuple[Table, type, type]) -> None:
    _, _, Doc = forum
    d1 = session.put(Doc(forum="S3", name="readme", body="v1"))
    assert d1.v == 1
    with pytest.raises(ConditionFailedError, match="already exists") as exists:
        session.put(Doc(forum="S3", name="readme", body="again"))  # version 0 means create
    assert not isinstance(exists.value, StaleVersionError)
    d2 = session.put(d1.model_copy(update={"body": "v2"}))
    assert d2.v == 2
    with pytest.raises(StaleVersionError):
        session.put(d1.model_copy(update={"body": "stale"}))
    d3 = session.update(d2, set={"body": "v3"})
    assert d3.v == 3
    with pytest.raises(StaleVersionError):
        session.update(d2, set={"body": "stale"})
    with pytest.raises(StaleVersionError):
        session.delete(d2)
    assert session.delete(d3) is not None


def test_a_versioned_write_whose_own_condition_fails_is_not_a_stale_version(
    session: Session, forum: tuple[Table, type, type]
) -> None:
    _, _, Doc = forum
    d1 = session.put(Doc(forum="S3", name="readme", body="v1"))
    writes = {
        "put": lambda d, c: session.put(d.model_copy(update={"body": "v2"}), condition=c),
        "update": lambda d, c: session.update(d, set={"body": "v2"}, condition=c),
        "delete": lambda d, c: session.delete(d, condition=c),
    }
    for name, write in writes.items():
        with pytest.raises(ConditionFailedError) as refused:
            write(d1, cond("body") == "other")  # the version holds; the condition does not
        assert not isinstance(refused.value, StaleVersionError), name
    assert session.get(Doc, forum="S3", name="readme", consistent=True) == d1
    d2 = session.put(d1.model_copy(update={"body": "v2"}))
    for write in writes.values():
        with pytest.raises(StaleVersionError):  # the version does not hold, the condition does
            write(d1, cond("body") == "v2")
        with pytest.raises(StaleVersionError):  # neither holds
            write(d1, cond("body") == "other")
    assert session.get(Doc, forum="S3", name="readme", consistent=True) == d2


def test_an_update_or_delete_through_the_class_checks_no_version(
    session: Session, forum: tuple[Table, type, type]
) -> None:
    _, _, Doc = forum
    d1 = session.put(Doc(forum="S3", name="readme", body="v1"))
    session.put(d1.model_copy(update={"body": "v2"}))  # d1 is stale now
    key = {"forum": "S3", "name": "readme"}
    assert session.update(Doc, key, set={"body": "v3"}).v == 3  # still incremented
    assert session.delete(Doc, key) is not None


def test_table_check_reports_no_drift_then_drift(
    session: Session, forum: tuple[Table, type, type]
) -> None:
    table, _, _ = forum
    assert session.check_table(table).ok
    wider = Table(
        table.name,
        partition_key="ForumName",
        sort_key="Subject",
        local_indexes=[*table.local_indexes, LocalIndex("Extra", KeyAttribute("ExtraSK"))],
    )
    report = session.check_table(wider)
    assert not report.ok
    assert "recreate" in str(report).lower()


def test_service_validation_is_typed(session: Session, forum: tuple[Table, type, type]) -> None:
    table, _, _ = forum
    from lsiorm._io.drivers import SyncDriver
    from lsiorm._ops.steps import Call
    from lsiorm._requests.items import get_request

    params = get_request(meta_of(forum[1]), {"forum": "S3", "subject": "a"})
    params["Key"] = {"ForumName": {"S": "S3"}}  # missing the sort key
    with pytest.raises(ServiceValidationError) as info:
        SyncDriver(session.client).send(Call("GetItem", params))
    assert info.value.code == "ValidationException"
    assert info.value.table == table.name


async def test_async_crud(endpoint_url: str) -> None:
    table = ranked_forum_table(f"acrud_{uuid.uuid4().hex[:10]}")
    Thread, _ = declare_ranked_thread(table)
    async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as s:
        await s.create_table(table)
        t = await s.put(Thread(forum="S3", subject="z", replies=1))
        assert await s.get(Thread, forum="S3", subject="z", consistent=True) == t
        moved = await s.update(t, set={"last_post": datetime(2020, 1, 1, tzinfo=UTC)})
        assert moved.last_post is not None
        assert await s.delete(moved) is not None
        assert (await s.check_table(table)).ok
        await s.delete_table(table)
