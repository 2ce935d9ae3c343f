"""Key jobs in parallel segments: they really overlap under the sync Session, and stay exact.

The segments of an audit or a backfill run in threads under ``Session``. These tests prove the
overlap (a hook holds each segment's first request until every segment has sent one: run one
after another, the first would wait for ever, so the hook times out and the test fails), and
that the reports and the ledger stay exact: every count equals a brute-force count over the
stored items, and a job killed at a random point and resumed rewrites each stale item once.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Entity, Session, Table
from lsiorm._model.key_check import check_item_keys
from lsiorm._ops.hooks import HookRequest
from support.jobs import Killed, WriteLog, everything, on_ledger, session_on
from support.models import declare_doc

MEET_TIMEOUT = 30.0  # only a failing test waits this long


class Meet:
    """Holds each segment's first read until ``parties`` segments have each sent one."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=MEET_TIMEOUT)
        self.lock = threading.Lock()
        self.seen: set[Any] = set()
        self.missed: list[Any] = []

    def before(self, request: HookRequest) -> None:
        if request.operation != "Scan":
            return
        segment = request.params.get("Segment")
        with self.lock:
            first = segment not in self.seen
            self.seen.add(segment)
        if first:
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.missed.append(segment)


def seed_random(session: Session, name: str, rng: random.Random) -> tuple[Table, type[Entity]]:
    """Old items (no LSI3SK), current ones, some damaged, some of no declared type."""
    old_table, old_doc = declare_doc(name, lsi3=False)
    session.create_table(old_table)
    count = rng.randrange(20, 60)
    kinds = [rng.choice(["old", "new", "new", "stale", "extra", "untyped"]) for _ in range(count)]
    table, doc = declare_doc(name, lsi3=True)
    olds, news = [], []
    for n, kind in enumerate(kinds):
        fields = {"user": f"u{n % 4}", "n": n, "title": f"t{n}", "size": rng.randrange(100)}
        (olds if kind == "old" else news).append(
            (old_doc if kind == "old" else doc)(**fields)  # type: ignore[arg-type]
        )
    session.batch_write([*olds, *news])
    for n, kind in enumerate(kinds):
        key = {"PK": {"S": f"USER#u{n % 4}"}, "SK": {"S": f"DOC#{n:04d}"}}
        if kind == "stale":
            expression, value = "SET LSI1SK = :x", "TITLE#renamed"
        elif kind == "extra":
            expression, value = "SET LSI5SK = :x", "LEFTOVER"
        else:
            continue
        session.call(
            "UpdateItem",
            {
                "TableName": name,
                "Key": key,
                "UpdateExpression": expression,
                "ExpressionAttributeValues": {":x": {"S": value}},
            },
        )
    for n in range(count, count + kinds.count("untyped")):
        session.call(
            "PutItem", {"TableName": name, "Item": {"PK": {"S": "X"}, "SK": {"S": f"Y{n}"}}}
        )
    return table, doc


def brute_force(table: Table, items: list[dict[str, Any]]) -> dict[str, Any]:
    """What an audit of the whole table must count, item by item."""
    checks = [check_item_keys(table, item) for item in items]
    typed = [c for c in checks if c is not None]
    attributes: dict[str, Counter[str]] = {}
    for check in typed:
        for problem in check.problems:
            attributes.setdefault(problem.attribute, Counter())[problem.kind] += 1
    return {
        "scanned": len(items),
        "other": len(checks) - len(typed),
        "items": len(typed),
        "current": sum(c.current for c in typed),
        "attributes": attributes,
        "stale_keys": {c.stored_key["SK"]["S"] for c in typed if not c.current},
    }


@contextlib.contextmanager
def random_table(
    session: Session, name: str, seed: int
) -> Iterator[tuple[random.Random, Table, type[Entity], dict[str, Any]]]:
    """The table `seed_random` fills from ``seed``: yields the random source (to draw more from),
    the table, its document and what its `brute_force` count is; deletes the table after."""
    rng = random.Random(seed)
    table, doc = seed_random(session, name, rng)
    try:
        yield rng, table, doc, brute_force(table, everything(session, name))
    finally:
        session.delete_table(table)


# -- the segments overlap ----------------------------------------------------------------------


@pytest.mark.parametrize("job", ["audit", "backfill"])
def test_segments_overlap_under_the_sync_session(
    session: Session, endpoint_url: str, table_name: str, job: str
) -> None:
    table, doc = seed_random(session, table_name, random.Random(1))
    meet = Meet(3)
    try:
        with session_on(endpoint_url, meet) as met:
            if job == "audit":
                met.audit_keys(table, segments=3, page_size=4)
            else:
                met.backfill(doc, segments=3, page_size=4)
        assert meet.seen == {0, 1, 2}
        assert meet.missed == []  # every segment's first read was in flight at once
    finally:
        session.delete_table(table)


