"""Key audit on each engine: every problem counted per attribute, sync and async alike."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from lsiorm import AsyncSession, Session
from lsiorm._jobs.resumable import JobProgress
from support.models import declare_doc
from support.raw import doc_key, set_attributes

SLOTS = ("LSI1SK", "LSI2SK", "LSI3SK", "LSI4SK", "LSI5SK")


def seed(session: Session, table_name: str) -> dict[str, Any]:
    """Write old items, new items and damaged items; return what the audit must count."""
    old_table, old_doc = declare_doc(table_name, lsi3=False)
    session.create_table(old_table)
    rng = random.Random(7)
    olds = [
        old_doc(user=f"u{n % 3}", n=n, title=f"t{n}", size=rng.randrange(100)) for n in range(30)
    ]
    session.batch_write(olds)
    new_table, new_doc = declare_doc(table_name, lsi3=True)
    news = [new_doc(user=f"u{n % 3}", n=n, title=f"t{n}", size=5) for n in range(30, 42)]
    session.batch_write(news)
    # Two new items carry a leftover slot, one has a stale LSI1SK.
    for n in (30, 31):
        set_attributes(session, table_name, doc_key(n), {"LSI5SK": {"S": "OLD"}})
    set_attributes(session, table_name, doc_key(32), {"LSI1SK": {"S": "TITLE#renamed"}})
    # An item of no declared type.
    session.call("PutItem", {"TableName": table_name, "Item": {"PK": {"S": "X"}, "SK": {"S": "Y"}}})
    return {"table": new_table, "entity": new_doc, "old": old_table}


def test_audit_counts_every_problem_per_attribute(session: Session, table_name: str) -> None:
    world = seed(session, table_name)
    try:
        seen: list[JobProgress] = []
        report = session.audit_keys(world["entity"], segments=3, progress=seen.append)
        assert report.scanned == 42  # the filter on the type leaves the untyped item out
        assert report.other == 0
        audit = report.entities["Doc"]
        assert audit.items == 42
        assert audit.stale_items == 30 + 3
        assert audit.attributes["LSI3SK"].missing == 30
        assert audit.attributes["LSI5SK"].extra == 2
        assert audit.attributes["LSI1SK"].stale == 1
        assert set(audit.attributes) == {"LSI3SK", "LSI5SK", "LSI1SK"}
        assert 1 <= len(audit.examples) <= 3
        assert not report.clean
        assert seen
        assert seen[-1].items == 43  # items read: the one the type filter left out too
        assert seen[-1].segments_done == 3
        assert "LSI3SK: 0 stale, 30 missing, 0 extra" in str(report)
        whole = session.audit_keys(world["table"], segments=2)
        assert whole.scanned == 43
        assert whole.other == 1
        assert whole.entities["Doc"].attributes == audit.attributes
        # One partition only.
        part = session.audit_keys(world["table"], partition="USER#u0")
        assert part.entities["Doc"].items == 14
        assert part.other == 0
        # Under the old declaration, the new items are the ones off.
        old = session.audit_keys(world["old"], segments=1)
        assert old.entities["Doc"].attributes["LSI3SK"].extra == 12
        # A dry run is priced and reads nothing.
        dry = session.audit_keys(world["table"], dry_run=True)
        assert dry.dry_run
        assert dry.scanned == 0
        assert dry.estimate.table_units >= 0
    finally:
        session.delete_table(world["table"])


def test_async_audit_matches_the_sync_one(
    session: Session, endpoint_url: str, table_name: str
) -> None:
    world = seed(session, table_name)

    async def run() -> Any:
        async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as s:
            return await s.audit_keys(world["entity"], segments=4)

    try:
        report = asyncio.run(run())
        sync = session.audit_keys(world["entity"], segments=2)
        assert report.entities["Doc"].attributes == sync.entities["Doc"].attributes
        assert report.scanned == sync.scanned == 42
    finally:
        session.delete_table(world["table"])
