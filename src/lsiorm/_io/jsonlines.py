"""The JSON Lines file a collection relief moves items to: one item per line, appended durably.

Items are stored in DynamoDB's wire form, with bytes as base64, so a file round-trips exactly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from lsiorm._jobs.resumable import from_json_av, json_av
from lsiorm._model.wire import WireItem

__all__ = ["JsonLinesFile", "read_relief_file"]


class JsonLinesFile:
    """A relief destination in one file; ``str()`` is its path."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def read(self) -> list[WireItem]:
        """Every item in the file, in order (none when there is no file)."""
        if not self.path.exists():
            return []
        return read_relief_file(self.path)

    def append(self, items: Iterable[WireItem]) -> None:
        """Append items and make them durable (fsync) before returning."""
        with self.path.open("a") as out:
            for item in items:
                out.write(json.dumps(json_av(item), sort_keys=True) + "\n")
            out.flush()
            os.fsync(out.fileno())


def read_relief_file(path: str | os.PathLike[str]) -> list[WireItem]:
    """Read the items a relief wrote to a JSON Lines file (wire form, bytes restored)."""
    items: list[WireItem] = []
    with Path(path).open() as lines:
        for line in lines:
            if line.strip():
                items.append(from_json_av(json.loads(line)))
    return items
