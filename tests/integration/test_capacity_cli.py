"""The command line prints the model's figures beside what DynamoDB consumed."""

from __future__ import annotations

import re
from typing import Any

from lsiorm import Session
from support.cli import printed


def figures(text: str, label: str) -> str:
    found = re.search(rf"{label}: (.*)", text)
    assert found is not None, text
    return found.group(1)


def test_explain_sample_and_collections_capacity_print_the_figures(
    capacity_app: Any, endpoint_url: str, backend: str, table_name: str
) -> None:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(capacity_app.table)
        try:
            for n in range(5):
                session.put(capacity_app.Doc(owner="o", did=str(n), b="k", body="x" * 3000))
            name = capacity_app.__name__
            keys = printed("explain", f"{name}:KEYS", "--sample", "--endpoint-url", endpoint_url)
            whole = printed("explain", f"{name}:WHOLE", "--sample", "--endpoint-url", endpoint_url)
            scanned = printed(
                "collections", f"{name}:table", "--capacity", "--endpoint-url", endpoint_url
            )
            got = printed(
                "get", f"{name}:table", "--entity", "Doc", "--key", "owner=o", "--key", "did=1",
                "--consistent", "--capacity", "--endpoint-url", endpoint_url,
            )  # fmt: skip
            listed = printed(
                "query", f"{name}:table", "--entity", "Doc", "--where", "owner=o",
                "--capacity", "--endpoint-url", endpoint_url,
            )  # fmt: skip
            quiet = printed(
                "get", f"{name}:table", "--entity", "Doc", "--key", "owner=o", "--key", "did=1",
                "--endpoint-url", endpoint_url,
            )  # fmt: skip
        finally:
            session.delete_table(capacity_app.table, wait=False)
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


def test_under_a_table_prefix_the_cli_measures_and_names_the_live_table(
    capacity_app: Any, endpoint_url: str, backend: str, table_name: str, prefix: str
) -> None:
    live = f"{prefix}{table_name}"
    url = ("--endpoint-url", endpoint_url, "--table-prefix", prefix)
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        s.create_table(capacity_app.table)
        try:
            for n in range(5):
                s.put(capacity_app.Doc(owner="o", did=str(n), b="k", body="x" * 3000))
            name = capacity_app.__name__
            sampled = printed("explain", f"{name}:WHOLE", "--sample", *url)
            scanned = printed("collections", f"{name}:table", "--capacity", *url)
            audited = printed("audit-keys", f"{name}:table", "--capacity", *url)
            checked = printed("check", f"{name}:table", *url)
        finally:
            s.delete_table(capacity_app.table, wait=False)
    assert "sampled: the first page, 5 items, 1 request(s)" in sampled
    if backend == "dynamodb-local":
        assert figures(sampled, "measured") == "4 units: table 4"
        assert figures(sampled, "sample estimate") == figures(sampled, "measured")
    labelled = f"'{table_name}' (live table '{live}')"
    for text in (sampled, scanned, audited):
        # The live name is always labelled, after the declared one.
        assert labelled in text
        assert text.count(f"'{live}'") == text.count(labelled)
    # The drift report speaks of the live table, after a line naming both; the key formats'
    # line names both, then come the key layouts.
    lines = checked.splitlines()
    assert lines[:2] == [f"Table {labelled}:", f"Table '{live}' matches its declaration."]
    assert lines[2].startswith(f"Key formats of table {labelled}: 5 items read; every key in ")
    assert "Key layout of Doc" in checked
