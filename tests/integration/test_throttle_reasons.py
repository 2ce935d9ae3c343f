"""A throttle's reasons reach `ThrottledError` on every lane: the lean lane and botocore's, sync
and async, and with a botocore whose model does not know them.

The throttles are real HTTP answers of a proxy in front of the engine (their bodies as AWS sends
them), so each lane parses them as it would parse DynamoDB's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.loaders import Loader

from lsiorm import AsyncSession, RetryPolicy, Session, ThrottledError
from lsiorm.testing import FaultInjector
from support.faults import FaultProxy
from support.models import declare_scored_doc
from support.tables import created

ONCE = RetryPolicy(max_attempts=1)
KEY_RANGE = "TableWriteKeyRangeThroughputExceeded"
ON_DEMAND = "TableWriteMaxOnDemandThroughputExceeded"
CODES = ("ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded")


@pytest.fixture
def scored(dynamodb_client: Any, table_name: str) -> Iterator[tuple[Any, type[Any]]]:
    table, doc = declare_scored_doc(table_name)
    with created(dynamodb_client, table):
        yield table, doc


def check(error: ThrottledError, code: str, table: str) -> None:
    assert error.code == code
    assert [r.reason for r in error.reasons] == [KEY_RANGE, ON_DEMAND]
    assert {r.table for r in error.reasons} == {table}
    assert error.key_range
    assert error.partition_key == {"pk": {"S": "D#hot"}}


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize("code", CODES)
def test_sync_lanes_parse_the_reasons(
    endpoint_url: str, scored: tuple[Any, type[Any]], lean: bool, code: str
) -> None:
    table, doc = scored
    proxy = FaultProxy(
        endpoint_url,
        rate=1.0,
        kinds=("throttle",),
        throttle_code=code,
        throttle_reasons=(KEY_RANGE, ON_DEMAND),
    )
    with (
        proxy,
        Session(
            endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=ONCE, lean=lean
        ) as s,
    ):
        assert (s.driver.lane is not None) == lean
        with pytest.raises(ThrottledError) as caught:
            s.put(doc(owner="hot", n=1))
    check(caught.value, code, table.name)


@pytest.mark.parametrize("lean", [True, False])
async def test_async_lanes_parse_the_reasons(
    endpoint_url: str, scored: tuple[Any, type[Any]], lean: bool
) -> None:
    table, doc = scored
    code = "ThrottlingException"
    proxy = FaultProxy(
        endpoint_url,
        rate=1.0,
        kinds=("throttle",),
        throttle_code=code,
        throttle_reasons=(KEY_RANGE, ON_DEMAND),
    )
    with proxy:
        async with AsyncSession(
            endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=ONCE, lean=lean
        ) as s:
            with pytest.raises(ThrottledError) as caught:
                await s.put(doc(owner="hot", n=1))
    check(caught.value, code, table.name)


@pytest.fixture
def model_without_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's DynamoDB model as releases before ``ThrottlingReason`` had it: the throttles'
    shapes without the member, for every client made while it is on."""
    load = Loader.load_service_model

    def older(self: Loader, service: str, kind: str, api_version: str | None = None) -> Any:
        model = load(self, service, kind, api_version)
        if service != "dynamodb" or kind != "service-2":
            return model
        model = copy.deepcopy(model)
        for shape in ("ProvisionedThroughputExceededException", "RequestLimitExceeded"):
            del model["shapes"][shape]["members"]["ThrottlingReasons"]
        del model["shapes"]["ThrottlingException"]["members"]["throttlingReasons"]
        return model

    monkeypatch.setattr(Loader, "load_service_model", older)


@pytest.mark.usefixtures("model_without_reasons")
@pytest.mark.parametrize("lean", [True, False])
def test_reasons_reach_the_error_when_botocore_drops_them(
    endpoint_url: str, scored: tuple[Any, type[Any]], lean: bool
) -> None:
    table, doc = scored
    code = "ProvisionedThroughputExceededException"
    proxy = FaultProxy(
        endpoint_url,
        rate=1.0,
        kinds=("throttle",),
        throttle_code=code,
        throttle_reasons=(KEY_RANGE, ON_DEMAND),
    )
    with (
        proxy,
        Session(
            endpoint_url=proxy.endpoint_url, region_name="us-east-1", retry=ONCE, lean=lean
        ) as s,
    ):
        members = s.client.meta.service_model.shape_for(code).members
        assert "ThrottlingReasons" not in members  # botocore would drop them
        with pytest.raises(ThrottledError) as caught:
            s.put(doc(owner="hot", n=1))
    check(caught.value, code, table.name)


def test_an_injected_throttle_carries_its_reasons(
    endpoint_url: str, scored: tuple[Any, type[Any]]
) -> None:
    table, doc = scored
    twice = RetryPolicy(max_attempts=2, initial=0.001, maximum=0.001)
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1", retry=twice) as session,
        FaultInjector(session=session) as faults,
    ):
        faults.throttle(
            "PutItem",
            reason=KEY_RANGE,
            when=lambda _, params: params["Item"]["pk"] == {"S": "D#hot"},
            rate=1.0,
        )
        session.put(doc(owner="cold", n=1))  # not chosen
        with pytest.raises(ThrottledError) as caught:
            session.put(doc(owner="hot", n=1))
    error = caught.value
    assert [(r.reason, r.table, r.kind) for r in error.reasons] == [
        (KEY_RANGE, table.name, "Table")
    ]
    assert error.partition_key == {"pk": {"S": "D#hot"}}
    assert faults.count("PutItem", fault="throttle") == 2
