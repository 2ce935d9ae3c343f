"""Tables made for one test or one module, and deleted after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lsiorm import Entity, Session, Table
from lsiorm.testing import created_tables


def table_request(name: str, *key: str, indexed: Iterable[str] = (), **more: Any) -> dict[str, Any]:
    """The CreateTable request of another tool's on-demand table ``name``: keyed by the string
    attributes ``key`` (partition key, then sort key, if any), defining the string attributes
    ``indexed`` too (the keys of its indexes); ``more`` goes into the request as it is."""
    return {
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": attribute, "AttributeType": "S"} for attribute in (*key, *indexed)
        ],
        "KeySchema": [
            {"AttributeName": attribute, "KeyType": kind}
            for attribute, kind in zip(key, ("HASH", "RANGE"), strict=False)
        ],
        "BillingMode": "PAY_PER_REQUEST",
        **more,
    }


def create_and_wait(client: Any, request: dict[str, Any]) -> str:
    """Send a CreateTable request with a boto3 client, wait until the table exists; its name."""
    client.create_table(**request)
    wait_for_table(client, request["TableName"])
    name: str = request["TableName"]
    return name


def wait_for_table(client: Any, name: str) -> None:
    """Wait until a table another tool created is active, polling every 0.2 s (the waiters of
    boto3 and PynamoDB poll every 20 s and 2 s; a local engine is ready much sooner)."""
    client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100}
    )


@contextlib.contextmanager
def created(client: Any, table: Table | dict[str, Any]) -> Iterator[str]:
    """A table made with a boto3 client, from a declaration or a raw CreateTable request.

    The block gets its name; the table is deleted when the block ends.
    """
    request = table.create_table_request() if isinstance(table, Table) else table
    name = create_and_wait(client, request)
    try:
        yield name
    finally:
        client.delete_table(TableName=name)


@contextlib.contextmanager
def session_with(
    endpoint_url: str, *tables: Table, wait: bool = True, **options: Any
) -> Iterator[Session]:
    """A Session on the engine with ``tables`` created; they are deleted when the block ends.

    ``options`` go to :class:`Session` (hooks, retry, table_prefix, ...).
    """
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1", **options) as session,
        created_tables(session, *tables, wait=wait),
    ):
        yield session


@dataclass
class Loaded:
    """A session on tables a module created and filled, and the name of the engine under test."""

    session: Session
    backend: str


@contextlib.contextmanager
def loaded(
    endpoint_url: str, backend: str, *tables: Table, items: Iterable[Entity], **options: Any
) -> Iterator[Loaded]:
    """:func:`session_with` ``tables``, each of ``items`` put one by one before the block."""
    with session_with(endpoint_url, *tables, **options) as session:
        for item in items:
            session.put(item)
        yield Loaded(session, backend)


def loaded_fixture(*tables: Table, items: Iterable[Entity]) -> Any:
    """A module-scoped fixture that gives :func:`loaded` ``tables`` with ``items``.

    Assign it to a module name: the name is the fixture's.
    """

    @pytest.fixture(scope="module")
    def fixture(endpoint_url: str, backend: str) -> Iterator[Loaded]:
        with loaded(endpoint_url, backend, *tables, items=items) as store:
            yield store

    return fixture
