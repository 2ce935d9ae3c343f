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


def test_check_missing_table_is_drift(
    app: str, endpoint_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run("check", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_FOUND
    assert "does not exist" in out
    assert "ResourceNotFound" not in out + capsys.readouterr().err


def test_create_table_exists_ok_and_delete_table(app: str, endpoint_url: str) -> None:
    url = ("--endpoint-url", endpoint_url)
    assert run("create-table", f"{app}:threads", *url)[0] == EXIT_OK
    code, out = run("create-table", f"{app}:threads", "--exists-ok", *url)
    assert code == EXIT_OK
    assert "already exists" in out
    assert run("delete-table", f"{app}:threads", *url)[0] == EXIT_USAGE  # needs --yes
    code, out = run("delete-table", f"{app}:threads", "--yes", *url)
    assert code == EXIT_OK
    assert "Deleted table" in out
    assert run("check", f"{app}:threads", *url)[0] == EXIT_FOUND


def test_table_prefix_names_the_live_table(app: str, endpoint_url: str) -> None:
    url = ("--endpoint-url", endpoint_url, "--table-prefix", "stage-")
    code, out = run("create-table", f"{app}:threads", *url)
    assert code == EXIT_OK
    name = sys.modules[app].threads.name
    assert f"'stage-{name}'" in out
    assert run("check", f"{app}:threads", *url)[0] == EXIT_OK
    assert run("check", f"{app}:threads", "--endpoint-url", endpoint_url)[0] == EXIT_FOUND
    assert run("delete-table", f"{app}:threads", "--yes", *url)[0] == EXIT_OK


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import lsiorm

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"lsiorm {lsiorm.__version__}"
    assert lsiorm.__version__[0].isdigit()


@pytest.mark.parametrize(
    ("lsis", "gsis", "text"),
    [
        (1, 0, "1 local index"),
        (2, 0, "2 local indexes"),
        (0, 1, "1 global index"),
        (1, 1, "1 local and 1 global index"),
        (2, 3, "2 local and 3 global indexes"),
        (0, 0, "no secondary indexes"),
    ],
)
def test_index_summary_grammar(lsis: int, gsis: int, text: str) -> None:
    from lsiorm import GlobalIndex, KeyAttribute, LocalIndex, Table
    from lsiorm._cli_text import index_summary

    table = Table(
        "Grammar",
        "pk",
        "sk",
        local_indexes=[LocalIndex(f"Local{i}", KeyAttribute(f"l{i}")) for i in range(lsis)],
        global_indexes=[GlobalIndex(f"Global{i}", KeyAttribute(f"g{i}")) for i in range(gsis)],
    )
    assert index_summary(table) == text


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
    err = capsys.readouterr().err
    assert "failed" in err
    assert "EndpointConnectionError" in err
    assert err.count("EndpointConnectionError") == 1, err  # each error said once


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


def test_collections_of_an_empty_table(app: str, endpoint_url: str) -> None:
    assert run("create-table", f"{app}:threads", "--endpoint-url", endpoint_url)[0] == EXIT_OK
    code, out = run("collections", f"{app}:threads", "--endpoint-url", endpoint_url)
    assert code == EXIT_OK
    assert "0 items read; no item collections" in out
    assert "the 0" not in out


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


def test_explain_several_entities(explain_app: str) -> None:
    code, out = run(
        "explain", f"{explain_app}:threads", "--entity", "Thread,Reply", "--where", "forum=S3"
    )
    assert code == EXIT_OK, out
    assert "Thread" in out
    assert "Reply" in out


def test_get_and_query_read_items(explain_app: str, endpoint_url: str) -> None:
    import json

    from lsiorm import Session
    from lsiorm._cli import load_target

    table = load_target(f"{explain_app}:threads")
    module = sys.modules[explain_app]
    url = ("--endpoint-url", endpoint_url, "--table-prefix", f"q{uuid.uuid4().hex[:6]}-")
    assert run("create-table", f"{explain_app}:threads", *url)[0] == EXIT_OK
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=url[3]) as s:
        s.put(module.Thread(forum="S3", subject="a", replies=2))
        s.put(module.Thread(forum="S3", subject="b", replies=5))
        s.put(module.Reply(forum="S3", subject="a", n=1, text="hi"))
    try:
        target = f"{explain_app}:threads"
        code, out = run(
            "get",
            target,
            "--entity",
            "Thread",
            "--key",
            "forum=S3",
            "--key",
            "subject=b",
            "--json",
            *url,
        )
        assert code == EXIT_OK, out
        assert json.loads(out) == {
            "entity": "Thread",
            "forum": "S3",
            "subject": "b",
            "last_post": None,
            "replies": 5,
        }
        code, _ = run(
            "get", target, "--entity", "Thread", "--key", "forum=S3", "--key", "subject=zz", *url
        )
        assert code == EXIT_FOUND
        code, out = run(
            "query", target, "--entity", "Thread,Reply", "--where", "forum=S3", "--json", *url
        )
        assert code == EXIT_OK, out
        rows = json.loads(out)
        assert sorted((r["entity"], r["subject"]) for r in rows) == [
            ("Reply", "a"),
            ("Thread", "a"),
            ("Thread", "b"),
        ]
        code, out = run(
            "query",
            target,
            "--entity",
            "Thread",
            "--where",
            "forum=S3",
            "--where",
            "subject>a",
            *url,
        )
        assert code == EXIT_OK, out
        assert "(1 item)" in out
        assert "subject='b'" in out
    finally:
        assert run("delete-table", f"{explain_app}:threads", "--yes", *url)[0] == EXIT_OK
        assert table.name == "ExplainThreads"
