"""Tables for a test: ``table_fixture`` (a pytest fixture for one table) and ``created_tables``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from lsiorm.testing.endpoints import default_engine, engine_endpoint, local_credentials
from lsiorm.testing.engines import EngineNotInstalledError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table
    from lsiorm._session import Session

__all__ = ["created_tables", "table_fixture"]


@contextlib.contextmanager
def created_tables(session: Session, *tables: Table, wait: bool = True) -> Iterator[Session]:
    """Create ``tables`` through ``session`` for the block, and delete them when it ends.

    The tables created are deleted even when the block (or a later creation) fails.
    ``wait=False`` does not wait for the deletions to finish.
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


def table_fixture(
    table: Table,
    *,
    engine: str | None = None,
    scope: Literal["session", "package", "module", "class", "function"] = "function",
    name: str | None = None,
) -> Any:
    """Return a pytest fixture giving a Session on ``engine`` with ``table`` created, empty.

    ``engine`` is "moto", "dynamodb-local" or "external" (``$LSIORM_ENDPOINT_URL``); by default
    the external endpoint when that variable is set, else moto. With the default function scope
    the table is created before each test and deleted after it, so tests never see each other's
    items. An engine that is not installed skips the test and says how to install it. ``name``
    sets the fixture's name (default: the name of the variable you assign it to).
    """
    import pytest

    from lsiorm._session import Session

    def fixture() -> Iterator[Session]:
        chosen = engine or default_engine()
        try:
            url = engine_endpoint(chosen)
        except EngineNotInstalledError as exc:
            pytest.skip(f"{chosen} unavailable: {exc}")
        session = Session(
            endpoint_url=url,
            region_name=os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            **local_credentials(url),
        )
        with session, created_tables(session, table):
            yield session

    return pytest.fixture(scope=scope, name=name)(fixture)
