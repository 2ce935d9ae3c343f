"""A job's checkpoint in a JSON file, replaced whole on each save (never half written)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FileCheckpoint"]


class FileCheckpoint:
    """A `CheckpointStore` in one file; ``str()`` is its path."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def load(self) -> dict[str, Any] | None:
        """The checkpoint in the file, or None when there is no file."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        data: dict[str, Any] = json.loads(text)
        return data

    def save(self, data: Mapping[str, Any]) -> None:
        """Write the checkpoint to a temporary file, then move it over the old one."""
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(data, indent=1, default=str))
        os.replace(temporary, self.path)  # a crash leaves the old checkpoint or the new one
