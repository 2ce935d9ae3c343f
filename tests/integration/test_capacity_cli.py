"""The command line prints the model's figures beside what DynamoDB consumed."""

from __future__ import annotations

import io
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Session
from lsiorm._cli import main

MODULE = """
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


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_name: str) -> Any:
    name = f"capcli_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODULE.format(name=table_name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(name)


def run(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), out=out) in (0, 1)
    return out.getvalue()


def figures(text: str, label: str) -> str:
    found = re.search(rf"{label}: (.*)", text)
    assert found is not None, text
    return found.group(1)


def test_explain_sample_and_collections_capacity_print_the_figures(
    module: Any, endpoint_url: str, backend: str, table_name: str
) -> None:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(module.table)
        try:
            for n in range(5):
                session.put(module.Doc(owner="o", did=str(n), b="k", body="x" * 3000))
            name = module.__name__
            keys = run("explain", f"{name}:KEYS", "--sample", "--endpoint-url", endpoint_url)
            whole = run("explain", f"{name}:WHOLE", "--sample", "--endpoint-url", endpoint_url)
            scanned = run(
                "collections", f"{name}:table", "--capacity", "--endpoint-url", endpoint_url
            )
            got = run(
                "get", f"{name}:table", "--entity", "Doc", "--key", "owner=o", "--key", "did=1",
                "--consistent", "--capacity", "--endpoint-url", endpoint_url,
            )  # fmt: skip
            listed = run(
                "query", f"{name}:table", "--entity", "Doc", "--where", "owner=o",
                "--capacity", "--endpoint-url", endpoint_url,
            )  # fmt: skip
            quiet = run(
                "get", f"{name}:table", "--entity", "Doc", "--key", "owner=o", "--key", "did=1",
                "--endpoint-url", endpoint_url,
            )  # fmt: skip
        finally:
            session.delete_table(module.table, wait=False)
    for text in (keys, whole):
        assert "sampled: the first page, 5 items, 1 request(s)" in text
        if backend == "dynamodb-local":  # moto's ConsumedCapacity is a placeholder
            assert figures(text, "sample estimate") == figures(text, "measured")
    consumed = figures(scanned, f"Consumed capacity of '{table_name}'")
    read_one = figures(got, f"Consumed capacity of '{table_name}'")
    read_all = figures(listed, f"Consumed capacity of '{table_name}'")
    assert "Consumed capacity" not in quiet
    if backend == "dynamodb-local":
        assert read_one == "1 units: table 1"  # one 3 KB item, strongly consistent
        assert read_all == "2 units: table 2"  # about 15 KB queried: 4 units, halved
        # Five 3 KB items fetched (eventual), the LSI entries in one read.
        assert figures(keys, "measured") == "3 units: table 2.5 + LSI2 0.5"
        assert figures(whole, "measured") == "4 units: table 4"  # 15 KB, consistent
        assert consumed == "2 units: table 2"  # about 15 KB scanned: 4 units, halved


def test_explain_without_sample_sends_nothing(module: Any) -> None:
    text = run("explain", f"{module.__name__}:KEYS", "--endpoint-url", "http://127.0.0.1:9")
    assert "measured" not in text
    assert "AWS documents no fetch" in text
