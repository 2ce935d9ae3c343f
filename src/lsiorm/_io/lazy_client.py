"""A session's botocore client, built the first time something needs it.

A session whose requests can all take the clientless lane (`lsiorm._io.clientless_lane`) does
not build its botocore client when it is made: its driver holds a `LazyClient`, which builds
the client (the same way the session always built it) on the first attribute asked of it: a
request the lane leaves to botocore, ``session.client``, a DynamoDB Streams client built beside
it. From then on everything goes through that client, as in a session that built it at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LazyClient", "real_client"]


class LazyClient:
    """Builds a botocore client with ``build`` on first use and then stands for it.

    ``region_name`` and ``endpoint_url`` are what the client will have (the clientless
    resolution found them); asking for them does not build it.
    """

    def __init__(self, build: Callable[[], Any], region_name: str, endpoint_url: str) -> None:
        self._build = build
        self._client: Any = None
        self._lock = threading.Lock()
        self.region_name = region_name
        self.endpoint_url = endpoint_url
        #: Called by `close` while the client was never built (the lane's HTTP pool).
        self.on_close: list[Callable[[], object]] = []

    def built(self) -> Any:
        """The botocore client, built now if it was not yet."""
        client = self._client
        if client is None:
            with self._lock:
                client = self._client
                if client is None:
                    client = self._client = self._build()
        return client

    def built_or_none(self) -> Any:
        """The botocore client if it was built, else None (never builds it)."""
        return self._client

    def close(self) -> None:
        """Close the client if it was built, and what the lane held."""
        client = self._client
        if client is not None:
            client.close()
        closers, self.on_close = self.on_close, []
        for close in closers:
            close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_build", "_client", "_lock"):
            raise AttributeError(name)
        return getattr(self.built(), name)


def real_client(client: Any) -> Any:
    """The botocore client ``client`` stands for (built now for a `LazyClient`)."""
    return client.built() if isinstance(client, LazyClient) else client
