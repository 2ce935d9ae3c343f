"""A table's operational settings as code: declared, checked for drift, planned and applied.

Run it with ``.venv/bin/python examples/table_settings.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. Release 1 of the app created its table with
keys and an index alone. Release 2 declares how the table must be run: a stream for its
consumers, deletion protection, time to live, point-in-time recovery for 14 days, and tags.
The script shows the drift, the plan (a dry run: nothing sent), applies it, and checks again;
an engine that does not know an operation (DynamoDB Local: continuous backups and tags) leaves
that setting unchecked, and says so. At the end it turns the protection off to delete the table.
"""

from __future__ import annotations

import uuid

from lsiorm import GlobalIndex, Session, Table
from lsiorm.testing import example_endpoint

NAME = f"Orders-{uuid.uuid4().hex[:8]}"
INDEXES = [GlobalIndex("ByStatus", "status")]

release_1 = Table(NAME, "PK", "SK", global_indexes=INDEXES)
release_2 = Table(
    NAME,
    "PK",
    "SK",
    global_indexes=INDEXES,
    stream="NEW_AND_OLD_IMAGES",
    deletion_protection=True,
    ttl_attribute="expires",
    point_in_time_recovery=True,
    recovery_period_days=14,
    tags={"team": "shop"},
)
unprotected = Table(NAME, "PK", "SK", global_indexes=INDEXES, deletion_protection=False)


def main(endpoint_url: str) -> None:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(release_1)
        print(f"created {NAME} as release 1 declares it")
        try:
            drift = session.check_table(release_2)
            print(f"drift against release 2: {', '.join(d.kind for d in drift.drifts)}")
            plan = session.apply_table(release_2, dry_run=True).plan
            print(f"plan: {len(plan.steps)} requests, {plan.update_tables} of them UpdateTable")
            for step in plan.steps:
                print(f"  planned {step}")
            report = session.apply_table(release_2)
            for step in report.applied:
                print(f"  applied {step.operation}")
            after = report.after
            assert after is not None
            print(f"drift after apply: {len(after.drifts)}")
            print(f"not checked by this engine: {', '.join(after.unchecked) or 'nothing'}")
            again = session.apply_table(release_2, dry_run=True).plan
            print(f"planned on a second run: {len(again.steps)} requests")
        finally:
            session.apply_table(unprotected)
            session.delete_table(unprotected)
            print(f"deletion protection off; deleted table {NAME!r}")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
