"""The key texts a page of the docs or an example writes, recorded on a moto server of its own.

Run as ``python -m support.first_keys SOURCE`` (with ``tests/`` on the path): it starts moto in
this process, runs SOURCE (the Python blocks of a Markdown page, or an example's ``main``) with
a hook on every Session and AsyncSession it opens, and prints, as JSON, the text of every
string key attribute each write request carried (items put, keys named, key attributes an
update sets). A process of its own, because moto keeps its tables in module globals: a page run
twice in one process would find its tables there already.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lsiorm import AsyncSession, HookRequest, Session
from lsiorm.testing import MotoServer

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SHOWN_ENDPOINT = "http://localhost:8000"
_SET = re.compile(r"(#\w+) = (:\w+)")


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


def _run(source: Path, endpoint_url: str) -> None:
    if source.suffix == ".md":
        namespace: dict[str, Any] = {"__name__": f"first_keys_{source.stem}"}
        for number, block in enumerate(BLOCK.findall(source.read_text()), start=1):
            code = block.replace(SHOWN_ENDPOINT, endpoint_url)
            exec(
                compile(code, f"{source.name}[block {number}]", "exec", dont_inherit=True),
                namespace,
            )
        return
    # Imported as a module of its own, so that its annotations resolve as when it runs.
    name = f"first_keys_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.main(endpoint_url)


def record(source: Path) -> list[tuple[str, str]]:
    """Run ``source`` on a fresh moto server; return every key text its writes carried."""
    recorder = KeyRecorder()
    for cls in (Session, AsyncSession):
        original = cls.__init__

        def opened(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            kwargs["hooks"] = [*kwargs.get("hooks", ()), recorder]
            _original(self, *args, **kwargs)

        cls.__init__ = opened  # type: ignore[method-assign]
    with MotoServer() as server, contextlib.redirect_stdout(io.StringIO()):
        _run(source, server.endpoint_url)
    return recorder.keys


if __name__ == "__main__":
    json.dump(record(Path(sys.argv[1])), sys.stdout)
