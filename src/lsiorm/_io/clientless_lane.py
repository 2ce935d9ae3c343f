"""The lean lane before a session has a botocore client: a cold start's first requests.

A session made from parameters (no client, no boto3 session, no profile name, no client
keywords) with the lean lane on resolves its region, endpoint and credentials itself when
`lsiorm._io.aws_resolution` can (the common cases: environment variables, the shared files, the
container credential endpoint, account-based endpoints) and then sends its data-plane requests
without building botocore's client: `ClientlessLane` is `lsiorm._io.lean.LeanLane` with what it
took from a client taken from elsewhere:

* the credentials are botocore's own objects from botocore's own providers (container
  credentials refresh as botocore's do), read for every request, and the endpoint is checked
  against their account id for every request (an account-based endpoint);
* the HTTP pool is a ``botocore.httpsession.URLLib3Session`` made as a client's endpoint makes
  it for a default ``Config`` (timeouts, pool size, TLS verification, the environment's
  proxies), sent to through `lsiorm._io.direct_send` as a client's pool is;
* the service model is read by botocore's loader (the same search path) for the fast JSON path
  and for botocore's own parser, which parses what the fast path does not, error responses
  included, into the ``ClientError`` a client raises.

The botocore client (`lsiorm._io.lazy_client.LazyClient`) is built the first time anything
needs it: a request the lane leaves to botocore (an operation outside the lane's, a table named
by its ARN, parameters orjson cannot write, credentials of another account, moto's mock on, a
wrapped ``BaseClient._make_api_call`` (OpenTelemetry's, X-Ray's, ddtrace's instrumentation)), or
``session.client`` being read. From then on this lane hands every request to the lean lane of
that client (`lean_lane_for`), which judges it as it always has.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from lsiorm._io import direct_send, fastjson
from lsiorm._io.api_call_wrappers import base_client_wrapped
from lsiorm._io.aws_resolution import Resolved
from lsiorm._io.lazy_client import LazyClient
from lsiorm._io.lean import (
    LeanLane,
    ResponseParse,
    SigV4Signer,
    lean_lane_for,
    moto_mock_active,
)

__all__ = ["ClientlessLane"]

_CONNECT_TIMEOUT = 60  # botocore's Config defaults
_READ_TIMEOUT = 60
_POOL_SIZE = 10


def _service_model() -> Any:
    """The DynamoDB service model, from botocore's loader (its search path, its latest API)."""
    from botocore.loaders import Loader
    from botocore.model import ServiceModel

    return ServiceModel(Loader().load_service_model("dynamodb", "service-2"), "dynamodb")


def _http_session(url: str, verify: str | bool) -> Any:
    """The HTTP session a client's endpoint makes for a default ``Config``."""
    from botocore.httpsession import URLLib3Session
    from botocore.utils import get_environ_proxies

    return URLLib3Session(
        timeout=(_CONNECT_TIMEOUT, _READ_TIMEOUT),
        proxies=get_environ_proxies(url),
        verify=verify,
        max_pool_connections=_POOL_SIZE,
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )


class _LaneMethod(Protocol):
    """`LeanLane.send` or `LeanLane.exchange`, called on a lane."""

    __name__: str

    def __call__(
        self,
        lane: LeanLane,
        operation: str,
        params: Mapping[str, Any],
        /,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any] | None: ...


def _table_names(operation: str, params: Mapping[str, Any]) -> list[str]:
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [str(name) for name in params.get("RequestItems") or {}]
    name = params.get("TableName")
    return [str(name)] if name is not None else []


class ClientlessLane(LeanLane):
    """Sends a session's data-plane requests with resolved settings, before any client exists."""

    def __init__(
        self,
        lazy: LazyClient,
        resolved: Resolved,
        *,
        fast_json: bool,
        direct: bool = True,
    ) -> None:
        from botocore.awsrequest import AWSPreparedRequest
        from botocore.endpoint import convert_to_response_dict
        from botocore.parsers import create_parser
        from botocore.useragent import UserAgentString

        self.client = lazy
        self.lazy = lazy
        self.resolved = resolved
        self._url = resolved.endpoint_url
        self._region = resolved.region
        self._signing_name = "dynamodb"
        self._credentials = resolved.credentials
        self._http = _http_session(self._url, resolved.verify)
        lazy.on_close.append(self._http.close)
        self._user_agent = UserAgentString.from_environment().to_string()
        self._service = _service_model()
        self._parser = create_parser("json")
        fast = (
            fastjson.ResponseFastPath(self._service)
            if fast_json and not fastjson.disabled()
            else None
        )
        self._fast = ResponseParse(fast) if fast is not None else None
        self._sigv4 = SigV4Signer(self._url, self._region, self._signing_name)
        self._request = AWSPreparedRequest
        self._to_response_dict = convert_to_response_dict
        self.direct = direct_send.direct_send_for(self._http, self._url) if direct else None
        self._counts = [0, 0, 0]  # sent, sent directly, declined: on this lane itself
        self._count = threading.Lock()
        self._handed: tuple[LeanLane | None] | None = None  # the client's lane, once built

    # -- the client's lane, once there is a client ------------------------------------------

    def handed_to(self) -> LeanLane | ClientlessLane | None:
        """This lane while no client was built; then the client's lean lane (None: botocore)."""
        if self.lazy.built_or_none() is None:
            return self
        handed = self._handed
        if handed is None:
            lane = lean_lane_for(self.lazy.built())
            if lane is not None and self.direct is None:
                lane.direct = None  # LSIORM_DIRECT_SEND=0 when the session was made holds
            handed = self._handed = (lane,)
        return handed[0]

    # -- counts: this lane's and, once handed over, the client's lane's ---------------------

    def _count_of(self, index: int) -> int:
        handed = self._handed[0] if self._handed is not None else None
        return self._counts[index] + (handed._count_of(index) if handed is not None else 0)

    # -- when the lane may be used ----------------------------------------------------------

    def usable(self, operation: str) -> bool:
        lane = self.handed_to()
        if lane is not self:
            return lane is not None and lane.usable(operation)
        return (
            operation in fastjson.OPERATIONS
            and not moto_mock_active()
            and not base_client_wrapped()
        )

    def _body(self, operation: str, params: Mapping[str, Any]) -> bytes | None:
        if any(name.startswith("arn:") for name in _table_names(operation, params)):
            self._decline()  # botocore's rules may route a table ARN to its account's endpoint
            return None
        return super()._body(operation, params)

    def _endpoint_holds(self, credentials: Any) -> bool:
        account_id = getattr(credentials, "account_id", None)
        return bool(self.resolved.endpoint_for(account_id) == self._url)

    # -- sending ----------------------------------------------------------------------------

    def send(
        self, operation: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        return self._through(LeanLane.send, operation, params, timeout)

    def exchange(
        self, operation: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        return self._through(LeanLane.exchange, operation, params, timeout)

    def _through(
        self,
        method: _LaneMethod,
        operation: str,
        params: Mapping[str, Any],
        timeout: float | None,
    ) -> dict[str, Any] | None:
        """``method`` of the lane that sends now: this lane's own (`LeanLane`'s) while no
        client was built, then that of the client's lane (None: botocore sends)."""
        lane = self.handed_to()
        if lane is None:
            return None
        if lane is self:
            return method(self, operation, params, timeout=timeout)
        handed: _LaneMethod = getattr(type(lane), method.__name__)
        return handed(lane, operation, params, timeout=timeout)
