"""Moving a live table without LSIs to a new table with the five reserved slots.

Run it with ``.venv/bin/python examples/migrate_to_reserved_slots.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. Release 1.0 declared its table without local
indexes, and an LSI can only be declared when a table is created. Release 2.0 declares a new
table with the five reserved slots (odd ALL, even KEYS_ONLY) and fills LSI1 with tasks by due
date. While a writer keeps adding and changing tasks through release 1.0, the old table is
copied into the new one, the changes are caught up from its stream, and the copy is verified.
Then the writer pauses, the migration finishes, and a query on LSI1 reads every task.
"""

from __future__ import annotations

import threading
import uuid
from datetime import date, timedelta

from lsiorm import Entity, Session, Table, ge, query
from lsiorm.testing import example_endpoint

PROJECT = "apollo"
TAG = uuid.uuid4().hex[:8]  # fresh tables per run: engines may be shared

# Release 1.0: no local index.
old_table = Table(f"Tasks-{TAG}", "PK", "SK")
# Release 2.0: a new table with all five slots reserved.
new_table = Table.with_reserved_lsi_slots(f"TasksV2-{TAG}", "PK", "SK")


class TaskV1(
    Entity, table=old_table, keys={"PK": "P#{project}", "SK": "TASK#{n:04d}"}, type_name="Task"
):
    """Release 1.0's task."""

    project: str
    n: int
    due: date
    done: bool = False


class Task(
    Entity,
    table=new_table,
    keys={"PK": "P#{project}", "SK": "TASK#{n:04d}", "LSI1SK": "DUE#{due}#{n:04d}"},
):
    """Release 2.0's task: LSI1 holds tasks by due date."""

    project: str
    n: int
    due: date
    done: bool = False


START = date(2026, 1, 5)


class Writer(threading.Thread):
    """Release 1.0 in production: adds a task, moves a due date, closes a task, in turn."""

    def __init__(self, endpoint_url: str) -> None:
        super().__init__(daemon=True)
        self.endpoint_url = endpoint_url
        self.stop = threading.Event()
        self.writes = 0

    def run(self) -> None:
        with Session(endpoint_url=self.endpoint_url, region_name="us-east-1") as session:
            n = 100
            while not self.stop.wait(0.05):  # about 20 rounds of three writes a second
                n += 1
                session.put(TaskV1(project=PROJECT, n=n, due=START + timedelta(days=n % 30)))
                moved = START + timedelta(days=(n * 7) % 30)
                session.update(TaskV1, {"project": PROJECT, "n": n % 100}, set={"due": moved})
                session.update(TaskV1, {"project": PROJECT, "n": n - 50}, set={"done": True})
                self.writes += 3


def main(endpoint_url: str) -> None:
    """Create release 1.0's table, keep writing to it, and migrate it to release 2.0's."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(old_table)
        # The migration catches up from the stream: it must record both images of a change.
        session.call(
            "UpdateTable",
            {
                "TableName": session.table_name(old_table),
                "StreamSpecification": {
                    "StreamEnabled": True,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
            },
        )
        try:
            session.batch_write(
                [
                    TaskV1(project=PROJECT, n=n, due=START + timedelta(days=n % 30))
                    for n in range(101)
                ]
            )
            print(f"release 1.0: table {old_table.name!r} without local indexes, 101 tasks")
            writer = Writer(endpoint_url)
            writer.start()
            report = session.migrate_table(new_table, old_table.name, segments=2)
            print(f"copied: {report.copied}; unmatched: {report.unmatched}")
            assert report.verify is not None
            print(f"verify while writing: {report.verify.source} tasks read")
            report = session.migrate_table(new_table, old_table.name)
            print(f"caught up again: {report.applied} changes applied in all")
            writer.stop.set()
            writer.join()
            print(f"writer paused after {writer.writes} writes")
            final = session.migrate_table(new_table, old_table.name, finish=True)
            print(final)
            print(f"phase: {final.phase}")
            assert final.verify is not None
            print(f"verify clean: {final.verify.clean}")
            stored = session.count(query(TaskV1).where(project=PROJECT))
            by_due = query(Task).where(project=PROJECT, due=ge(START))
            print(f"plan: {by_due.plan().index_name}")
            found = session.all(by_due)
            in_order = [t.due for t in found] == sorted(t.due for t in found)
            print(f"LSI1 tasks: {len(found)} of {stored}, in due-date order: {in_order}")
        finally:
            session.delete_table(old_table)
            session.delete_table(new_table)
            print("deleted both tables")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
