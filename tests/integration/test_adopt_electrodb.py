"""Adopting a table that ElectroDB wrote: lsiorm reads, queries and updates its service, and
ElectroDB reads lsiorm's writes back. ElectroDB itself (through Node.js and the AWS SDK for
JavaScript v3) writes the table; no lsiorm code does.

The service (tests/peers/electrodb_service.cjs) keeps ElectroDB's defaults: its keys are
lowercased, prefixed ``$service#`` and ``$entity_version#``, name each value by its attribute
(``project_web#site``), hold the ``#`` separator inside values, write unpadded numbers, and
share a GSI between two entities as the ``assignments`` collection.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from lsiorm import (
    Entity,
    GlobalIndex,
    KeyAttribute,
    KeyFormat,
    QueryPlanError,
    Session,
    Table,
    gt,
    query,
)
from support.peers import electrodb

#: ElectroDB stores key values in lowercase; the attributes keep the value as given.
Lower = KeyFormat(style="plain", case="lower")
#: Numbers in keys as ElectroDB writes them: unpadded.
Plain = KeyFormat(style="plain")


def declare(table_name: str) -> tuple[Table, type[Entity], type[Entity]]:
    """lsiorm's declaration of the ElectroDB service, written from what ElectroDB stores."""
    table = Table(
        table_name,
        "pk",
        "sk",
        global_indexes=[
            GlobalIndex("gsi1", KeyAttribute("gsi1pk"), KeyAttribute("gsi1sk")),
            GlobalIndex("gsi2", KeyAttribute("gsi2pk"), KeyAttribute("gsi2sk")),
        ],
        type_attribute="__edb_e__",
    )

    class Employee(
        Entity,
        table=table,
        type_name="employee",
        keys={
            "pk": "$taskapp#employee_{employee}",
            "sk": "$employee_1",
            "gsi1pk": "$taskapp#employee_{employee}",
            "gsi1sk": "$assignments#employee_1",
        },
    ):
        employee: Annotated[str, Lower]
        name: str
        office: str | None = None
        # ElectroDB reads only the items of its entity's version.
        edb_version: Literal["1"] = Field("1", alias="__edb_v__")

    class Task(
        Entity,
        table=table,
        type_name="task",
        keys={
            "pk": "$taskapp#project_{project}",
            "sk": "$task_1#taskid_{task_id}",
            "gsi1pk": "$taskapp#employee_{employee}",
            "gsi1sk": "$assignments#task_1#status_{status}#points_{points}",
            "gsi2pk": "$taskapp#project_{project}#status_{status}",
            "gsi2sk": "$task_1#taskid_{task_id}",
        },
    ):
        task_id: Annotated[str, Lower] = Field(alias="taskId")
        project: Annotated[str, Lower]
        # ElectroDB writes the index key of a task without an employee all the same, with an
        # empty value ("$taskapp#employee_"): an empty default derives that very key.
        employee: Annotated[str, Lower] = ""
        status: Literal["open", "closed"]
        points: Annotated[int, Plain]
        due: datetime | None = None
        edb_version: Literal["1"] = Field("1", alias="__edb_v__")

    return table, Employee, Task


@pytest.fixture
def service(endpoint_url: str, table_name: str, session: Session) -> Iterator[dict[str, Any]]:
    """The table, created and written by ElectroDB; what ElectroDB said it wrote."""
    written = electrodb("write", endpoint_url, table_name)
    try:
        yield written
    finally:
        session.call("DeleteTable", {"TableName": table_name})


def _task_row(task: Any) -> dict[str, Any]:
    row = {
        "taskId": task.task_id,
        "project": task.project,
        "status": task.status,
        "points": task.points,
    }
    if task.employee:
        row["employee"] = task.employee
    if task.due is not None:
        row["due"] = task.due.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return row


def _employee_row(employee: Any) -> dict[str, Any]:
    row = {"employee": employee.employee, "name": employee.name}
    if employee.office is not None:
        row["office"] = employee.office
    return row


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


