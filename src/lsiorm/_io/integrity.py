"""What a DynamoDB answer must pass before it is parsed, on both request lanes.

* ``x-amz-crc32``: DynamoDB sends the CRC32 of the body it sent. A body that does not match was
  damaged on the way: a transport failure (botocore's ``HTTPClientError``, typed by lsiorm as
  `TransportError`), which lsiorm's retry policy sends again as it does a lost answer.
  botocore itself checks the header only in its legacy retry mode, and only while it has
  attempts left; lsiorm's clients make one attempt, so lsiorm checks it, on the lean lane and
  (through `install`) on botocore's.
* ``Content-Encoding``: a gzip or deflate body (a proxy may compress answers) is decoded before
  it is parsed, and a damaged one is a transport failure too. Any other encoding cannot be
  read: `ConfigurationError` (rule ``transport.content-encoding``), not retried.

The checksum may be of the body as sent or as decoded (a proxy that compresses may keep
DynamoDB's header); either one matching is enough.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from lsiorm.errors import ConfigurationError

__all__ = ["before_parse", "install", "verified_body"]

_EVENT: Final = "before-parse.dynamodb"
_HANDLER_ID: Final = "lsiorm-response-integrity"
_IDENTITY: Final = frozenset({"", "identity"})
# wbits for zlib.decompress: a gzip header, or a zlib (deflate) one.
_WBITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 0}


def _damaged(why: str) -> Exception:
    from botocore.exceptions import HTTPClientError

    error: Exception = HTTPClientError(error=why)
    return error


def _decoded(encoding: str, body: bytes) -> bytes:
    """Return the body with its content encodings undone (applied in order, undone reversed)."""
    for name in reversed([e.strip().lower() for e in encoding.split(",")]):
        if name in _IDENTITY:
            continue
        wbits = _WBITS.get(name)
        if wbits is None:
            raise ConfigurationError(
                "transport.content-encoding",
                f"The answer is encoded as {name!r}, which lsiorm cannot read; a proxy between "
                "you and DynamoDB changes its answers (gzip and deflate are read).",
            )
        try:
            body = zlib.decompress(body, wbits)
        except zlib.error as exc:
            raise _damaged(f"the {name} answer cannot be decoded: {exc}") from exc
    return body


def verified_body(headers: Mapping[str, Any], body: bytes) -> bytes:
    """Return the body to parse: decoded, once its CRC32 matches ``x-amz-crc32`` (when sent).

    ``headers`` are the answer's headers with lower-case names (botocore's response dict).
    Raises botocore's ``HTTPClientError`` for a damaged body.
    """
    encoding = headers.get("content-encoding")
    decoded = body if encoding is None else _decoded(str(encoding), body)
    expected = headers.get("x-amz-crc32")
    if expected is None:
        return decoded
    text = str(expected).strip()
    wanted = int(text) if text.isascii() and text.isdigit() else None
    if wanted is not None and (
        zlib.crc32(body) == wanted or (decoded is not body and zlib.crc32(decoded) == wanted)
    ):
        return decoded
    raise _damaged(f"x-amz-crc32 is {text!r} but the body's CRC32 is {zlib.crc32(body)}")


def before_parse(response_dict: MutableMapping[str, Any] | None = None, **kwargs: Any) -> None:
    """botocore's ``before-parse`` event: verify and decode the body before any parser sees it."""
    if response_dict is None:
        return
    body = response_dict.get("body")
    if type(body) is bytes:
        response_dict["body"] = verified_body(response_dict.get("headers") or {}, body)


def install(client: Any) -> None:
    """Check the answers of a botocore or aiobotocore DynamoDB client (idempotent).

    The handler runs before every other ``before-parse`` handler (the fast JSON path's too).
    """
    client.meta.events.register_first(_EVENT, before_parse, unique_id=_HANDLER_ID)
