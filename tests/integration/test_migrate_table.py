"""Table migration on both engines: copy, catch-up from the stream, verify, switch, abandon.

The source is a table without local indexes, as an older release wrote it; the destination
is declared with the five reserved slots, one of them populated by the copy. After the switch
the destination must hold exactly the source's final items, re-derived (`assert_migrated`),
and no request of the migration may write the source.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lsiorm import (
    AsyncSession,
    Entity,
    HookRequest,
    MigrationWarning,
    RetryPolicy,
    Session,
    Table,
)
from lsiorm._cli import EXIT_OK, EXIT_USAGE
from lsiorm.errors import ValidationError
from lsiorm.testing import FaultInjector
from support.cli import app_module, run
from support.faults import FaultProxy
from support.jobs import Killed, session_on
from support.migration import (
    WRITES,
    PageReads,
    SourceWriters,
    assert_migrated,
    creates_only,
    declare_shop,
    scan_all,
    source_request,
    stream_records,
    stream_table,
    streamed_shop,
)

SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
# Each source writer's pause between writes: at CI's size twenty writes a second each, whatever
# the machine's speed (writers as fast as the machine lets them make the stream, and so the
# catch-up, as long as the run is slow); at full size as fast as they can.
WRITER_PAUSE = 0.01 if SCALE >= 0.1 else 0.05


class SourceGuard:
    """Records every write request that names the source table (there must be none); kills the
    migration after ``limit`` copies into the destination, when given."""

    def __init__(self, source: str, limit: int | None = None) -> None:
        self.source = source
        self.limit = limit
        self.source_writes: list[str] = []
        self.copies = 0
        self.lock = threading.Lock()

    def before(self, request: HookRequest) -> None:
        if request.operation not in WRITES:
            return
        params = request.params
        targets = {params.get("TableName"), *params.get("RequestItems", {})}
        for action in params.get("TransactItems", ()):
            targets.update(body.get("TableName") for body in action.values())
        if self.source in targets:
            self.source_writes.append(request.operation)
        if creates_only(request.operation, request.params):
            with self.lock:
                self.copies += 1
                if self.limit is not None and self.copies > self.limit:
                    raise Killed


@pytest.fixture
def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"src_{tag}", f"dst_{tag}"


def test_copy_catch_up_verify_and_switch(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=60)
    guard = SourceGuard(source)
    with session_on(endpoint_url, guard) as session:
        report = session.migrate_table(table, source, segments=2)
        assert (report.copied, report.as_stored, report.unmatched) == (61, 1, 0)
        assert report.verify is not None
        assert report.verify.clean, str(report)
        assert (report.verify.source, report.verify.matched) == (61, 61)
        assert report.verify.source_checksum == report.verify.destination_checksum
        assert report.ready
        assert report.created_destination
        # Changes after the copy reach the destination through the stream.
        dynamodb_client.put_item(**source_request("put", source, 1, note="late"))
        dynamodb_client.delete_item(**source_request("delete", source, 2))
        dynamodb_client.update_item(**source_request("update", source, 3, title="new"))
        dynamodb_client.update_item(**source_request("update", source, 6, status="paid"))
        dynamodb_client.put_item(**source_request("put", source, 900, note="born late"))
        final = session.migrate_table(table, source, finish=True)
        assert final.phase == "switched", str(final)
        assert final.applied >= 5
        assert final.lag_records == 0
        status = session.migrate_table(table, source, status=True)
        assert status.phase == "switched"
    assert guard.source_writes == []
    assert_migrated(dynamodb_client, source, dest, table)


def test_finish_does_not_switch_while_a_changed_item_differs(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=10)
    assert session.migrate_table(table, source).ready
    dynamodb_client.update_item(**source_request("update", source, 5, title="changed"))
    # Something else writes the destination's copy: the change's condition no longer holds.
    key = source_request("delete", source, 5)["Key"]
    dynamodb_client.update_item(
        TableName=dest,
        Key=key,
        UpdateExpression="SET title = :t",
        ExpressionAttributeValues={":t": {"S": "tampered"}},
    )
    final = session.migrate_table(table, source, finish=True)
    assert final.phase == "catch-up"
    assert final.verify is not None
    assert (final.verify.different, final.verify.source) == (1, 1)  # only the changed item
    assert final.verify.examples["different"] == [{"PK": "G#005", "SK": "CUSTOMER#000005"}]
    assert not final.ready


def test_a_session_with_a_table_prefix_migrates_its_tables(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], prefix: str
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=6, prefix=prefix)
    with session_on(endpoint_url, table_prefix=prefix) as session:
        assert session.migrate_table(table, source).ready
        dynamodb_client.delete_item(**source_request("delete", f"{prefix}{source}", 2))
        assert session.migrate_table(table, source, finish=True).phase == "switched"
    assert_migrated(dynamodb_client, f"{prefix}{source}", f"{prefix}{dest}", table)


def test_the_async_session_migrates_too(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=12)

    async def run() -> Any:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as session:
            await session.migrate_table(table, source)
            dynamodb_client.delete_item(**source_request("delete", source, 4))
            return await session.migrate_table(table, source, finish=True)

    report = asyncio.run(run())
    assert report.phase == "switched"
    assert_migrated(dynamodb_client, source, dest, table)


def test_a_source_without_both_images_is_refused_before_any_write(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=2, stream="")
    with pytest.raises(ValidationError) as refused:
        session.migrate_table(table, source)
    assert refused.value.rule == "migrate.no-stream"
    assert "StreamViewType=NEW_AND_OLD_IMAGES" in str(refused.value)
    keys_only = f"{source}k"
    stream_table(dynamodb_client, keys_only, items=2, stream="KEYS_ONLY")
    with pytest.raises(ValidationError) as refused:
        session.migrate_table(table, keys_only)
    assert refused.value.rule == "migrate.stream-view"
    assert dest not in dynamodb_client.list_tables()["TableNames"]


def test_a_destination_holding_other_items_is_refused(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=3)
    session.create_table(table)
    dynamodb_client.put_item(TableName=dest, Item={"PK": {"S": "X"}, "SK": {"S": "Y"}})
    with pytest.raises(ValidationError) as refused:
        session.migrate_table(table, source)
    assert refused.value.rule == "migrate.destination-not-empty"
    assert len(list(scan_all(dynamodb_client, dest))) == 1


def test_a_copy_that_may_outrun_the_stream_is_warned_about(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, _, table = streamed_shop(dynamodb_client, names, items=1)
    described = dynamodb_client.describe_table(TableName=source)["Table"]
    if not described.get("ItemCount"):
        pytest.skip("this engine reports no ItemCount right after the writes")
    with pytest.warns(MigrationWarning, match="24 h"):
        session.migrate_table(table, source, write_budget=1e-6, status=False)


def test_abandon_deletes_only_what_the_migration_created(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=8)
    before = sorted(map(repr, scan_all(dynamodb_client, source)))
    session.migrate_table(table, source)
    abandoned = session.migrate_table(table, source, abandon=True)
    assert abandoned.phase == "abandoned"
    assert dest not in dynamodb_client.list_tables()["TableNames"]
    assert sorted(map(repr, scan_all(dynamodb_client, source))) == before
    # A destination that existed before keeps existing; the items copied into it go.
    session.create_table(table)
    session.migrate_table(table, source)
    session.migrate_table(table, source, abandon=True)
    assert list(scan_all(dynamodb_client, dest)) == []
    assert sorted(map(repr, scan_all(dynamodb_client, source))) == before
    with pytest.raises(ValidationError) as unknown:
        session.migrate_table(table, source, status=True)
    assert unknown.value.rule == "migrate.unknown"


def test_a_copy_killed_and_resumed_copies_each_item_once(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=40)
    guard = SourceGuard(source, limit=17)
    with session_on(endpoint_url, guard) as doomed, pytest.raises(Killed):
        doomed.migrate_table(table, source, segments=3, page_size=5)
    guard.limit = None
    dynamodb_client.delete_item(**source_request("delete", source, 0))
    with session_on(endpoint_url, guard) as resumed:
        report = resumed.migrate_table(table, source, segments=3, page_size=5)
        # Each item copied once; a page cut short counted by its intent, not as present.
        assert report.present == 0
        assert report.copied in (40, 41)  # item 0 was deleted after the kill
        final = resumed.migrate_table(table, source, finish=True)
    assert final.phase == "switched", str(final)
    assert guard.source_writes == []
    assert_migrated(dynamodb_client, source, dest, table)


def _tamper(client: Any, dest: str) -> None:
    """Differences no change of the source explains: three items changed, two deleted and two
    added, in the destination itself."""
    for n in (3, 4, 8):
        client.update_item(
            TableName=dest,
            Key=source_request("delete", dest, n)["Key"],
            UpdateExpression="SET title = :t",
            ExpressionAttributeValues={":t": {"S": "tampered"}},
        )
    for n in (10, 21):
        client.delete_item(**source_request("delete", dest, n))
    for n in (900, 901):
        client.put_item(**source_request("put", dest, n))


def test_a_copy_whose_answers_are_lost_counts_each_item_copied_once(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    """A copy's put whose answer was lost after DynamoDB applied it finds its own item when it
    is sent again: it is counted as copied, not as an item that was there before."""
    source, dest = names
    items = 120
    stream_table(dynamodb_client, source, items=items)
    table, _ = declare_shop(dest)
    with FaultInjector(seed=42) as faults:
        faults.lose_answer("PutItem", rate=0.3, when=creates_only)
        report = session.migrate_table(table, source, segments=2, page_size=10)
    lost = faults.count("PutItem", fault="lost-answer")
    assert lost > 10, lost
    assert (report.copied, report.present) == (items + 1, 0), str(report)
    assert report.verify is not None
    assert report.verify.clean, str(report)


@pytest.mark.parametrize("phase", ["source", "extras"])
def test_a_verification_killed_and_resumed_reports_what_an_uninterrupted_one_does(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], phase: str
) -> None:
    source, dest, table = streamed_shop(dynamodb_client, names, items=40)
    shape = {"segments": 3, "page_size": 5}
    with session_on(endpoint_url) as session:
        assert session.migrate_table(table, source, **shape).ready
    _tamper(dynamodb_client, dest)
    killer = PageReads(dest if phase == "source" else source, limit=4)
    with session_on(endpoint_url, killer) as doomed, pytest.raises(Killed):
        doomed.migrate_table(table, source, **shape)
    killer.limit, killer.reads = None, 0
    with session_on(endpoint_url, killer) as session:
        resumed = session.migrate_table(table, source, **shape)
        resumed_reads, killer.reads = killer.reads, 0
        fresh = session.migrate_table(table, source, **shape)  # a new verification
        runs = [r.kind for r in session.jobs(table)]
    assert resumed.verify is not None
    assert fresh.verify is not None
    assert (fresh.verify.missing, fresh.verify.different, fresh.verify.extra) == (2, 3, 2)
    extra = sorted(key["SK"] for key in fresh.verify.examples["extra"])
    assert extra == ["CUSTOMER#000900", "ORDER#000901"]
    assert resumed.verify == fresh.verify
    # The pages the killed verification had read were not read again.
    assert 0 < resumed_reads < killer.reads
    # The runs of the verification before the last were deleted from the ledger.
    assert sorted(runs) == ["migrate-catch-up", "migrate-copy", "migrate-extra", "migrate-verify"]


def test_items_whose_key_format_changes_are_not_taken_for_extras(
    session: Session, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    """A customer's sort key gets a new format: its destination item does not carry its source
    key, so the scan for extras recognizes it from the derived keys of such items."""
    source, dest = names
    table = Table.with_reserved_lsi_slots(dest, "PK", "SK")

    class Customer(Entity, table=table, keys={"PK": "G#{group:03d}", "SK": "C#{n:08d}"}):
        group: int
        n: int
        title: str
        status: str = "new"

    stream_table(dynamodb_client, source, items=20)
    report = session.migrate_table(table, source, segments=2, page_size=4)
    assert report.verify is not None
    assert report.verify.clean, str(report)
    assert (report.verify.source, report.verify.extra) == (21, 0)
    held = {i["SK"]["S"] for i in scan_all(dynamodb_client, dest) if i["PK"]["S"] == "G#005"}
    assert "C#00000005" in held
    assert "CUSTOMER#000005" not in held
    # A stale twin at an old key is extra all the same.
    dynamodb_client.put_item(**source_request("put", dest, 10))
    again = session.migrate_table(table, source, segments=2, page_size=4)
    assert again.verify is not None
    assert (again.verify.extra, again.verify.examples["extra"]) == (
        1,
        [{"PK": "G#003", "SK": "CUSTOMER#000010"}],
    )


# -- at scale, with writers -----------------------------------------------------------------------


def _client_for(endpoint_url: str) -> Any:
    def make() -> Any:
        return boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")

    return make


def _migrate_under_writers(
    endpoint_url: str,
    direct_client: Any,
    names: tuple[str, str],
    session: Session,
    *,
    kill_after: int | None = None,
    share: float = 1.0,
) -> None:
    items = max(100, int(20_000 * SCALE * share))
    source, dest, table = streamed_shop(direct_client, names, items=items)
    guard = SourceGuard(source, limit=kill_after)
    session.add_hook(guard)
    with SourceWriters(
        _client_for(endpoint_url), source, items, threads=2, pause=WRITER_PAUSE
    ) as writers:
        if kill_after is not None:
            with pytest.raises(Killed):
                session.migrate_table(table, source, segments=4)
            guard.limit = None
        session.migrate_table(table, source, segments=4)
    assert writers.writes > 0
    final = session.migrate_table(table, source, finish=True)
    assert final.phase == "switched", str(final)
    assert guard.source_writes == []
    assert_migrated(direct_client, source, dest, table)


@pytest.mark.slow
def test_a_live_table_migrates_with_two_writers(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    with session_on(endpoint_url) as session:
        _migrate_under_writers(endpoint_url, dynamodb_client, names, session)


class CatchUpKiller:
    """Kills the migration at the catch-up's ``limit``-th write to the destination (a replay:
    any write to it but the copy's puts), while ``limit`` is set."""

    def __init__(self, destination: str, limit: int | None) -> None:
        self.destination = destination
        self.limit = limit
        self.writes = 0
        self.lock = threading.Lock()

    def before(self, request: HookRequest) -> None:
        params = request.params
        if request.operation == "TransactWriteItems":
            named = {
                b.get("TableName") for a in params.get("TransactItems", ()) for b in a.values()
            }
        elif request.operation in ("PutItem", "DeleteItem"):
            named = {params.get("TableName")}
        else:
            return
        copy = creates_only(request.operation, params)
        if self.destination not in named or copy or self.limit is None:
            return
        with self.lock:
            self.writes += 1
            if self.writes >= self.limit:
                raise Killed


