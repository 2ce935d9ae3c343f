"""The key jobs' ledger partition is lsiorm's own: no reader of the whole table counts it.

A backfill keeps its ledger in the table's reserved partition (``~lsiorm#jobs``). Afterwards
`adopt` still accounts for every item, the key audit reads only the table's items (whether
its own ledger is in this process, in the table, or in another table), and the largest
collections leave that partition out; each report says how many ledger items it left out.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lsiorm
from lsiorm import Entity, Session, Table
from lsiorm._jobs.ledger import NAMESPACE
from support.jobs import everything
from support.models import declare_doc

ITEMS = 12


@pytest.fixture
def backfilled(session: Session, table_name: str) -> Iterator[tuple[Table, type[Entity], int]]:
    """A table whose stale items a backfill rewrote, its ledger left in the table; and the
    number of ledger items there."""
    old_table, old_doc = declare_doc(table_name, lsi3=False)
    session.create_table(old_table)
    session.batch_write([old_doc(user=f"u{n % 3}", n=n, title=f"t{n}") for n in range(ITEMS)])
    table, doc = declare_doc(table_name, lsi3=True)
    try:
        assert session.backfill(doc, segments=3).rewritten == ITEMS
        ledger = len(everything(session, table_name, ledger=True)) - ITEMS
        assert ledger > 0  # the run, its pointer and its units
        yield table, doc, ledger
    finally:
        session.delete_table(table)


def test_adopt_accounts_for_every_item_next_to_the_ledger(
    session: Session, backfilled: tuple[Table, type[Entity], int]
) -> None:
    table, doc, ledger = backfilled
    for target in (table, doc):
        report = session.adopt(target, segments=2)
        assert report.accounted, str(report)
        assert (report.scanned, report.unmatched, report.ledger_items) == (ITEMS, 0, ledger)
        assert f"lsiorm's job ledger ('{NAMESPACE}'): {ledger} items, left out" in str(report)


@pytest.mark.parametrize("where", ["memory", "table", "ledger-table"])
def test_the_key_audit_reads_only_the_tables_items(
    session: Session, backfilled: tuple[Table, type[Entity], int], table_name: str, where: str
) -> None:
    """Wherever the audit keeps its own ledger (in this process, in the table itself, in a
    ledger table), it leaves the backfill's ledger out, and its own too."""
    table, doc, ledger = backfilled
    other = lsiorm.ledger_table(f"{table_name}_jobs") if where == "ledger-table" else None
    name = {"memory": None, "table": table_name}.get(where, other and other.name)
    if other is not None:
        session.create_table(other)
    try:
        for target in (table, doc):
            report = session.audit_keys(target, segments=2, ledger=name)
            assert report.clean, str(report)
            assert (report.scanned, report.other) == (ITEMS, 0), str(report)
            # The backfill's ledger, and the audit's own runs when they are in the table.
            assert report.ledger_items >= ledger
            assert f"{report.ledger_items} items of lsiorm's job ledger, left out" in str(report)
    finally:
        if other is not None:
            session.delete_table(other)


def test_largest_collections_leave_the_ledger_out(
    session: Session, backfilled: tuple[Table, type[Entity], int]
) -> None:
    table, _, _ = backfilled
    sizes = session.largest_collections(table, 0)
    assert sorted(size.key for size in sizes) == ["USER#u0", "USER#u1", "USER#u2"]
    assert sum(size.items for size in sizes) == ITEMS