# -- and stay exact ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_parallel_reports_equal_a_brute_force_count(
    session: Session, endpoint_url: str, table_name: str, seed: int
) -> None:
    with random_table(session, table_name, seed) as (rng, table, doc, expected):
        segments, page_size = rng.randrange(2, 6), rng.randrange(1, 8)
        report = session.audit_keys(table, segments=segments, page_size=page_size)
        assert report.scanned == expected["scanned"]
        assert report.other == expected["other"]
        audit = report.entities["Doc"]
        assert (audit.items, audit.current) == (expected["items"], expected["current"])
        got = {
            name: Counter(
                {k: v for k, v in vars(tally).items() if k in ("stale", "missing", "extra") and v}
            )
            for name, tally in audit.attributes.items()
        }
        assert got == expected["attributes"]
        log = WriteLog()
        with session_on(endpoint_url, log) as logged:
            filled = logged.backfill(doc, segments=segments, page_size=page_size)
        assert filled.rewritten == len(expected["stale_keys"])
        assert filled.current == expected["current"]
        assert filled.scanned == expected["items"]
        assert set(log.writes) == expected["stale_keys"]
        assert set(log.writes.values()) <= {1}
        assert session.audit_keys(table, segments=segments).stale_items == 0


@pytest.mark.parametrize("seed", [6, 7, 8, 9])
def test_a_parallel_backfill_killed_at_a_random_point_resumes_exactly(
    session: Session, endpoint_url: str, table_name: str, tmp_path: Path, seed: int
) -> None:
    with random_table(session, table_name, seed) as (rng, table, doc, expected):
        segments, page_size = rng.randrange(2, 5), rng.randrange(1, 6)
        stale = expected["stale_keys"]
        limit = rng.randrange(1, max(2, len(stale)))
        log = WriteLog(limit)
        with session_on(endpoint_url, log) as doomed, pytest.raises(Killed):
            doomed.backfill(doc, segments=segments, page_size=page_size)
        assert log.sent == limit
        log.limit = None
        with session_on(endpoint_url, log) as resumed:
            report = resumed.backfill(doc, segments=segments, page_size=page_size)
        assert set(log.writes) == stale  # current items untouched
        assert set(log.writes.values()) == {1}  # every stale item exactly once
        # The ledger counted only whole pages, and each page's intent, so each item is counted
        # once across runs: rewritten in a page cut short, it is still counted as rewritten.
        assert report.scanned == expected["items"]
        assert report.rewritten + report.current == expected["items"]
        assert report.rewritten == len(stale)
        assert report.current == expected["current"]
        assert report.failed == []
        assert session.audit_keys(table).stale_items == 0


# -- a kill stops every segment -----------------------------------------------------------------


class KillAfterClaim:
    """Kills the job once the first claim of a unit applied, before its worker knows it: the
    claim's answer came back, the worker never returns from the claim."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.claimed: list[str] = []

    def after(self, request: HookRequest, response: dict[str, Any]) -> None:
        if request.operation != "UpdateItem" or not on_ledger(request):
            return
        if "runs" not in request.params.get("ExpressionAttributeNames", {}).values():
            return  # only a claim counts the unit's runs
        with self.lock:
            first = not self.claimed
            self.claimed.append(request.params["Key"]["SK"]["S"])
        if first:
            raise Killed


def test_a_job_killed_mid_claim_leaves_no_unit_leased_and_resumes_at_once(
    session: Session, endpoint_url: str, table_name: str
) -> None:
    table, doc = seed_random(session, table_name, random.Random(10))
    try:
        stale = brute_force(table, everything(session, table_name))["stale_keys"]
        kill = KillAfterClaim()
        with session_on(endpoint_url, kill) as doomed, pytest.raises(Killed):
            doomed.backfill(doc, segments=3, page_size=3)
        assert kill.claimed  # the claim applied
        (run,) = session.jobs(table)
        record = session.job(table, run.id)
        assert record.state == "paused"
        # Every lease this process took is given up, the cut-short claim's too: a resume
        # takes every unit at once instead of waiting for a lease to run out.
        assert [(u.unit.id, u.owner) for u in record.units if u.owner] == []
        log = WriteLog()
        with session_on(endpoint_url, log) as resumed:
            report = resumed.backfill(doc, segments=3, page_size=3)
        assert (report.job, report.resumed) == (run.id, True)
        assert report.rewritten == len(stale)
        assert set(log.writes) == stale
        assert session.audit_keys(table).stale_items == 0
    finally:
        session.delete_table(table)