@pytest.mark.slow
def test_a_catch_up_killed_mid_page_resumes_with_every_change_counted_once(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str]
) -> None:
    items = max(100, int(20_000 * SCALE))
    source, dest, table = streamed_shop(dynamodb_client, names, items=items)
    killer = CatchUpKiller(dest, limit=None)
    with session_on(endpoint_url, killer) as session:
        with SourceWriters(
            _client_for(endpoint_url), source, items, threads=2, pause=WRITER_PAUSE
        ) as writers:
            assert session.migrate_table(table, source, segments=4).phase == "catch-up"
            while writers.writes < items:  # changes for the next catch-up to apply
                time.sleep(0.05)
            killer.limit = max(5, items // 10)
            with pytest.raises(Killed):
                session.migrate_table(table, source, segments=4)
            killer.limit = None
            session.migrate_table(table, source, segments=4)
        final = session.migrate_table(table, source, finish=True)
    assert final.phase == "switched", str(final)
    assert_migrated(dynamodb_client, source, dest, table)
    # Every change in the stream was read once and counted once, whatever the kill cut short.
    counted = final.applied + final.skipped + final.before_copy + final.unapplied
    assert counted == stream_records(endpoint_url, source), str(final)
    assert final.applied > 0


@pytest.fixture
def faulty_session(endpoint_url: str) -> Iterator[Session]:
    kinds = ("throttle", "error500", "drop", "lost-response")
    retry = RetryPolicy(max_attempts=30, initial=0.0, maximum=0.01)
    with (
        FaultProxy(endpoint_url, rate=0.3, kinds=kinds, seed=28) as proxy,
        Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=retry) as s,
    ):
        yield s


