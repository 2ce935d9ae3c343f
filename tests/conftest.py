"""The suite's pytest setup, on lsiorm's own pytest plugin (lsiorm.pytest_plugin).

The plugin owns the engines: it starts each one once per session and skips (or, with
``--lsiorm-require-engines``, fails) the tests of an engine that is not installed. This file
adds what only this suite has: the ``--backend`` option, which runs every test that takes
``backend`` (or ``endpoint_url``, ``dynamodb_client``, ``session``) once per chosen engine and
marks it ``integration``; ``CI=true``, which makes a missing engine a failure; one hypothesis
profile; and dummy credentials for local engines. Shared models, fakes and helpers live in
``tests/support``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from hypothesis import HealthCheck, settings

from lsiorm import Session
from lsiorm.testing import ENDPOINT_URL_ENV

# One hypothesis profile for the whole suite. Shared 2-core machines make timing meaningless:
# no per-example deadline, and slow input generation is not a failure. (The first draw of a
# default-alphabet st.text() on an empty .hypothesis folder builds the Unicode table, ~1.5 s.)
# A test's own @settings still inherits these and only overrides what it names.
settings.register_profile(
    "lsiorm",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "lsiorm"))

# Fixtures of support modules that serve test files in several folders, and the per-file
# durations report (support/file_durations.py).
pytest_plugins = ["support.cli", "support.aws_like", "support.protection", "support.file_durations"]
# A user's app with its own tests, run by tests/package/test_sample_app.py in a process of its own.
collect_ignore = ["sample_app"]

BACKENDS = ("moto", "dynamodb-local")

_external = os.environ.get(ENDPOINT_URL_ENV) or None
_local_hosts = {"localhost", "127.0.0.1", "::1"}
# Dummy credentials only when every endpoint is local: against a remote external endpoint they
# would shadow the real credential chain (profiles, SSO, instance roles).
if _external is None or urlsplit(_external).hostname in _local_hosts:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=(*BACKENDS, "all"),
        default="all",
        help=(
            "engine(s) the integration tests run against (default: all). "
            f"Ignored when {ENDPOINT_URL_ENV} is set."
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    plugins = config.pluginmanager
    if not (plugins.hasplugin("lsiorm") or plugins.hasplugin("lsiorm.pytest_plugin")):
        raise pytest.UsageError(
            "lsiorm's pytest plugin is not loaded: install lsiorm (pip install -e .) or run "
            "pytest with -p lsiorm.pytest_plugin"
        )
    # A CI machine must never pass while testing fewer engines than it was asked to.
    if os.environ.get("CI", "").strip().lower() == "true":
        config.option.lsiorm_require_engines = True


def selected_backends(config: pytest.Config) -> list[str]:
    """Return the engines this session runs integration tests against."""
    if _external is not None:
        return ["external"]
    choice = config.getoption("--backend")
    return list(BACKENDS) if choice == "all" else [choice]


@pytest.hookimpl(trylast=True)  # after pytest has grouped the tests by their engine
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the ``slow`` tests first, each file's in their order, then the rest as collected.

    Under ``-n 2 --dist worksteal`` each worker starts with one half of this list and, once
    out of tests, takes the last ones of the other's. A two-minute test left for the end keeps
    one worker busy while the other idles; started first, it runs while the other worker goes
    through the short tests, which are then shared at the end."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("slow") is None)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize(
            "backend",
            [
                pytest.param(name, id=name, marks=pytest.mark.integration)
                for name in selected_backends(metafunc.config)
            ],
            scope="session",
        )


@pytest.fixture(scope="session")
def endpoint_url(backend: str, lsiorm_endpoints: Callable[[str], str]) -> str:
    """The DynamoDB endpoint of the backend this test runs against."""
    return lsiorm_endpoints(backend)


@pytest.fixture
def capacity_endpoint_url(backend: str, endpoint_url: str) -> str:
    """The endpoint, for tests of consumed capacity: moto's numbers are made up, so it skips."""
    if backend == "moto":
        pytest.skip("moto fakes ConsumedCapacity (a flat 1.0 per request, no index units)")
    return endpoint_url


@pytest.fixture(scope="session")
def dynamodb_client(endpoint_url: str) -> Any:
    """A boto3 low-level DynamoDB client for the endpoint (shared by the session's tests)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5),
    )


@pytest.fixture
def session(endpoint_url: str) -> Iterator[Session]:
    """A Session on the backend (no tables of its own: each test creates what it needs)."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as s:
        yield s


@pytest.fixture
def direct(session: Session) -> Session:
    """The same session, named for tests that also reach the engine through a proxy."""
    return session


@pytest.fixture
def table_name() -> str:
    """A table name no other test uses."""
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def prefix() -> str:
    """A table-name prefix no other test uses (for sessions with ``table_prefix``)."""
    return f"t{uuid.uuid4().hex[:8]}-"
