"""Moving a table a 0.2 development version wrote to printable keys, online, on each engine.

Items are written with the exact style of the first 0.2 development versions (and, in a second run,
with the readable style of the later ones): text followed by more template ends with U+0000, and
values hold spaces, '#', '%', '!' and control characters. The same declaration without a style now
writes printable keys, so it is declared with ``rekeying_from``: the audit counts every item as
stale, the backfill moves them, counted and resumable, while a concurrent writer sets, adds,
removes, sets an attribute no model declares, deletes and re-creates items. Afterwards the table is
read with the plain printable declaration: no item lost, none twice, every write kept, no key
holding a control character.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import StringConstraints

from lsiorm import (
    Entity,
    GlobalIndex,
    HookRequest,
    KeyAttribute,
    LocalIndex,
    Projection,
    Session,
    Table,
    query,
)
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import ConditionFailedError
from support.jobs import everything, session_on
from support.tables import session_with

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")]
KEYS = ("project", "title", "n")
TITLES = ["a", "a b", "a#b", "a!", "50%", "x\x00y", "", "é", "#", "t\x01", "%23", "a b c"]


def declare(name: str, **options: Any) -> tuple[Table, type[Entity]]:
    table = Table(
        name,
        "PK",
        "SK",
        local_indexes=[LocalIndex("BySlug", KeyAttribute("LSK"), Projection.all())],
        global_indexes=[
            GlobalIndex("ByOwner", KeyAttribute("GPK"), KeyAttribute("GSK"), Projection.all())
        ],
        **options,
    )

    class Note(
        Entity,
        table=table,
        keys={
            "PK": "P#{project}",
            "SK": "N#{title}#{n:03d}",
            "LSK": "S#{slug}#{title}",
            "GPK": "G#{owner}",
            "GSK": "{title}#{n:03d}",
        },
    ):
        project: str
        title: str
        n: int
        slug: Slug
        owner: str
        body: str = ""
        hits: int = 0
        tag: str | None = None

    return table, Note


def _rows() -> list[dict[str, Any]]:
    rng = random.Random(38)
    return [
        {
            "project": rng.choice(["p", "p q"]),
            "title": TITLES[n % len(TITLES)],
            "n": n,
            "slug": rng.choice(["a", "a-1", "b"]),
            "owner": rng.choice(["ann", "bob smith"]),
            "body": f"body{n}",
            "tag": rng.choice([None, "x"]),
        }
        for n in range(36)
    ]


ROWS = _rows()


def ident(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in KEYS)


@dataclass
class Written:
    session: Session
    old: type[Entity]
    new: type[Entity]
    name: str
    style: str


@pytest.fixture(params=["exact", "readable"])
def written(request: pytest.FixtureRequest, endpoint_url: str) -> Iterator[Written]:
    style = request.param
    name = f"printable_rekey_{style}_{uuid.uuid4().hex[:8]}"
    old_table, old = declare(name, key_style=style)
    _, new = declare(name, rekeying_from=style)
    with session_with(endpoint_url, old_table) as session:
        session.batch_write([old(**row) for row in ROWS])
        yield Written(session, old, new, name, style)


def _control(item: dict[str, Any]) -> bool:
    keys = ("PK", "SK", "LSK", "GPK", "GSK")
    return any(any(c < " " for c in item[k]["S"]) for k in keys if k in item)


def _printable_form(w: Written, item: dict[str, Any]) -> bool:
    """Whether a stored item's keys are the printable declaration's, for its values."""
    entity = w.new(**{k: v for k, v in _plain(item).items() if k in w.new.model_fields})
    wire = entity.to_wire()
    return all(item.get(k) == wire.get(k) for k in ("PK", "SK", "LSK", "GPK", "GSK"))


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    from lsiorm._model.wire import item_from_wire

    return item_from_wire(item)


def test_the_old_format_table_reads_as_written_before_the_move(written: Written) -> None:
    s, old = written.session, written.old
    stored = everything(s, written.name)
    assert len(stored) == len(ROWS)
    assert sum(_control(i) for i in stored) == len(ROWS)  # U+0000 after every title
    for row in ROWS:
        found = s.get(old, **{k: row[k] for k in KEYS})
        assert found is not None
        assert found.body == row["body"]  # type: ignore[attr-defined]
    got = {e.n for p in ("p", "p q") for e in s.all(query(old).where(project=p))}  # type: ignore[attr-defined]
    assert got == {row["n"] for row in ROWS}


def test_the_audit_counts_every_item_and_the_backfill_moves_them_exactly(
    written: Written,
) -> None:
    s, new = written.session, written.new
    audit = s.audit_keys(new)
    assert audit.stale_items == len(ROWS)
    assert audit.entities["Note"].old_form == len(ROWS)
    report = s.backfill(new, segments=2, page_size=5)
    assert (report.moved, report.failed) == (len(ROWS), [])
    stored = everything(s, written.name)
    assert len(stored) == len(ROWS)
    assert [i for i in stored if _control(i)] == []
    assert all(_printable_form(written, i) for i in stored)
    assert s.audit_keys(new).clean
    again = s.backfill(new)
    assert (again.moved, again.failed) == (0, [])  # a second run finds nothing left to move


def test_the_move_under_a_concurrent_writer_loses_nothing(
    written: Written, endpoint_url: str
) -> None:
    s, old, new = written.session, written.old, written.new
    model: dict[tuple[Any, ...], dict[str, Any] | None] = {
        ident(row): {**row, "hits": 0} for row in ROWS
    }
    extra: dict[tuple[Any, ...], int] = {}
    done: dict[str, int] = {}
    errors: list[BaseException] = []
    stop = threading.Event()

    def raw_keys(row: dict[str, Any]) -> list[dict[str, Any]]:
        values = {k: row[k] for k in meta_of(new).primary_fields}
        forms = [meta_of(new).key(values), meta_of(old).key(values)]
        return [{k: {"S": v} for k, v in key.items()} for key in forms]

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
                    if state is None or action == "recreate":
                        fresh = {**(state or row), "body": f"re{count}", "hits": 0, "tag": None}
                        other.put(new(**fresh))
                        model[ident(row)] = fresh
                        extra.pop(ident(row), None)  # a put replaces the whole item
                        action = "recreate"
                    elif action == "set":
                        other.update(new, key, set={"body": f"set{count}"})
                        state["body"] = f"set{count}"
                    elif action == "add":
                        other.update(new, key, add={"hits": 3})
                        state["hits"] += 3
                    elif action == "remove":
                        other.update(new, key, remove=["tag"])
                        state["tag"] = None
                    elif action == "new":
                        # An attribute no model declares, set by another tool on an item the
                        # move has reached (a rekeying move cannot see one added to the old form
                        # in the instant before it: see the test below).
                        for raw in raw_keys(row)[:1]:
                            try:
                                other.call(
                                    "UpdateItem",
                                    {
                                        "TableName": written.name,
                                        "Key": raw,
                                        "UpdateExpression": "SET late = :x",
                                        "ConditionExpression": "attribute_exists(PK)",
                                        "ExpressionAttributeValues": {":x": {"N": str(count)}},
                                    },
                                )
                            except ConditionFailedError:
                                continue
                            extra[ident(row)] = count
                            break
                    else:
                        other.delete(new, **key)
                        model[ident(row)] = None
                        extra.pop(ident(row), None)
                    done[action] = done.get(action, 0) + 1
                    count += 1
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = s.backfill(new, segments=2, page_size=4)
    finally:
        stop.set()
        thread.join(timeout=300)
    assert not thread.is_alive()
    assert errors == []
    assert report.failed == []
    assert set(done) == {"set", "add", "remove", "new", "delete", "recreate"}, done
    # Once the writer is done, a second run moves whatever the first had not reached.
    s.backfill(new)
    assert new.__lsiorm__ is not None
    stored = everything(s, written.name)
    live = {k: v for k, v in model.items() if v is not None}
    assert len(stored) == len(live)  # none lost, none twice
    assert [i for i in stored if _control(i)] == []
    assert all(_printable_form(written, i) for i in stored)
    assert s.audit_keys(new).clean

    # Read in the new format alone: the printable declaration without rekeying_from.
    _, printable = declare(written.name)
    assert meta_of(printable).old_templates == {}
    read = {
        ident(e.model_dump()): e.model_dump()
        for project in ("p", "p q")
        for e in s.all(query(printable).where(project=project).consistent())
    }
    assert set(read) == set(live)
    for key, values in live.items():
        assert {f: read[key][f] for f in values} == values, key
        got = s.get(printable, **dict(zip(KEYS, key, strict=True)), consistent=True)
        assert got is not None
    by_key = {ident(_plain(i)): i for i in stored}
    for key, late in extra.items():
        assert by_key[key]["late"] == {"N": str(late)}, key


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a rekeying move is one transaction (put the new item, delete the old one "
    "if unchanged), and no DynamoDB condition can say that no attribute was added, nor can a "
    "transaction's delete return the image it deleted; so an attribute no entity declares, "
    "added to an old-form item by another tool between the backfill's read and its move, is "
    "lost (the moves of key changes without rekeying_from keep it: they delete with ALL_OLD)",
)
def test_an_attribute_another_tool_adds_to_an_old_form_item_as_it_moves_is_kept(
    written: Written, endpoint_url: str
) -> None:
    s, new = written.session, written.new
    added: list[dict[str, Any]] = []
    lock = threading.Lock()

    class AddLate:
        """Before the backfill's first move, another tool sets an undeclared attribute on the
        item the move is about (its old key, which the move deletes)."""

        def before(self, request: HookRequest) -> None:
            if request.operation != "TransactWriteItems":
                return
            with lock:  # the backfill's segments move in threads of their own
                if added:
                    return
                deletes = [a["Delete"] for a in request.params["TransactItems"] if "Delete" in a]
                for action in deletes:
                    s.call(
                        "UpdateItem",
                        {
                            "TableName": written.name,
                            "Key": action["Key"],
                            "UpdateExpression": "SET late = :x",
                            "ExpressionAttributeValues": {":x": {"N": "1"}},
                        },
                    )
                    added.append(action["Key"])

    with session_on(endpoint_url, AddLate()) as job:
        report = job.backfill(new, page_size=4)
    assert report.failed == []
    assert len(added) == 1
    stored = everything(s, written.name)
    assert len(stored) == len(ROWS)
    assert [i.get("late") for i in stored if "late" in i] == [{"N": "1"}]
