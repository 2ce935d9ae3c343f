"""Shared pytest setup: backend selection, session-wide engines, and boto3 clients."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from hypothesis import HealthCheck, settings

from lsiorm.testing import DynamoDBLocal, EngineNotInstalledError, MotoServer

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

EXTERNAL_ENDPOINT_ENV = "LSIORM_ENDPOINT_URL"
BACKENDS = ("moto", "dynamodb-local")

_external = os.environ.get(EXTERNAL_ENDPOINT_ENV) or None
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
            f"Ignored when {EXTERNAL_ENDPOINT_ENV} is set."
        ),
    )


def selected_backends(config: pytest.Config) -> list[str]:
    """Return the backend ids this session runs integration tests against."""
    if _external is not None:
        return ["external"]
    choice = config.getoption("--backend")
    return list(BACKENDS) if choice == "all" else [choice]


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


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


class EngineRegistry:
    """Start each selected engine on first use, remember failures, and stop them at the end."""

    def __init__(self) -> None:
        self._moto = MotoServer()
        self._dynamodb_local = DynamoDBLocal()
        self._urls: dict[str, str] = {}
        self._failures: dict[str, BaseException] = {}

    def endpoint_url(self, backend: str) -> str:
        if backend == "external":
            assert _external is not None
            return _external
        if backend not in self._urls and backend not in self._failures:
            engine = self._moto if backend == "moto" else self._dynamodb_local
            try:
                self._urls[backend] = engine.start()
            except Exception as exc:
                self._failures[backend] = exc
        # Reported outside the except block so the skip or failure carries no chained traceback.
        if backend in self._failures:
            self._report(backend, self._failures[backend])
        return self._urls[backend]

    @staticmethod
    def _report(backend: str, exc: BaseException) -> None:
        if isinstance(exc, EngineNotInstalledError):
            if _in_ci():
                pytest.fail(f"{backend} is required when CI=true: {exc}", pytrace=False)
            pytest.skip(f"{backend} unavailable: {exc}")
        raise RuntimeError(f"{backend} failed to start: {exc}") from exc

    def stop(self) -> None:
        self._dynamodb_local.stop()
        self._moto.stop()


@pytest.fixture(scope="session")
def engines() -> Iterator[EngineRegistry]:
    registry = EngineRegistry()
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def endpoint_url(backend: str, engines: EngineRegistry) -> str:
    """The DynamoDB endpoint of the backend this test runs against."""
    return engines.endpoint_url(backend)


@pytest.fixture(scope="session")
def dynamodb_client(endpoint_url: str) -> Any:
    """A boto3 low-level DynamoDB client for the endpoint (shared by the session's tests)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5),
    )


@pytest.fixture
def table_name() -> str:
    """A table name no other test uses."""
    return f"t_{uuid.uuid4().hex[:12]}"
