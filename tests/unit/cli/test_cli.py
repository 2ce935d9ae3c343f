"""The lsiorm command line without an engine: usage errors, version, explain, bad endpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._cli import EXIT_OK, EXIT_SERVICE, EXIT_USAGE, main
from lsiorm._cli_text import headed, parse_command_line
from lsiorm.testing import free_port
from support.cli import app_module, printed, run


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


WHERE_S3 = (
    "--where",
    "forum=S3",
    "--where",
    "last_post=2015-09-01T00:00:00Z..2015-10-01T00:00:00Z",
)


def test_explain_and_query_take_an_entity_class_as_its_table_with_entity(
    explain_app: str, capsys: pytest.CaptureFixture[str]
) -> None:
    by_table = printed("explain", f"{explain_app}:threads", "--entity", "Thread", *WHERE_S3)
    assert "LastPostIndex" in by_table
    assert printed("explain", f"{explain_app}:Thread", *WHERE_S3) == by_table
    code, _ = run("explain", f"{explain_app}:Thread", "--entity", "Reply", *WHERE_S3)
    assert code == EXIT_USAGE
    assert "--entity applies to a Table target" in capsys.readouterr().err


def test_explain_takes_a_scan_value(explain_app: str) -> None:
    out = printed("explain", f"{explain_app}:busy")
    assert out.startswith("Scan Thread\n")
    assert "= _type = 'Thread' AND (replies > 5)" in out


def test_a_query_no_index_serves_says_what_to_do_on_the_command_line(
    explain_app: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("explain", f"{explain_app}:Thread", "--where", "subject=x")
    assert code == EXIT_USAGE
    message, advice = capsys.readouterr().err.splitlines()
    assert message.endswith("[rule: query.no-index]")
    assert advice.startswith("lsiorm explain: on the command line: add --where field=value")
    assert "scan(" in advice
    assert "--where" not in message  # the library's own message speaks of code
    code, _ = run("explain", f"{explain_app}:Thread", "--where", "forum=S3", "--where", "replies=5")
    assert code == EXIT_USAGE
    message, advice = capsys.readouterr().err.splitlines()
    assert message.endswith("[rule: query.where-non-key]")
    assert advice == (
        "lsiorm explain: on the command line: give that condition with --filter, not --where"
    )


def test_wrong_targets_say_what_to_give(
    explain_app: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ("--endpoint-url", "http://127.0.0.1:9")
    assert run("check", f"{explain_app}:Thread", *url)[0] == EXIT_USAGE
    err = capsys.readouterr().err
    assert "is the entity class Thread" in err
    assert "table 'ExplainThreads'" in err
    assert run("explain", f"{explain_app}:datetime")[0] == EXIT_USAGE
    err = capsys.readouterr().err
    assert "is the class datetime, not a Table, an entity class, or a query or scan value" in err


def test_explain_under_a_prefix_names_the_live_table_first(
    explain_app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LSIORM_TABLE_PREFIX", raising=False)
    plain = printed("explain", f"{explain_app}:recent")
    assert plain.startswith("Query Thread\n")
    live = "Table 'ExplainThreads' (live table 'dev-ExplainThreads'):\n"
    assert printed("explain", f"{explain_app}:recent", "--table-prefix", "dev-") == live + plain
    monkeypatch.setenv("LSIORM_TABLE_PREFIX", "dev-")
    assert printed("explain", f"{explain_app}:recent") == live + plain
    assert printed("explain", f"{explain_app}:recent", "--table-prefix", "") == plain


JOB_OPTIONS = (("--endpoint-url", "http://e"), ("--ledger", "L"), ("--table-prefix", "dev-"))


@given(st.permutations([*JOB_OPTIONS, ("show",), ("j1",)]))
def test_jobs_reads_its_action_and_id_among_its_options_in_any_order(
    parts: list[tuple[str, ...]],
) -> None:
    expected = parse_command_line(["jobs", "app:x", "show", "j1", *sum(JOB_OPTIONS, ())])
    assert (expected.action, expected.job, expected.ledger) == ("show", "j1", "L")
    words = [part for part in parts if part in (("show",), ("j1",))]
    if words != [("show",), ("j1",)]:
        return  # the action comes before the id
    argv = ["jobs", "app:x", *(word for part in parts for word in part)]
    assert vars(parse_command_line(argv)) == vars(expected)


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "app:x", "--ledger", "L", "show", "j1", "j2"],
        ["jobs", "app:x", "show", "--ledger", "L", "j1", "j2"],
        ["jobs", "app:x", "--ledger", "L", "sho", "j1"],
        ["jobs", "app:x", "--ledger", "L", "show", "j1", "--bogus"],
        ["check", "app:x", "--region", "r", "extra"],
    ],
)
def test_words_a_command_does_not_take_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_command_line(argv)
    assert info.value.code == EXIT_USAGE


@pytest.mark.parametrize(
    ("report", "tables", "first"),
    [
        (
            "Key audit of table 'T': priced at 1 units\nbody",
            {"T": "dev-T"},
            "Key audit of table 'T' (live table 'dev-T'): priced at 1 units",
        ),
        (
            "Key audit of table 'T': priced at 1 units\nbody",
            {"T": "T"},
            "Key audit of table 'T': priced at 1 units",
        ),
        (
            "Relief of 'p' of table 'T' to table 'A'\nbody",
            {"T": "x-T", "A": "x-A"},
            "Relief of 'p' of table 'T' (live table 'x-T') to table 'A' (live table 'x-A')",
        ),
    ],
)
def test_a_report_headed_by_its_tables_live_names(
    report: str, tables: dict[str, str], first: str
) -> None:
    assert headed(report, tables) == (first, "body")


def test_a_date_alone_on_a_datetime_field_is_its_midnight_in_utc(explain_app: str) -> None:
    # "In September", written as on a shell: a date alone, and two conditions on one field.
    out = printed(
        "explain",
        f"{explain_app}:Thread",
        "--where",
        "forum=S3",
        "--where",
        "last_post>=2015-09-01",
        "--where",
        "last_post<2015-10-01",
    )
    assert "LastPostDateTime BETWEEN '2015-09-01T00:00:00.000000Z'" in out
    assert "AND '2015-10-01T00:00:00.000000Y" in out  # the open end, closed on the key text
    timed = printed(
        "explain",
        f"{explain_app}:Thread",
        "--where",
        "forum=S3",
        "--where",
        "last_post>2015-09-01T10:30",
    )
    assert "'2015-09-01T10:30:00.000000Z" in timed  # a time without an offset is UTC


def test_a_plain_range_says_both_fixes_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        "from lsiorm import Entity, Table\n"
        "visits = Table('PlainVisits', 'pk', 'sk')\n"
        "class Visit(Entity, table=visits, keys={'pk': 'S#{site}', 'sk': 'V#{n}'},"
        " key_style='plain'):\n"
        "    site: str\n"
        "    n: int\n"
    )
    module = next(app_module(tmp_path, monkeypatch, source, "plain_visits"))
    code, _ = run("explain", f"{module}:Visit", "--where", "site=a", "--where", "n>5")
    assert code == EXIT_USAGE
    message, advice = capsys.readouterr().err.splitlines()
    assert message.endswith("[rule: query.plain-range]")
    assert "give that condition with --filter, not --where" in advice
    assert "printable key style (the default)" in advice
    assert "lsiorm backfill" in advice
    out = printed("explain", f"{module}:Visit", "--where", "site=a", "--filter", "n>5")
    assert "= n > 5" in out
