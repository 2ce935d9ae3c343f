"""The lean lane's direct send against botocore's send, on the engines: same results, same errors.

Two sessions run the same random operations, each on a table of its own: one with the direct
send (the default), one with ``LSIORM_DIRECT_SEND=0`` (the lean lane on botocore's
``URLLib3Session.send``). Every request and what came back (a response, or the typed error
and its text) must be the same. Through the fault proxy, a connection closed without an answer
must raise the same botocore exception on both sends, and the same typed error in a session.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import RetryPolicy, Session, Table, query
from lsiorm._io import direct_send, lean
from lsiorm._requests.transactions import Delete, Put, Update
from lsiorm.errors import LsiormError, TransportError
from support.engine_examples import engine_examples
from support.faults import FaultProxy
from support.lanes import normal, recorded
from support.models import declare_grouped
from support.tables import created

ns = st.integers(min_value=0, max_value=5)
bodies = st.text(max_size=6)
steps = st.one_of(
    st.tuples(st.just("put"), ns, bodies, st.booleans()),
    st.tuples(st.just("get"), ns),
    st.tuples(st.just("update"), ns, bodies, st.booleans()),
    st.tuples(st.just("delete"), ns),
    st.tuples(st.just("query"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("batch_write"), st.lists(ns, max_size=4, unique=True), ns),
    st.tuples(st.just("transact"), ns, ns, bodies),
    st.tuples(st.just("missing-table"), ns),
)


def _step(
    session: Session, item: type[Any], missing: type[Any], group: str, step: Any, tokens: list[str]
) -> Any:
    """Run one step; a transaction's token (random, each run its own) is noted in ``tokens``."""
    kind, *args = step
    if kind == "put":
        n, body, create_only = args
        return session.put(item(group=group, n=n, body=body), create_only=create_only)
    if kind == "get":
        return session.get(item, group=group, n=args[0])
    if kind == "update":
        n, body, upsert = args
        return session.update(item, group=group, n=n, set={"body": body}, upsert=upsert)
    if kind == "delete":
        return session.delete(item, group=group, n=args[0])
    if kind == "query":
        return session.all(query(item).where(group=group).page_size(args[0]))
    if kind == "batch_write":
        puts, deleted = args
        deletes = [(item, {"group": group, "n": deleted})] if deleted not in puts else []
        return session.batch_write([item(group=group, n=n) for n in puts], deletes)
    if kind == "transact":
        put, other, body = args
        actions: list[Any] = [Put(item(group=group, n=put, body=body))]
        if other != put:
            actions.append(Update(item, {"group": group, "n": other}, set={"body": body}))
        tokens.extend(str(uuid.uuid4()) for _ in range(2))
        result = session.transact_write(actions, token=tokens[-2])
        session.transact_write([Delete(item, {"group": group, "n": put})], token=tokens[-1])
        return result
    return session.get(missing, group=group, n=args[0])  # its table was never made


def _outcomes(
    session: Session, table: Table, item: type[Any], missing: type[Any], run: list[Any]
) -> list[str]:
    """What each step returned or raised, then each request and what came back, as text."""
    group = uuid.uuid4().hex[:8]  # a fresh partition for each example
    seen = []
    tokens: list[str] = []
    with recorded(session) as notes:
        for step in run:
            try:
                seen.append(repr(_step(session, item, missing, group, step, tokens)))
            except LsiormError as exc:
                seen.append(f"{type(exc).__name__}: {exc}")

    # The partitions differ between runs, the table names between the sessions.
    def same(texts: list[str]) -> list[str]:
        for token in tokens:
            texts = [text.replace(token, "TOKEN") for text in texts]
        return [text.replace(table.name, "T").replace(group, "G") for text in texts]

    # The steps in order, the requests as a multiset (the chunks of a batch may go in any order).
    return [*same(seen), *sorted(same(normal(notes.seen, table.name)))]


class _Pair:
    """A session with the direct send and one without, each with a table of its own."""

    def __init__(self, endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[tuple[Session, Table, type[Any]]] = []
        for setting in ("on", "0"):
            monkeypatch.setenv(direct_send.DISABLE_ENV, setting)
            table, item = declare_grouped("direct")
            session = Session(endpoint_url=endpoint_url, region_name="us-east-1")
            self.runs.append((session, table, item))
        monkeypatch.delenv(direct_send.DISABLE_ENV)
        _, self.missing = declare_grouped("never_made")

    def lanes(self) -> list[lean.LeanLane]:
        found = []
        for session, _, _ in self.runs:
            driver = getattr(session.driver, "inner", session.driver)
            assert isinstance(driver.lane, lean.LeanLane)
            found.append(driver.lane)
        return found


@pytest.fixture
def pair(endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Pair]:
    made = _Pair(endpoint_url, monkeypatch)
    try:
        for session, table, _ in made.runs:
            session.create_table(table)
        yield made
    finally:
        for session, table, _ in made.runs:
            session.delete_table(table)
            session.close()


@engine_examples(15)
@given(run=st.lists(steps, min_size=1, max_size=10))
def test_direct_and_botocore_sends_give_the_same_results_and_errors(
    pair: _Pair, run: list[Any]
) -> None:
    direct, botocore_send = (_outcomes(s, t, item, pair.missing, run) for s, t, item in pair.runs)
    assert direct == botocore_send


@pytest.mark.integration
def test_the_direct_send_sent_what_the_lean_lane_sent(pair: _Pair) -> None:
    direct, botocore_send = pair.lanes()
    assert direct.direct is not None
    assert botocore_send.direct is None
    for session, table, item in pair.runs:
        _outcomes(session, table, item, pair.missing, [("put", 1, "a", False), ("query", 2)])
    assert direct.sent == direct.sent_direct == 2
    assert (botocore_send.sent, botocore_send.sent_direct) == (2, 0)


# -- connections closed without an answer -------------------------------------------------------


@pytest.fixture
def proxy(endpoint_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(endpoint_url, rate=0.0) as running:
        yield running


@pytest.fixture
def world(dynamodb_client: Any) -> Iterator[tuple[Table, type[Any]]]:
    table, item = declare_grouped("closed")
    with created(dynamodb_client, table):
        yield table, item


@pytest.mark.parametrize("kind", ["drop", "lost-response"])
def test_a_connection_closed_without_an_answer_fails_alike(
    proxy: FaultProxy, world: tuple[Table, type[Any]], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, item = world
    proxy.kinds, proxy.rate = (kind,), 1.0
    once = RetryPolicy(max_attempts=1)
    raw: list[tuple[type[BaseException], str]] = []
    typed: list[tuple[str, str | None]] = []
    for setting in ("on", "0"):
        monkeypatch.setenv(direct_send.DISABLE_ENV, setting)
        with Session(endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=once) as s:
            lane = getattr(s.driver, "inner", s.driver).lane
            assert (lane.direct is not None) is (setting == "on")
            params = {"TableName": table.name, "Item": item(group="g", n=1).to_wire()}
            with pytest.raises(Exception) as caught:  # noqa: PT011 - compared just below
                lane.send("PutItem", params)
            raw.append((type(caught.value), str(caught.value)))
            with pytest.raises(TransportError) as failed:
                s.get(item, group="g", n=1)
            typed.append((type(failed.value).__name__, failed.value.code))
            assert lane.direct is None or lane.direct.usable()
    assert raw[0] == raw[1]
    assert raw[0][0].__name__ == "ConnectionClosedError"
    assert typed[0] == typed[1] == ("TransportError", "ConnectionClosedError")
