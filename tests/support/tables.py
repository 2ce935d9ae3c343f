"""Tables made for one test or one module, and deleted after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from lsiorm import Session, Table


@contextlib.contextmanager
def created(client: Any, table: Table) -> Iterator[Table]:
    """Create ``table`` with a boto3 client, wait until it exists, and delete it after the block."""
    client.create_table(**table.create_table_request())
    client.get_waiter("table_exists").wait(
        TableName=table.name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100}
    )
    try:
        yield table
    finally:
        client.delete_table(TableName=table.name)


@contextlib.contextmanager
def live(session: Session, *tables: Table, wait: bool = True) -> Iterator[Session]:
    """Create ``tables`` through ``session``, and delete them after the block.

    ``wait=False`` does not wait for the deletions to finish (the names are never used again).
    """
    created: list[Table] = []
    try:
        for table in tables:
            session.create_table(table)
            created.append(table)
        yield session
    finally:
        for table in reversed(created):
            session.delete_table(table, wait=wait)


@contextlib.contextmanager
def session_with(
    endpoint_url: str, *tables: Table, wait: bool = True, **options: Any
) -> Iterator[Session]:
    """A Session on the engine with ``tables`` created; they are deleted when the block ends.

    ``options`` go to :class:`Session` (hooks, retry, table_prefix, ...).
    """
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1", **options) as session,
        live(session, *tables, wait=wait),
    ):
        yield session
