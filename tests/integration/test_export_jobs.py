"""Key jobs that read a DynamoDB export (a local folder, or S3 on moto) instead of scanning.

An export is older than the table: items changed or deleted after it must keep their newer
state (each write is conditional on the item being as exported), and reading it costs no
read capacity (no Scan is sent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lsiorm import HookRequest, Session, Table
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import ValidationError
from support.exports import take_export
from support.jobs import everything, on_ledger, session_on
from support.models import declare_doc
from support.raw import doc_key, set_attributes

STALE, CURRENT, FILES = 30, 12, 4
CHANGED = range(0, 5)  # stale items updated after the export
DELETED = range(5, 8)  # stale items deleted after the export


class Operations:
    """Counts the requests a job sends to its table (the ledger's left out)."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()

    def before(self, request: HookRequest) -> None:
        if not on_ledger(request):
            self.sent[request.operation] += 1


@pytest.fixture
def exported(session: Session, table_name: str) -> Iterator[tuple[Table, Any, Any]]:
    """The table with 30 stale and 12 current items; yields the new release's table, its
    entity and a function that exports the table and then changes and deletes some items."""
    old_table, old_doc = declare_doc(table_name, lsi3=False)
    session.create_table(old_table)
    session.batch_write([old_doc(user=f"u{n % 3}", n=n, title=f"t{n}") for n in range(STALE)])
    table, doc = declare_doc(table_name, lsi3=True)
    session.batch_write(
        [doc(user=f"u{n % 3}", n=n, title=f"t{n}", size=7) for n in range(STALE, STALE + CURRENT)]
    )

    def after_export(export: Callable[[], str]) -> str:
        location = export()
        for n in CHANGED:  # a writer still on the old release: the item stays stale
            set_attributes(session, table_name, doc_key(n), {"hits": {"N": "5"}})
        for n in DELETED:
            session.delete(doc, {"user": f"u{n % 3}", "n": n})
        return location

    try:
        yield table, doc, after_export
    finally:
        session.delete_table(table)


def _check_after_backfill(session: Session, table_name: str, report: Any) -> None:
    assert (report.scanned, report.current, report.gone) == (
        STALE + CURRENT,
        CURRENT,
        len(DELETED),
    )
    assert report.rewritten == STALE - len(DELETED)
    # Changed or deleted since exported: the write's condition failed, the item was re-read.
    assert report.retried == len(CHANGED) + len(DELETED)
    assert report.failed == []
    stored = {item_from_wire(i)["n"]: item_from_wire(i) for i in everything(session, table_name)}
    assert sorted(stored) == [n for n in range(STALE + CURRENT) if n not in DELETED]
    for n in CHANGED:
        assert stored[n]["hits"] == 5  # the newer write survived the stale export
    assert all("LSI3SK" in item for item in stored.values())


def test_a_backfill_reads_a_local_export_and_never_overwrites_newer_data(
    session: Session,
    endpoint_url: str,
    table_name: str,
    tmp_path: Path,
    exported: tuple[Table, Any, Any],
) -> None:
    _table, doc, after_export = exported
    location = after_export(lambda: take_export(session, table_name, files=FILES, folder=tmp_path))
    audit = session.audit_keys(doc, export=location)
    assert audit.scanned == STALE + CURRENT  # as exported: the deleted items too
    assert audit.stale_items == STALE
    ops = Operations()
    with session_on(endpoint_url, ops) as watched:
        report = watched.backfill(doc, export=location)
    assert "Scan" not in ops.sent  # no read capacity for the input
    assert "Query" not in ops.sent
    assert ops.sent["UpdateItem"] == STALE - len(DELETED) + len(CHANGED) + len(DELETED)
    _check_after_backfill(session, table_name, report)
    record = session.job(doc.__lsiorm__.table, report.job)
    assert record.units_total == FILES
    assert [u.runs for u in record.units] == [1] * FILES
    assert session.audit_keys(doc).clean


def test_a_backfill_reads_an_export_in_s3(
    session: Session,
    endpoint_url: str,
    table_name: str,
    lsiorm_endpoints: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    exported: tuple[Table, Any, Any],
) -> None:
    s3_url = lsiorm_endpoints("moto")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_url)
    s3 = boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1")
    bucket = table_name.replace("_", "-")
    s3.create_bucket(Bucket=bucket)
    _table, doc, after_export = exported
    location = after_export(
        lambda: take_export(session, table_name, files=FILES, s3=s3, bucket=bucket)
    )
    report = session.backfill(doc, export=location, page_size=7)
    _check_after_backfill(session, table_name, report)
    # The same command again is a new run over the same export: each stale item as exported
    # is no longer as stored, so its write is refused and the item read again is current.
    ops = Operations()
    with session_on(endpoint_url, ops) as watched:
        again = watched.backfill(doc, export=location)
    assert again.job != report.job
    assert (again.scanned, again.rewritten, again.retried) == (STALE + CURRENT, 0, STALE)
    assert (again.current, again.gone) == (STALE + CURRENT - len(DELETED), len(DELETED))
    assert ops.sent["UpdateItem"] == STALE  # each refused, none applied


def test_a_folder_that_is_no_export_is_refused_with_a_typed_error(
    session: Session, tmp_path: Path, exported: tuple[Table, Any, Any]
) -> None:
    _table, doc, _after = exported
    with pytest.raises(ValidationError) as missing:
        session.backfill(doc, export=str(tmp_path))
    assert missing.value.rule == "export.invalid"
    (tmp_path / "manifest-summary.json").write_text("{not json")
    with pytest.raises(ValidationError) as corrupt:
        session.audit_keys(doc, export=str(tmp_path))
    assert corrupt.value.rule == "export.invalid"
