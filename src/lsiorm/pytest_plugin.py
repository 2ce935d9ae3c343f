"""The lsiorm pytest plugin: DynamoDB sessions for your app's tests, a fresh table per test.

Installing lsiorm registers this plugin with pytest (entry point ``pytest11``); nothing happens
until a test asks for one of its fixtures. Tell it your tables by overriding ``lsiorm_tables``
in your ``conftest.py`` (or list them in the ``lsiorm_tables`` ini option), then take
``lsiorm_session`` (a [`Session`][lsiorm.Session]) or ``lsiorm_async_session`` (an
[`AsyncSession`][lsiorm.AsyncSession])::

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
message saying how to install it, or fails them with ``--lsiorm-require-engines`` (for a CI
machine that must never pass without its engines).

Each engine starts once per test session. To run your own fixtures on the engines, take
``lsiorm_endpoints``: ``lsiorm_endpoints("dynamodb-local")`` is that engine's URL, started if
needed, with the same skip or failure when it is missing.

To break DynamoDB on purpose, take ``lsiorm_faults`` (a
[`FaultInjector`][lsiorm.testing.FaultInjector] active for the test: throttle, fail, drop or
lose the answer of chosen requests, and a record of every request sent)::

    def test_saving_survives_throttling(lsiorm_session, lsiorm_faults):
        lsiorm_faults.throttle("PutItem", times=2)
        save_note(lsiorm_session, "hello")
        assert lsiorm_faults.count("PutItem") == 3

``lsiorm_collection_session`` is a session whose requests go through an
``ItemCollectionProxy`` (``lsiorm_collection_proxy``):
AWS's item-collection metrics and size limit, with a gigabyte scaled down to
``lsiorm_collection_bytes_per_gb`` bytes (ini option; 100000 by default, so the 10 GB limit is
1 MB).

``lsiorm_aws_like`` starts an ``lsiorm.testing.AwsLikeEngine`` in front of the
engine with the options the test gives, and stops it after the test; build a session on its
``endpoint_url`` (``lsiorm_aws_like.session_kwargs(engine)`` gives the test's prefix and
credentials with it)::

    from lsiorm.testing import StreamShards

    def test_catch_up_across_splits(lsiorm_aws_like):
        engine = lsiorm_aws_like(streams=StreamShards(shards=8, split_every=100))
        with Session(**lsiorm_aws_like.session_kwargs(engine)) as session:
            ...
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from lsiorm.testing import (
    ENGINES,
    AwsLikeEngine,
    EngineNotInstalledError,
    EngineRegistry,
    FaultInjector,
    ItemCollectionProxy,
    created_tables,
    default_engine,
    local_credentials,
)

if TYPE_CHECKING:
    from lsiorm._model.schema import Table
    from lsiorm._session import AsyncSession, Session

__all__ = [
    "AwsLikeEngines",
    "lsiorm_async_session",
    "lsiorm_aws_like",
    "lsiorm_collection_proxy",
    "lsiorm_collection_session",
    "lsiorm_endpoint_url",
    "lsiorm_endpoints",
    "lsiorm_engine",
    "lsiorm_faults",
    "lsiorm_session",
    "lsiorm_table_prefix",
    "lsiorm_tables",
]

_REGION = "us-east-1"
#: The collection proxy's bytes per "GB" by default: the 10 GB limit is 1 MB.
_BYTES_PER_GB = 100_000


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
    group.addoption(
        "--lsiorm-require-engines",
        dest="lsiorm_require_engines",
        action="store_true",
        default=None,
        help="an engine that is not installed fails its tests instead of skipping them",
    )
    parser.addini("lsiorm_engine", "default engine(s) of the lsiorm fixtures (see --lsiorm-engine)")
    parser.addini(
        "lsiorm_require_engines",
        "fail the tests of an engine that is not installed instead of skipping them",
        type="bool",
        default=False,
    )
    parser.addini(
        "lsiorm_tables",
        "tables the lsiorm fixtures create for each test, as module:attribute",
        type="linelist",
    )
    parser.addini(
        "lsiorm_collection_bytes_per_gb",
        f"bytes per GB of lsiorm_collection_proxy (default {_BYTES_PER_GB}: 10 GB is 1 MB)",
        default=str(_BYTES_PER_GB),
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


def engines_required(config: pytest.Config) -> bool:
    """Whether a missing engine fails its tests (``--lsiorm-require-engines``) or skips them."""
    option = config.getoption("lsiorm_require_engines")
    return bool(option if option is not None else config.getini("lsiorm_require_engines"))


@pytest.fixture(scope="session")
def _lsiorm_engines() -> Iterator[EngineRegistry]:
    engines = EngineRegistry()
    try:
        yield engines
    finally:
        engines.stop()


@pytest.fixture(scope="session")
def lsiorm_endpoints(
    request: pytest.FixtureRequest, _lsiorm_engines: EngineRegistry
) -> Callable[[str], str]:
    """A function from an engine's name to its endpoint URL; each engine starts once a session.

    An engine that is not installed skips the test asking for it (or fails it, with
    ``--lsiorm-require-engines``); one that fails to start is an error.
    """
    required = engines_required(request.config)

    def endpoint(engine: str) -> str:
        try:
            return _lsiorm_engines.endpoint_url(engine)
        except EngineNotInstalledError as exc:
            reason = f"{engine} unavailable: {exc}"
        except RuntimeError as exc:
            raise RuntimeError(f"{engine} failed to start: {exc}") from exc
        # Reported outside the except blocks: the skip or failure carries no chained traceback.
        if required:
            pytest.fail(f"{reason} (--lsiorm-require-engines)", pytrace=False)
        pytest.skip(reason)

    return endpoint


@pytest.fixture(scope="session")
def lsiorm_engine(request: pytest.FixtureRequest) -> str:
    """The engine this test runs on: "moto", "dynamodb-local" or "external"."""
    engine: str = getattr(request, "param", None) or selected_engines(request.config)[0]
    return engine


@pytest.fixture(scope="session")
def lsiorm_endpoint_url(lsiorm_engine: str, lsiorm_endpoints: Callable[[str], str]) -> str:
    """The endpoint URL of the engine, started if needed; a missing engine skips the test."""
    return lsiorm_endpoints(lsiorm_engine)


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
    with Session(**kwargs) as admin, created_tables(admin, *lsiorm_tables, wait=False):
        yield kwargs


@pytest.fixture
def lsiorm_session(_lsiorm_live_tables: dict[str, Any]) -> Iterator[Session]:
    """A Session on the engine, with this test's tables created empty (and deleted after)."""
    from lsiorm._session import Session

    with Session(**_lsiorm_live_tables) as session:
        yield session


