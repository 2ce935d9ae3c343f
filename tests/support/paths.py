"""The repository's folders, for the checks that read its docs, examples, source and tests."""

from __future__ import annotations

from pathlib import Path

#: The suite's folder (``tests/``), whichever subfolder a test file sits in.
TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
DOCS = REPO / "docs"
EXAMPLES_DIR = REPO / "examples"
