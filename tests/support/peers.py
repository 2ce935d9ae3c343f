"""Other tools that write DynamoDB tables, run for the adoption tests: ElectroDB through Node;
and lsiorm's declarations of what they wrote.

`make electrodb` installs ElectroDB and the AWS SDK for JavaScript into ``.cache/electrodb``
(``$LSIORM_ELECTRODB_DIR`` names another folder); ``tests/peers/electrodb_service.cjs`` writes
and reads its service with them. A machine without Node.js skips those tests with the reason,
unless ``CI=true``, where a missing tool fails them, as a missing engine does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from lsiorm import Entity, GlobalIndex, KeyAttribute, Table

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "peers" / "electrodb_service.cjs"
ELECTRODB_DIR_ENV = "LSIORM_ELECTRODB_DIR"


def _modules() -> Path:
    folder = os.environ.get(ELECTRODB_DIR_ENV) or str(ROOT / ".cache" / "electrodb")
    return Path(folder) / "node_modules"


def require_electrodb() -> Path:
    """The node_modules folder with ElectroDB; skip (fail under CI) without Node.js."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = "node" if node is None else "npm"
        message = f"the ElectroDB adoption tests need Node.js ({missing} is not on PATH)"
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    modules = _modules()
    for package in ("electrodb", "@aws-sdk/client-dynamodb"):
        if not (modules / package / "package.json").is_file():
            pytest.fail(
                f"{package} is not installed in {modules.parent}: run `make electrodb` "
                f"(or set {ELECTRODB_DIR_ENV} to a folder where npm installed it)"
            )
    return modules


def electrodb(mode: str, endpoint_url: str, table_name: str, *more: str) -> Any:
    """Run the ElectroDB service script (``write``, ``read``, or ``get`` with more arguments);
    return what it printed."""
    modules = require_electrodb()
    env = {**os.environ, "NODE_PATH": str(modules), "NODE_NO_WARNINGS": "1"}
    done = subprocess.run(
        ["node", str(SCRIPT), mode, endpoint_url, table_name, *more],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"electrodb_service.cjs {mode} failed:\n{done.stderr}"
    return json.loads(done.stdout)


# -- lsiorm's declarations of what the peers wrote ---------------------------------------------


def lsiorm_users(table_name: str) -> tuple[Table, type[Entity]]:
    """lsiorm's declaration of PynamoDB's users table (``test_adopt_pynamodb``), written from
    what PynamoDB stores."""
    users = Table(
        table_name,
        KeyAttribute("user_id", "N"),
        global_indexes=[GlobalIndex("by_team", KeyAttribute("team"), KeyAttribute("score", "N"))],
    )

    class User(
        Entity,
        table=users,
        keys={"user_id": "{user_id}", "team": "{team}", "score": "{score}"},
        type_attribute=None,
    ):
        user_id: int
        email: str = Field(alias="emailAddress")
        name: str
        team: str | None = None
        score: int = 0

    return users, User
