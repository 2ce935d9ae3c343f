"""The lsiorm command line without an engine: usage errors, version, explain, bad endpoints."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm._cli import EXIT_OK, EXIT_SERVICE, EXIT_USAGE, main
from lsiorm.testing import free_port
from support.cli import printed, run


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


def test_explain_without_sample_sends_nothing(capacity_app: Any) -> None:
    text = printed(
        "explain", f"{capacity_app.__name__}:KEYS", "--endpoint-url", "http://127.0.0.1:9"
    )
    assert "measured" not in text
    assert "AWS documents no fetch" in text