@pytest.mark.slow
def test_a_live_table_migrates_under_faults_killed_and_resumed(
    endpoint_url: str, dynamodb_client: Any, names: tuple[str, str], faulty_session: Session
) -> None:
    kill = max(20, int(20_000 * SCALE) // 6)  # half the size: each request may fail
    _migrate_under_writers(endpoint_url, dynamodb_client, names, faulty_session, kill_after=kill)


# -- the command line -----------------------------------------------------------------------------

MODULE = """
from lsiorm import Entity, Table

shop = Table.with_reserved_lsi_slots("{name}", "PK", "SK")


class Order(
    Entity,
    table=shop,
    keys={{"PK": "G#{{group:03d}}", "SK": "ORDER#{{n:06d}}", "LSI1SK": "S#{{status}}"}},
):
    group: int
    n: int
    title: str
    status: str
"""


def test_the_command_line_migrates_reports_and_switches(
    endpoint_url: str,
    dynamodb_client: Any,
    names: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, dest = names
    stream_table(dynamodb_client, source, items=15)
    module = next(app_module(tmp_path, monkeypatch, MODULE.format(name=dest), "shop"))
    url = ("--endpoint-url", endpoint_url)
    code, out = run("migrate-table", f"{module}:shop", "--source", source, *url)
    assert code == EXIT_OK, out
    assert "ready to switch" in out
    assert "16 copied" in out
    assert "13 kept as stored" in out  # the types this module does not declare
    dynamodb_client.delete_item(**source_request("delete", source, 1))
    code, out = run("migrate-table", f"{module}:shop", "--source", source, "--status", *url)
    assert code == EXIT_OK, out
    code, out = run("migrate-table", f"{module}:shop", "--source", source, "--finish", *url)
    assert code == EXIT_OK, out
    assert "switched" in out
    code, listed = run("jobs", f"{module}:shop", *url)
    assert "migrate-copy" in listed
    code, out = run("migrate-table", f"{module}:shop", "--source", source, "--abandon", *url)
    assert code == EXIT_OK, out
    assert dest not in dynamodb_client.list_tables()["TableNames"]
    code, _ = run("migrate-table", f"{module}:shop", "--source", f"{source}x", *url)
    assert code == EXIT_USAGE
