"""Cursors: opaque, shape-bound positions in a plan's requests, with an integrity check.

A cursor is URL-safe base64 of a small JSON document: the format version, the fingerprint of
the plan's shape (table, index, direction, and every request's parameters but its page size),
the per-request positions, and a keyed SHA-256 digest (HMAC) over all of that. Decoding
checks the digest first, so an edited, truncated or foreign cursor is refused with a
`CursorError` before any request is sent, then the fingerprint, then the
form of every key value.

The digest's key is the session's (`cursor_key`): the secret it was given (``cursor_secret=``,
or ``LSIORM_CURSOR_SECRET`` in the environment), else a random key of its own, so a cursor
cannot be forged, and is read only by the session that made it. Cursors that cross processes
need the same secret in each of them. A cursor is signed, not encrypted: anyone holding it can
read the key values of the item it resumes after.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, cast

from lsiorm._model.wire import json_default
from lsiorm.errors import CursorError

_VERSION = 2
#: The environment variable that gives every session without a ``cursor_secret`` its secret.
SECRET_ENV = "LSIORM_CURSOR_SECRET"

CursorState: TypeAlias = Literal["done"] | dict[str, Any] | None
"""Where one request stands: not started, finished, or the key to start after."""


def canonical_json(value: Any) -> str:
    """Return the one JSON text of a value: sorted keys, no spaces (digests and comparisons)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=json_default)


def fingerprint(
    table: str, index: str | None, forward: bool, requests: Sequence[Mapping[str, Any]]
) -> str:
    """Return the digest of a plan's request shape: table, index, order, parameters but Limit."""
    shape = [
        table,
        index,
        forward,
        [{k: v for k, v in params.items() if k != "Limit"} for params in requests],
    ]
    return hashlib.sha256(canonical_json(shape).encode()).hexdigest()[:24]


def cursor_key(secret: str | bytes | None = None) -> bytes:
    """Return the key a session signs its cursors with.

    The ``secret`` given, else ``LSIORM_CURSOR_SECRET`` from the environment, else 32 random
    bytes: cursors that only this session reads need no secret at all.
    """
    if secret is None:
        secret = os.environ.get(SECRET_ENV, "")
    if isinstance(secret, str):
        secret = secret.encode()
    return secret or secrets.token_bytes(32)


def digest(body: dict[str, Any], key: bytes) -> str:
    """Return the integrity check of a cursor's body (keyed SHA-256, see the module doc)."""
    return hmac.new(key, canonical_json(body).encode(), hashlib.sha256).hexdigest()[:32]


def encode_cursor(fingerprint: str, states: Sequence[CursorState], key: bytes) -> str:
    """Return the opaque cursor of a position in a plan's requests, signed with ``key``."""
    body: dict[str, Any] = {"v": _VERSION, "f": fingerprint, "s": [_key_out(s) for s in states]}
    body["m"] = digest(body, key)
    return base64.urlsafe_b64encode(canonical_json(body).encode()).decode("ascii").rstrip("=")


def _malformed(why: str) -> CursorError:
    return CursorError("cursor.malformed", f"This cursor was not made by lsiorm: {why}.")


def decode_cursor(cursor: str, fingerprint: str, size: int, key: bytes) -> list[CursorState]:
    """Return the per-request positions of a cursor made by a plan with this fingerprint and
    signed with ``key``."""
    if not isinstance(cursor, str):
        raise _malformed(f"a cursor is a str, not {type(cursor).__name__}")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise _malformed("it is not the base64 JSON of a cursor") from None
    if not isinstance(data, dict) or not isinstance(data.get("m"), str):
        raise _malformed("it has no integrity check (or comes from an older lsiorm)")
    mac = data.pop("m")
    if not hmac.compare_digest(mac, digest(data, key)):
        raise CursorError(
            "cursor.tampered",
            "This cursor fails its integrity check: it was edited, cut short, or signed with "
            "another key. Without a cursor secret, a session reads only its own cursors; give "
            "every session that reads them the same cursor_secret= (or LSIORM_CURSOR_SECRET).",
        )
    if data.get("v") != _VERSION or not isinstance(data.get("s"), list):
        raise _malformed("unknown cursor format")
    if data.get("f") != fingerprint or len(data["s"]) != size:
        raise CursorError(
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


def _value_in(value: Any) -> dict[str, Any]:
    """Return one key AttributeValue of a cursor, checked: exactly one S, N or B64 string."""
    if not isinstance(value, dict) or len(value) != 1:
        raise _malformed(f"a key value is {value!r}, not an AttributeValue")
    ((tag, raw),) = value.items()
    if tag not in ("S", "N", "B64") or not isinstance(raw, str):
        raise _malformed(f"a key value has the unknown type {tag!r}")
    if tag == "N":
        try:
            float(raw)
        except ValueError:
            raise _malformed(f"{raw!r} is not a number") from None
        return {"N": raw}
    if tag == "B64":
        try:
            return {"B": base64.b64decode(raw, validate=True)}
        except (ValueError, binascii.Error):
            raise _malformed("a binary key value is not base64") from None
    return {"S": raw}


def _key_in(state: Any) -> CursorState:
    if state is None or state == "done":
        return cast("CursorState", state)
    if not isinstance(state, dict) or not state:
        raise _malformed("a position is neither a key nor a mark")
    return {str(k): _value_in(v) for k, v in state.items()}
