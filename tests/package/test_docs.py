"""Every Python code block in docs/ and README.md runs, page by page, against moto."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lsiorm.testing import MotoServer
from support.paths import DOCS, REPO

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# Pages show DynamoDB Local's default endpoint; the test points them at its own engine.
SHOWN_ENDPOINT = "http://localhost:8000"


def pages() -> list[Path]:
    candidates = [*DOCS.glob("*.md"), REPO / "README.md"]
    return sorted(p for p in candidates if BLOCK.search(p.read_text()))


@pytest.fixture(scope="module")
def moto_url() -> Any:
    with MotoServer() as server:
        yield server.endpoint_url


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_code_blocks_run(
    page: Path, moto_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    for number, block in enumerate(BLOCK.findall(page.read_text()), start=1):
        code = block.replace(SHOWN_ENDPOINT, moto_url)
        try:
            exec(
                compile(code, f"{page.name}[block {number}]", "exec", dont_inherit=True), namespace
            )
        except Exception as exc:  # pragma: no cover - the message is the report
            pytest.fail(f"{page.name} block {number} failed: {type(exc).__name__}: {exc}")
