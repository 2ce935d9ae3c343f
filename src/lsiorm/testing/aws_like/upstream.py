"""The upstream engine (DynamoDB Local or a moto server) as the AWS-like engine talks to it.

Callers' requests are forwarded with their own headers, over kept connections
(`KeptConnections`). The engine's own requests (reading a
stream, an item's image, a table's description, writing a shadow table) carry the signing
headers of the last caller, so that an engine which keeps tables per region and account (moto)
finds the caller's tables; before any caller, headers for the environment's region. Neither
DynamoDB Local nor moto checks signatures, so the engine never signs anything itself.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from lsiorm.testing.aws_like.protocol import DYNAMODB_TARGET, STREAMS_TARGET
from lsiorm.testing.loopback import KeptConnections

__all__ = ["Upstream", "UpstreamError"]

#: Headers a forwarded request does not take over from the caller's.
DROPPED_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding"})
#: The caller's headers the engine's own requests reuse.
_SIGNING = ("authorization", "x-amz-date", "x-amz-security-token", "user-agent")


class UpstreamError(Exception):
    """The upstream engine refused one of the engine's own requests."""

    def __init__(self, operation: str, status: int, answer: Mapping[str, Any]) -> None:
        self.operation = operation
        self.status = status
        self.answer = dict(answer)
        self.code = str(answer.get("__type", "")).rpartition("#")[2]
        super().__init__(f"the upstream engine answered {operation} with {status}: {answer}")


def _default_headers() -> dict[str, str]:
    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    key = os.environ.get("AWS_ACCESS_KEY_ID") or "testing"
    return {
        "Authorization": (
            f"AWS4-HMAC-SHA256 Credential={key}/20250101/{region}/dynamodb/aws4_request, "
            f"SignedHeaders=host;x-amz-date;x-amz-target, Signature={'0' * 64}"
        ),
        "X-Amz-Date": "20250101T000000Z",
    }


class Upstream:
    """Send requests to the upstream engine at ``url`` (over `KeptConnections`)."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.timeout = timeout
        #: The upstream engine's ``Server`` header, once an answer has been seen.
        self.server = ""
        self._signing = _default_headers()
        self._lock = threading.Lock()
        self._connections = KeptConnections(self.host, self.port, timeout)

    @property
    def is_moto(self) -> bool:
        """Whether the upstream engine is a moto server (it names werkzeug as its server)."""
        if not self.server:
            self.send("GET", {}, b"")
        return "werkzeug" in self.server.lower()

    def remember(self, headers: Mapping[str, str]) -> None:
        """Keep the signing headers of a caller's request for the engine's own requests."""
        kept = {k: v for k, v in headers.items() if k.lower() in _SIGNING}
        if any(k.lower() == "authorization" for k in kept):
            with self._lock:
                self._signing = kept

    def send(self, method: str, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Send one HTTP request; return the status and body of the answer."""
        out = {k: v for k, v in headers.items() if k.lower() not in DROPPED_HEADERS}
        status, payload, server = self._connections.send(method, out, body)
        if not self.server:
            self.server = server or "unknown"
        return status, payload

    def open(self) -> None:
        """Keep idle connections again (after `close`)."""
        self._connections.open()

    def close(self) -> None:
        """Close the idle connections (see `KeptConnections.close`)."""
        self._connections.close()

    def forward(self, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Forward a caller's request as it came."""
        return self.send("POST", headers, body)

    def call(self, operation: str, params: Mapping[str, Any], *, streams: bool = False) -> Any:
        """One request of the engine's own; its answer, or `UpstreamError`."""
        with self._lock:
            headers = dict(self._signing)
        headers["X-Amz-Target"] = (STREAMS_TARGET if streams else DYNAMODB_TARGET) + operation
        headers["Content-Type"] = "application/x-amz-json-1.0"
        status, payload = self.send("POST", headers, json.dumps(params).encode())
        answer = json.loads(payload) if payload else {}
        if status != 200:
            raise UpstreamError(operation, status, answer)
        return answer
