"""The lsiorm pytest plugin: DynamoDB sessions for your app's tests, a fresh table per test.

Installing lsiorm registers this plugin with pytest (entry point ``pytest11``); nothing happens
until a test asks for one of its fixtures. Tell it your tables by overriding ``lsiorm_tables``
in your ``conftest.py`` (or list them in the ``lsiorm_tables`` ini option), then take
``lsiorm_session`` (a :class:`~lsiorm.Session`) or ``lsiorm_async_session`` (an
:class:`~lsiorm.AsyncSession`)::

    import pytest
    from myapp.models import shop

    @pytest.fixture
    def lsiorm_tables():
        return [shop]

    def test_order(lsiorm_session):
        lsiorm_session.put(Order(...))

Each test gets its tables created empty under a name prefix no other test uses, so tests never
see each other's items, and they are deleted after it. The engine is chosen with
``--lsiorm-engine`` (or the ``lsiorm_engine`` ini option): ``moto`` (the default; in process,
needs ``lsiorm[testing]``), ``dynamodb-local`` (AWS's engine; needs Java 17+), ``external``
(``$LSIORM_ENDPOINT_URL``, the default when that variable is set), or several separated by
commas to run each test on each engine. An engine that is not installed skips its tests with a
message saying how to install it.
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from lsiorm.testing import (
    ENGINES,
    DynamoDBLocal,
    EngineNotInstalledError,
    MotoServer,
    default_engine,
    engine_endpoint,
    local_credentials,
)

if TYPE_CHECKING:
    from lsiorm._model.schema import Table
    from lsiorm._session import AsyncSession, Session

__all__ = [
    "lsiorm_async_session",
    "lsiorm_endpoint_url",
    "lsiorm_engine",
    "lsiorm_session",
    "lsiorm_table_prefix",
    "lsiorm_tables",
]

_REGION = "us-east-1"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lsiorm", "lsiorm DynamoDB fixtures")
    group.addoption(
        "--lsiorm-engine",
        dest="lsiorm_engine",
        default=None,
        help=(
            "engine(s) for the lsiorm_session fixtures, comma-separated: moto, dynamodb-local, "
            "external ($LSIORM_ENDPOINT_URL). Default: the lsiorm_engine ini option, else "
            "external when LSIORM_ENDPOINT_URL is set, else moto."
        ),
    )
    parser.addini("lsiorm_engine", "default engine(s) of the lsiorm fixtures (see --lsiorm-engine)")
    parser.addini(
        "lsiorm_tables",
        "tables the lsiorm fixtures create for each test, as module:attribute",
        type="linelist",
    )


def selected_engines(config: pytest.Config) -> list[str]:
    """The engines the lsiorm fixtures run on in this test session."""
    raw = config.getoption("lsiorm_engine") or config.getini("lsiorm_engine") or default_engine()
    engines = [name.strip() for name in str(raw).split(",") if name.strip()]
    for name in engines:
        if name not in ENGINES:
            raise pytest.UsageError(
                f"--lsiorm-engine: unknown engine {name!r}; choose from {', '.join(ENGINES)}"
            )
    return engines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lsiorm_engine" in metafunc.fixturenames:
        engines = selected_engines(metafunc.config)
        metafunc.parametrize("lsiorm_engine", engines, indirect=True, ids=engines, scope="session")


class _Engines:
    """The local engines of one test session: started on first use, stopped at its end."""

    def __init__(self) -> None:
        self._running: dict[str, DynamoDBLocal | MotoServer] = {}
        self._failures: dict[str, EngineNotInstalledError] = {}

    def endpoint_url(self, engine: str) -> str:
        if engine == "external":
            return engine_endpoint("external")
        if engine in self._failures:
            raise self._failures[engine]
        running = self._running.get(engine)
        if running is None:
            running = MotoServer() if engine == "moto" else DynamoDBLocal()
            try:
                running.start()
            except EngineNotInstalledError as exc:
                self._failures[engine] = exc
                raise
            self._running[engine] = running
        return running.endpoint_url

    def stop(self) -> None:
        for running in self._running.values():
            running.stop()
        self._running.clear()


@pytest.fixture(scope="session")
def _lsiorm_engines() -> Iterator[_Engines]:
    engines = _Engines()
    try:
        yield engines
    finally:
        engines.stop()


@pytest.fixture(scope="session")
def lsiorm_engine(request: pytest.FixtureRequest) -> str:
    """The engine this test runs on: "moto", "dynamodb-local" or "external"."""
    engine: str = getattr(request, "param", None) or selected_engines(request.config)[0]
    return engine


@pytest.fixture(scope="session")
def lsiorm_endpoint_url(lsiorm_engine: str, _lsiorm_engines: _Engines) -> str:
    """The endpoint URL of the engine, started if needed; a missing engine skips the test."""
    try:
        return _lsiorm_engines.endpoint_url(lsiorm_engine)
    except EngineNotInstalledError as exc:
        pytest.skip(f"{lsiorm_engine} unavailable: {exc}")


@pytest.fixture
def lsiorm_tables(request: pytest.FixtureRequest) -> list[Table]:
    """The tables created for each test; override this fixture (or set the ini option)."""
    tables: list[Table] = []
    for spec in request.config.getini("lsiorm_tables"):
        module, _, attribute = str(spec).partition(":")
        if not attribute:
            raise pytest.UsageError(f"lsiorm_tables: {spec!r} is not module:attribute")
        tables.append(getattr(importlib.import_module(module), attribute))
    return tables


@pytest.fixture
def lsiorm_table_prefix() -> str:
    """The name prefix of this test's tables (``Table("Shop")`` lives as ``t1a2b3c4-Shop``)."""
    return f"t{uuid.uuid4().hex[:8]}-"


