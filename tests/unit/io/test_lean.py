"""The lean request lane: its request bodies are botocore's, and it steps aside whenever anything
else (moto's mock_aws, botocore's Stubber, a user's handlers) watches the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
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

from lsiorm import AsyncSession, Session, query
from lsiorm._io import lean
from lsiorm.errors import ConditionFailedError
from support.models import declare_scored_doc

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
    _table, doc = declare_scored_doc("stubbed")
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
    table, doc = declare_scored_doc("mocked")
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
    table, doc = declare_scored_doc("mocked_later")
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
    _table, doc = declare_scored_doc("handled")
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


def test_unknown_operations_go_to_botocore() -> None:
    session = _lean_session("http://127.0.0.1:9")
    lane = session.driver.lane
    assert lane is not None
    assert not lane.usable("TransactWriteItems")
    assert not lane.usable("CreateTable")
    assert lane.usable("BatchWriteItem")


# -- the async lane ------------------------------------------------------------------------------


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
