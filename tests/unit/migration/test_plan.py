"""A migration's plan and refusals, and the re-derivation of source items, without an engine."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import Entity, Table
from lsiorm._jobs.ledger import JobRecord
from lsiorm._migration.plan import (
    RETENTION_WARNING,
    MigrationPlan,
    MigrationReport,
    VerifyReport,
    estimate_copy_seconds,
    migration_summary,
    plan_migration,
)
from lsiorm._migration.state_items import MigrationState
from lsiorm._migration.table_copy import Derived, derive_item
from lsiorm.errors import ValidationError

ARN = "arn:aws:dynamodb:us-east-1:1:table/Old/stream/2026"


def described(**changes: Any) -> dict[str, Any]:
    table = {
        "TableName": "Old",
        "ItemCount": 1000,
        "TableSizeBytes": 2_048_000,
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "LatestStreamArn": ARN,
    }
    return {**table, **changes}


def test_the_plan_of_a_source_with_both_images() -> None:
    plan = plan_migration(described(), None, write_budget=100.0)
    assert plan == MigrationPlan("Old", "", ARN, 1000, 2_048_000, 20.0, True)
    assert not plan.too_slow
    there = plan_migration(described(), {"TableName": "New"})
    assert (there.destination, there.create_destination, there.estimated_seconds) == (
        "New",
        False,
        None,
    )


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"StreamSpecification": None, "LatestStreamArn": None}, "migrate.no-stream"),
        ({"StreamSpecification": {"StreamEnabled": False}}, "migrate.no-stream"),
        (
            {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}},
            "migrate.stream-view",
        ),
        (
            {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}},
            "migrate.stream-view",
        ),
    ],
)
def test_a_source_whose_stream_cannot_feed_the_catch_up_is_refused(
    changes: dict[str, Any], rule: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        plan_migration(described(**changes), None)
    assert refused.value.rule == rule
    assert "StreamViewType=NEW_AND_OLD_IMAGES" in str(refused.value)
    assert "--table-name Old " in str(refused.value)
    with pytest.raises(ValidationError) as prefixed:  # under a table prefix: the live name
        plan_migration(described(**changes), None, live_source="dev-Old")
    assert "--table-name dev-Old " in str(prefixed.value)
    assert prefixed.value.table == "dev-Old"


def test_the_estimate_follows_the_size_and_the_budget() -> None:
    assert estimate_copy_seconds(0, 0, 10.0, None) == 0.0
    assert estimate_copy_seconds(100, 100 * 3000, None, None) is None
    # 3 KB items cost 3 write units each.
    assert estimate_copy_seconds(100, 100 * 3000, 10.0, None) == 30.0
    # The read side: half a unit per 4 KB (eventually consistent scan).
    assert estimate_copy_seconds(100, 4096 * 100, None, 1.0) == 50.0
    slow = plan_migration(
        described(ItemCount=10**8, TableSizeBytes=10**11), None, write_budget=1000
    )
    assert slow.too_slow
    assert slow.estimated_seconds is not None
    assert slow.estimated_seconds > RETENTION_WARNING


TABLE = Table.with_reserved_lsi_slots("New", "PK", "SK")


class Order(
    Entity,
    table=TABLE,
    keys={"PK": "C#{customer}", "SK": "O#{number:04d}", "LSI1SK": "S#{status}"},
):
    customer: str
    number: int
    status: str


def test_a_source_item_is_re_derived_and_keeps_what_the_models_do_not_know() -> None:
    stored = {
        "PK": {"S": "C#ann"},
        "SK": {"S": "O#0007"},
        "_type": {"S": "Order"},
        "customer": {"S": "ann"},
        "number": {"N": "7"},
        "status": {"S": "paid"},
        "legacy": {"S": "kept"},
        "GSI9PK": {"S": "left as it was"},
    }
    derived = derive_item(TABLE, stored)
    assert derived.entity == "Order"
    assert derived.item == {**stored, "LSI1SK": {"S": "S#paid"}}


def test_items_no_entity_recognizes() -> None:
    other = {"PK": {"S": "X"}, "SK": {"S": "Y"}, "_type": {"S": "Gone"}}
    assert derive_item(TABLE, other) == Derived(other, None, None)
    keyless = {"id": {"S": "1"}}
    derived = derive_item(TABLE, keyless)
    assert derived.item is None
    assert derived.reason is not None
    assert "PK/SK" in derived.reason
    broken = {"PK": {"S": "C#x"}, "SK": {"S": "O#1"}, "_type": {"S": "Order"}, "number": {"S": "?"}}
    kept = derive_item(TABLE, broken)
    assert kept.item == broken
    assert kept.reason is not None


def test_a_report_is_ready_with_no_lag_and_a_clean_verification() -> None:
    clean = VerifyReport(source=3, matched=3)
    report = MigrationReport("Old", "New", "catch-up", "m1", verify=clean, copied=3)
    assert report.ready
    assert "catch-up (ready to switch)" in str(report)
    assert "verify: clean: 3 source items, 3 matched" in str(report)
    lagging = MigrationReport("Old", "New", "catch-up", "m1", verify=clean, lag_records=4)
    assert not lagging.ready
    differing = VerifyReport(source=3, matched=2, missing=1, examples={"missing": [{"PK": "x"}]})
    report = MigrationReport("Old", "New", "catch-up", "m1", verify=differing, unapplied=1)
    assert not report.ready
    assert "DIFFERENCES" in str(report)
    assert "missing: {'PK': 'x'}" in str(report)
    assert "1 too large to apply" in str(report)
    assert not MigrationReport("Old", "New", "copy", "m1", verify=clean).ready


def _run(kind: str, state: str, **fields: Any) -> JobRecord:
    declaration = {"kind": kind, "migration": "m1", **fields.pop("declaration", {})}
    return JobRecord(f"{kind}-1", kind, state, declaration, "f", 100.0, 150.0, 4, **fields)


def test_lsiorm_jobs_shows_the_copy_the_lag_and_the_verification_in_progress() -> None:
    state = MigrationState(
        id="m1", declaration={"source": "Old", "destination": "New"}, phase="catch-up"
    )
    state.applied, state.skipped, state.lag, state.caught_up_at = 40, 2, [12, 3.5], 190.0
    state.verifying = {"epoch": 2, "start": {}, "jobs": {}}
    runs = [
        _run("migrate-verify", "running", units_done=1, declaration={"epoch": 2}),
        _run("migrate-verify", "done", units_done=4, declaration={"epoch": 1}),
        _run("migrate-copy", "paused", units_done=1, items=500, changed=480),
        _run("backfill", "done", units_done=4, declaration={"migration": None}),
    ]
    assert migration_summary(state, runs, 200.0).splitlines() == [
        "migration m1  'Old' -> 'New': catch-up",
        "  copy: run migrate-copy-1 paused, units 1/4, 500 items read, 480 copied, 10 items/s, "
        "ETA 150 s",
        "  catch-up: 40 changes applied, 2 skipped; lag 12 records, 3.5 s behind "
        "(measured 10 s ago)",
        "  verify: in progress (migrate-verify units 1/4)",
    ]
    state.verifying = None
    state.verify = {"clean": False, "source": 9, "missing": 1, "different": 0, "extra": 2}
    assert migration_summary(state, [], 200.0).splitlines()[1:] == [
        "  catch-up: 40 changes applied, 2 skipped; lag 12 records, 3.5 s behind "
        "(measured 10 s ago)",
        "  verify: DIFFERENCES: 9 source items, 1 missing, 0 different, 2 extra",
    ]
