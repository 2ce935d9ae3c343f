"""Session hooks that record what a test's session sent and what came back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Recorder"]


@dataclass
class Recorder:
    """A session hook that keeps every request with its response."""

    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def after(self, request: Any, response: dict[str, Any]) -> None:
        self.calls.append((request.operation, dict(request.params), response))
