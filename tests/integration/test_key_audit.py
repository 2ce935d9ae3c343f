"""Key audit: stored key attributes against what the current declaration derives."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm import AsyncSession, Entity, Session, Table
from lsiorm._model.wire import item_to_wire, to_wire
from lsiorm._ops.key_audit import check_item_keys
from lsiorm._ops.resumable import JobProgress
from support.models import declare_doc

SLOTS = ("LSI1SK", "LSI2SK", "LSI3SK", "LSI4SK", "LSI5SK")


# -- the pure check, against perturbations ---------------------------------------------------

NEW_TABLE, NEW_DOC = declare_doc("Audit-Pure", lsi3=True)


@given(
    user=st.text("abcxyz", min_size=1, max_size=5),
    n=st.integers(0, 9999),
    title=st.text("ABCdef#", min_size=1, max_size=8),
    size=st.integers(0, 999),
    changes=st.dictionaries(
        st.sampled_from(["LSI1SK", "LSI3SK"]),
        st.sampled_from(["drop", "change"]),
    ),
    extra=st.sets(st.sampled_from(["LSI2SK", "LSI4SK", "LSI5SK"])),
)
def test_check_reports_exactly_the_perturbed_attributes(
    user: str, n: int, title: str, size: int, changes: dict[str, str], extra: set[str]
) -> None:
    doc = NEW_DOC(user=user, n=n, title=title, size=size)
    item = item_to_wire(doc.to_item())
    expected: dict[str, str] = {}
    for attribute, how in changes.items():
        if how == "drop":
            item.pop(attribute)
            expected[attribute] = "missing"
        else:
            item[attribute] = to_wire(f"OLD#{item[attribute]['S']}")
            expected[attribute] = "stale"
    for attribute in extra:
        item[attribute] = to_wire("LEFTOVER")
        expected[attribute] = "extra"
    check = check_item_keys(NEW_TABLE, item)
    assert check is not None
    assert {p.attribute: p.kind for p in check.problems} == expected
    assert check.current == (not expected)
    assert not check.moves
    assert check.stored_key == {"PK": item["PK"], "SK": item["SK"]}


def test_a_new_sort_key_format_is_a_move() -> None:
    old_table, old_doc = declare_doc("Audit-Move", lsi3=False, width=4)
    item = item_to_wire(old_doc(user="u", n=7, title="t").to_item())
    new_table, _ = declare_doc("Audit-Move", lsi3=False, width=6)
    check = check_item_keys(new_table, item)
    assert check is not None
    assert [(p.attribute, p.kind, p.stored, p.expected) for p in check.problems] == [
        ("SK", "stale", "DOC#0007", "DOC#000007")
    ]
    assert check.moves
    assert check_item_keys(old_table, item) is not None
    assert check_item_keys(old_table, {"PK": to_wire("x"), "SK": to_wire("y")}) is None


# -- the audit on each engine ----------------------------------------------------------------


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
        session.call(
            "UpdateItem",
            {
                "TableName": table_name,
                "Key": {"PK": {"S": f"USER#u{n % 3}"}, "SK": {"S": f"DOC#{n:04d}"}},
                "UpdateExpression": "SET LSI5SK = :x",
                "ExpressionAttributeValues": {":x": {"S": "OLD"}},
            },
        )
    session.call(
        "UpdateItem",
        {
            "TableName": table_name,
            "Key": {"PK": {"S": "USER#u2"}, "SK": {"S": "DOC#0032"}},
            "UpdateExpression": "SET LSI1SK = :x",
            "ExpressionAttributeValues": {":x": {"S": "TITLE#renamed"}},
        },
    )
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


def test_global_index_slots_and_the_type_attribute_are_checked() -> None:
    from lsiorm import GlobalIndex, KeyAttribute

    def table() -> Table:
        return Table(
            "Audit-Gsi",
            "PK",
            "SK",
            global_indexes=[GlobalIndex("ByEmail", KeyAttribute("GPK"), KeyAttribute("GSK"))],
        )

    class Before(Entity, table=table(), keys={"PK": "U#{u}", "SK": "PROFILE"}, type_name="User"):
        u: str
        email: str

    class After(
        Entity,
        table=table(),
        keys={"PK": "U#{u}", "SK": "PROFILE", "GPK": "EMAIL#{email}", "GSK": "U#{u}"},
        type_name="User",
    ):
        u: str
        email: str

    item = item_to_wire(Before(u="ann", email="a@x").to_item())
    check = check_item_keys(meta_table(After), item)
    assert check is not None
    assert sorted((p.attribute, p.kind) for p in check.problems) == [
        ("GPK", "missing"),
        ("GSK", "missing"),
    ]
    renamed = {**item_to_wire(After(u="ann", email="a@x").to_item()), "_type": to_wire("Usr")}
    assert check_item_keys(meta_table(After), renamed) is None  # no declared type "Usr"


def meta_table(cls: type[Entity]) -> Table:
    from lsiorm._model.entity_meta import meta_of

    return meta_of(cls).table
