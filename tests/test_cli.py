"""The lsiorm command line: each command's success and error paths, on both engines."""

from __future__ import annotations

import io
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from lsiorm._cli import EXIT_FOUND, EXIT_OK, EXIT_SERVICE, EXIT_USAGE, main
from lsiorm.testing import free_port

MODELS = """
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


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module declaring tables with a unique name; returns the module name."""
    module = f"cli_app_{uuid.uuid4().hex[:8]}"
    name = f"cli_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODELS).format(name=name))
    monkeypatch.chdir(tmp_path)
    yield module
    sys.modules.pop(module, None)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_create_table_then_check(app: str, endpoint_url: str) -> None:
    code, out = run("create-table", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_OK
    assert "1 local" in out
    code, out = run("check", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_OK
    assert "matches its declaration" in out
    code, out = run("check", f"{app}:drifted", "--endpoint-url", endpoint_url)
    assert code == EXIT_FOUND
    assert "ByReplies" in out
    assert "projection" in out.lower()


def test_create_existing_table_is_a_service_error(
    app: str, endpoint_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("create-table", f"{app}:threads", "--endpoint-url", endpoint_url)[0] == EXIT_OK
    code, _ = run("create-table", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_SERVICE
    assert "lsiorm create-table:" in capsys.readouterr().err


def test_check_missing_table(
    app: str, endpoint_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("check", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_SERVICE
    assert "ResourceNotFound" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon_here", "module:attribute"),
        ("no_such_module_xyz:threads", "Cannot import"),
        ("{app}:missing", "no attribute"),
        ("{app}:not_a_table", "not an lsiorm Table"),
    ],
)
def test_bad_targets_are_usage_errors(
    app: str, target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("check", target.format(app=app), "--endpoint-url", "http://127.0.0.1:9")
    assert code == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_unreachable_endpoint(app: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, _ = run("check", f"{app}:threads", "--endpoint-url", url)
    assert code == EXIT_SERVICE
    assert "failed" in capsys.readouterr().err


def test_unknown_command_exits_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_collections_reports_largest_and_threshold(app: str, endpoint_url: str) -> None:
    assert run("create-table", f"{app}:threads", "--endpoint-url", endpoint_url)[0] == EXIT_OK
    module = sys.modules[app]
    from lsiorm import Session

    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as s:
        for forum, count in (("big", 5), ("small", 1)):
            for i in range(count):
                s.client.put_item(
                    TableName=module.threads.name,
                    Item={
                        "ForumName": {"S": forum},
                        "Subject": {"S": f"s{i}"},
                        "Body": {"S": "x" * 500},
                    },
                )
    code, out = run("collections", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_OK
    lines = [line for line in out.splitlines() if "ForumName=" in line]
    assert [line.split(":")[0].strip() for line in lines] == [
        "ForumName='big'",
        "ForumName='small'",
    ]
    code, out = run(
        "collections",
        f"{app}:threads",
        "--endpoint-url",
        endpoint_url,
        "--threshold-gb",
        "0.000001",
    )
    assert code == EXIT_FOUND
    assert "OVER THRESHOLD" in out
    code, _ = run(
        "collections", f"{app}:threads", "--endpoint-url", endpoint_url, "--threshold-gb", "-1"
    )
    assert code == EXIT_USAGE


EXPLAIN_MODELS = """
from datetime import datetime

from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Table, between
from lsiorm import query

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
    keys={"ForumName": "{forum}", "Subject": "{subject}", "LastPostDateTime": "{last_post}"},
):
    forum: str
    subject: str
    last_post: datetime | None = None
    replies: int = 0


recent = query(Thread).where(
    forum="S3",
    last_post=between(datetime.fromisoformat("2015-09-01T00:00:00+00:00"),
                      datetime.fromisoformat("2015-10-01T00:00:00+00:00")),
)
"""


@pytest.fixture
def explain_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    module = f"explain_app_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(EXPLAIN_MODELS)
    monkeypatch.chdir(tmp_path)
    yield module
    sys.modules.pop(module, None)


def test_explain_a_query_value(explain_app: str) -> None:
    code, out = run("explain", f"{explain_app}:recent")
    assert code == EXIT_OK
    assert "LastPostIndex" in out
    assert "2015-09-01T00:00:00.000000Z" in out


def test_explain_from_command_line_conditions(explain_app: str) -> None:
    code, out = run(
        "explain",
        f"{explain_app}:threads",
        "--entity",
        "Thread",
        "--where",
        "forum=S3",
        "--where",
        "last_post=2015-09-01T00:00:00Z..2015-10-01T00:00:00Z",
        "--select",
        "subject,replies",
    )
    assert code == EXIT_OK
    assert "LastPostIndex" in out
    assert "2015-10-01T00:00:00.000000Z" in out
    assert "replies" in out  # not projected by the KEYS_ONLY index: fetched


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "--entity"),
        (("--entity", "Nope"), "no entity 'Nope'"),
        (("--entity", "Thread", "--where", "forum~S3"), "Cannot read condition"),
        (("--entity", "Thread", "--where", "replies=many"), "replies"),
        (("--entity", "Thread", "--where", "subject=x"), "forum"),
    ],
)
def test_explain_errors_are_usage_errors(
    explain_app: str, extra: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("explain", f"{explain_app}:threads", *extra)
    assert code == EXIT_USAGE
    assert message in capsys.readouterr().err
