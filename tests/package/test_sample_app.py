"""lsiorm's sample app (tests/sample_app) passes its own tests, which break DynamoDB on purpose.

The app uses lsiorm's public API only and its tests use the pytest plugin's fixtures, fault
injection among them. It is copied to a folder outside this repository and run there by pytest
in a process of its own, on moto and on DynamoDB Local, as a user's suite would run.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from lsiorm.testing import DYNAMODB_LOCAL_DIR_ENV
from support.apps import run_app
from support.paths import REPO, TESTS

SAMPLE = TESTS / "sample_app"


@pytest.fixture
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outside-repo")
    assert REPO not in root.parents
    copy = root / "notes-app"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _tests_of_the_sample() -> int:
    text = (SAMPLE / "tests" / "test_store.py").read_text()
    return len(re.findall(r"^def test_", text, re.M))


def test_the_sample_app_breaks_dynamodb_and_survives_on_moto(app: Path) -> None:
    code, output = run_app(app, "--lsiorm-engine", "moto")
    assert code == 0, output
    assert re.search(rf"\b{_tests_of_the_sample()} passed\b", output), output


def test_the_sample_app_breaks_dynamodb_and_survives_on_dynamodb_local(app: Path) -> None:
    if not os.environ.get(DYNAMODB_LOCAL_DIR_ENV):
        pytest.skip("DynamoDB Local is not configured for this run")
    code, output = run_app(app, "--lsiorm-engine", "dynamodb-local")
    assert code == 0, output
    assert re.search(rf"\b{_tests_of_the_sample()} passed\b", output), output
