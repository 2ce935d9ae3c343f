"""Rolling out a reserved LSI slot on a live table: pending, backfill, audit, ready.

Run it with ``.venv/bin/python examples/slot_rollout.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. The table reserves all five LSI slots. Release
1.0 writes tasks without LSI3. Release 1.1 derives ``LSI3SK`` (tasks by due date) but marks the
slot pending, so queries keep their plans; the tasks written before are backfilled, with
progress, and the audit shows nothing stale. Release 1.2 marks the slot ready: a query on LSI3
returns every task, old and new.
"""

from __future__ import annotations

import random
import uuid
from datetime import date, timedelta

from lsiorm import Entity, JobProgress, Session, Table, ge, query
from lsiorm.testing import example_endpoint

PROJECT = "apollo"
NAME = f"Rollout-{uuid.uuid4().hex[:8]}"  # a fresh table per run: engines may be shared

# Each release deploys its own declaration of the same table and the same entity type.
release_1_0 = Table.with_reserved_lsi_slots(NAME, "PK", "SK")
release_1_1 = Table.with_reserved_lsi_slots(NAME, "PK", "SK")
release_1_2 = Table.with_reserved_lsi_slots(NAME, "PK", "SK")


class TaskV10(
    Entity, table=release_1_0, keys={"PK": "P#{project}", "SK": "TASK#{n:04d}"}, type_name="Task"
):
    """Release 1.0: no slot used."""

    project: str
    n: int
    due: date


V11_KEYS = {"PK": "P#{project}", "SK": "TASK#{n:04d}", "LSI3SK": "DUE#{due}#{n:04d}"}


class TaskV11(Entity, table=release_1_1, keys=V11_KEYS, type_name="Task", pending={"LSI3SK"}):
    """Release 1.1: writers derive LSI3SK; readers do not use it yet."""

    project: str
    n: int
    due: date


class TaskV12(Entity, table=release_1_2, keys=V11_KEYS, type_name="Task"):
    """Release 1.2: LSI3 is ready."""

    project: str
    n: int
    due: date


def show(progress: JobProgress) -> None:
    """Print the backfill's progress after each page."""
    print(f"  backfill progress: {progress}")


def main(endpoint_url: str) -> None:
    """Write old tasks, roll out LSI3 and query it."""
    rng = random.Random(2024)
    start = date(2024, 3, 1)
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(release_1_0)
        try:
            print(f"release 1.0: table {NAME!r} with slots LSI1..LSI5; Task uses none")
            old = [
                TaskV10(project=PROJECT, n=n, due=start + timedelta(days=rng.randrange(60)))
                for n in range(1, 31)
            ]
            session.batch_write(old)
            for task in old:
                print(f"  put task {task.n:04d} due {task.due}")

            print("\nrelease 1.1: Task derives LSI3SK (pending)")
            new = [
                TaskV11(project=PROJECT, n=n, due=start + timedelta(days=rng.randrange(60)))
                for n in range(31, 36)
            ]
            session.batch_write(new)
            for written in new:
                print(f"  put task {written.n:04d} due {written.due}")
            before = session.audit_keys(TaskV11)
            missing = before.entities["Task"].attributes["LSI3SK"].missing
            print(f"  audit before: {before.stale_items} stale (LSI3SK missing on {missing})")
            pending_plan = query(TaskV11).where(project=PROJECT, due=ge(start))
            plan = pending_plan.allow_filter_fallback().plan()
            print(f"  plan while pending: {plan.index_name or 'table'}")
            dry = session.backfill(TaskV11, dry_run=True)
            print(f"  dry run: {dry.rewritten} rewrites priced at {dry.estimate.total:g} units")
            report = session.backfill(TaskV11, segments=2, page_size=8, progress=show)
            print(f"  backfill rewritten: {report.rewritten}")
            print(f"  backfill already current: {report.current}")
            print(f"  backfill retried: {report.retried}; failed: {len(report.failed)}")
            after = session.audit_keys(TaskV11)
            print(f"  audit after: {after.stale_items} stale; clean: {after.clean}")

            print("\nrelease 1.2: LSI3 is ready")
            by_due = query(TaskV12).where(project=PROJECT, due=ge(start))
            print(f"  plan: {by_due.plan().index_name}")
            for found in session.all(by_due):
                print(f"  LSI3 task {found.n:04d} due {found.due}")
        finally:
            session.delete_table(release_1_0)
            print(f"\ndeleted table {NAME!r}")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
