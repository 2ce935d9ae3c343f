"""The lean request lane: same requests and results as botocore's lane, and never used when
anything else (moto's mock_aws, botocore's Stubber, a user's handlers) watches the client."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import botocore.session
import orjson
import pytest
from botocore.config import Config
from botocore.serialize import create_serializer
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws
from pydantic import Field

from lsiorm import AsyncSession, Entity, KeyAttribute, LocalIndex, Projection, Session, Table, query
from lsiorm._io import lean
from lsiorm._ops.steps import Call
from lsiorm.errors import ConditionFailedError, LsiormError

_service = botocore.session.Session().get_service_model("dynamodb")
_serializer = create_serializer("json")

blobs = st.binary(max_size=12)
scalar_avs = (
    st.builds(lambda s: {"S": s}, st.text(max_size=8))
    | st.builds(lambda n: {"N": str(n)}, st.integers())
    | st.builds(lambda b: {"B": b}, blobs)
    | st.builds(lambda b: {"BOOL": b}, st.booleans())
    | st.just({"NULL": True})
    | st.builds(lambda bs: {"BS": sorted(bs)}, st.sets(blobs, min_size=1, max_size=3))
    | st.builds(lambda ss: {"SS": sorted(ss)}, st.sets(st.text(max_size=5), min_size=1, max_size=3))
)
avs = st.recursive(
    scalar_avs,
    lambda kids: (
        st.builds(lambda xs: {"L": xs}, st.lists(kids, max_size=3))
        | st.builds(lambda m: {"M": m}, st.dictionaries(st.text(max_size=5), kids, max_size=3))
    ),
    max_leaves=10,
)
wire_items = st.dictionaries(st.text(min_size=1, max_size=6), avs, min_size=1, max_size=5)


@given(wire_items)
def test_request_body_is_botocores_body(item: dict[str, Any]) -> None:
    """orjson with base64 for bytes writes what botocore's serializer writes (as JSON)."""
    params = {"TableName": "t", "Item": item, "ReturnValues": "ALL_OLD"}
    expected = _serializer.serialize_to_request(params, _service.operation_model("PutItem"))
    assert orjson.loads(orjson.dumps(params, default=lean._default)) == json.loads(expected["body"])


# -- a scenario run on both lanes, against both engines ------------------------------------------


def make_model(name: str) -> tuple[Table, type[Entity]]:
    table = Table(
        name,
        partition_key="pk",
        sort_key="sk",
        local_indexes=[LocalIndex("ByScore", KeyAttribute("lsi1", "N"), Projection.all())],
    )

    class Doc(Entity, table=table, keys={"pk": "D#{owner}", "sk": "{n:06d}", "lsi1": "{score}"}):
        owner: str
        n: int
        score: int | None = None
        blob: bytes = b""
        blobs: set[bytes] = Field(default_factory=set)
        price: Decimal = Decimal("0")
        note: str = ""
        tags: list[str] = Field(default_factory=list)

    return table, Doc


def _comparable(response: Any) -> Any:
    # ResponseMetadata carries request ids, dates and the like, which differ run to run.
    if isinstance(response, dict):
        return {k: v for k, v in response.items() if k != "ResponseMetadata"}
    return response


def run_scenario(session: Session, table: Table, doc: type[Entity]) -> list[Any]:
    """Run every data-plane operation and return each request and what came back."""
    seen: list[Any] = []
    driver = getattr(session.driver, "inner", session.driver)  # under the capacity meter
    send = driver.send

    def recording(call: Call) -> dict[str, Any]:
        try:
            response = send(call)
        except LsiormError as exc:
            seen.append((call.operation, call.params, type(exc).__name__, exc.code, str(exc)))
            raise
        seen.append((call.operation, call.params, _comparable(response)))
        return response

    driver.send = recording  # type: ignore[method-assign]
    docs = [
        doc(  # type: ignore[call-arg]
            owner=f"o{i % 2}",
            n=i,
            score=i * 7 % 5 if i % 3 else None,
            blob=bytes([i, 255 - i]),
            blobs={bytes([i]), b"\x00\xff"},
            price=Decimal(i) / 4,
            note="é" * i,
            tags=[f"t{j}" for j in range(i % 4)],
        )
        for i in range(40)
    ]
    session.put(docs[0])
    session.put(docs[0], create_only=False)
    with pytest.raises(ConditionFailedError):
        session.put(docs[0], create_only=True)
    session.batch_write(puts=docs[1:30])
    assert session.get(doc, owner="o0", n=0) == docs[0]
    assert session.get(doc, owner="o0", n=999) is None
    session.update(doc, owner="o1", n=1, set={"note": "changed", "blob": b"\x01\x02"})
    found = session.batch_get(doc, [{"owner": f"o{i % 2}", "n": i} for i in range(35)])
    assert len(found) == 30
    everything = session.all(query(doc).where(owner="o0").page_size(4))
    assert len(everything) == 15
    by_score = session.all(query(doc).where(owner="o1", score=3))
    assert all(d.score == 3 for d in by_score)  # type: ignore[attr-defined]
    session.delete(doc, owner="o0", n=2)
    session.batch_write(puts=docs[30:], deletes=[(doc, {"owner": "o0", "n": 4})])
    driver.send = send  # type: ignore[method-assign]
    return seen