@pytest.fixture
def lsiorm_faults() -> Iterator[FaultInjector]:
    """Inject faults into the requests of this test, and record every request it sends.

    A [`FaultInjector`][lsiorm.testing.FaultInjector], active for the whole test and for every
    session (yours too); its rules start empty, so nothing fails until the test adds one.
    """
    with FaultInjector() as faults:
        yield faults


@pytest.fixture
def lsiorm_collection_proxy(
    request: pytest.FixtureRequest, lsiorm_endpoint_url: str
) -> Iterator[ItemCollectionProxy]:
    """An ``lsiorm.testing.ItemCollectionProxy`` in front of the engine.

    Its gigabyte is ``lsiorm_collection_bytes_per_gb`` bytes (ini option; 100000 by default).
    """
    raw = request.config.getini("lsiorm_collection_bytes_per_gb") or _BYTES_PER_GB
    with ItemCollectionProxy(lsiorm_endpoint_url, bytes_per_gb=int(raw)) as proxy:
        yield proxy


@pytest.fixture
def lsiorm_collection_session(
    _lsiorm_live_tables: dict[str, Any], lsiorm_collection_proxy: ItemCollectionProxy
) -> Iterator[Session]:
    """A Session like lsiorm_session whose requests go through ``lsiorm_collection_proxy``."""
    from lsiorm._session import Session

    kwargs = {**_lsiorm_live_tables, "endpoint_url": lsiorm_collection_proxy.endpoint_url}
    with Session(**kwargs) as session:
        yield session


class AwsLikeEngines:
    """What ``lsiorm_aws_like`` gives: call it to start an engine in front of the test's."""

    def __init__(self, upstream: str, session_kwargs: dict[str, Any]) -> None:
        self.upstream = upstream
        self._kwargs = session_kwargs
        self.started: list[AwsLikeEngine] = []

    def __call__(self, **options: Any) -> AwsLikeEngine:
        """Start an `AwsLikeEngine` with these options (see its class) in front of the engine."""
        engine = AwsLikeEngine(self.upstream, **options)
        engine.start()
        self.started.append(engine)
        return engine

    def session_kwargs(self, engine: AwsLikeEngine) -> dict[str, Any]:
        """``Session(**...)`` arguments for a session on ``engine``, with the test's tables."""
        return {**self._kwargs, "endpoint_url": engine.endpoint_url}

    def stop(self) -> None:
        """Stop every engine started."""
        for engine in self.started:
            engine.stop()


@pytest.fixture
def lsiorm_aws_like(_lsiorm_live_tables: dict[str, Any]) -> Iterator[AwsLikeEngines]:
    """Start AWS-like engines in front of the test's engine: ``lsiorm_aws_like(**options)``.

    Each call starts an ``lsiorm.testing.AwsLikeEngine`` with those options;
    every one is stopped after the test. The test's tables exist already (created directly on
    the engine, so the AWS-like engine first meets them, and copies any it needs, when the
    test uses them).
    """
    engines = AwsLikeEngines(_lsiorm_live_tables["endpoint_url"], _lsiorm_live_tables)
    try:
        yield engines
    finally:
        engines.stop()


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
