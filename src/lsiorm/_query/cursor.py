"""Cursors: opaque, shape-bound positions in a plan's requests."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    TypeAlias,
    cast,
)

from lsiorm._model.entity import (
    json_default,
)
from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    from lsiorm._query.plan import PlannedRequest

    pass


CursorState: TypeAlias = Literal["done"] | dict[str, Any] | None
"""Where one request stands: not started, finished, or the key to start after."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=json_default)


@dataclass(frozen=True)
class _Shape:
    """A plan's table, index, direction and requests: what its cursors must match.

    The fingerprint is computed on first use: most plans never make or read a cursor.
    """

    table: str
    index: str | None
    forward: bool
    requests: tuple[PlannedRequest, ...]

    @cached_property
    def fingerprint(self) -> str:
        shape = [
            self.table,
            self.index,
            self.forward,
            [{k: v for k, v in r.params.items() if k != "Limit"} for r in self.requests],
        ]
        return hashlib.sha256(_canonical(shape).encode()).hexdigest()[:24]


def encode_cursor(fingerprint: str, states: Sequence[CursorState]) -> str:
    """Return the opaque cursor of a position in a plan's requests."""
    body = _canonical({"v": 1, "f": fingerprint, "s": [_key_out(s) for s in states]})
    return base64.urlsafe_b64encode(body.encode()).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, fingerprint: str, size: int) -> list[CursorState]:
    """Return the per-request positions of a cursor made by a plan with this fingerprint."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        ok = isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("s"), list)
    except (ValueError, UnicodeError, binascii.Error):
        ok = False
    if not ok:
        raise ValidationError("cursor.malformed", "This cursor was not made by lsiorm.")
    if data.get("f") != fingerprint or len(data["s"]) != size:
        raise ValidationError(
            "cursor.mismatch",
            "This cursor belongs to another query: its table, index, conditions or order "
            "differ from this one's.",
        )
    return [_key_in(s) for s in data["s"]]


def _key_out(state: CursorState) -> Any:
    if state is None or state == "done":
        return state
    assert isinstance(state, dict)
    return {
        k: ({"B64": base64.b64encode(v["B"]).decode()} if "B" in v else v) for k, v in state.items()
    }


def _key_in(state: Any) -> CursorState:
    if state is None or state == "done":
        return cast("CursorState", state)
    if not isinstance(state, dict):
        raise ValidationError("cursor.malformed", "This cursor was not made by lsiorm.")
    return {
        k: ({"B": base64.b64decode(v["B64"])} if isinstance(v, dict) and "B64" in v else v)
        for k, v in state.items()
    }
