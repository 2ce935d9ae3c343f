"""The lsiorm command line: each command's success and error paths, on both engines."""

from __future__ import annotations

import sys
import uuid
from typing import Any

import pytest

from lsiorm._cli import EXIT_FOUND, EXIT_OK, EXIT_SERVICE, EXIT_USAGE
from support.cli import app_module, run


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


SIZED_APP = """
from typing import Annotated

from pydantic import Field

from lsiorm import Entity, Offloaded, Table

docs = Table("{name}", "PK", "SK")


class Report(Entity, table=docs, keys={{"PK": "R#{{rid}}", "SK": "R"}}):
    rid: Annotated[str, Field(max_length=20)]
    body: Annotated[str, Field(max_length=90_000)]  # up to 360 KB of UTF-8


class Scan(Entity, table=docs, keys={{"PK": "S#{{sid}}", "SK": "S"}}):
    sid: str
    image: Annotated[bytes, Offloaded(threshold=30_000)]  # any size: a large one goes to S3
"""


def test_check_warns_of_an_entity_whose_items_can_near_400_kb(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, endpoint_url: str
) -> None:
    source = SIZED_APP.format(name=f"cli_{uuid.uuid4().hex[:10]}")
    for module in app_module(tmp_path, monkeypatch, source, "sized_app"):
        url = ("--endpoint-url", endpoint_url)
        assert run("create-table", f"{module}:docs", *url)[0] == EXIT_OK
        code, out = run("check", f"{module}:docs", *url)
        assert code == EXIT_OK  # a warning, not drift
        warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
        assert len(warnings) == 1, out
        assert "Report items can take up to" in warnings[0]
        assert not any("Scan" in line for line in warnings)  # its large value is offloaded
        assert run("delete-table", f"{module}:docs", "--yes", *url)[0] == EXIT_OK
