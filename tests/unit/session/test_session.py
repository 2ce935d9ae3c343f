"""Building a session: from a profile or a client, never both; a missing async extra is named."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from typing import Any

import boto3
import pytest

from lsiorm import AsyncSession, Session, fast_json_of
from lsiorm.errors import MissingDependencyError


def test_prefix_and_resolver_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        Session(region_name="us-east-1", table_prefix="a-", table_names=str.upper)


def test_session_from_a_profile(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    config.write_text("[profile lsiorm-test]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)  # the environment beats a profile
    with Session(profile_name="lsiorm-test") as s:
        assert s.client.meta.region_name == "eu-west-3"


def test_client_and_session_arguments_conflict() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with pytest.raises(TypeError, match="not both"):
        Session(client, profile_name="default")


def test_a_client_passed_in_gets_the_fast_path_unless_turned_off() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    Session(client)
    assert fast_json_of(client) is not None
    other = boto3.client("dynamodb", region_name="us-east-1")
    Session(other, fast_json=False)
    assert fast_json_of(other) is None


def test_async_session_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "aioboto3" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependencyError, match=r"lsiorm\[async\]") as excinfo:
        AsyncSession(region_name="us-east-1")
    assert excinfo.value.extra == "async"
    assert isinstance(excinfo.value, ImportError)


def test_import_lsiorm_loads_no_async_stack() -> None:
    code = (
        "import sys, lsiorm, lsiorm.testing, lsiorm.errors\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aioboto3', 'aiobotocore', 'aiohttp', 'moto'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.skipif(
    importlib.util.find_spec("aioboto3") is not None, reason="the async extra is installed"
)
def test_async_session_without_aioboto3_installed() -> None:
    with pytest.raises(MissingDependencyError, match=r'pip install "lsiorm\[async\]"'):
        AsyncSession(region_name="us-east-1")