@pytest.fixture
def fresh_tables(endpoint_url: str) -> Iterator[list[tuple[Session, Table, type[Entity]]]]:
    made: list[tuple[Session, Table, type[Entity]]] = []
    yield made
    for session, table, _ in made:
        session.delete_table(table)
        session.close()


@pytest.mark.integration
def test_both_lanes_send_the_same_requests_and_get_the_same_results(
    endpoint_url: str, fresh_tables: list[tuple[Session, Table, type[Entity]]]
) -> None:
    runs = []
    for use_lean in (False, True):
        table, doc = make_model(f"lean_{uuid.uuid4().hex[:10]}")
        session = Session(endpoint_url=endpoint_url, region_name="us-east-1", lean=use_lean)
        session.create_table(table)
        fresh_tables.append((session, table, doc))
        runs.append(run_scenario(session, table, doc))
        lane = session.driver.lane
        if use_lean:
            assert lane is not None
            assert lane.sent == len(runs[-1])
        else:
            assert lane is None
    names = [t.name for _, t, _ in fresh_tables]
    # The chunks of one batch are sent concurrently and may be recorded in any order: compare
    # the requests and results as a multiset.
    plain, lean_run = (
        sorted(json.dumps(x, default=repr, sort_keys=True).replace(n, "T") for x in r)
        for r, n in zip(runs, names, strict=True)
    )
    assert lean_run == plain


# -- safety: anything that watches requests keeps them on botocore -------------------------------


def _lean_session(endpoint_url: str) -> Session:
    session = Session(endpoint_url=endpoint_url, region_name="us-east-1")
    assert session.driver.lane is not None
    return session


def test_lane_is_off_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Session(endpoint_url="http://127.0.0.1:9", lean=False).driver.lane is None
    monkeypatch.setenv(lean.DISABLE_ENV, "0")
    assert Session(endpoint_url="http://127.0.0.1:9").driver.lane is None


def test_client_with_botocore_retries_keeps_botocores_lane() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    assert Session(client=client).driver.lane is None
    retries_off = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"total_max_attempts": 1}),
    )
    assert Session(client=retries_off).driver.lane is not None


def test_stubber_sees_every_request() -> None:
    _table, doc = make_model("stubbed")
    session = _lean_session("http://127.0.0.1:9")  # nothing listens there
    entity = doc(owner="a", n=1, blob=b"\x00")  # type: ignore[call-arg]
    stubber = Stubber(session.client)
    stubber.add_response("put_item", {})
    stubber.add_response("get_item", {"Item": entity.to_wire()})
    stubber.add_client_error("delete_item", "ConditionalCheckFailedException")
    with stubber:
        session.put(entity)
        assert session.get(doc, owner="a", n=1) == entity
        with pytest.raises(ConditionFailedError):
            session.delete(doc, owner="a", n=1)
        stubber.assert_no_pending_responses()
    lane = session.driver.lane
    assert lane is not None
    assert lane.sent == 0
    assert lane.declined == 3


def test_mock_aws_sees_every_request_made_inside_it() -> None:
    table, doc = make_model("mocked")
    with mock_aws():
        session = Session(region_name="us-east-1")
        session.create_table(table)
        entity = doc(owner="a", n=1)  # type: ignore[call-arg]
        session.put(entity)
        session.batch_write(puts=[doc(owner="a", n=i) for i in range(2, 30)])  # type: ignore[call-arg]
        assert session.get(doc, owner="a", n=1) == entity
        assert len(session.all(query(doc).where(owner="a"))) == 29
        lane = session.driver.lane
        assert lane is None or lane.sent == 0
        raw = boto3.client("dynamodb", region_name="us-east-1")
        assert raw.scan(TableName=table.name)["Count"] == 29


def test_mock_aws_started_after_the_session_still_sees_every_request() -> None:
    table, doc = make_model("mocked_later")
    session = Session(region_name="us-east-1")  # the real AWS endpoint, if the lane went there
    lane = session.driver.lane
    assert lane is not None
    with mock_aws():
        session.create_table(table)
        session.put(doc(owner="a", n=1))  # type: ignore[call-arg]
        assert session.get(doc, owner="a", n=1) is not None
        raw = boto3.client("dynamodb", region_name="us-east-1")
        assert raw.scan(TableName=table.name)["Count"] == 1
    assert lane.sent == 0
    assert lane.declined >= 2


