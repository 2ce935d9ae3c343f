"""Both drivers send DynamoDB Streams calls with the session's streams client, and only those."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lsiorm._io.drivers import AsyncDriver, SyncDriver
from lsiorm._ops.steps import Call, Operation
from lsiorm.errors import ConfigurationError


class Client:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_item(self, **params: Any) -> dict[str, Any]:
        return {"by": self.name}

    def get_records(self, **params: Any) -> dict[str, Any]:
        return {"by": self.name}


class AsyncClient(Client):
    async def get_item(self, **params: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"by": self.name}

    async def get_records(self, **params: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"by": self.name}


def both() -> Operation[list[Any]]:
    table = yield Call("GetItem", {"TableName": "T", "Key": {}})
    stream = yield Call("GetRecords", {"ShardIterator": "i"})
    again = yield Call("GetRecords", {"ShardIterator": "j"})
    return [table["by"], stream["by"], again["by"]]


def test_the_sync_driver_builds_its_streams_client_once_when_first_needed() -> None:
    streams = Client("streams")
    built: list[Client] = []

    def build() -> Client:
        built.append(streams)
        return streams

    driver = SyncDriver(Client("dynamodb"), streams=build)
    assert built == []
    assert driver.run(both()) == ["dynamodb", "streams", "streams"]
    assert built == [streams]


def test_the_async_driver_sends_stream_calls_with_its_streams_client() -> None:
    driver = AsyncDriver(AsyncClient("dynamodb"), streams=AsyncClient("streams"))
    assert asyncio.run(driver.run(both())) == ["dynamodb", "streams", "streams"]


def test_a_session_without_a_streams_client_says_so() -> None:
    with pytest.raises(ConfigurationError) as missing:
        SyncDriver(Client("dynamodb")).run(both())
    assert missing.value.rule == "config.no-streams-client"
    with pytest.raises(ConfigurationError):
        asyncio.run(AsyncDriver(AsyncClient("dynamodb")).run(both()))
