"""A partition-limited audit, backfill or relief is priced by that partition, to the unit.

The price comes before the job's read, and each test compares it with the capacity DynamoDB
reports for the job's own requests (ReturnConsumedCapacity). A partition is priced by reading
it once in the job's own pages, so the price is exact; the measuring read costs the same.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Entity, Session, Table
from lsiorm._ops.hooks import HookRequest
from support.jobs import on_ledger, session_on
from support.models import declare_dated_doc, declare_readings


class Reads:
    """Each Query the session sends for a job's items (not its ledger), with what DynamoDB
    says it consumed."""

    def __init__(self) -> None:
        self.queries: list[tuple[dict[str, Any], float]] = []

    def after(self, request: HookRequest, response: dict[str, Any]) -> None:
        if request.operation == "Query" and not on_ledger(request):
            consumed = response.get("ConsumedCapacity") or {}
            self.queries.append((request.params, float(consumed.get("CapacityUnits", 0.0))))

    def runs(self) -> list[float]:
        """The units of each run of pages (a run starts at a query without a start key)."""
        runs: list[float] = []
        for params, units in self.queries:
            if "ExclusiveStartKey" not in params:
                runs.append(0.0)
            runs[-1] += units
        return runs


@pytest.fixture
def metered(capacity_endpoint_url: str) -> Iterator[tuple[Session, Reads]]:
    reads = Reads()
    with session_on(capacity_endpoint_url, reads, consumed_capacity=True) as s:
        yield s, reads


def seed(session: Session, name: str) -> tuple[Table, type[Entity]]:
    """A small partition of items of random sizes beside a large one."""
    old_table, old_doc = declare_dated_doc(name, lsi3=False)
    session.create_table(old_table)
    rng = random.Random(12)
    small = [
        old_doc(user="small", n=n, day=date(2024, 1, 1 + n), body="x" * rng.randrange(9000))
        for n in range(23)
    ]
    large = [old_doc(user="large", n=n, day=date(2024, 1, 1), body="y" * 8000) for n in range(150)]
    session.batch_write([*small, *large])
    return declare_dated_doc(name, lsi3=True)


@pytest.mark.parametrize("page_size", [None, 4])
def test_a_partition_audit_costs_what_it_is_priced(
    metered: tuple[Session, Reads], table_name: str, page_size: int | None
) -> None:
    session, reads = metered
    table, doc = seed(session, table_name)
    try:
        whole = session.audit_keys(doc, dry_run=True)
        reads.queries.clear()
        report = session.audit_keys(doc, partition="USER#small", page_size=page_size)
        measuring, reading = reads.runs()
        assert report.estimate.total == measuring == reading  # exact, to the half unit
        assert report.entities["Doc"].items == 23
        assert report.estimate.total < whole.estimate.total / 5  # not the whole table's price
    finally:
        session.delete_table(table)


def test_a_partition_backfill_costs_what_it_is_priced(
    metered: tuple[Session, Reads], table_name: str
) -> None:
    session, reads = metered
    table, doc = seed(session, table_name)
    try:
        dry = session.backfill(doc, partition="USER#small", page_size=5, dry_run=True)
        assert dry.rewritten == 23
        reads.queries.clear()
        report = session.backfill(doc, partition="USER#small", page_size=5)
        measuring, reading = reads.runs()
        assert report.read_estimate == dry.read_estimate
        assert report.read_estimate.total == measuring == reading
        assert report.rewritten == 23
    finally:
        session.delete_table(table)


def test_a_relief_reads_what_it_is_priced(
    metered: tuple[Session, Reads], table_name: str, tmp_path: Path
) -> None:
    session, reads = metered
    table, reading = declare_readings(table_name)
    session.create_table(table)
    rng = random.Random(5)
    session.batch_write(
        [
            reading(sensor="s", n=n, day=date(2024, 1 + n % 4, 1), note="n" * rng.randrange(6000))
            for n in range(30)
        ]
    )
    try:
        report = session.relieve_collection(
            table,
            "S#s",
            match=lambda r: r.day < date(2024, 3, 1),
            to_file=tmp_path / "old.jsonl",
            page_size=7,
        )
        measuring, reading, after = reads.runs()
        assert report.read_estimate is not None
        assert report.read_estimate.total == measuring == reading
        assert after < reading  # the collection shrank; its measure after costs less
        assert report.moved == sum(1 for n in range(30) if n % 4 < 2)
    finally:
        session.delete_table(table)
