"""The KMS and S3 clients of a session with a keyring, built on first use.

Protected fields need KMS (data keys) and S3 (offloaded values). Their clients are boto3's,
built once per session from the keyring's endpoints and region (else the session's region, then
botocore's configuration and environment: ``AWS_ENDPOINT_URL_KMS``, ``AWS_ENDPOINT_URL_S3``),
with botocore's own retries off as for DynamoDB (lsiorm's retry policy decides). The async
driver sends their requests from a worker thread (see `lsiorm._io.drivers`).
"""

from __future__ import annotations

import threading
from typing import Any

from lsiorm._model.keyring import Keyring
from lsiorm.errors import ConfigurationError

__all__ = ["ServiceClients"]


class ServiceClients:
    """Builds and keeps the KMS and S3 clients of one session (thread-safe)."""

    def __init__(
        self,
        keyring: Keyring,
        *,
        region_name: str | None = None,
        profile_name: str | None = None,
        factory: Any = None,
    ) -> None:
        self.keyring = keyring
        self.region_name = keyring.region_name or region_name
        self.profile_name = profile_name
        self._factory = factory
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, service: str) -> Any:
        with self._lock:
            client = self._clients.get(service)
            if client is None:
                client = self._clients[service] = self._build(service)
            return client

    def _build(self, service: str) -> Any:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        endpoints = {"kms": self.keyring.kms_endpoint_url, "s3": self.keyring.s3_endpoint_url}
        if service not in endpoints:
            raise ConfigurationError("config.service", f"lsiorm sends nothing to {service!r}.")
        kwargs: dict[str, Any] = {"config": Config(retries={"total_max_attempts": 1})}
        if endpoints[service] is not None:
            kwargs["endpoint_url"] = endpoints[service]
        if self.region_name is not None:
            kwargs["region_name"] = self.region_name
        factory = self._factory or boto3.session.Session(profile_name=self.profile_name)
        try:
            return factory.client(service, **kwargs)
        except (BotoCoreError, ValueError) as exc:
            raise ConfigurationError(
                "config.client", f"Cannot build the {service} client: {exc}"
            ) from exc

    def close(self) -> None:
        """Close the clients built so far."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            close = getattr(client, "close", None)
            if close is not None:
                close()
