"""Running pytest on an app of a user's, in a folder of its own and a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from lsiorm.testing import ENDPOINT_URL_ENV
from support.paths import REPO

__all__ = ["run_app"]


def _needs_explicit_plugin() -> bool:
    return not any(ep.name == "lsiorm" for ep in entry_points(group="pytest11"))


def run_app(
    app: Path, *args: str, env: dict[str, str] | None = None, external: bool = False
) -> tuple[int, str]:
    """Run pytest in ``app`` (its folder on the path, lsiorm's plugin loaded); return the exit
    code and the output. ``LSIORM_ENDPOINT_URL`` is dropped unless ``external``."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args]
    if _needs_explicit_plugin():  # an install without the entry point (plain PYTHONPATH)
        command[3:3] = ["-p", "lsiorm.pytest_plugin"]
    environ = dict(env if env is not None else os.environ)
    environ["PYTHONPATH"] = os.pathsep.join([str(app), str(REPO / "src")])
    if not external:
        environ.pop(ENDPOINT_URL_ENV, None)
    done = subprocess.run(
        command, cwd=app, env=environ, capture_output=True, text=True, timeout=600, check=False
    )
    return done.returncode, done.stdout + done.stderr
