"""No untyped error escapes a public call, without an engine.

Every public method of Session and AsyncSession is called against a bad endpoint (an unused
local port) and a client without credentials. Whatever happens, only lsiorm errors come out;
botocore's own exceptions stay as ``__cause__``. A missing region is refused as well.
"""

from __future__ import annotations

import inspect
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import AsyncSession, ConfigurationError, Session, TransportError
from support.sweeps import (
    QUICK,
    calls,
    close,
    declare,
    misuse,
    open_session,
    refusals,
    surrogates,
    sweep,
)

# Methods that never talk to DynamoDB or only manage the session.
#: Methods that send no request: they cannot meet a missing table, endpoint or credentials.
#: (``load`` sends none to DynamoDB: it reads offloaded values from S3, and its errors are the
#: lazy offload tests'.)
LOCAL = {"add_hook", "close", "load", "run", "table_name"}


def public_methods(cls: type[Any]) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member)
    } - LOCAL


def test_every_public_method_is_covered() -> None:
    table, doc = declare()
    assert public_methods(Session) == set(calls(table, doc))
    assert public_methods(AsyncSession) == set(calls(table, doc))


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    return


async def sweep_unreachable(mode: str) -> dict[str, str]:
    """The sweep through a session whose endpoint nothing listens on."""
    table, doc = declare()
    session = open_session(mode, f"http://127.0.0.1:{unused_port()}")
    try:
        return await sweep(session, table, doc)
    finally:
        await close(session)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_bad_endpoint(mode: str) -> None:
    seen = await sweep_unreachable(mode)
    assert seen["get"] == "TransportError"
    assert all(v != "ok" for v in seen.values()), seen


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_no_credentials(mode: str, no_credentials: None) -> None:
    seen = await sweep_unreachable(mode)
    assert seen["get"] == "ConfigurationError", seen
    assert all(v != "ok" for v in seen.values()), seen


def test_no_credentials_says_what_a_local_engine_takes(no_credentials: None) -> None:
    _table, doc = declare()
    with (
        Session(endpoint_url=f"http://127.0.0.1:{unused_port()}", region_name="us-east-1") as s,
        pytest.raises(ConfigurationError) as caught,
    ):
        s.get(doc, did="a")
    assert caught.value.rule == "config.no-credentials"
    assert "export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local" in str(caught.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_misuse_is_refused_naming_what_to_pass(mode: str) -> None:
    _table, doc = declare()
    session = open_session(mode, f"http://127.0.0.1:{unused_port()}")
    try:
        seen = await refusals(session, misuse(doc))
    finally:
        await close(session)
    for name, (rule, _) in misuse(doc).items():
        assert seen[name].rule == rule, (name, seen[name])
        words = str(seen[name])
        if rule == "key.not-fields":
            assert "did=..." in words, words
            assert "key={'did': ...}" in words, words
        elif rule == "entity.class-not-instance":
            assert "Doc(did=...)" in words, words
        else:
            assert "MyEntity.model_validate(data)" in words, words


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_lone_surrogate_in_an_attribute_is_refused_naming_its_path(mode: str) -> None:
    _table, doc = declare()
    session = open_session(mode, f"http://127.0.0.1:{unused_port()}")
    try:
        seen = await refusals(session, surrogates(doc))
    finally:
        await close(session)
    for name, (path, _) in surrogates(doc).items():
        assert seen[name].rule == "item.invalid-unicode", (name, seen[name])
        assert f"{path} holds" in str(seen[name]), (name, str(seen[name]))


def test_no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    with pytest.raises(ConfigurationError) as caught:
        Session()
    assert caught.value.rule == "config.no-region"
    assert caught.value.__cause__ is not None


async def test_async_no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    _table, doc = declare()
    session = AsyncSession()
    with pytest.raises(ConfigurationError) as caught:
        await session.get(doc, did="a")
    assert caught.value.rule == "config.no-region"


def test_transport_error_keeps_its_cause() -> None:
    _table, doc = declare()
    with (
        Session(
            endpoint_url=f"http://127.0.0.1:{unused_port()}", region_name="us-east-1", retry=QUICK
        ) as session,
        pytest.raises(TransportError) as caught,
    ):
        session.get(doc, did="a")
    assert type(caught.value.__cause__).__name__ == "EndpointConnectionError"