@pytest.mark.parametrize("event", ["before-send", "before-call", "before-parameter-build"])
def test_user_handlers_see_every_request(event: str) -> None:
    _table, doc = make_model("handled")
    session = _lean_session("http://127.0.0.1:9")
    seen: list[str] = []

    def handler(**kwargs: Any) -> Any:
        model = kwargs.get("model")
        seen.append(model.name if model is not None else event)
        from botocore.awsrequest import AWSResponse

        if event == "before-send":
            return AWSResponse(kwargs["request"].url, 200, {}, _Raw(b"{}"))
        if event == "before-call":
            return AWSResponse("http://127.0.0.1:9", 200, {}, _Raw(b"{}")), {}
        return None

    session.client.meta.events.register(f"{event}.dynamodb", handler)
    if event == "before-parameter-build":
        stubber = Stubber(session.client)
        stubber.add_response("put_item", {})
        stubber.activate()
    session.put(doc(owner="a", n=1))  # type: ignore[call-arg]
    assert len(seen) == 1
    lane = session.driver.lane
    assert lane is not None
    assert lane.sent == 0
    session.client.meta.events.unregister(f"{event}.dynamodb", handler)
    assert lane.usable("PutItem") is (event != "before-parameter-build")


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self.body


@pytest.mark.integration
def test_credentials_are_read_for_every_request(endpoint_url: str, table_name: str) -> None:
    table, doc = make_model(table_name)
    session = _lean_session(endpoint_url)
    lane = session.driver.lane
    assert lane is not None
    calls = 0
    frozen = lane._credentials.get_frozen_credentials

    def counting() -> Any:
        nonlocal calls
        calls += 1
        return frozen()

    session.create_table(table)  # botocore's lane, which reads them too
    lane._credentials.get_frozen_credentials = counting
    try:
        for i in range(3):
            session.put(doc(owner="a", n=i))  # type: ignore[call-arg]
        assert calls == lane.sent == 3
    finally:
        session.delete_table(table)


def test_unknown_operations_go_to_botocore() -> None:
    session = _lean_session("http://127.0.0.1:9")
    lane = session.driver.lane
    assert lane is not None
    assert not lane.usable("TransactWriteItems")
    assert not lane.usable("CreateTable")
    assert lane.usable("BatchWriteItem")


# -- the async lane ------------------------------------------------------------------------------


async def run_async_scenario(session: AsyncSession, doc: type[Entity]) -> list[Any]:
    seen: list[Any] = []
    driver = getattr(session.driver, "inner", session.driver)  # under the capacity meter
    send = driver.send

    async def recording(call: Call) -> dict[str, Any]:
        try:
            response = await send(call)
        except LsiormError as exc:
            seen.append((call.operation, call.params, type(exc).__name__, exc.code, str(exc)))
            raise
        seen.append((call.operation, call.params, _comparable(response)))
        return response

    driver.send = recording  # type: ignore[method-assign]
    docs = [
        doc(owner="o", n=i, blob=bytes([i]), blobs={b"\x01", bytes([i])}, price=Decimal(i) / 8)  # type: ignore[call-arg]
        for i in range(60)
    ]
    await session.put(docs[0])
    with pytest.raises(ConditionFailedError):
        await session.put(docs[0], create_only=True)
    await session.batch_write(puts=docs[1:], concurrency=4)
    assert await session.get(doc, owner="o", n=5) == docs[5]
    assert len(await session.all(query(doc).where(owner="o").page_size(7))) == 60
    assert (
        len(await session.batch_get(doc, [{"owner": "o", "n": i} for i in range(0, 60, 3)])) == 20
    )
    await session.delete(doc, owner="o", n=1)
    driver.send = send  # type: ignore[method-assign]
    return seen


@pytest.mark.integration
async def test_both_async_lanes_send_the_same_requests_and_get_the_same_results(
    endpoint_url: str,
) -> None:
    runs = []
    names = []
    for use_lean in (False, True):
        table, doc = make_model(f"alean_{uuid.uuid4().hex[:10]}")
        names.append(table.name)
        async with AsyncSession(
            endpoint_url=endpoint_url, region_name="us-east-1", lean=use_lean
        ) as session:
            await session.create_table(table)
            try:
                runs.append(await run_async_scenario(session, doc))
                lane = session.driver.lane
                if use_lean:
                    assert isinstance(lane, lean.AsyncLeanLane)
                    assert lane.sent == len(runs[-1])  # all but CreateTable and DescribeTable
                else:
                    assert lane is None
            finally:
                await session.delete_table(table)

    def normal(run: list[Any], name: str) -> Any:
        # Concurrent chunks may finish in any order: compare the requests as a multiset.
        return sorted(json.dumps(r, default=repr, sort_keys=True).replace(name, "T") for r in run)

    assert normal(runs[1], names[1]) == normal(runs[0], names[0])


async def test_async_lane_steps_aside_for_user_handlers() -> None:
    async with AsyncSession(endpoint_url="http://127.0.0.1:9", region_name="us-east-1") as session:
        lane = session.driver.lane
        assert isinstance(lane, lean.AsyncLeanLane)
        assert lane.usable("PutItem")

        def handler(**kwargs: Any) -> None:
            return None

        session.client.meta.events.register("before-send.dynamodb", handler)
        assert not lane.usable("PutItem")
        session.client.meta.events.unregister("before-send.dynamodb", handler)
        assert lane.usable("PutItem")
