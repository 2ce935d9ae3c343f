"""Five reserved LSI slots, filled one by one, on moto or any endpoint.

Run it with ``.venv/bin/python examples/reserved_slots.py``. The table is declared once with
``Table.with_reserved_lsi_slots`` (LSI1..LSI5 on String keys LSI1SK..LSI5SK; odd slots project
ALL, even slots KEYS_ONLY) and created before any slot has a user. Then, release by release, a
new entity class is bound to the same table object and starts writing one more slot. The table
is never recreated: its CreateTable request does not change and check_table stays clean. Each
slot is queried as it is adopted, and the last release overloads LSI1 with a second namespace.
Set LSIORM_ENDPOINT_URL to run it against another endpoint (DynamoDB Local, AWS).
"""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime, timezone

from lsiorm import Entity, Session, Table, ge, key_templates, lt, query
from lsiorm.testing import example_endpoint

PROJECT = "apollo"

# A fresh name per run: the example may share an engine with other runs (the tests do).
app = Table.with_reserved_lsi_slots(
    f"App-{uuid.uuid4().hex[:8]}", partition_key="PK", sort_key="SK"
)
CREATE_REQUEST = json.dumps(app.create_table_request(), sort_keys=True)


class Project(Entity, table=app, keys={"PK": "PROJECT#{project}", "SK": "META"}):
    """Release 1.0: the only entity, and it uses no LSI slot."""

    project: str
    title: str


def at(day: int, hour: int) -> datetime:
    """Return an aware UTC datetime in March 2024."""
    return datetime(2024, 3, day, hour, tzinfo=timezone.utc)


