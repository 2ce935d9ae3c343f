"""A new user's first keys hold no control character: README.md, the getting-started page and
every example write only printable key text.

Each source runs against moto with a hook on every session it opens, which records the text of
every key attribute each write request carries (items put, keys named, key attributes an update
sets). None may hold a character below U+0020, and each source must write keys (the
getting-started page its order item's, ``ORDER#A03#ITEM#001``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm import AsyncSession, HookRequest, Session
from lsiorm.testing import MotoServer
from support.paths import DOCS, EXAMPLES_DIR, REPO

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SHOWN_ENDPOINT = "http://localhost:8000"
_SET = re.compile(r"(#\w+) = (:\w+)")
PAGES = [REPO / "README.md", DOCS / "getting-started.md"]
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))


class KeyRecorder:
    """A session hook: the text of every string key attribute a write request carries."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []

    def before(self, request: HookRequest) -> None:
        names = {n for table in request.tables for n in table.key_attributes}
        for item in _items(request.operation, request.params):
            self._take(names, item)
        if request.operation == "UpdateItem":
            params = request.params
            aliases = params.get("ExpressionAttributeNames", {})
            values = params.get("ExpressionAttributeValues", {})
            for alias, value in _SET.findall(params.get("UpdateExpression", "")):
                self._take(names, {aliases.get(alias, alias): values.get(value, {})})

    def _take(self, names: set[str], item: dict[str, Any]) -> None:
        for name, value in item.items():
            if name in names and isinstance(value, dict) and "S" in value:
                self.keys.append((name, value["S"]))


def _items(operation: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if operation == "PutItem":
        yield params["Item"]
    if operation in ("UpdateItem", "DeleteItem"):
        yield params["Key"]
    if operation == "BatchWriteItem":
        for requests in params["RequestItems"].values():
            for request in requests:
                inner = request.get("PutRequest") or request.get("DeleteRequest") or {}
                yield inner.get("Item") or inner.get("Key") or {}
    if operation == "TransactWriteItems":
        for action in params["TransactItems"]:
            inner = next(iter(action.values()))
            yield inner.get("Item") or inner.get("Key") or {}


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with MotoServer() as server:
        yield server.endpoint_url


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> KeyRecorder:
    """Every Session and AsyncSession opened during the test carries the recording hook."""
    found = KeyRecorder()
    for cls in (Session, AsyncSession):
        original = cls.__init__

        def opened(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            kwargs["hooks"] = [*kwargs.get("hooks", ()), found]
            _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", opened)
    return found


def _printable(recorder: KeyRecorder) -> None:
    assert recorder.keys, "the source wrote no key"
    bad = [(name, text) for name, text in recorder.keys if any(c < " " for c in text)]
    assert bad == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_pages_keys_are_printable(page: Path, moto_url: str, recorder: KeyRecorder) -> None:
    namespace: dict[str, Any] = {"__name__": f"first_keys_{page.stem}"}
    for number, block in enumerate(BLOCK.findall(page.read_text()), start=1):
        code = block.replace(SHOWN_ENDPOINT, moto_url)
        exec(compile(code, f"{page.name}[block {number}]", "exec", dont_inherit=True), namespace)
    _printable(recorder)
    if page.name == "getting-started.md":
        assert ("SK", "ORDER#A03#ITEM#001") in recorder.keys  # the page's hierarchy key


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_keys_are_printable(
    example: Path,
    moto_url: str,
    recorder: KeyRecorder,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Imported as a module of its own, so that its annotations resolve as when it runs.
    name = f"first_keys_{example.stem}"
    spec = importlib.util.spec_from_file_location(name, example)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    module.main(moto_url)
    capsys.readouterr()
    _printable(recorder)
