"""Backfill, re-key and relief under 30% injected faults: no item lost, none duplicated.

Every outcome is checked against the engine directly (not through the fault proxy).
"""

from __future__ import annotations

import json
import os
import random
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from lsiorm import RetryPolicy, Session, Table, read_relief_file
from lsiorm._model.wire import item_from_wire
from support.faults import FaultProxy
from support.jobs import everything, pace_injected_throttles
from support.models import declare_dated_doc, declare_readings

RATE = 0.3
#: ``LSIORM_SCALE`` sets the size: 1 is full size (50 times the items); the default fraction
#: is the size CI runs.
SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
#: The items of each job (a relief's readings, the re-key's documents, the slot backfill's).
READINGS, MOVED, SLOTTED = (max(n, int(50 * n * SCALE)) for n in (36, 40, 120))
RETRY = RetryPolicy(max_attempts=30, initial=0.0, maximum=0.01)


def canon(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=str)


@pytest.fixture
def faulty(endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    # The proxy's throttles are random, not a limit: the job paces after them no slower than
    # the helper's floor, instead of waiting out most of the run at one unit a second.
    pace_injected_throttles(monkeypatch)
    kinds = ("throttle", "error500", "drop", "lost-response")
    with (
        FaultProxy(endpoint_url, rate=RATE, kinds=kinds, seed=16) as proxy,
        Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=RETRY) as s,
    ):
        yield s, proxy


@pytest.mark.slow
def test_backfill_and_rekey_under_faults(direct: Session, faulty: Any, table_name: str) -> None:
    session, proxy = faulty
    old_table, old_doc = declare_dated_doc(table_name, width=4, lsi3=False)
    direct.create_table(old_table)
    rng = random.Random(4)
    ns = rng.sample(range(10_000), MOVED)
    docs = [old_doc(user=f"u{n % 2}", n=n, day=date(2024, 1, 1 + n % 28)) for n in ns]
    direct.batch_write(docs)
    try:
        # A new slot and a new sort key format at once: every item is moved and gains LSI3SK.
        _, doc = declare_dated_doc(table_name, width=6, lsi3=True)
        report = session.backfill(doc, segments=2, page_size=7)
        assert proxy.stats["faults"] > 0
        assert proxy.stats["lost-response"] > 0
        assert report.failed == []
        # Exact counts: with no other writer, an answer lost and resent is still one move.
        assert (report.scanned, report.rewritten, report.moved) == (MOVED, MOVED, MOVED)
        assert (report.current, report.retried, report.gone) == (0, 0, 0)
        stored = [item_from_wire(i) for i in everything(direct, table_name)]
        assert len(stored) == len(docs)  # none lost, none duplicated
        assert sorted(i["SK"] for i in stored) == sorted(f"DOC#{n:06d}" for n in ns)
        expected = {canon(d.to_item()) for d in (doc(**o.model_dump()) for o in docs)}
        assert {canon(i) for i in stored} == expected
        assert direct.audit_keys(doc).clean
    finally:
        direct.delete_table(old_table)


@pytest.mark.slow
def test_relief_under_faults(direct: Session, faulty: Any, table_name: str, tmp_path: Path) -> None:
    session, proxy = faulty
    table, reading = declare_readings(table_name)
    archive = Table(f"{table_name}_a", "PK", "SK")
    direct.create_table(table)
    direct.create_table(archive)
    readings = [reading(sensor="s", n=n, day=date(2024, 1 + n % 4, 1)) for n in range(READINGS)]
    direct.batch_write(readings)
    before = [item_from_wire(i) for i in everything(direct, table_name)]
    try:
        old = session.relieve_collection(
            table,
            "S#s",
            match=lambda r: r.day < date(2024, 3, 1),
            to_table=archive,
            page_size=5,
        )
        rest = session.relieve_collection(
            table, "S#s", to_file=tmp_path / "rest.jsonl", page_size=5
        )
        assert proxy.stats["faults"] > 0
        assert old.failed == rest.failed == []
        assert old.moved + rest.moved == len(readings)
        assert [item_from_wire(i) for i in everything(direct, table_name)] == []
        copied = [item_from_wire(i) for i in everything(direct, archive.name)]
        lines = [item_from_wire(i) for i in read_relief_file(tmp_path / "rest.jsonl")]
        keys = [i["SK"] for i in copied + lines]
        assert len(keys) == len(set(keys)) == len(readings)  # none lost, none duplicated
        assert sorted(map(canon, copied + lines)) == sorted(map(canon, before))
        assert all(i["day"] < "2024-03-01" for i in copied)
    finally:
        direct.delete_table(table)
        direct.delete_table(archive)


@pytest.mark.slow
def test_a_slot_backfill_under_faults_counts_exactly(
    direct: Session, faulty: Any, table_name: str
) -> None:
    session, proxy = faulty
    old_table, old_doc = declare_dated_doc(table_name, width=4, lsi3=False)
    direct.create_table(old_table)
    docs = [old_doc(user=f"u{n % 5}", n=n, day=date(2024, 2, 1 + n % 28)) for n in range(SLOTTED)]
    direct.batch_write(docs)
    try:
        _, doc = declare_dated_doc(table_name, width=4, lsi3=True)
        report = session.backfill(doc, segments=3, page_size=9)
        assert proxy.stats["lost-response"] > 0
        assert (report.scanned, report.rewritten, report.current) == (SLOTTED, SLOTTED, 0)
        assert (report.retried, report.gone, report.moved, report.failed) == (0, 0, 0, [])
        again = session.backfill(doc, segments=3, page_size=9)
        assert (again.scanned, again.rewritten, again.current) == (SLOTTED, 0, SLOTTED)
        stored = [item_from_wire(i) for i in everything(direct, table_name)]
        expected = {canon(d.to_item()) for d in (doc(**o.model_dump()) for o in docs)}
        assert {canon(i) for i in stored} == expected
    finally:
        direct.delete_table(old_table)
