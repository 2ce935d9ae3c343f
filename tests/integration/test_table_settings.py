"""Table settings as code on both engines, for what each supports: create_table applies the
declared settings and check sees no drift; apply brings a bare table to them and check agrees;
`lsiorm apply` plans first and applies with --yes.

DynamoDB Local: on-demand maxima (at CreateTable), streams (and changing a stream's view type),
deletion protection, time to live. moto: warm throughput, streams, deletion protection,
point-in-time recovery and its period, tags, resource policies (put, not at creation), time to
live. The rest is tested on its requests (tests/unit/ops/test_table_settings_requests.py).
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm import GlobalIndex, OnDemandThroughput, Session, Table, WarmThroughput
from support.cli import app_module, run

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "dynamodb:GetItem",
            "Resource": "*",
        }
    ],
}


def _name() -> str:
    return f"settings_{uuid.uuid4().hex[:8]}"


def _settings(backend: str) -> dict[str, Any]:
    """The settings the engine keeps, as declared on a table."""
    common: dict[str, Any] = {
        "stream": "NEW_AND_OLD_IMAGES",
        "deletion_protection": True,
        "ttl_attribute": "expires",
    }
    if backend == "moto":
        return {
            **common,
            "warm_throughput": WarmThroughput(13000, 5000),
            "point_in_time_recovery": True,
            "recovery_period_days": 7,
            "tags": {"team": "shop"},
            "resource_policy": POLICY,
        }
    return {**common, "on_demand_throughput": OnDemandThroughput(100, 50)}


def _table(name: str, **settings: Any) -> Table:
    return Table(name, "PK", "SK", global_indexes=[GlobalIndex("ByG", "G")], **settings)


@pytest.fixture
def unprotect(session: Session) -> Iterator[list[Table]]:
    """Tables to delete after the test, their deletion protection turned off first."""
    made: list[Table] = []
    yield made
    for table in made:
        bare = Table(
            table.name,
            "PK",
            "SK",
            global_indexes=[GlobalIndex("ByG", "G")],
            deletion_protection=False,
        )
        session.apply_table(bare)
        session.delete_table(bare)


def test_create_table_applies_the_declared_settings(
    session: Session, backend: str, unprotect: list[Table]
) -> None:
    settings = _settings(backend)
    settings.pop("resource_policy", None)  # moto keeps a policy put later, not one at creation
    table = _table(_name(), **settings)
    unprotect.append(table)
    assert session.create_table(table) is True
    report = session.check_table(table)
    assert report.ok, str(report)
    if backend == "dynamodb-local":
        assert report.unchecked == ()


def test_apply_brings_a_bare_table_to_its_settings(
    session: Session, backend: str, unprotect: list[Table]
) -> None:
    name = _name()
    bare = _table(name)
    session.create_table(bare)
    declared = _table(
        name, **{k: v for k, v in _settings(backend).items() if k != "on_demand_throughput"}
    )
    unprotect.append(declared)
    before = session.check_table(declared)
    assert not before.ok
    planned = session.apply_table(declared, dry_run=True)
    assert planned.applied == ()
    assert planned.plan.update_tables == 2  # the settings, then the stream
    assert session.check_table(declared) == before, "a dry run changes nothing"
    report = session.apply_table(declared)
    assert report.after is not None
    assert report.after.ok, str(report)
    assert session.apply_table(declared, dry_run=True).plan.steps == ()


def test_apply_changes_a_streams_view_type_and_takes_protection_off(
    session: Session, backend: str
) -> None:
    name = _name()
    session.create_table(_table(name, stream="KEYS_ONLY", deletion_protection=True))
    declared = _table(name, stream="NEW_IMAGE", deletion_protection=False)
    if backend == "moto":
        # moto cannot enable a stream again once it was disabled: only protection is applied.
        declared = _table(name, deletion_protection=False)
    report = session.apply_table(declared)
    assert report.after is not None
    assert report.after.ok, str(report)
    session.delete_table(declared)  # protection is off


def test_dynamodb_local_does_not_report_what_it_does_not_know(
    session: Session, backend: str
) -> None:
    if backend != "dynamodb-local":
        pytest.skip("moto reports backups, tags and policies")
    name = _name()
    session.create_table(_table(name))
    declared = _table(name, point_in_time_recovery=True, tags={"a": "1"}, resource_policy=POLICY)
    report = session.check_table(declared)
    assert report.ok
    assert report.unchecked == ("point-in-time recovery", "tags", "resource policy")
    assert "Not checked" in str(report)
    assert session.apply_table(declared).plan.steps == ()
    session.delete_table(declared)


APP = """
from lsiorm import GlobalIndex, Table

table = Table("{name}", "PK", "SK", global_indexes=[GlobalIndex("ByG", "G")],
              stream="NEW_IMAGE", ttl_attribute="expires")
bare = Table("{name}", "PK", "SK", global_indexes=[GlobalIndex("ByG", "G")])
"""


def test_the_command_line_plans_then_applies(
    endpoint_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _name()
    source = textwrap.dedent(APP).format(name=name)
    module = next(app_module(tmp_path, monkeypatch, source, "settings_app"))
    where = ["--endpoint-url", endpoint_url, "--region", "us-east-1"]
    assert run("create-table", f"{module}:bare", *where)[0] == 0
    code, out = run("apply", f"{module}:table", *where)
    assert code == 0
    assert "1. UpdateTable: enable a NEW_IMAGE stream" in out
    assert "2. UpdateTimeToLive: enable time to live on 'expires'" in out
    assert "Dry run: nothing was sent; add --yes to apply." in out
    assert run("check", f"{module}:table", *where)[0] == 1
    code, out = run("apply", f"{module}:table", *where, "--yes")
    assert code == 0, out
    assert "applied: UpdateTable: enable a NEW_IMAGE stream" in out
    assert run("check", f"{module}:table", *where)[0] == 0
    code, out = run("apply", f"{module}:table", *where)
    assert (code, out.strip()) == (
        0,
        f"Table {name!r} has its declared settings: nothing to apply.",
    )
    assert run("delete-table", f"{module}:table", *where, "--yes")[0] == 0
