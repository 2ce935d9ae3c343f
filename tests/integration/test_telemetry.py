"""Spans and metrics on the engines: one span per request on both lanes, sync and async, under
the span of its operation; and with OpenTelemetry's botocore instrumentation on, every request
traced exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from lsiorm import AsyncSession, Entity, Session, Table, TransactAction, cond, query
from lsiorm._requests.transactions import ConditionCheck, Put
from support.models import declare_scored_doc
from support.otel import CountingHook, Recording, otel

__all__ = ["otel"]  # the fixture

LANES = [pytest.param(True, id="lean"), pytest.param(False, id="botocore")]
#: The documents of the scenario whose score is 3 (score = n % 7).
SCORED_3 = [n for n in range(60) if n % 7 == 3]


def _check_request(span: ReadableSpan, table: str) -> None:
    operation = span.name.removeprefix("DynamoDB.")
    attributes = span.attributes or {}
    assert span.kind == SpanKind.CLIENT
    assert attributes["rpc.system"] == "aws-api"
    assert attributes["rpc.service"] == "DynamoDB"
    assert attributes["rpc.method"] == operation
    assert attributes["cloud.region"] == "us-east-1"
    assert attributes["server.address"] == "127.0.0.1"
    scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
    if scope == "lsiorm" or operation != "TransactWriteItems":
        # (the botocore instrumentation names no tables of a transaction)
        assert attributes["aws.dynamodb.table_names"] == (table,)


class Scenario:
    """A put, a get, a query, a batch (in several chunks), a batch get and a transaction."""

    def __init__(self, table: Table, doc: type[Entity]) -> None:
        self.table = table
        self.doc = doc
        self.docs = [doc(owner="o", n=i, score=i % 7) for i in range(60)]  # type: ignore[call-arg]

    def transaction(self) -> list[TransactAction]:
        first, second = self.docs[0], self.docs[1]
        return [
            Put(self.doc(owner="t", n=1)),
            ConditionCheck(first, condition=cond("n") == 0),
            Put(second),
        ]  # type: ignore[call-arg]

    def check(self, otel: Recording, hook: CountingHook, prefix: str) -> None:
        requests = otel.requests()
        # Every request sent has exactly one span, and no span stands for no request.
        assert len(requests) == hook.total
        assert {s.name.removeprefix("DynamoDB.") for s in requests} == set(hook.sent)
        by_operation: dict[str, ReadableSpan] = {}
        for span in otel.operations():
            by_operation[span.name] = span
        expected = {
            f"{prefix}.{name}"
            for name in ("put", "get", "all", "batch_write", "batch_get", "transact_write")
        }
        assert set(by_operation) == expected
        for span in requests:
            _check_request(span, self.table.name)
            parent = otel.parent_of(span)
            assert parent is not None
            assert parent.name in expected
        for name, span in by_operation.items():
            children = [s for s in requests if otel.parent_of(s) == span]
            assert span.attributes["lsiorm.request_count"] == len(children), name
            assert span.attributes["lsiorm.entity_types"] == ("Doc",), name
        batch = [s for s in requests if otel.parent_of(s) == by_operation[f"{prefix}.batch_write"]]
        assert len(batch) == 3  # 60 puts in chunks of 25: the chunks ran in threads or tasks
        read = by_operation[f"{prefix}.all"]
        assert read.attributes["lsiorm.index"] == "ByScore"
        (query_span,) = [s for s in requests if otel.parent_of(s) == read]
        assert query_span.attributes["aws.dynamodb.index_name"] == "ByScore"
        if query_span.instrumentation_scope.name == "lsiorm":  # (botocore's omits it)
            assert query_span.attributes["aws.dynamodb.count"] == len(SCORED_3)
        assert otel.total("lsiorm.request.duration") >= hook.total


@contextmanager
def _table(endpoint_url: str) -> Iterator[tuple[Table, type[Entity]]]:
    table, doc = declare_scored_doc(f"otel_{uuid.uuid4().hex[:8]}")
    with Session(endpoint_url=endpoint_url, telemetry=False) as admin:
        admin.create_table(table)
        try:
            yield table, doc
        finally:
            admin.delete_table(table, wait=False)


def _run_sync(session: Session, scenario: Scenario) -> None:
    doc = scenario.doc
    session.put(scenario.docs[0])
    assert session.get(doc, owner="o", n=0) == scenario.docs[0]
    session.batch_write(puts=scenario.docs[1:])
    assert len(session.batch_get(doc, [{"owner": "o", "n": n} for n in range(5)])) == 5
    found = session.all(query(doc).where(owner="o", score=3))
    assert sorted(d.n for d in found) == SCORED_3  # type: ignore[attr-defined]
    session.transact_write(scenario.transaction())


async def _run_async(session: AsyncSession, scenario: Scenario) -> None:
    doc = scenario.doc
    await session.put(scenario.docs[0])
    assert await session.get(doc, owner="o", n=0) == scenario.docs[0]
    await session.batch_write(puts=scenario.docs[1:])
    assert len(await session.batch_get(doc, [{"owner": "o", "n": n} for n in range(5)])) == 5
    found = await session.all(query(doc).where(owner="o", score=3))
    assert sorted(d.n for d in found) == SCORED_3  # type: ignore[attr-defined]
    await session.transact_write(scenario.transaction())


@pytest.mark.parametrize("lean", LANES)
def test_every_request_has_one_span_under_its_operation(
    endpoint_url: str, otel: Recording, lean: bool
) -> None:
    hook = CountingHook()
    with _table(endpoint_url) as (table, doc):
        scenario = Scenario(table, doc)
        session = Session(endpoint_url=endpoint_url, telemetry=otel.telemetry, lean=lean)
        with session:
            session.add_hook(hook)
            _run_sync(session, scenario)
            lane = session.driver.inner.lane
            assert (lane is not None and lane.sent > 0) is lean
    scenario.check(otel, hook, "Session")


@pytest.mark.parametrize("lean", LANES)
async def test_every_async_request_has_one_span_under_its_operation(
    endpoint_url: str, otel: Recording, lean: bool
) -> None:
    hook = CountingHook()
    with _table(endpoint_url) as (table, doc):
        scenario = Scenario(table, doc)
        async with AsyncSession(
            endpoint_url=endpoint_url, telemetry=otel.telemetry, lean=lean
        ) as session:
            session.add_hook(hook)
            await _run_async(session, scenario)
            lane = session.driver.inner.lane
            assert (lane is not None and lane.sent > 0) is lean
    scenario.check(otel, hook, "AsyncSession")


def test_pages_are_read_under_one_operation_span(endpoint_url: str, otel: Recording) -> None:
    with _table(endpoint_url) as (_table_declared, doc):
        session = Session(endpoint_url=endpoint_url, telemetry=otel.telemetry)
        with session:
            session.batch_write(puts=[doc(owner="p", n=i) for i in range(7)])  # type: ignore[call-arg]
            otel.clear()
            pages = list(session.pages(query(doc).where(owner="p").page_size(3)))
    assert len(pages) == 3
    (operation,) = otel.operations()
    assert operation.name == "Session.pages"
    assert operation.attributes["lsiorm.request_count"] == 3
    assert all(otel.parent_of(s) == operation for s in otel.requests())


def _check_job(otel: Recording, name: str) -> None:
    (operation,) = otel.operations()
    assert operation.name == name
    scans = otel.requests()
    # A DescribeTable to price the job first, then the pages of its segments, each under the job.
    assert sum(s.name == "DynamoDB.Scan" for s in scans) >= 3
    assert all(otel.parent_of(s) == operation for s in scans)
    assert operation.attributes["lsiorm.request_count"] == len(scans)
    assert operation.attributes["lsiorm.entity_types"] == ("Doc",)


def test_a_key_job_s_segments_are_traced_under_the_job_from_worker_threads(
    endpoint_url: str, otel: Recording
) -> None:
    with (
        _table(endpoint_url) as (_table_declared, doc),
        Session(endpoint_url=endpoint_url, telemetry=otel.telemetry) as session,
    ):
        session.batch_write(puts=[doc(owner=f"k{i}", n=i) for i in range(12)])  # type: ignore[call-arg]
        otel.clear()
        assert session.audit_keys(doc, segments=3, page_size=5).stale_items == 0
    _check_job(otel, "Session.audit_keys")


async def test_an_async_key_job_s_segments_are_traced_under_the_job(
    endpoint_url: str, otel: Recording
) -> None:
    with _table(endpoint_url) as (_table_declared, doc):
        async with AsyncSession(endpoint_url=endpoint_url, telemetry=otel.telemetry) as session:
            await session.batch_write(puts=[doc(owner=f"k{i}", n=i) for i in range(12)])  # type: ignore[call-arg]
            otel.clear()
            report = await session.audit_keys(doc, segments=3, page_size=5)
            assert report.stale_items == 0
    _check_job(otel, "AsyncSession.audit_keys")


# -- with OpenTelemetry's botocore instrumentation ---------------------------------------------


@contextmanager
def _instrumented(otel: Recording, kind: str) -> Iterator[None]:
    if kind == "sync":
        from opentelemetry.instrumentation.botocore import BotocoreInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.botocore import AiobotocoreInstrumentor as Instrumentor
    instrumentor: Any = Instrumentor()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def test_with_botocore_instrumented_the_lean_lane_steps_aside_and_each_request_is_traced_once(
    endpoint_url: str, otel: Recording
) -> None:
    hook = CountingHook()
    with _table(endpoint_url) as (table, doc), _instrumented(otel, "sync"):
        scenario = Scenario(table, doc)
        with Session(endpoint_url=endpoint_url, telemetry=otel.telemetry) as session:
            session.add_hook(hook)
            _run_sync(session, scenario)
            assert session.driver.inner.lane.sent == 0
    scenario.check(otel, hook, "Session")
    scopes = {s.instrumentation_scope.name for s in otel.requests()}
    assert all(scope.startswith("opentelemetry.instrumentation.botocore") for scope in scopes)


async def test_with_aiobotocore_instrumented_each_async_request_is_traced_once(
    endpoint_url: str, otel: Recording
) -> None:
    hook = CountingHook()
    with _table(endpoint_url) as (table, doc), _instrumented(otel, "async"):
        scenario = Scenario(table, doc)
        async with AsyncSession(endpoint_url=endpoint_url, telemetry=otel.telemetry) as session:
            session.add_hook(hook)
            await _run_async(session, scenario)
            assert session.driver.inner.lane.sent == 0
    scenario.check(otel, hook, "AsyncSession")
    scopes = {s.instrumentation_scope.name for s in otel.requests()}
    assert all(scope.startswith("opentelemetry.instrumentation.botocore") for scope in scopes)


def test_with_botocore_instrumented_and_lsiorm_telemetry_off_no_request_goes_untraced(
    endpoint_url: str, otel: Recording
) -> None:
    hook = CountingHook()
    with (
        _table(endpoint_url) as (table, doc),
        _instrumented(otel, "sync"),
        Session(endpoint_url=endpoint_url, telemetry=False) as session,
    ):
        session.add_hook(hook)
        _run_sync(session, Scenario(table, doc))
    assert len(otel.requests()) == hook.total
    assert otel.operations() == []
