"""No untyped error escapes a public call on the engines: a missing table, a refused request."""

from __future__ import annotations

import pytest

from lsiorm import AsyncSession, LsiormError, Session, ValidationError
from support.sweeps import close, consume, declare, open_session, sweep


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_missing_table(mode: str, endpoint_url: str) -> None:
    table, doc = declare()
    session = open_session(mode, endpoint_url)  # async: used without `async with`
    try:
        seen = await sweep(session, table, doc)
        await consume(session.delete_table(table))
    finally:
        await close(session)
    assert seen["get"] == "ResourceNotFoundError"
    assert seen["put"] == "ResourceNotFoundError"
    assert seen["create_table"] == "ok"


def test_a_request_botocore_refuses_is_a_validation_error(endpoint_url: str) -> None:
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1") as session,
        pytest.raises(ValidationError) as caught,
    ):
        session.call("GetItem", {"TableName": "t_x", "Key": {"pk": 5}})
    assert caught.value.rule == "request.invalid-parameter"
    assert type(caught.value.__cause__).__name__ == "ParamValidationError"


async def test_async_session_without_async_with_opens_lazily_and_closes(
    endpoint_url: str,
) -> None:
    table, doc = declare()
    session = AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1")
    await session.create_table(table)
    try:
        await session.put(doc(did="a", hits=1))
        assert await session.get(doc, did="a") == doc(did="a", hits=1)
        assert session.client is not None
    finally:
        await session.delete_table(table)
        await session.close()
    assert session.client is None
    # It reopens on the next call.
    with pytest.raises(LsiormError):
        await session.get(doc, did="a")
    await session.close()