def _session_kwargs(url: str, prefix: str) -> dict[str, Any]:
    return {
        "endpoint_url": url,
        "region_name": os.environ.get("AWS_DEFAULT_REGION") or _REGION,
        "table_prefix": prefix,
        **local_credentials(url),
    }


@pytest.fixture
def _lsiorm_live_tables(
    lsiorm_endpoint_url: str, lsiorm_tables: list[Table], lsiorm_table_prefix: str
) -> Iterator[dict[str, Any]]:
    from lsiorm._session import Session

    kwargs = _session_kwargs(lsiorm_endpoint_url, lsiorm_table_prefix)
    with Session(**kwargs) as admin:
        created: list[Table] = []
        try:
            for table in lsiorm_tables:
                admin.create_table(table)
                created.append(table)
            yield kwargs
        finally:
            for table in reversed(created):
                admin.delete_table(table, wait=False)


@pytest.fixture
def lsiorm_session(_lsiorm_live_tables: dict[str, Any]) -> Iterator[Session]:
    """A Session on the engine, with this test's tables created empty (and deleted after)."""
    from lsiorm._session import Session

    with Session(**_lsiorm_live_tables) as session:
        yield session


def _async_session_fixture() -> Any:
    try:
        import pytest_asyncio
    except ImportError:

        @pytest.fixture(name="lsiorm_async_session")
        def skip_without_pytest_asyncio() -> None:
            """An AsyncSession like lsiorm_session; needs pytest-asyncio."""
            pytest.skip("lsiorm_async_session needs pytest-asyncio: pip install pytest-asyncio")

        return skip_without_pytest_asyncio

    @pytest_asyncio.fixture
    async def lsiorm_async_session(
        _lsiorm_live_tables: dict[str, Any],
    ) -> AsyncIterator[AsyncSession]:
        """An AsyncSession on the engine, with this test's tables created empty."""
        from lsiorm._session import AsyncSession
        from lsiorm.errors import MissingDependencyError

        try:
            session = AsyncSession(**_lsiorm_live_tables)
        except MissingDependencyError as exc:
            pytest.skip(str(exc))
        async with session:
            yield session

    return lsiorm_async_session


lsiorm_async_session = _async_session_fixture()