def test_lsiorm_adopts_the_electrodb_table(
    session: Session, table_name: str, service: dict[str, Any]
) -> None:
    table, _, _ = declare(table_name)
    report = session.adopt(table, segments=2)
    assert report.accounted, str(report)
    assert report.scanned == len(service["task"]) + len(service["employee"])
    assert report.entities["task"].parsed == len(service["task"])
    assert report.entities["employee"].parsed == len(service["employee"])


def test_keys_that_are_not_lowercased_do_not_parse(
    session: Session, table_name: str, service: dict[str, Any]
) -> None:
    table = Table(table_name, "pk", "sk", type_attribute="__edb_e__")

    class Employee(
        Entity,
        table=table,
        type_name="employee",
        keys={"pk": "$taskapp#employee_{employee}", "sk": "$employee_1"},
    ):
        employee: Annotated[str, Plain]
        name: str

    report = session.adopt(Employee)
    seen = report.entities["employee"]
    assert (seen.items, seen.parsed) == (3, 1)  # only "bob" is lowercase already
    assert not report.accounted
    assert "pk is '$taskapp#employee_ann', the declaration derives '$taskapp#employee_Ann'" in str(
        report
    )
    assert report.other == 0  # the entity's type filter reads employees only


def test_every_item_reads_as_electrodb_wrote_it(
    session: Session, table_name: str, service: dict[str, Any]
) -> None:
    _, Employee, Task = declare(table_name)
    for row in service["employee"]:
        got = session.get(Employee, {"employee": row["employee"]})
        assert got is not None
        assert _employee_row(got) == row
    for row in service["task"]:
        got = session.get(Task, {"project": row["project"], "task_id": row["taskId"]})
        assert got is not None
        assert _task_row(got) == row


def test_queries_are_exact_over_lowercased_keys(
    session: Session, table_name: str, service: dict[str, Any]
) -> None:
    _, _, Task = declare(table_name)
    tasks = service["task"]
    # "Web#Site" and "web#SITE" share one lowercased partition: equality filters on the value.
    for project in ("Web#Site", "web#SITE", "Api", "api#v2"):
        rows = session.all(query(Task).where(project=project))
        expected = [t for t in tasks if t["project"] == project]
        assert [_task_row(r) for r in rows] == sorted(expected, key=lambda t: t["taskId"].lower())
    # The assignments index: its keys sort by status, then by points as text.
    q = query(Task).where(employee="Ann", status="open")
    assert q.plan().index_name == "gsi1"
    rows = session.all(q)
    expected = [t for t in tasks if t.get("employee") == "Ann" and t["status"] == "open"]
    assert sorted(map(_key, map(_task_row, rows))) == sorted(map(_key, expected))
    texts = [str(r.points) for r in rows]
    assert texts == sorted(texts)  # rows with equal points come in any order
    one = session.all(query(Task).where(employee="Ann", status="open", points=5))
    assert [_task_row(r) for r in one] == [t for t in expected if t["points"] == 5]
    # A project holding the separator, then a status: the project's own attribute decides.
    q = query(Task).where(project="api#v2", status="open")
    assert q.plan().index_name == "gsi2"
    rows = session.all(q)
    expected = [t for t in tasks if t["project"] == "api#v2" and t["status"] == "open"]
    assert sorted(map(_key, map(_task_row, rows))) == sorted(map(_key, expected))


def test_ranges_over_unpadded_numbers_are_refused(table_name: str) -> None:
    _, _, Task = declare(table_name)
    with pytest.raises(QueryPlanError) as caught:
        query(Task).where(employee="Ann", status="open", points=gt(3)).plan()
    assert caught.value.rule == "query.plain-range"


def test_the_collection_reads_as_electrodb_reads_it(
    session: Session, endpoint_url: str, table_name: str, service: dict[str, Any]
) -> None:
    _, Employee, Task = declare(table_name)
    q = query(Employee, Task).where(employee="Ann")
    assert q.plan().index_name == "gsi1"
    assert len(q.plan().requests) == 1
    rows = session.all(q)
    peer = electrodb("read", endpoint_url, table_name)["assignments"]
    assert [_employee_row(r) for r in rows if isinstance(r, Employee)] == peer["employee"]
    mine = sorted(_key(_task_row(r)) for r in rows if isinstance(r, Task))
    assert mine == sorted(map(_key, peer["task"]))


