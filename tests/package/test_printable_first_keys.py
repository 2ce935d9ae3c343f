"""A new user's first keys hold no control character: README.md, the getting-started page and
every example write only printable key text.

Each source runs in a process of its own against moto (`support.first_keys`), with a hook on
every session it opens that records the text of every key attribute each write request carries
(items put, keys named, key attributes an update sets). None may hold a character below U+0020,
and each source must write keys (the getting-started page its order item's,
``ORDER#A03#ITEM#001``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import DOCS, EXAMPLES_DIR, REPO, TESTS

SOURCES = [REPO / "README.md", DOCS / "getting-started.md", *sorted(EXAMPLES_DIR.glob("*.py"))]
#: Examples that write no item (a table's settings alone): they must stay so, or be checked.
NO_ITEMS = {"table_settings.py"}


def recorded(source: Path) -> list[tuple[str, str]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env.pop("LSIORM_ENDPOINT_URL", None)
    env.setdefault("AWS_ACCESS_KEY_ID", "testing")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    done = subprocess.run(
        [sys.executable, "-m", "support.first_keys", str(source)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [(name, text) for name, text in json.loads(done.stdout)]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_first_keys_hold_no_control_character(source: Path) -> None:
    keys = recorded(source)
    if source.name in NO_ITEMS:
        assert keys == []
        return
    assert keys, "the source wrote no key"
    assert [(name, text) for name, text in keys if any(c < " " for c in text)] == []
    if source.name == "getting-started.md":
        assert ("SK", "ORDER#A03#ITEM#001") in keys  # the page's hierarchy key
