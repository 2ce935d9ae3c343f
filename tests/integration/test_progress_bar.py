"""The key jobs draw their progress bar on stderr when asked, on each engine."""

from __future__ import annotations

import re

import pytest

from lsiorm import Entity, Session, Table


def test_session_jobs_draw_the_bar_on_stderr_when_asked(
    endpoint_url: str, table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = Table.with_reserved_lsi_slots(table_name, "PK", "SK")

    class Note(Entity, table=table, keys={"PK": "N#{a}", "SK": "{b}"}):
        a: str
        b: str

    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(table)
        try:
            session.batch_write([Note(a=str(n % 3), b=str(n)) for n in range(20)])
            capsys.readouterr()
            session.audit_keys(Note, segments=2, progress=True)
            session.backfill(Note, partition="N#1", progress=True)
            err = capsys.readouterr().err
            assert re.search(r"audit-keys: .*20\S* items", err)
            assert "backfill: 100%" in err  # a partition's total is measured: exact
            assert "7/~7 items" in err
            session.audit_keys(Note, progress=False)
            assert capsys.readouterr().err == ""
        finally:
            session.delete_table(table)
