"""Routing per call (`using`) and `timeout=` at the session, without an engine."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, Session, Table
from lsiorm.errors import ValidationError
from support.fakes import AsyncScriptedClient, ScriptedClient

table = Table(f"Routing{uuid.uuid4().hex[:6]}", "PK", "SK")


class Job(Entity, table=table, keys={"PK": "JOB#{name}", "SK": "T#{timeout:04d}"}):
    name: str
    timeout: int


class Note(Entity, table=table, keys={"PK": "N#{name}", "SK": "NOTE"}):
    name: str


class Closable(ScriptedClient):
    closed = False

    def close(self) -> None:
        self.closed = True


def test_a_routed_call_goes_to_the_client_given_and_shares_the_hooks() -> None:
    home, other = Closable(then={}), Closable(then={})
    seen: list[str] = []

    class Hook:
        def before(self, request: Any) -> None:
            seen.append(request.operation)

    with Session(home, hooks=[Hook()]) as session:
        with session.using(other) as routed:
            routed.put(Note(name="a"))
        assert other.closed is False, "a client given to using is never closed by it"
        session.get(Note, name="a")
    assert [op for op, _ in other.calls] == ["PutItem"]
    assert [op for op, _ in home.calls] == ["GetItem"]
    assert seen == ["PutItem", "GetItem"]
    assert home.closed


def test_using_takes_a_client_or_a_place_not_both_nor_neither() -> None:
    with Session(ScriptedClient(then={})) as session:
        with pytest.raises(TypeError):
            session.using()
        with pytest.raises(TypeError):
            session.using(ScriptedClient(then={}), region_name="eu-west-1")


def test_a_place_gets_one_client_closed_with_the_session() -> None:
    session = Session(region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    replica = session.using(region_name="eu-west-1")
    assert session.using(region_name="eu-west-1") is replica
    assert replica.client is not session.client
    assert replica.client.meta.region_name == "eu-west-1"
    assert replica.client.meta.endpoint_url == "http://127.0.0.1:9"
    assert replica.config is not None
    assert replica.config.region_name == "eu-west-1"
    replica.close()
    assert session.using(region_name="eu-west-1") is not replica, "a closed one is not reused"
    session.close()


async def test_an_async_routed_call_goes_to_the_client_given() -> None:
    home, other = AsyncScriptedClient(then={}), AsyncScriptedClient(then={})
    session = AsyncSession(home)
    await session.using(other).put(Note(name="a"))
    await session.get(Note, name="a")
    assert [op for op, _ in other.calls] == ["PutItem"]
    assert [op for op, _ in home.calls] == ["GetItem"]


def test_a_timeout_must_be_a_positive_number() -> None:
    with Session(ScriptedClient(then={})) as session:
        for bad in (0, -1.0, True, "5"):
            with pytest.raises(ValidationError) as caught:
                session.get(Note, name="a", timeout=bad)  # type: ignore[arg-type]
            assert caught.value.rule == "call.timeout"


def test_a_key_field_named_timeout_keeps_its_keyword() -> None:
    client = ScriptedClient(then={})
    with Session(client) as session:
        session.get(Job, name="j", timeout=30)
        session.get(Job, {"timeout": 30}, name="j", timeout=5.0)
    first, second = (params for op, params in client.calls if op == "GetItem")
    assert first["Key"]["SK"] == {"S": "T#0030"}
    assert second["Key"]["SK"] == {"S": "T#0030"}


def test_a_place_next_to_a_given_client_has_lsioms_retries_alone() -> None:
    import boto3
    from botocore.config import Config

    given = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        config=Config(retries={"max_attempts": 3, "mode": "standard"}),
    )
    with Session(given) as session:
        replica = session.using(region_name="eu-west-1")
        retries = replica.client.meta.config.retries
        assert retries["total_max_attempts"] == 1
        assert retries["mode"] == "standard"
        assert replica.client.meta.region_name == "eu-west-1"
        replica.close()
