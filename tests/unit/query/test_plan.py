"""A plan is three smaller values; its flat attributes read through to them."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, GlobalIndex, KeyAttribute, Projection, Table
from lsiorm._query.plan import IndexChoice, PlannedRequests, QueryPlan, ReadOptions
from lsiorm._query.values import query, scan

forum = Table(
    "PlanValues",
    partition_key="ForumName",
    sort_key="Subject",
    global_indexes=[
        GlobalIndex("AuthorIndex", KeyAttribute("Author"), None, Projection.keys_only())
    ],
)


class Thread(
    Entity, table=forum, keys={"ForumName": "{forum}", "Subject": "{subject}", "Author": "{author}"}
):
    forum: str
    subject: str
    author: str | None = None
    replies: int = 0


#: Old flat attribute -> (part, attribute of that part).
READ_THROUGH = {
    **{f.name: ("choice", f.name) for f in fields(IndexChoice)},
    **{f.name: ("options", f.name) for f in fields(ReadOptions)},
    **{f.name: ("planned", f.name) for f in fields(PlannedRequests) if f.name != "shape"},
}


def _check(plan: QueryPlan) -> None:
    for name, (part, attribute) in READ_THROUGH.items():
        assert getattr(plan, name) is getattr(getattr(plan, part), attribute), name
    assert plan.index_name == plan.choice.index_name
    assert plan.key_attributes == plan.choice.key_attributes
    assert plan.fingerprint == plan.planned.shape.fingerprint


@given(
    consistent=st.booleans(),
    descending=st.booleans(),
    limit=st.none() | st.integers(min_value=1, max_value=50),
    count=st.booleans(),
)
def test_query_plans_read_through(
    consistent: bool, descending: bool, limit: int | None, count: bool
) -> None:
    q = query(Thread).where(forum="S3")
    q = q.consistent() if consistent else q
    q = q.descending() if descending else q
    q = q.limit(limit) if limit is not None else q
    plan = q.plan(count=count)
    _check(plan)
    assert plan.options == ReadOptions.of(q, count=count, forward=not descending)
    assert plan.consistent is consistent
    assert plan.forward is not descending
    assert plan.max_items == limit
    assert plan.count is count


@pytest.mark.parametrize("segments", [1, 3])
def test_scan_plans_read_through(segments: int) -> None:
    s = scan(Thread).segments(segments).select("subject")
    plan = s.plan()
    _check(plan)
    assert plan.segments == segments
    assert len(plan.requests) == segments
    assert plan.selected == ("subject",)


def test_base_items_see_every_field() -> None:
    plan = query(Thread).where(author="ann").hydrate().plan()
    assert plan.unavailable
    assert plan.index_name == "AuthorIndex"
    base = plan.for_base_items()
    assert base.unavailable == ()
    assert base.index is None
    assert base.options == plan.options
    assert base.planned == plan.planned