def main(endpoint_url: str) -> None:
    """Create the table once, then adopt the slots release by release."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(app)
        slots = ", ".join(
            f"{i.name} ({i.sort_key.name}, {i.projection.type})" for i in app.local_indexes
        )
        print(f"created table {app.name!r} with reserved slots: {slots}")
        try:
            session.put(Project(project=PROJECT, title="Moonshot"))
            print(f"release 1.0: put Project {PROJECT!r}; no slot is used yet")
            check(session, "1.0")
            release_1_1(session)
            release_1_2(session)
            release_1_3(session)
            release_1_4(session)
            release_1_5(session)
            summary()
        finally:
            session.delete_table(app)
            print(f"deleted table {app.name!r}")


def check(session: Session, release: str) -> None:
    """Show that the live table still matches the unchanged declaration."""
    report = session.check_table(app)
    same = json.dumps(app.create_table_request(), sort_keys=True) == CREATE_REQUEST
    print(f"  check_table after {release}: {report} CreateTable request unchanged: {same}")
    assert report.ok
    assert same


def release_1_1(session: Session) -> None:
    """Tasks start using LSI1 (ALL): tasks by due date."""

    class Task(
        Entity,
        table=app,
        keys={
            "PK": "PROJECT#{project}",
            "SK": "TASK#{task_id}",
            "LSI1SK": "TASK#DUE#{due}#{task_id}",
        },
    ):
        project: str
        task_id: str
        title: str
        due: date

    print("\nrelease 1.1: Task is declared and starts writing LSI1SK")
    session.batch_write(
        [
            Task(project=PROJECT, task_id="T1", title="Design the lander", due=date(2024, 4, 1)),
            Task(project=PROJECT, task_id="T2", title="Book the launch", due=date(2024, 3, 15)),
            Task(project=PROJECT, task_id="T3", title="Pack sandwiches", due=date(2024, 5, 9)),
        ]
    )
    soon = query(Task).where(project=PROJECT, due=lt(date(2024, 4, 15)))
    print(f"  tasks due before 2024-04-15 use {soon.plan().index_name}:")
    for task in session.all(soon):
        print(f"  LSI1 task {task.task_id} due {task.due}: {task.title}")
    check(session, "1.1")


def release_1_2(session: Session) -> None:
    """Comments start using LSI2 (KEYS_ONLY): comments by author, then time."""

    class Comment(
        Entity,
        table=app,
        keys={
            "PK": "PROJECT#{project}",
            "SK": "COMMENT#{comment_id}",
            "LSI2SK": "COMMENT#BY#{author}#{posted}",
        },
    ):
        project: str
        comment_id: str
        author: str
        posted: datetime
        text: str

    print("\nrelease 1.2: Comment is declared and starts writing LSI2SK")
    session.batch_write(
        [
            Comment(project=PROJECT, comment_id="C1", author="ann", posted=at(1, 9), text="Go"),
            Comment(project=PROJECT, comment_id="C2", author="bob", posted=at(2, 10), text="Hm"),
            Comment(project=PROJECT, comment_id="C3", author="ann", posted=at(3, 11), text="Ok"),
        ]
    )
    # KEYS_ONLY: comment_id, author and posted are all parsed from the keys, so no fetch.
    by_ann = (
        query(Comment).where(project=PROJECT, author="ann").select("comment_id", "author", "posted")
    )
    print(by_ann.explain())
    for c in session.all(by_ann):
        print(f"  LSI2 comment {c.comment_id} by {c.author} at {c.posted.isoformat()}")
    check(session, "1.2")


def release_1_3(session: Session) -> None:
    """Milestones start using LSI3 (ALL): milestones by target date."""

    class Milestone(
        Entity,
        table=app,
        keys={
            "PK": "PROJECT#{project}",
            "SK": "MILESTONE#{name}",
            "LSI3SK": "MILESTONE#TARGET#{target}",
        },
    ):
        project: str
        name: str
        target: date

    print("\nrelease 1.3: Milestone is declared and starts writing LSI3SK")
    session.batch_write(
        [
            Milestone(project=PROJECT, name="launch", target=date(2024, 7, 16)),
            Milestone(project=PROJECT, name="landing", target=date(2024, 7, 20)),
            Milestone(project=PROJECT, name="design review", target=date(2024, 4, 2)),
        ]
    )
    last = query(Milestone).where(project=PROJECT).using("LSI3").descending().limit(1)
    latest = session.first(last)
    assert latest is not None
    print(f"  LSI3 latest milestone: {latest.name} on {latest.target}")
    check(session, "1.3")


def release_1_4(session: Session) -> None:
    """Members start using LSI4 (KEYS_ONLY): members by role."""

    class Member(
        Entity,
        table=app,
        keys={
            "PK": "PROJECT#{project}",
            "SK": "MEMBER#{user}",
            "LSI4SK": "MEMBER#ROLE#{role}#{user}",
        },
    ):
        project: str
        user: str
        role: str
        email: str

    print("\nrelease 1.4: Member is declared and starts writing LSI4SK")
    session.batch_write(
        [
            Member(project=PROJECT, user="ann", role="admin", email="ann@example.com"),
            Member(project=PROJECT, user="bob", role="viewer", email="bob@example.com"),
            Member(project=PROJECT, user="cy", role="admin", email="cy@example.com"),
        ]
    )
    admins = query(Member).where(project=PROJECT, role="admin").select("user", "role")
    print(f"  admins through {admins.plan().index_name} (KEYS_ONLY; fetched: ", end="")
    print(f"{', '.join(admins.plan().fetched) or 'nothing'}):")
    for m in session.all(admins):
        print(f"  LSI4 member {m.user} is {m.role}")
    check(session, "1.4")


def release_1_5(session: Session) -> None:
    """Events start using LSI5 (ALL) by severity, and overload LSI1 by time."""

    class Event(
        Entity,
        table=app,
        keys={
            "PK": "PROJECT#{project}",
            "SK": "EVENT#{event_id}",
            "LSI1SK": "EVENT#AT#{happened}",
            "LSI5SK": "EVENT#SEVERITY#{severity:02d}#{happened}",
        },
    ):
        project: str
        event_id: str
        happened: datetime
        severity: int
        message: str

    print("\nrelease 1.5: Event is declared; it writes LSI5SK and overloads LSI1SK")
    session.batch_write(
        [
            Event(project=PROJECT, event_id="E1", happened=at(4, 8), severity=1, message="boot"),
            Event(project=PROJECT, event_id="E2", happened=at(4, 9), severity=4, message="fuel"),
            Event(project=PROJECT, event_id="E3", happened=at(5, 7), severity=3, message="wind"),
        ]
    )
    serious = query(Event).where(project=PROJECT, severity=ge(3))
    print(f"  events of severity 3 or more use {serious.plan().index_name}:")
    for e in session.all(serious):
        print(f"  LSI5 event {e.event_id} severity {e.severity}: {e.message}")
    timeline = query(Event).where(project=PROJECT).using("LSI1")
    print("  the LSI1 event timeline (tasks share LSI1 under 'TASK#DUE#' and stay out):")
    for e in session.all(timeline):
        print(f"  LSI1 event {e.event_id} at {e.happened.isoformat()}")
    check(session, "1.5")


def summary() -> None:
    """Print which entity types write each slot."""
    print("\nslots in use (same table object, no schema change):")
    for index in app.local_indexes:
        users = []
        for cls in app.entities.values():
            tpl = key_templates(cls).get(index.sort_key.name)
            if tpl is not None:
                users.append(f"{cls.__name__} {tpl!r}")
        print(f"  {index.name} ({index.projection.type}): {'; '.join(users)}")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
