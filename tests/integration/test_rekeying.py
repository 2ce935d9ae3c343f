"""The 0.2 transition on each engine: items with exact-style keys under a readable declaration.

Items are written with the exact style (lsiorm 0.2's keys), then read, queried and written under
the readable style with ``rekeying_from="exact"``: every read finds both forms, results come in
the order of the values, writes move the items they touch, and the backfill moves the rest while
a concurrent writer sets, adds, removes, sets a new attribute, deletes and re-creates items,
with no write lost and no twin left behind.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

import pytest
from pydantic import StringConstraints

from lsiorm import (
    Entity,
    Get,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    Projection,
    Session,
    Table,
    Update,
    begins_with,
    between,
    ge,
    gt,
    lt,
    query,
)
from lsiorm.errors import ConditionFailedError
from support.jobs import everything, session_on
from support.tables import session_with


class Status(str, Enum):
    OPEN = "open"
    OPENED = "opened"
    DONE = "done"


Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")]


def declare(name: str, **options: Any) -> tuple[Table, type[Entity]]:
    table = Table(
        name,
        "PK",
        "SK",
        local_indexes=[LocalIndex("ByStatus", KeyAttribute("LSK"), Projection.all())],
        global_indexes=[
            GlobalIndex("BySlug", KeyAttribute("GPK"), KeyAttribute("GSK"), Projection.all())
        ],
        **options,
    )

    class Task(
        Entity,
        table=table,
        keys={
            "PK": "P#{project}",
            "SK": "T#{status}#{slug}#{n:03d}",
            "LSK": "S#{slug}#{status}#N#{n:03d}",
            "GPK": "G#{slug}",
            "GSK": "{status}#{n:03d}",
        },
    ):
        project: str
        status: Status
        slug: Slug
        n: int
        note: str = ""
        hits: int = 0
        tag: str | None = None

    return table, Task


SLUGS = ("a", "a-1", "ab", "b")
KEYS = ("project", "status", "slug", "n")


def ident(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in KEYS)


def _rows() -> list[dict[str, Any]]:
    rng = random.Random(22)
    rows = []
    for n in range(40):
        rows.append(
            {
                "project": "p",
                "status": rng.choice(list(Status)),
                "slug": rng.choice(SLUGS),
                "n": n,
                "note": f"note{n}",
                "tag": rng.choice([None, "x"]),
            }
        )
    return rows


ROWS = _rows()


@dataclass
class Both:
    session: Session
    old: type[Entity]
    new: type[Entity]
    name: str


@pytest.fixture
def both(endpoint_url: str) -> Iterator[Both]:
    name = f"rekey_{uuid.uuid4().hex[:8]}"
    old_table, old = declare(name, key_style="exact")
    _, new = declare(name, rekeying_from="exact")
    with session_with(endpoint_url, old_table) as session:
        for n, row in enumerate(ROWS):
            # Two thirds of the items keep 0.2's keys; the others were written since.
            session.put((old if n % 3 else new)(**row))
        yield Both(session, old, new, name)


def old_form_keys(both: Both) -> list[str]:
    return [i["SK"]["S"] for i in everything(both.session, both.name) if "\x00" in i["SK"]["S"]]


def _by_value(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["status"].value, row["slug"], row["n"])


def test_both_forms_are_stored(both: Both) -> None:
    assert len(old_form_keys(both)) == len([n for n in range(len(ROWS)) if n % 3])


def test_gets_find_both_forms(both: Both) -> None:
    s, new = both.session, both.new
    for row in ROWS:
        found = s.get(new, **{k: row[k] for k in KEYS})
        assert found is not None
        assert found.note == row["note"]  # type: ignore[attr-defined]
    keys = [{k: row[k] for k in KEYS} for row in ROWS]
    assert sorted(e.n for e in s.batch_get(new, keys)) == list(range(len(ROWS)))  # type: ignore[attr-defined]
    got = s.transact_get([Get(new, keys[n]) for n in range(6)])
    assert [e.n for e in got if e is not None] == list(range(6))  # type: ignore[attr-defined]
    assert s.get(new, project="p", status=Status.DONE, slug="zz", n=999) is None


@pytest.mark.parametrize(
    ("index", "conditions", "check"),
    [
        (None, {}, lambda r: True),
        (None, {"status": Status.OPEN}, lambda r: r["status"] is Status.OPEN),
        (None, {"status": gt(Status.OPEN)}, lambda r: r["status"].value > "open"),
        (None, {"status": begins_with("open")}, lambda r: r["status"].value.startswith("open")),
        (
            None,
            {"status": Status.OPENED, "slug": between("a", "ab")},
            lambda r: r["status"] is Status.OPENED and "a" <= r["slug"] <= "ab",
        ),
        (
            None,
            {"status": Status.DONE, "slug": "a", "n": lt(30)},
            lambda r: (r["status"], r["slug"]) == (Status.DONE, "a") and r["n"] < 30,
        ),
        ("ByStatus", {"slug": "a"}, lambda r: r["slug"] == "a"),
        ("ByStatus", {"slug": ge("ab")}, lambda r: r["slug"] >= "ab"),
        ("BySlug", {"slug": "a-1"}, lambda r: r["slug"] == "a-1"),
        (
            "BySlug",
            {"slug": "b", "status": ge(Status.OPEN)},
            lambda r: r["slug"] == "b" and r["status"].value >= "open",
        ),
    ],
)
def test_queries_read_both_forms_in_value_order(
    both: Both, index: str | None, conditions: dict[str, Any], check: Any
) -> None:
    s, new = both.session, both.new
    wheres = dict(conditions) if index == "BySlug" else {"project": "p", **conditions}
    q = query(new).where(**wheres).using(index)
    plan = q.plan()
    assert len(plan.requests) >= 2  # the new form's range and the old form's
    attribute = plan.merge_attribute
    assert attribute is not None
    rows = [r for r in ROWS if check(r)]
    want = [
        r["n"]
        for r in sorted(rows, key=lambda r: new(**r).to_item()[attribute])  # new-form key order
    ]
    assert [e.n for e in s.all(q)] == want  # type: ignore[attr-defined]
    assert [e.n for e in s.all(q.descending())] == want[::-1]  # type: ignore[attr-defined]
    assert s.count(q) == len(want)
    # Pages of two, resumed from cursors, give the same sequence.
    walked: list[int] = []
    cursor = None
    while True:
        page = s.page(q.page_size(2).limit(3).after(cursor) if cursor else q.page_size(2).limit(3))
        walked += [e.n for e in page.items]  # type: ignore[attr-defined]
        cursor = page.cursor
        if cursor is None:
            break
    assert walked == want


def test_writes_move_the_items_they_touch(both: Both) -> None:
    s, new = both.session, both.new
    old_rows = [row for n, row in enumerate(ROWS) if n % 3]
    put, conditional, updated, removed, in_transaction = old_rows[:5]
    s.put(new(**{**put, "note": "put"}))
    with pytest.raises(ConditionFailedError):
        s.put(new(**conditional), create_only=True)  # it exists (in the old form): refused
    s.update(new, {k: updated[k] for k in KEYS}, set={"note": "updated"}, add={"hits": 2})
    deleted = s.delete(new, **{k: removed[k] for k in KEYS})
    assert deleted is not None
    s.transact_write([Update(new, {k: in_transaction[k] for k in KEYS}, add={"hits": 1})])
    left = old_form_keys(both)
    assert len(left) == len(old_rows) - 5
    for row in (put, conditional, updated, in_transaction):
        assert new(**row).to_item()["SK"] not in left
    assert s.get(new, **{k: put[k] for k in KEYS}).note == "put"  # type: ignore[union-attr]
    stored = s.get(new, **{k: updated[k] for k in KEYS})
    assert (stored.note, stored.hits) == ("updated", 2)  # type: ignore[union-attr]
    assert s.get(new, **{k: removed[k] for k in KEYS}) is None
    assert s.get(new, **{k: in_transaction[k] for k in KEYS}).hits == 1  # type: ignore[union-attr]
    # Every item is still there exactly once.
    assert len(everything(s, both.name)) == len(ROWS) - 1


def test_audit_counts_old_form_items_and_the_backfill_moves_them(both: Both) -> None:
    s, new = both.session, both.new
    audit = s.audit_keys(new)
    stale = len(old_form_keys(both))
    assert audit.stale_items == stale
    assert audit.entities["Task"].old_form == stale
    assert "in the key form before re-keying" in str(audit)
    report = s.backfill(new, segments=2)
    assert (report.moved, report.failed) == (stale, [])
    assert old_form_keys(both) == []
    assert s.audit_keys(new).clean


def test_the_backfill_and_a_concurrent_writer_lose_no_write(both: Both, endpoint_url: str) -> None:
    s, new = both.session, both.new
    # What each item should hold at the end: the writer applies its writes to this model.
    model: dict[tuple[Any, ...], dict[str, Any] | None] = {
        ident(row): {**row, "hits": 0} for row in ROWS
    }
    errors: list[BaseException] = []
    stop = threading.Event()
    done = threading.Event()

    def writer() -> None:
        rng = random.Random(7)
        try:
            with session_on(endpoint_url) as other:
                count = 0
                while not stop.is_set() or count < 60:
                    row = rng.choice(ROWS)
                    key = {k: row[k] for k in KEYS}
                    state = model[ident(row)]
                    action = rng.choice(["set", "add", "remove", "new", "delete", "recreate"])
                    if state is None:
                        fresh = {**row, "note": f"again{count}", "hits": 0, "tag": None}
                        other.put(new(**fresh))
                        model[ident(row)] = fresh
                    elif action == "set":
                        other.update(new, key, set={"note": f"set{count}"})
                        state["note"] = f"set{count}"
                    elif action == "add":
                        other.update(new, key, add={"hits": 3})
                        state["hits"] += 3
                    elif action == "remove":
                        other.update(new, key, remove=["tag"])
                        state["tag"] = None
                    elif action == "new":
                        other.update(new, key, set={"tag": f"new{count}"})
                        state["tag"] = f"new{count}"
                    elif action == "delete":
                        other.delete(new, **key)
                        model[ident(row)] = None
                    else:
                        other.put(new(**{**state, "note": f"re{count}"}))
                        state["note"] = f"re{count}"
                    count += 1
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = s.backfill(new, segments=2, page_size=5)
    finally:
        stop.set()
        thread.join(timeout=300)
    assert not thread.is_alive()
    assert errors == []
    assert report.failed == []
    # Once the writer is done, a second pass moves whatever the first one had not reached.
    s.backfill(new)
    assert old_form_keys(both) == []
    stored = {
        ident(e.model_dump()): e.model_dump()
        for e in s.all(query(new).where(project="p").consistent())
    }
    expected = {k: v for k, v in model.items() if v is not None}
    assert set(stored) == set(expected)
    for key, values in expected.items():
        got = stored[key]
        assert {f: got[f] for f in values} == values, key
    assert len(everything(s, both.name)) == len(expected)  # no twin
    assert s.audit_keys(new).clean
