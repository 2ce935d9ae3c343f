"""Pending slots: written by every writer, never picked by the planner until marked ready."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table, ge, query
from lsiorm.errors import DeclarationError, QueryPlanError

KEYS = {"PK": "P#{project}", "SK": "TASK#{n:04d}", "LSI3SK": "DUE#{due}"}


def declare(pending: set[str]) -> type[Entity]:
    table = Table.with_reserved_lsi_slots("Pending", "PK", "SK")

    class Task(Entity, table=table, keys=KEYS, pending=pending):
        project: str
        n: int
        due: str

    return Task


READY = declare(set())
PENDING = declare({"LSI3SK"})


def test_writers_derive_a_pending_slot() -> None:
    task = PENDING(project="x", n=1, due="2024-05-01")
    assert task.to_item()["LSI3SK"] == "DUE#2024-05-01"


def test_the_planner_picks_a_ready_slot_and_never_a_pending_one() -> None:
    assert query(READY).where(project="x", due=ge("2024")).plan().index_name == "LSI3"
    with pytest.raises(QueryPlanError) as refused:
        query(PENDING).where(project="x", due=ge("2024")).plan()
    assert refused.value.rule == "query.unabsorbed"
    message = str(refused.value)
    assert "Only index LSI3 answers the where() condition on due" in message
    assert "Task marks LSI3SK pending" in message
    assert "using('LSI3')" in message
    fallback = query(PENDING).where(project="x", due=ge("2024")).allow_filter_fallback()
    assert fallback.plan().index_name is None  # the table, with a filter: every item is found
    explained = str(fallback.explain())
    assert "pending     LSI3 would answer due, but Task marks LSI3SK pending" in explained
    assert fallback.plan().pending_slots == (
        "LSI3 would answer due, but Task marks LSI3SK pending (not backfilled yet); "
        "use using('LSI3') to query it anyway",
    )
    forced = query(PENDING).where(project="x", due=ge("2024")).using("LSI3").plan()
    assert forced.index_name == "LSI3"


@given(st.sampled_from(["project", "due", "n"]), st.booleans())
def test_no_plan_of_a_pending_entity_uses_the_pending_index(field: str, descending: bool) -> None:
    q = query(PENDING).where(project="x")
    if field == "due":
        q = q.where(due=ge("2024")).allow_filter_fallback()
    elif field == "n":
        q = q.where(n=ge(3))
    if descending:
        q = q.descending()
    assert q.plan().index_name != "LSI3"


def test_a_ready_slot_or_a_condition_it_cannot_answer_gets_no_pending_note() -> None:
    assert query(READY).where(project="x", due=ge("2024")).plan().pending_slots == ()
    other = query(PENDING).where(project="x", n=ge(3)).plan()  # the sort key answers n
    assert other.pending_slots == ()


def test_pending_names_a_derived_index_slot() -> None:
    with pytest.raises(DeclarationError, match=r"entity\.pending-slot"):
        declare({"SK"})
    with pytest.raises(DeclarationError, match=r"entity\.pending-slot"):
        declare({"LSI4SK"})
