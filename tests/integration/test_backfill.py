"""Backfill and re-key on each engine: only stale items, each exactly once, no write lost."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lsiorm
from lsiorm import AsyncSession, Entity, Session, Table, between, query
from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._jobs.resumable import JobProgress
from support.jobs import Killed, WriteLog, everything, session_on
from support.models import declare_doc

STALE = 30  # old items without LSI3SK
CURRENT = 12


def sk(n: int) -> str:
    return f"DOC#{n:04d}"


def seed(session: Session, name: str) -> tuple[Table, type[Entity]]:
    old_table, old_doc = declare_doc(name, lsi3=False)
    session.create_table(old_table)
    rng = random.Random(11)
    session.batch_write(
        [
            old_doc(user=f"u{n % 3}", n=n, title=f"t{n}", size=rng.randrange(50))
            for n in range(STALE)
        ]
    )
    table, doc = declare_doc(name, lsi3=True)
    session.batch_write(
        [doc(user=f"u{n % 3}", n=n, title=f"t{n}", size=7) for n in range(STALE, STALE + CURRENT)]
    )
    return table, doc


@pytest.fixture
def seeded(session: Session, table_name: str) -> Iterator[tuple[Table, type[Entity]]]:
    """The table with its stale and current items (:func:`seed`), deleted after the test."""
    table, doc = seed(session, table_name)
    try:
        yield table, doc
    finally:
        session.delete_table(table)


def lsi3_items(session: Session, doc: type[Entity]) -> list[Any]:
    found = []
    for user in ("u0", "u1", "u2"):
        found += session.all(query(doc).where(user=user).using("LSI3"))
    return found


def test_backfill_rewrites_only_stale_items(
    session: Session, endpoint_url: str, seeded: tuple[Table, type[Entity]], tmp_path: Path
) -> None:
    _, doc = seeded
    assert len(lsi3_items(session, doc)) == CURRENT  # the old items are missing from LSI3
    dry = session.backfill(doc, dry_run=True)
    assert dry.rewritten == STALE
    assert "LSI3" in dry.estimate.per_index  # the LSI write amplification is priced
    assert dry.estimate.table_units >= STALE
    assert session.audit_keys(doc).stale_items == STALE  # the dry run wrote nothing
    log = WriteLog()
    seen: list[JobProgress] = []
    with session_on(endpoint_url, log) as logged:
        report = logged.backfill(doc, segments=3, progress=seen.append)
    assert report.rewritten == STALE
    assert report.current == CURRENT
    assert report.failed == []
    assert set(log.writes) == {sk(n) for n in range(STALE)}
    assert set(log.writes.values()) == {1}
    assert seen[-1].segments_done == 3
    assert "rewritten: 30" in str(report)
    assert session.audit_keys(doc).clean
    assert len(lsi3_items(session, doc)) == STALE + CURRENT
    again = session.backfill(doc)
    assert (again.rewritten, again.current) == (0, STALE + CURRENT)
    # A finished run is never resumed: the same job again is a new run over everything.
    done = session.backfill(doc, segments=3)
    assert not done.resumed
    assert done.job != report.job
    assert (done.scanned, done.rewritten, done.current) == (STALE + CURRENT, 0, STALE + CURRENT)


@pytest.mark.parametrize("seed_value", [1, 2, 3])
def test_an_interrupted_backfill_resumes_and_rewrites_each_stale_item_once(
    session: Session,
    endpoint_url: str,
    seeded: tuple[Table, type[Entity]],
    tmp_path: Path,
    seed_value: int,
) -> None:
    _, doc = seeded
    limit = random.Random(seed_value).randrange(1, STALE)
    log = WriteLog(limit)
    with session_on(endpoint_url, log) as doomed, pytest.raises(Killed):
        doomed.backfill(doc, segments=2, page_size=4)
    assert sum(log.writes.values()) == limit
    log.limit = None
    log.sent = 0
    with session_on(endpoint_url, log) as resumed:
        report = resumed.backfill(doc, segments=2, page_size=4)
    assert report.resumed  # from the ledger, in the table itself
    # Each item is counted once across both runs: rewritten, whoever rewrote it.
    assert (report.scanned, report.rewritten, report.current) == (
        STALE + CURRENT,
        STALE,
        CURRENT,
    )
    assert set(log.writes) == {sk(n) for n in range(STALE)}  # current items untouched
    assert set(log.writes.values()) == {1}  # every stale item exactly once
    assert session.audit_keys(doc).clean
    assert len(lsi3_items(session, doc)) == STALE + CURRENT


def test_a_resumed_backfill_paces_to_the_budget_of_the_call_that_resumed_it(
    session: Session, endpoint_url: str, seeded: tuple[Table, type[Entity]]
) -> None:
    table, doc = seeded
    log = WriteLog(5)
    with session_on(endpoint_url, log) as doomed, pytest.raises(Killed):
        doomed.backfill(doc, segments=2, page_size=4, write_budget=100)
    (paused,) = session.jobs(table)
    assert (paused.state, paused.rate["write_target"]) == ("paused", 100.0)
    seen: list[dict[str, float]] = []

    def look(_: JobProgress) -> None:
        seen.append(session.jobs(table)[0].rate)  # what every worker reads from the ledger

    report = session.backfill(doc, segments=2, page_size=4, write_budget=4000, progress=look)
    assert report.resumed
    assert report.job == paused.id
    assert seen
    assert all(r["write_target"] == 4000.0 for r in seen), seen
    assert session.jobs(table)[0].rate == {"write": 4000.0, "write_target": 4000.0}


def test_a_concurrent_writer_loses_no_update(
    session: Session, endpoint_url: str, seeded: tuple[Table, type[Entity]]
) -> None:
    _, doc = seeded
    applied: Counter[int] = Counter()
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(5)
        with session_on(endpoint_url) as other:
            while not stop.is_set() or sum(applied.values()) < 40:
                n = rng.randrange(STALE + CURRENT)
                other.update(doc, user=f"u{n % 3}", n=n, add={"hits": 1})
                applied[n] += 1

    thread = threading.Thread(target=writer)
    try:
        thread.start()
        report = session.backfill(doc, segments=2)
        stop.set()
        thread.join(timeout=120)
        assert not thread.is_alive()
        assert report.failed == []
        for n in range(STALE + CURRENT):
            stored = session.get(doc, user=f"u{n % 3}", n=n, consistent=True)
            assert stored is not None
            assert stored.hits == applied[n], n  # type: ignore[attr-defined]
        audit = session.audit_keys(doc)
        assert audit.clean, str(audit)
    finally:
        stop.set()
        thread.join(timeout=120)


def test_a_rekey_to_a_wider_number_keeps_range_queries_exact(
    session: Session, table_name: str, tmp_path: Path
) -> None:
    old_table, old_doc = declare_doc(table_name, lsi3=False, width=4)
    session.create_table(old_table)
    rng = random.Random(3)
    old_ns = rng.sample(range(10_000), 40)
    session.batch_write([old_doc(user="u", n=n, title="t") for n in old_ns])
    new_table, new_doc = declare_doc(table_name, lsi3=False, width=6)
    new_ns = rng.sample(sorted(set(range(20_000)) - set(old_ns)), 10)
    session.batch_write([new_doc(user="u", n=n, title="t") for n in new_ns])
    try:
        report = session.backfill(new_doc)
        assert (report.rewritten, report.moved, report.current) == (40, 40, 10)
        assert session.audit_keys(new_doc).clean
        every = set(old_ns) | set(new_ns)
        assert len(session.all(query(new_doc).where(user="u"))) == len(every)
        for _ in range(15):
            low, high = sorted(rng.sample(range(20_000), 2))
            found = [d.n for d in session.all(query(new_doc).where(user="u", n=between(low, high)))]  # type: ignore[attr-defined]
            assert found == sorted(n for n in every if low <= n <= high)
        # Nothing is left under the old keys.
        raw = session.call(  # the items, without the ledger's partition
            "Scan",
            {
                "TableName": table_name,
                "FilterExpression": "attribute_exists(PK) AND PK <> :ledger",
                "ExpressionAttributeValues": {":ledger": {"S": NAMESPACE}},
            },
        )
        assert sorted(i["SK"]["S"] for i in raw["Items"]) == sorted(f"DOC#{n:06d}" for n in every)
    finally:
        session.delete_table(new_table)


def test_async_backfill(
    session: Session, endpoint_url: str, seeded: tuple[Table, type[Entity]]
) -> None:
    _, doc = seeded

    async def run() -> Any:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as s:
            return await s.backfill(doc, segments=4, write_budget=500)

    report = asyncio.run(run())
    assert (report.rewritten, report.current) == (STALE, CURRENT)
    assert session.audit_keys(doc).clean


def test_an_item_too_wide_for_a_condition_fails_alone(
    session: Session, seeded: tuple[Table, type[Entity]], table_name: str
) -> None:
    _, doc = seeded
    from lsiorm._ops.unchanged import unchanged_condition
    from lsiorm._requests.limits import MAX_EXPRESSION_BYTES
    from lsiorm.errors import ValidationError

    wide = {f"extra_attribute_{i:03d}": {"S": "x"} for i in range(300)}
    with pytest.raises(ValidationError, match=r"jobs\.condition-too-long"):
        unchanged_condition(wide, frozenset())
    expression, _, _ = unchanged_condition(dict(list(wide.items())[:100]), frozenset())
    assert len(expression) <= MAX_EXPRESSION_BYTES
    key = {"PK": {"S": "USER#u0"}, "SK": {"S": sk(0)}}
    item = session.call("GetItem", {"TableName": table_name, "Key": key})["Item"]
    session.call("PutItem", {"TableName": table_name, "Item": {**item, **wide}})
    report = session.backfill(doc)
    assert [key for key, _ in report.failed] == [{"PK": "USER#u0", "SK": sk(0)}]
    assert "jobs.condition-too-long" in report.failed[0][1]
    assert report.rewritten == STALE - 1
    assert session.audit_keys(doc).stale_items == 1


def prefixed_notes(table_name: str, prefix: str) -> tuple[Table, type[Entity]]:
    """A table of notes whose sort keys start with ``prefix``: a new prefix moves every one."""
    table = Table(table_name, "PK", "SK")

    class Note(Entity, table=table, keys={"PK": "U#{user}", "SK": prefix + "{n:04d}"}):
        user: str
        n: int

    return table, Note


@contextlib.contextmanager
def renamed_notes(
    session: Session, table_name: str, old: str, new: str, users: int, count: int
) -> Iterator[type[Entity]]:
    """``count`` notes of ``users`` users (one user is "u", more are "u0", "u1", ...) written
    under the sort key prefix ``old``; yields the note as declared with the prefix ``new``, and
    deletes the table after."""
    old_table, old_note = prefixed_notes(table_name, old)
    session.create_table(old_table)
    try:
        session.batch_write(
            [old_note(user=f"u{n % users}" if users > 1 else "u", n=n) for n in range(count)]
        )
        yield prefixed_notes(table_name, new)[1]
    finally:
        session.delete_table(old_table)


def test_items_moved_ahead_of_the_scan_are_not_counted_again(
    session: Session, table_name: str
) -> None:
    """A namespace rename moves every item to a key the scan has not reached yet."""
    with renamed_notes(session, table_name, "A#", "Z#", users=1, count=25) as new_note:
        report = session.backfill(new_note, partition="U#u", page_size=4, segments=1)
        assert (report.scanned, report.rewritten, report.moved, report.current) == (25, 25, 25, 0)
        assert session.audit_keys(new_note).clean


def test_the_same_backfill_after_a_stale_writer_rewrites_what_is_stale_now(
    session: Session, seeded: tuple[Table, type[Entity]], table_name: str
) -> None:
    _, doc = seeded
    """Rollout step 3: audit, find items a writer on the old release wrote, backfill again."""
    _, old_doc = declare_doc(table_name, lsi3=False)
    first = session.backfill(doc, segments=2)
    assert first.rewritten == STALE
    session.batch_write(  # a writer still on the old release
        [old_doc(user="u9", n=n, title="late") for n in range(100, 107)]
    )
    assert session.audit_keys(doc).stale_items == 7
    again = session.backfill(doc, segments=2)
    assert not again.resumed
    assert again.job != first.job
    assert (again.rewritten, again.current) == (7, STALE + CURRENT)
    assert session.audit_keys(doc).clean


@pytest.mark.parametrize(("prefix", "limit"), [("Z#", 9), ("Z#", 23), ("0#", 14)])
def test_a_resumed_rekey_counts_each_item_once(
    session: Session, endpoint_url: str, table_name: str, prefix: str, limit: int
) -> None:
    """Moves ahead of the scan (Z#) and behind it (0#), killed mid-run and resumed."""
    with renamed_notes(session, table_name, "M#", prefix, users=3, count=60) as new_note:
        log = WriteLog(limit)
        with session_on(endpoint_url, log) as doomed, pytest.raises(Killed):
            doomed.backfill(new_note, page_size=4, segments=2)
        log.limit = None
        with session_on(endpoint_url, log) as resumed:
            report = resumed.backfill(new_note, page_size=4, segments=2)
        assert report.resumed
        assert (report.scanned, report.rewritten, report.moved) == (60, 60, 60)
        assert (report.current, report.retried, report.gone, report.failed) == (0, 0, 0, [])
        assert set(log.writes.values()) == {1}
        assert len(log.writes) == 60
        assert session.audit_keys(new_note).clean


def test_a_checkpoint_of_0_2_still_runs_and_warns_that_the_ledger_replaced_it(
    session: Session, seeded: tuple[Table, type[Entity]], tmp_path: Path
) -> None:
    table, doc = seeded
    """lsiorm 0.2's calls gave checkpoint=: they keep working (the ledger resumes instead)."""
    with pytest.warns(DeprecationWarning, match="ledger") as caught:
        report = session.backfill(doc, checkpoint=tmp_path / "job.json")
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert report.rewritten == STALE
    assert not (tmp_path / "job.json").exists()  # no file is written any more
    with pytest.warns(DeprecationWarning, match="ledger"):
        relief = session.relieve_collection(
            table,
            "USER#u0",
            to_file=tmp_path / "old.jsonl",
            dry_run=True,
            checkpoint=tmp_path / "relief.json",
        )
    assert relief.dry_run


@pytest.mark.parametrize("ledger", [None, "jobs"], ids=["own-table", "ledger-table"])
def test_a_session_with_a_table_prefix_runs_key_jobs_on_its_own_tables(
    endpoint_url: str, table_name: str, ledger: str | None
) -> None:
    """The prefix is applied once: the ledger lives in the prefixed table (or the prefixed
    ledger table), never in a table named with the prefix twice."""
    prefix = "dev-"
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as dev:
        table, doc = seed(dev, table_name)
        ledger_table = None
        if ledger is not None:
            ledger_table = lsiorm.ledger_table(ledger)
            dev.create_table(ledger_table)
        try:
            report = dev.backfill(doc, segments=2, ledger=ledger)
            assert (report.rewritten, report.current) == (STALE, CURRENT)
            assert dev.audit_keys(doc, ledger=ledger).clean
            assert any(j.id == report.job for j in dev.jobs(table, ledger=ledger))
            live = dev.call("ListTables", {}).get("TableNames", [])
            assert not any(name.startswith(prefix * 2) for name in live), live
            # The session's own calls name tables as declared; its prefix puts them on the wire.
            stored = everything(dev, ledger or table_name, ledger=True)
            assert any(i["PK"]["S"] == NAMESPACE for i in stored)  # the ledger is there
        finally:
            dev.delete_table(table)
            if ledger_table is not None:
                dev.delete_table(ledger_table)
