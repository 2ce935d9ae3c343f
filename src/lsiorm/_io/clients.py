"""How a session's botocore clients are built: with botocore's retries left to lsiorm's policy,
botocore's configuration errors typed, lsiorm's handlers installed, a DynamoDB Streams client
beside a DynamoDB one, and what a session keeps (`ClientBuild`) to build clients like its own
for another region or endpoint (`Session.using`).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from typing import Any

from lsiorm._io import environment, fastjson, integrity
from lsiorm._io.lazy_client import LazyClient
from lsiorm.errors import ConfigurationError

__all__ = [
    "CLIENTLESS_ENV",
    "ClientBuild",
    "DeferredSession",
    "build_client",
    "client_error",
    "client_kwargs",
    "clientless",
    "given",
    "install_handlers",
    "one_attempt",
    "streams_beside",
    "streams_like",
]

#: Set to ``0``, ``false``, ``no`` or ``off`` to build a session's botocore client when it is
#: made, as before the clientless lane (see `clientless`).
CLIENTLESS_ENV = "LSIORM_CLIENTLESS"
_OFF_VALUES = frozenset({"0", "false", "no", "off"})


def client_error(exc: Exception) -> ConfigurationError:
    """Return the typed error for a botocore failure while building a client."""
    from botocore.exceptions import NoRegionError

    if isinstance(exc, NoRegionError):
        return ConfigurationError(
            "config.no-region",
            "No AWS region is configured: pass region_name=..., or set AWS_DEFAULT_REGION.",
        )
    return ConfigurationError("config.client", f"Cannot build the DynamoDB client: {exc}")


def build_client(factory: Any, kwargs: Mapping[str, Any], service: str = "dynamodb") -> Any:
    """Build a botocore client, turning botocore's configuration errors into typed ones."""
    from botocore.exceptions import BotoCoreError

    try:
        return factory(service, **kwargs)
    except (BotoCoreError, ValueError) as exc:
        raise client_error(exc) from exc


def given(client: Any) -> Any:
    """The client a session was given (a streams client passed in, built by no one)."""
    return client


def streams_beside(factory: Any, kwargs: Mapping[str, Any], dynamodb: Any) -> Any:
    """The DynamoDB Streams client built with ``kwargs`` like the DynamoDB client ``dynamodb``,
    on its endpoint where that is a local engine's (see `environment.streams_endpoint`)."""
    if "endpoint_url" not in kwargs:
        endpoint = environment.streams_endpoint(dynamodb.meta.endpoint_url)
        if endpoint is not None:
            kwargs = {**kwargs, "endpoint_url": endpoint}
    return build_client(factory, kwargs, "dynamodbstreams")


def streams_like(client: Any) -> Any:
    """A DynamoDB Streams client for the endpoint and region of a boto3 DynamoDB client
    (credentials from boto3's default chain; pass ``streams_client=`` for others)."""
    import boto3

    kwargs = {"region_name": client.meta.region_name}
    return streams_beside(boto3.session.Session().client, kwargs, client)


def install_handlers(client: Any, fast_json: bool) -> None:
    """Give a botocore DynamoDB client lsiorm's answer checks, and the fast path when asked.

    Anything else (a test double) is left alone.
    """
    meta = getattr(client, "meta", None)
    service = getattr(meta, "service_model", None)
    if getattr(service, "service_name", None) == "dynamodb" and hasattr(meta, "events"):
        integrity.install(client)
        if fast_json:
            fastjson.install(client)


def one_attempt(given: Any) -> Any:
    """Return the client Config: the caller's, with botocore making one attempt per call.

    lsiorm's retry policy must be the only retry loop: botocore retrying inside an attempt
    could apply an ADD twice. The rest of the caller's ``retries`` is kept (``mode``: adaptive
    keeps its client-side rate limiter); asking botocore for more attempts is refused.
    """
    from botocore.config import Config

    retries = dict(getattr(given, "retries", None) or {})
    attempts = retries.pop("total_max_attempts", None)
    more = retries.pop("max_attempts", None)
    if attempts is None and more is not None:
        attempts = more + 1
    if attempts not in (None, 1):
        raise ConfigurationError(
            "config.botocore-retries",
            f"The client config asks botocore for {attempts} attempts per request; lsiorm "
            "retries requests itself (an ADD must not be sent twice by a retry it does not "
            "see). Set the attempts with Session(retry=RetryPolicy(max_attempts=...)), and "
            "leave them out of Config(retries=...) (its mode is kept).",
        )
    ours = Config(retries={**retries, "total_max_attempts": 1})
    return given.merge(ours) if given is not None else ours


