"""Planning reads over both key forms while an entity is re-keyed (``rekeying_from``)."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest

from lsiorm import Entity, Table, gt, query
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.key_check import check_item_keys
from lsiorm._model.wire import item_to_wire
from lsiorm._query.rekeying import new_form_sort_text, row_kept
from lsiorm._requests.batch import get_entries, old_form_entries, write_entries
from lsiorm.errors import QueryPlanError


class Status(str, Enum):
    OPEN = "open"
    DONE = "done"


def declare(**options: Any) -> type[Entity]:
    table = Table("Rekeyed", "PK", "SK", **options)

    class Task(Entity, table=table, keys={"PK": "P#{project}", "SK": "T#{status}#{n:03d}"}):
        project: str
        status: Status
        n: int

    return Task


# From lsiorm 0.2's keys to readable ones (the printable style's move is tested at the end).
Task = declare(key_style="readable", rekeying_from="exact")
Exact = declare(key_style="exact")


def test_only_differing_templates_are_kept_in_the_old_form() -> None:
    meta = meta_of(Task)
    assert meta.rekeying_from == "exact"
    assert set(meta.old_templates) == {"SK"}  # the partition key is the same in both forms
    assert meta.moves_when_rekeyed
    values = {"project": "p", "status": Status.OPEN, "n": 7}
    assert meta.key(values) == {"PK": "P#p", "SK": "T#open#007"}
    assert meta.old_key(values) == {"PK": "P#p", "SK": "T#open\x00#007"}
    assert meta_of(Exact).old_key(values) is None


def test_a_query_reads_the_old_forms_range_too() -> None:
    plan = query(Task).where(project="p", status=Status.OPEN).plan()
    new, old = plan.requests
    assert new.params["ExpressionAttributeValues"][":v1"] == {"S": "T#open#"}
    assert old.params["ExpressionAttributeValues"][":v1"] == {"S": "T#open\x00#"}
    assert old.params["FilterExpression"] == "#n2 = :v2"  # only Task rows
    assert (new.label, old.label) == ("Task", "Task old key form")
    assert [f.keep_old for f in new.forms] == [False]
    assert [f.keep_old for f in old.forms] == [True]
    assert plan.merge_attribute == "SK"
    assert any("'exact' style (rekeying_from)" in line for line in plan.collection)


def test_identical_ranges_stay_two_requests() -> None:
    # No condition on a differing field: both forms lie in the same range, read twice, each
    # request keeping the rows of its own form.
    new, old = query(Task).where(project="p").plan().requests
    assert new.params["KeyConditionExpression"] == old.params["KeyConditionExpression"]
    assert new.forms != old.forms


def test_entities_whose_keys_do_not_differ_read_once() -> None:
    assert len(query(Exact).where(project="p").plan().requests) == 1


def _row(sk: str, type_name: str = "Task") -> dict[str, Any]:
    return {"PK": {"S": "P#p"}, "SK": {"S": sk}, "_type": {"S": type_name}}


def test_rows_are_kept_by_the_form_of_their_keys() -> None:
    plan = query(Task).where(project="p").plan()
    new, old = plan.requests
    readable, exact = _row("T#open#007"), _row("T#open\x00#007")
    assert (row_kept(new.forms, readable), row_kept(new.forms, exact)) == (True, False)
    assert (row_kept(old.forms, readable), row_kept(old.forms, exact)) == (False, True)
    other = _row("T#open\x00#007", "Other")
    assert row_kept(new.forms, other)  # another type's row is not this check's business
    assert not row_kept(old.forms, other)
    assert new_form_sort_text(old.forms, exact, "SK") == "T#open#007"
    assert new_form_sort_text(new.forms, readable, "SK") is None


def test_an_old_form_that_cannot_answer_exactly_is_refused() -> None:
    table = Table("RekeyedPlain", "PK", "SK", rekeying_from="plain")

    class Counter(Entity, table=table, keys={"PK": "C#{name}", "SK": "N#{n:04d}#X"}):
        name: str
        n: int

    # A padded int keeps its width in the plain style: nothing differs, one request.
    assert "SK" not in meta_of(Counter).old_templates
    assert len(query(Counter).where(name="a", n=gt(3)).plan().requests) == 1

    class Loose(Entity, table=table, keys={"PK": "L#{name}", "SK": "{label}#{n:04d}"}):
        name: str
        label: str
        n: int

    # Unconstrained text before '#': terminated in the readable form, as is in the plain one,
    # where a range cannot be exact.
    assert meta_of(Loose).old_templates["SK"].source == "{label}#{n:04d}"
    assert len(query(Loose).where(name="a", label="x").plan().requests) == 2
    with pytest.raises(QueryPlanError) as refused:
        query(Loose).where(name="a", label=gt("x")).plan()
    assert refused.value.rule == "query.rekeying-form"


def test_batch_reads_and_writes_know_the_old_keys() -> None:
    key = {"project": "p", "status": Status.DONE, "n": 1}
    (entry,) = get_entries(Task, [key])
    (old,) = old_form_entries([entry])
    assert old.request == item_to_wire({"PK": "P#p", "SK": "T#done\x00#001"})
    assert (old.order, old.source, old.kind) == (entry.order, entry.source, None)
    entries = write_entries([Task(**key)], [])
    assert [(e.kind, e.request.get("SK") or e.request["Item"]["SK"]) for e in entries] == [
        ("PutRequest", {"S": "T#done#001"}),
        ("DeleteRequest", {"S": "T#done\x00#001"}),
    ]


def test_the_key_audit_tells_old_form_items() -> None:
    item = Exact(project="p", status=Status.OPEN, n=3).to_wire()
    check = check_item_keys(meta_of(Task).table, item, (Task,))
    assert check is not None
    assert check.moves
    assert check.old_form
    current = check_item_keys(
        meta_of(Task).table, Task(project="p", status=Status.OPEN, n=3).to_wire(), (Task,)
    )
    assert current is not None
    assert current.current
    assert not current.old_form
