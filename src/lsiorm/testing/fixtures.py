"""``table_fixture``: a pytest fixture of your own for one table, on a shared engine."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from lsiorm.testing.endpoints import default_engine, engine_endpoint, local_credentials
from lsiorm.testing.engines import EngineNotInstalledError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table
    from lsiorm._session import Session

__all__ = ["table_fixture"]


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
        with session:
            session.create_table(table)
            try:
                yield session
            finally:
                session.delete_table(table)

    return pytest.fixture(scope=scope, name=name)(fixture)
