"""Engines by name ("moto", "dynamodb-local", "external"): started once, reached by their URL.

`EngineRegistry` starts each local engine the first time its endpoint is asked for and
keeps it until `stop`; the pytest plugin holds one per test session, and
`engine_endpoint` one per process. "external" is an endpoint you run yourself, named by
``$LSIORM_ENDPOINT_URL``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from lsiorm.testing.engines import DynamoDBLocal, EngineNotInstalledError, MotoServer

__all__ = [
    "ENDPOINT_URL_ENV",
    "ENGINES",
    "EngineRegistry",
    "default_engine",
    "engine_endpoint",
    "example_endpoint",
    "local_credentials",
]

ENDPOINT_URL_ENV = "LSIORM_ENDPOINT_URL"
"""Environment variable naming a DynamoDB endpoint you run yourself (the "external" engine)."""

ENGINES = ("moto", "dynamodb-local", "external")
"""The engine names the fixtures accept."""

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


class EngineRegistry:
    """Endpoints of engines by name; each local engine starts on first use and runs until stop().

    An engine that fails to start is not tried again: later requests for it raise the same
    error, so a run with a missing engine fails or skips at once for each test that needs it.
    """

    def __init__(self) -> None:
        self._running: dict[str, DynamoDBLocal | MotoServer] = {}
        self._failures: dict[str, Exception] = {}

    def endpoint_url(self, engine: str) -> str:
        """Return the endpoint of ``engine``, starting it if needed.

        Raises `EngineNotInstalledError` when the engine cannot be had (saying how to
        get it), and ``RuntimeError`` when it is installed but does not come up.
        """
        if engine not in ENGINES:
            raise ValueError(
                f"engine must be one of {', '.join(map(repr, ENGINES))}, not {engine!r}"
            )
        if engine == "external":
            return _external_endpoint()
        failure = self._failures.get(engine)
        if failure is not None:
            raise failure.with_traceback(None)
        running = self._running.get(engine)
        if running is None:
            running = MotoServer() if engine == "moto" else DynamoDBLocal()
            try:
                running.start()
            except Exception as exc:
                self._failures[engine] = exc
                raise
            self._running[engine] = running
        return running.endpoint_url

    def stop(self) -> None:
        """Stop every engine this registry started (safe to call twice)."""
        for running in self._running.values():
            running.stop()
        self._running.clear()


def _external_endpoint() -> str:
    url = os.environ.get(ENDPOINT_URL_ENV)
    if not url:
        raise EngineNotInstalledError(
            f"The external engine needs {ENDPOINT_URL_ENV} set to a DynamoDB endpoint, for "
            "example http://localhost:8000 for a DynamoDB Local you run in a container."
        )
    return url


_PROCESS_ENGINES: EngineRegistry | None = None


def engine_endpoint(engine: str) -> str:
    """Return the endpoint of a shared engine ("moto", "dynamodb-local" or "external").

    A local engine starts on first use, stays up for the rest of the process and is stopped
    when it exits. "external" is ``$LSIORM_ENDPOINT_URL``. Raises
    `EngineNotInstalledError` when the engine cannot be had, saying how to get it.
    """
    global _PROCESS_ENGINES
    if _PROCESS_ENGINES is None:
        _PROCESS_ENGINES = EngineRegistry()
        atexit.register(_PROCESS_ENGINES.stop)
    return _PROCESS_ENGINES.endpoint_url(engine)


def default_engine() -> str:
    """``"external"`` when ``$LSIORM_ENDPOINT_URL`` is set, else ``"moto"``."""
    return "external" if os.environ.get(ENDPOINT_URL_ENV) else "moto"


def local_credentials(url: str) -> dict[str, Any]:
    """Dummy credentials for an endpoint on this machine (local engines accept any), else none."""
    if urlsplit(url).hostname in _LOCAL_HOSTS:
        return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return {}


@contextlib.contextmanager
def example_endpoint(engine: str | None = None) -> Iterator[str]:
    """Yield an endpoint for a runnable example, starting a local engine for the block if needed.

    ``engine`` (default: the ``LSIORM_EXAMPLE_ENGINE`` environment variable, else ``"auto"``):
    ``"auto"`` uses ``$LSIORM_ENDPOINT_URL`` when set and an embedded moto server otherwise;
    ``"moto"`` and ``"dynamodb-local"`` start that engine and stop it after the block. Dummy
    credentials are set for local engines (they accept any).
    """
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    choice = engine or os.environ.get("LSIORM_EXAMPLE_ENGINE") or "auto"
    url = os.environ.get(ENDPOINT_URL_ENV)
    if choice == "auto" and url:
        yield url
        return
    if choice == "dynamodb-local":
        with DynamoDBLocal() as local:
            print(f"DynamoDB Local at {local.endpoint_url}")
            yield local.endpoint_url
        return
    if choice not in ("auto", "moto"):
        raise ValueError(f"engine must be 'auto', 'moto' or 'dynamodb-local', not {choice!r}")
    with MotoServer() as server:
        print(f"embedded moto at {server.endpoint_url}")
        yield server.endpoint_url