def client_kwargs(
    endpoint_url: str | None, region_name: str | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(extra)
    kwargs["config"] = one_attempt(kwargs.get("config"))
    if endpoint_url is None and "endpoint_url" not in kwargs:
        endpoint_url = environment.endpoint_alias()
    if endpoint_url is not None:
        from lsiorm._io.aws_resolution import check_endpoint_url

        check_endpoint_url(endpoint_url)
        kwargs["endpoint_url"] = endpoint_url
    if region_name is not None:
        kwargs["region_name"] = region_name
    return kwargs


@dataclasses.dataclass(frozen=True)
class ClientBuild:
    """How a session built its client: what `using` builds another with."""

    factory: Any
    kwargs: dict[str, Any]
    fast_json: bool
    lean: bool

    def factory_or_default(self) -> Any:
        """The boto3 (or aioboto3) session that built the client, or a new default one."""
        if self.factory is not None:
            return self.factory
        import boto3

        return boto3.session.Session()

    def kwargs_for(
        self, client: Any, region_name: str | None, endpoint_url: str | None
    ) -> dict[str, Any]:
        """The client keywords for another region or endpoint, like the session's own (for a
        client passed in: its region and config, botocore's retries left to lsiorm)."""
        if self.factory is not None:
            kwargs = dict(self.kwargs)
        else:
            meta = getattr(client, "meta", None)
            kwargs = {"config": one_attempt(_without_attempts(getattr(meta, "config", None)))}
            region = getattr(meta, "region_name", None)
            if region:
                kwargs["region_name"] = region
        if region_name is not None:
            kwargs["region_name"] = region_name
        if endpoint_url is not None:
            kwargs["endpoint_url"] = endpoint_url
        return kwargs


def _without_attempts(config: Any) -> Any:
    """A client's config with its botocore attempts left out (its retry mode kept): a client
    passed to a session keeps its own retries, one built like it has lsiorm's alone."""
    if config is None or not getattr(config, "retries", None):
        return config
    import copy

    plain = copy.copy(config)
    plain.retries = {k: v for k, v in config.retries.items() if k == "mode"}
    return plain


class DeferredSession:
    """A default boto3 session, made the first time a client is built with it (a session that
    starts on the clientless lane imports neither boto3 nor botocore's client until then)."""

    def __init__(self) -> None:
        self._session: Any = None
        self._lock = threading.Lock()

    def session(self) -> Any:
        """The boto3 session (made now if it was not yet)."""
        with self._lock:
            if self._session is None:
                import boto3

                self._session = boto3.session.Session()
        return self._session

    def client(self, *args: Any, **kwargs: Any) -> Any:
        """``boto3.session.Session().client``, on the one session."""
        return self.session().client(*args, **kwargs)


def clientless(
    kwargs: Mapping[str, Any], fast_json: bool, env: Mapping[str, str] | None = None
) -> tuple[DeferredSession, LazyClient, Any] | None:
    """A session's client, not built yet, and the clientless lane that sends until it is; None
    when the client must be built now (the lane is for sessions made from parameters only: see
    `lsiorm._io.clientless_lane`; `CLIENTLESS_ENV` or ``LSIORM_LEAN=0`` turn it off).

    ``kwargs`` are the client's keywords from `client_kwargs` (nothing but the endpoint, the
    region and lsiorm's own retry config: the caller checks).
    """
    environ = os.environ if env is None else env
    if environ.get(CLIENTLESS_ENV, "").strip().lower() in _OFF_VALUES:
        return None
    from lsiorm._io import aws_resolution
    from lsiorm._io.lean import DISABLE_ENV

    if environ.get(DISABLE_ENV, "").strip().lower() in _OFF_VALUES:
        return None
    resolved = aws_resolution.resolve(
        environ, region_name=kwargs.get("region_name"), endpoint_url=kwargs.get("endpoint_url")
    )
    if isinstance(resolved, aws_resolution.Fallback):
        return None
    from lsiorm._io.clientless_lane import ClientlessLane

    factory = DeferredSession()

    def build() -> Any:
        # The client signs with the very credentials the lane resolved (botocore's own
        # object, which botocore would resolve alike): one refresh schedule for both.
        factory.session()._session._credentials = resolved.credentials
        client = build_client(factory.client, kwargs)
        install_handlers(client, fast_json)
        return client

    lazy = LazyClient(build, resolved.region, resolved.endpoint_url)
    return factory, lazy, ClientlessLane(lazy, resolved, fast_json=fast_json)
