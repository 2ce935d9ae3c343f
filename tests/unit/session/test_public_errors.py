"""No untyped error escapes a public call.

Every public method of Session and AsyncSession is called against a missing table, a bad
endpoint (an unused local port) and a client without credentials. Whatever happens, only
lsiorm errors come out (or a result); botocore's own exceptions stay as ``__cause__``.
"""

from __future__ import annotations

import inspect
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lsiorm import (
    AsyncSession,
    ConfigurationError,
    Entity,
    Get,
    LsiormError,
    Put,
    RetryPolicy,
    Session,
    Table,
    TransportError,
    ValidationError,
    query,
    scan,
)

QUICK = RetryPolicy(max_attempts=2, max_delay=2.0, initial=0.001, maximum=0.01)
# Methods that never talk to DynamoDB or only manage the session.
#: Methods that send no request: they cannot meet a missing table, endpoint or credentials.
LOCAL = {"add_hook", "close", "run", "table_name"}


def declare() -> tuple[Table, type[Any]]:
    table = Table(f"missing_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Doc(Entity, table=table, keys={"pk": "D#{did}", "sk": "X"}):
        did: str
        hits: int = 0

    return table, Doc


def calls(table: Table, doc: type[Any]) -> dict[str, Callable[[Any], Any]]:
    """One call per public method that talks to DynamoDB; the order matters (create last)."""
    return {
        "call": lambda s: s.call(
            "GetItem", {"TableName": table.name, "Key": {"pk": {"S": "x"}, "sk": {"S": "y"}}}
        ),
        "check_table": lambda s: s.check_table(table),
        "put": lambda s: s.put(doc(did="a")),
        "get": lambda s: s.get(doc, did="a"),
        "update": lambda s: s.update(doc, did="a", set={"hits": 2}),
        "delete": lambda s: s.delete(doc, did="a"),
        "delete_result": lambda s: s.delete_result(doc, did="a"),
        "audit_collection": lambda s: s.audit_collection(table, "D#a"),
        "largest_collections": lambda s: s.largest_collections(table, 0.0),
        "audit_keys": lambda s: s.audit_keys(table),
        "backfill": lambda s: s.backfill(doc, dry_run=True),
        "relieve_collection": lambda s: s.relieve_collection(table, "D#a", dry_run=True),
        "batch_write": lambda s: s.batch_write([doc(did="b")]),
        "batch_get": lambda s: s.batch_get(doc, [{"did": "b"}]),
        "transact_write": lambda s: s.transact_write([Put(doc(did="c"))]),
        "transact_get": lambda s: s.transact_get([Get(doc, {"did": "c"})]),
        "all": lambda s: s.all(query(doc).where(did="a")),
        "first": lambda s: s.first(scan(doc)),
        "count": lambda s: s.count(query(doc).where(did="a")),
        "page": lambda s: s.page(query(doc).where(did="a")),
        "pages": lambda s: s.pages(scan(doc)),
        "iterate": lambda s: s.iterate(query(doc).where(did="a")),
        "delete_table": lambda s: s.delete_table(table),
        "create_table": lambda s: s.create_table(table),
    }


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


async def consume(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    if hasattr(value, "__aiter__"):
        return [v async for v in value]
    if hasattr(value, "__next__"):
        return list(value)
    return value


async def sweep(session: Any, table: Table, doc: type[Any]) -> dict[str, str]:
    """Call everything; return method -> outcome, failing on any non-lsiorm error."""
    seen: dict[str, str] = {}
    for name, do in calls(table, doc).items():
        try:
            await consume(do(session))
        except LsiormError as exc:
            seen[name] = type(exc).__name__
        except Exception as exc:  # the failure this test exists for
            pytest.fail(f"{name} raised the untyped {type(exc).__module__}.{exc!r}")
        else:
            seen[name] = "ok"
    return seen


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


def open_session(mode: str, url: str) -> Any:
    kwargs: dict[str, Any] = {"endpoint_url": url, "region_name": "us-east-1", "retry": QUICK}
    return Session(**kwargs) if mode == "sync" else AsyncSession(**kwargs)


async def close(session: Any) -> None:
    await consume(session.close())


async def sweep_unreachable(mode: str) -> dict[str, str]:
    """The sweep through a session whose endpoint nothing listens on."""
    table, doc = declare()
    session = open_session(mode, f"http://127.0.0.1:{unused_port()}")
    try:
        return await sweep(session, table, doc)
    finally:
        await close(session)


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
