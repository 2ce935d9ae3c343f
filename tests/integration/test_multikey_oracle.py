"""Differential test of multi-attribute GSI keys: answered queries equal brute force, the others
are refused before anything is sent.

Task and Bug share ByTenant (partition tenant + region, sorted by prio, due and title). Their
values collide often (equal priorities, due dates, titles that are prefixes of each other,
non-ASCII text, negative numbers and numbers of more digits), so every boundary and tie occurs.
Hypothesis draws conditions on every key attribute, in key order and out of it: a refusal must
carry the rule the order rules predict, and send no request; an answer must hold exactly the
matching items in key order (rows whose three sort values are equal may come in any order),
through limits, pages and cursors.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from lsiorm import Entity, Session
from lsiorm._conditions import Compare, Operator, begins_with, between, eq, ge, gt, le, lt
from lsiorm._ops.reads import all as all_items
from lsiorm._query.values import Query, query
from lsiorm.errors import QueryPlanError
from support.engine_examples import engine_examples
from support.models import declare_tasks, tasks_table
from support.oracles import holds
from support.reading import draw_reading, resumed
from support.tables import session_with

TABLE = tasks_table(f"multikey_{uuid.uuid4().hex[:8]}")
Task, Bug, Note = declare_tasks(TABLE)
KINDS = (Task, Bug)
SORT = ("priority", "due_at", "title")
START = datetime(2024, 5, 1, tzinfo=timezone.utc)
TITLES = ["a", "ab", "abc", "ab\x00", "b", "B", "é", "éa", "z", "\ue000", "\U0001d11e", "a b"]
PRIORITIES = [-10, -2, 0, 1, 2, 9, 10, 100]
DUES = [START + timedelta(days=d, microseconds=u) for d in (0, 1, 2) for u in (0, 1)]


def _dataset() -> list[Entity]:
    rng = random.Random(2211)
    items: list[Entity] = []
    for n in range(90):
        cls = KINDS[n % 2]
        items.append(
            cls(
                task_id=f"i{n:03d}",
                tenant=rng.choice(["acme", "beta"]),
                region=rng.choice(["eu", "us"]),
                priority=rng.choice(PRIORITIES),
                due_at=rng.choice(DUES),
                title=rng.choice(TITLES),
            )
        )
    return items


ITEMS = _dataset()


@dataclass
class Store:
    session: Session
    sent: Sent


@pytest.fixture(scope="module")
def store(endpoint_url: str) -> Iterator[Store]:
    sent = Sent()
    with session_with(endpoint_url, TABLE, hooks=[sent]) as session:
        session.batch_write(ITEMS)
        session.put(Note(task_id="n1", tenant="acme", region="eu", title="a"))
        yield Store(session, sent)


def _order(e: Any) -> tuple[Any, ...]:
    return (e.priority, e.due_at, e.title.encode())  # DynamoDB compares text as UTF-8 bytes


def _pool_values(name: str) -> list[Any]:
    return {"priority": PRIORITIES, "due_at": DUES, "title": TITLES}[name]


def _value(data: st.DataObject, name: str) -> Any:
    base = data.draw(st.sampled_from(_pool_values(name)))
    if data.draw(st.booleans()):
        return base
    if name == "priority":
        return base + data.draw(st.sampled_from([-1, 1]))
    if name == "due_at":
        return base + data.draw(st.sampled_from([-1, 1])) * timedelta(microseconds=1)
    return data.draw(st.sampled_from([base + "\x00", base[:-1] or "a", base + "a"]))


def _ops(data: st.DataObject, name: str) -> list[Operator]:
    kinds = ["eq", "eq", "lt", "le", "gt", "ge", "between", "two"]
    if name == "title":
        kinds.append("begins_with")
    kind = data.draw(st.sampled_from(kinds))
    a, b = _value(data, name), _value(data, name)
    if kind == "begins_with":
        return [begins_with(a[: data.draw(st.integers(0, len(a)))])]
    if kind == "between":
        return [between(min(a, b), max(a, b)) if data.draw(st.booleans()) else between(a, b)]
    if kind == "two":
        # title is stored as its key attribute, which DynamoDB does not filter on, so an
        # exclusive upper end there is refused (see test_multikey's unit tests); le only.
        upper = [le] if name == "title" else [lt, le]
        return [data.draw(st.sampled_from([gt, ge]))(a), data.draw(st.sampled_from(upper))(b)]
    maker: Callable[[Any], Operator] = {"eq": eq, "lt": lt, "le": le, "gt": gt, "ge": ge}[kind]
    return [maker(a)]


def _equality(ops: list[Operator]) -> bool:
    return all(isinstance(op, Compare) and op.op == "=" for op in ops)


@dataclass
class Case:
    q: Query[Any]
    kinds: tuple[type[Entity], ...]
    conditions: dict[str, list[Operator]]
    #: The rule a refusal must carry (None: the query is answered).
    refusal: str | None


def _draw_case(data: st.DataObject) -> Case:
    kinds = data.draw(st.sampled_from([(Task,), (Bug,), (Task, Bug)]))
    # Values come from an item, so that most answers hold items and boundaries are hit.
    anchor = data.draw(st.sampled_from([e for e in ITEMS if isinstance(e, kinds)]))
    conditions: dict[str, list[Operator]] = {}
    for name in ("tenant", "region"):
        shape = data.draw(st.sampled_from(["anchor"] * 8 + ["other", "none", "range"]))
        if shape == "anchor":
            conditions[name] = [eq(getattr(anchor, name))]
        elif shape == "other":
            conditions[name] = [eq(data.draw(st.sampled_from(["acme", "beta", "gamma"])))]
        elif shape == "range":
            conditions[name] = [ge("a")]
    if data.draw(st.integers(0, 2)):
        # In key order: equalities on a prefix of the sort attributes, then maybe one more.
        k = data.draw(st.integers(0, len(SORT)))
        for name in SORT[:k]:
            use_anchor = data.draw(st.integers(0, 3))
            conditions[name] = [eq(getattr(anchor, name) if use_anchor else _value(data, name))]
        if k < len(SORT) and data.draw(st.booleans()):
            conditions[SORT[k]] = _ops(data, SORT[k])
    else:
        for name in SORT:
            if data.draw(st.integers(0, 2)):
                conditions[name] = _ops(data, name)
    fallback = data.draw(st.integers(0, 3)) == 0
    q: Query[Any] = query(*kinds)
    for name, ops in conditions.items():
        for op in ops:
            q = q.where(**{name: op})
    if fallback:
        q = q.allow_filter_fallback()
    # The rules, stated independently of the planner: equality on both partition attributes;
    # the sort attributes used are a prefix of (prio, due, title), equality on all but the last.
    used = [n for n in SORT if n in conditions]
    partition = all(n in conditions and _equality(conditions[n]) for n in ("tenant", "region"))
    in_order = used == list(SORT[: len(used)]) and all(_equality(conditions[n]) for n in used[:-1])
    refusal = None
    if not partition:
        refusal = "query.no-index"
    elif not in_order and not fallback:
        refusal = "query.multi-key-order"
    elif not in_order:
        # The conditions past the key condition are filtered, but DynamoDB filters on no key
        # attribute of the index: title is stored as one (priority and due_at are copies).
        stop = next(
            k for k, n in enumerate(SORT) if n not in conditions or not _equality(conditions[n])
        )
        stop += 1 if SORT[stop] in conditions else 0
        if "title" in conditions and SORT.index("title") >= stop:
            refusal = "query.filter-on-key"
    return Case(q, kinds, conditions, refusal)


def _matches(case: Case, e: Any) -> bool:
    return isinstance(e, case.kinds) and all(
        holds(op, getattr(e, name)) for name, ops in case.conditions.items() for op in ops
    )


def _check(results: list[Any], expected: list[Any], limit: int | None, forward: bool) -> None:
    ordered = sorted(expected, key=_order, reverse=not forward)
    want = ordered if limit is None else ordered[:limit]
    assert [_order(e) for e in results] == [_order(e) for e in want]
    ids = [(type(e).__name__, e.task_id) for e in results]
    assert len(set(ids)) == len(ids)
    everything = {(type(e).__name__, e.task_id): e for e in ordered}
    if limit is None:
        assert set(ids) == set(everything)
    for got in results:
        assert got == everything[(type(got).__name__, got.task_id)]


@engine_examples(150)
@given(data=st.data())
def test_multi_attribute_queries_equal_brute_force(store: Store, data: st.DataObject) -> None:
    case = _draw_case(data)
    q, forward, limit = draw_reading(data, case.q)
    session = store.session
    if case.refusal is not None:
        event(f"refused: {case.refusal}")
        before = store.sent.count
        with pytest.raises(QueryPlanError) as refused:
            session.run(all_items(session.ctx, q))
        assert refused.value.rule == case.refusal
        assert store.sent.count == before
        return
    plan = q.plan()
    event("provably empty" if plan.empty else f"{len(plan.requests)} request(s)")
    event("filtered" if plan.has_filter else "key condition only")
    expected = [e for e in ITEMS if _matches(case, e)]
    results: list[Any] = session.run(all_items(session.ctx, q))
    event("no result" if not results else "results")
    _check(results, expected, limit, forward)
    if plan.has_filter or len(plan.requests) > 1 or data.draw(st.booleans()):
        _check(resumed(session, q, data), expected, None, forward)


class Sent:
    """A session hook that counts the requests sent."""

    def __init__(self) -> None:
        self.count = 0

    def before(self, request: Any) -> None:
        self.count += 1
