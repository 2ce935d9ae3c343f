"""Reading and re-signing cursors, for the tests that edit them and expect a refusal."""

from __future__ import annotations

import base64
import json
from typing import Any

from lsiorm._query.cursor import canonical_json, digest


def raw(cursor: str) -> dict[str, Any]:
    """The JSON a cursor encodes."""
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return data


def pack(data: dict[str, Any], key: bytes | None = None) -> str:
    """A cursor of ``data``, signed with ``key`` as lsiorm signs (None keeps ``data``'s own
    check)."""
    body = {k: v for k, v in data.items() if k != "m"}
    body["m"] = digest(body, key) if key is not None else data["m"]
    return base64.urlsafe_b64encode(canonical_json(body).encode()).decode().rstrip("=")