def test_electrodb_reads_back_what_lsiorm_writes(
    session: Session, endpoint_url: str, table_name: str, service: dict[str, Any]
) -> None:
    _, Employee, Task = declare(table_name)
    first = next(t for t in service["task"] if t.get("employee") == "Ann")
    session.update(
        Task,
        {"project": first["project"], "task_id": first["taskId"]},
        set={"status": "closed", "points": 11, "employee": "bob"},
    )
    session.put(Task(task_id="T-99", project="Web#Site", employee="Ann", status="open", points=3))
    session.put(Employee(employee="Dora", name="Dora Lee", office="Oslo"))
    peer = electrodb("read", endpoint_url, table_name)
    tasks = {t["taskId"]: t for t in peer["task"]}
    assert tasks[first["taskId"]] == {**first, "status": "closed", "points": 11, "employee": "bob"}
    assert tasks["T-99"] == {
        "taskId": "T-99",
        "project": "Web#Site",
        "employee": "Ann",
        "status": "open",
        "points": 3,
    }
    assert {"employee": "Dora", "name": "Dora Lee", "office": "Oslo"} in peer["employee"]
    assignments = {t["taskId"] for t in peer["assignments"]["task"]}
    assert "T-99" in assignments
    assert first["taskId"] not in assignments
    report = session.adopt(declare(table_name)[0])
    assert report.accounted, str(report)


def declare_printable(table_name: str) -> type[Entity]:
    """A new employee type written with lsiorm's default, printable keys, on the same table."""
    table = Table(
        table_name,
        "pk",
        "sk",
        global_indexes=[GlobalIndex("gsi1", KeyAttribute("gsi1pk"), KeyAttribute("gsi1sk"))],
        type_attribute="__edb_e__",
    )

    class Employee(
        Entity,
        table=table,
        type_name="employee",
        keys={
            "pk": "$taskapp#employee_{employee}",
            "sk": "$employee_1",
            "gsi1pk": "$taskapp#employee_{employee}",
            "gsi1sk": "$assignments#employee_1",
        },
    ):
        employee: str
        name: str
        office: str | None = None
        edb_version: Literal["1"] = Field("1", alias="__edb_v__")

    return Employee


def test_printable_keys_are_electrodbs_where_no_value_needs_an_escape(
    session: Session, endpoint_url: str, table_name: str, service: dict[str, Any]
) -> None:
    printable = declare_printable(table_name)
    _, Employee, _ = declare(table_name)
    session.put(printable(employee="cy", name="Cy Young"))  # no escape: ElectroDB's own key
    session.put(printable(employee="dora lee", name="Dora Lee"))  # a space: '%20' in the key
    stored = {
        i["name"]["S"]: i["pk"]["S"]
        for i in session.call("Scan", {"TableName": table_name})["Items"]
        if i.get("__edb_e__") == {"S": "employee"}
    }
    assert stored["Cy Young"] == "$taskapp#employee_cy"
    assert stored["Dora Lee"] == "$taskapp#employee_dora%20lee"
    # ElectroDB itself, and lsiorm's declaration of what ElectroDB writes, find the first by
    # its key; for the second they build 'employee_dora lee' and find nothing there.
    found = electrodb("get", endpoint_url, table_name, '["Cy", "Dora Lee"]')
    assert found["Cy"] == {"employee": "cy", "name": "Cy Young"}
    assert found["Dora Lee"] is None
    # (lsiorm's declaration also checks the stored attribute of a lowercased key: 'cy'.)
    assert session.get(Employee, employee="cy") is not None
    assert session.get(Employee, employee="dora lee") is None
    # The printable declaration reads back both, and ElectroDB's own items where they need no
    # escape ('Ann' is stored as 'ann', which it writes as it is).
    assert session.get(printable, employee="dora lee") is not None
    ann = session.get(printable, employee="ann")
    assert ann is not None
    assert ann.name == "Ann Smith"  # type: ignore[attr-defined]
