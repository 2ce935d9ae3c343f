"""The command line's tests: app modules written for it to load, and a way to run it.

A pytest plugin of the suite (``tests/conftest.py`` loads it): its fixtures ``app`` and
``explain_app`` serve the unit and the integration tests of the command line alike.
"""

from __future__ import annotations

import io
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm._cli import main

#: An app with the forum's table (its name a ``{name}`` field), a drifted copy, and a non-table.
THREADS_APP = """
from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Table

threads = Table(
    "{name}",
    partition_key="ForumName",
    sort_key="Subject",
    local_indexes=[
        LocalIndex(
            "LastPostIndex", KeyAttribute("LastPostDateTime"), Projection.include("Replies")
        ),
    ],
)
drifted = Table(
    "{name}",
    partition_key="ForumName",
    sort_key="Subject",
    local_indexes=[
        LocalIndex("LastPostIndex", KeyAttribute("LastPostDateTime"), Projection.keys_only()),
        LocalIndex("ByReplies", KeyAttribute("RepliesKey")),
    ],
)
not_a_table = 42
"""

#: An app whose entities and query values ``explain``, ``get`` and ``query`` read.
EXPLAIN_APP = """
from datetime import datetime

from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Table, between, gt
from lsiorm import query, scan

threads = Table(
    "ExplainThreads",
    partition_key="ForumName",
    sort_key="Subject",
    local_indexes=[
        LocalIndex("LastPostIndex", KeyAttribute("LastPostDateTime"), Projection.keys_only()),
    ],
)


class Thread(
    Entity,
    table=threads,
    keys={"ForumName": "{forum}", "Subject": "T#{subject}", "LastPostDateTime": "{last_post}"},
):
    forum: str
    subject: str
    last_post: datetime | None = None
    replies: int = 0


class Reply(
    Entity,
    table=threads,
    keys={"ForumName": "{forum}", "Subject": "R#{subject}#{n:04d}"},
):
    forum: str
    subject: str
    n: int
    text: str = ""


recent = query(Thread).where(
    forum="S3",
    last_post=between(datetime.fromisoformat("2015-09-01T00:00:00+00:00"),
                      datetime.fromisoformat("2015-10-01T00:00:00+00:00")),
)
busy = scan(Thread).filter(replies=gt(5))
"""

#: An app on a table with reserved LSI slots (its name a ``{name}`` field) and two queries.
CAPACITY_APP = """
from lsiorm import Entity, Table, query

table = Table.with_reserved_lsi_slots({name!r}, "PK", "SK")


class Doc(Entity, table=table, keys={{"PK": "U#{{owner}}", "SK": "D#{{did}}", "LSI2SK": "{{b}}"}}):
    owner: str
    did: str
    b: str | None = None
    body: str = ""


KEYS = query(Doc).where(owner="o").using("LSI2").select("did")
WHOLE = query(Doc).where(owner="o").consistent()
"""


def run(*argv: str) -> tuple[int, str]:
    """Run ``lsiorm`` with ``argv``; return its exit code and what it printed."""
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def printed(*argv: str) -> str:
    """Run ``lsiorm`` with ``argv``, check that it exited 0 or 1, return what it printed."""
    out = io.StringIO()
    assert main(list(argv), out=out) in (0, 1)
    return out.getvalue()


def app_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, stem: str
) -> Iterator[str]:
    """Write ``source`` as a fresh module in ``tmp_path``, work there, and yield its name."""
    module = f"{stem}_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    yield module
    sys.modules.pop(module, None)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module declaring tables with a unique name; returns the module name."""
    source = textwrap.dedent(THREADS_APP).format(name=f"cli_{uuid.uuid4().hex[:10]}")
    yield from app_module(tmp_path, monkeypatch, source, "cli_app")


@pytest.fixture
def explain_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of entities and query values to explain, get and query; returns its name."""
    yield from app_module(tmp_path, monkeypatch, EXPLAIN_APP, "explain_app")


@pytest.fixture
def capacity_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_name: str) -> Any:
    """The imported :data:`CAPACITY_APP`, its table named ``table_name``."""
    name = f"capcli_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(CAPACITY_APP.format(name=table_name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(name)
