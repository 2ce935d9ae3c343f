"""The lean lane's direct send: a signed request handed to botocore's own urllib3 pool.

botocore's ``URLLib3Session.send`` wraps each request in objects the lean lane does not need:
it looks the pool up again (a URL parse, a pool key, a lock), sets its TLS checks again, builds
a ``Retry``, wraps the answer in an ``AWSResponse`` with a case-insensitive header dict, and
``convert_to_response_dict`` copies it once more. The direct send keeps what reaches the wire
and drops the rest:

* the pool is the one the client's HTTP session would use for the endpoint (taken from the
  session's own ``PoolManager``, its TLS checks set by the session's own helper), so
  ``max_pool_connections``, the connect and read timeouts, ``verify`` and ``client_cert`` of
  your ``Config`` apply exactly as on botocore's send. Before each request the manager is
  asked, by the pool's key, whether it still holds that pool (which marks it recently used,
  as botocore's lookup does); once it does not (the session was closed, or the manager let
  the pool go for others), the pool is taken from the manager again, as botocore takes it;
* ``urlopen`` gets what botocore passes it: the request target, the same body bytes and
  headers (``Content-Length`` included), urllib3's retries off (``Retry(False)``), no decoding
  of the content encoding (lsiorm's integrity check decodes it), the body read through
  ``stream()`` as botocore reads it, which gives the connection back to the pool;
* every failure is raised as botocore's send raises it: the same botocore exception classes,
  chosen by the same urllib3 and socket exceptions (`botocore_error`).

The direct send is not used (botocore's send is) when the client's HTTP session is not
botocore's ``URLLib3Session`` itself or its ``send`` was replaced (checked on every request),
when it sends this endpoint through a proxy (``Config(proxies=...)``, or ``HTTP_PROXY`` /
``HTTPS_PROXY`` in the environment when the client was made: botocore reads them then), when
``BOTO_EXPERIMENTAL__ADD_PROXY_HOST_HEADER`` is set (checked on every request), or when
``LSIORM_DIRECT_SEND=0`` was set when the session was made.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from concurrent.futures import CancelledError
from typing import Any, Final

__all__ = ["DISABLE_ENV", "DirectSend", "botocore_error", "direct_send_for"]

#: Set to ``0``, ``false``, ``no`` or ``off`` to send every lean request through botocore's
#: ``URLLib3Session.send``.
DISABLE_ENV: Final = "LSIORM_DIRECT_SEND"
_OFF_VALUES: Final = frozenset({"0", "false", "no", "off"})
#: botocore reads it on every send and then changes the pool's headers: left to botocore.
_PROXY_HOST_ENV: Final = "BOTO_EXPERIMENTAL__ADD_PROXY_HOST_HEADER"
_SEND_NAME: Final = ("botocore.httpsession", "URLLib3Session.send")
_STREAM_CHUNK: Final = 2**16  # urllib3's default for stream(), which botocore uses


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in _OFF_VALUES


def _request_target(url: str) -> str:
    # botocore's URLLib3Session._path_url: the path (or "/") and the query, if any.
    from urllib.parse import urlparse

    parsed = urlparse(url)
    path = parsed.path or "/"
    return f"{path}?{parsed.query}" if parsed.query else path


class DirectSend:
    """Sends signed lean-lane requests on the pool of one botocore HTTP session."""

    def __init__(self, http: Any, url: str) -> None:
        from urllib3.util.retry import Retry

        self._http = http
        self._url = url
        self._target = _request_target(url)
        self._send = type(http).send
        self._no_retries = Retry(False)
        self._manager: Any = None
        self._key: Any = None
        self._pool: Any = None
        self._fresh_pool()

    def _fresh_pool(self) -> Any:
        """The session's pool for the endpoint, as its send takes it, TLS checks set."""
        http = self._http
        manager = http._manager
        pool = manager.connection_from_url(self._url)
        http._setup_ssl_cert(pool, self._url, http._verify)
        if manager is not self._manager:
            self._key = _pool_key(manager, self._url)
        self._manager, self._pool = manager, pool
        return pool

    def _current_pool(self) -> Any:
        """The pool botocore's send would take now: the one held, while the manager holds it."""
        manager = self._http._manager
        if manager is self._manager and manager.pools.get(self._key) is self._pool:
            return self._pool
        return self._fresh_pool()

    def usable(self) -> bool:
        """True while botocore's send would do nothing the direct send does not (see module)."""
        http = self._http
        return (
            type(http).send is self._send
            and "send" not in http.__dict__
            and _PROXY_HOST_ENV not in os.environ
        )

    def send(
        self,
        headers: Mapping[str, str],
        body: bytes,
        operation: str,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send a signed POST; return botocore's response dict for it (lower-case headers).

        ``timeout`` (seconds), when given, bounds the connect and the read where it is shorter
        than the pool's own timeouts (a call's ``timeout=``). Raises what botocore's
        ``URLLib3Session.send`` raises for the same failure.
        """
        pool = self._current_pool()
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = _shorter(pool.timeout, timeout)
        try:
            answer = pool.urlopen(
                method="POST",
                url=self._target,
                body=body,
                headers=headers,
                retries=self._no_retries,
                assert_same_host=False,
                preload_content=False,
                decode_content=False,
                chunked=False,
                **extra,
            )
            content = b"".join(answer.stream(_STREAM_CHUNK))
        except CancelledError:
            raise
        except Exception as exc:
            raise botocore_error(exc, self._url, headers, body) from exc
        found = answer.headers  # one value per name, repeated ones joined (as botocore's dict)
        return {
            "headers": {name.lower(): found[name] for name in found},
            "status_code": answer.status,
            "context": {"operation_name": operation},
            "body": content,
        }


def _shorter(configured: Any, seconds: float) -> Any:
    """The pool's urllib3 ``Timeout`` with its connect and read bounded by ``seconds``."""
    from urllib3.util.timeout import Timeout

    def bound(value: Any) -> float:
        return seconds if not isinstance(value, (int, float)) else min(float(value), seconds)

    connect = getattr(configured, "connect_timeout", None)
    read = getattr(configured, "read_timeout", None)
    return Timeout(connect=bound(connect), read=bound(read))


def _pool_key(manager: Any, url: str) -> Any:
    """The key ``manager`` keeps the pool for ``url`` under, worked out as urllib3 does.

    Should a urllib3 work it out otherwise, the key finds nothing and every request takes its
    pool from the manager by the URL (as botocore does): slower, never another pool.
    """
    from urllib3.connection import port_by_scheme
    from urllib3.util import parse_url

    parts = parse_url(url)
    scheme = (parts.scheme or "http").lower()
    context = dict(manager.connection_pool_kw)
    context.update(
        scheme=scheme, host=parts.host, port=parts.port or port_by_scheme.get(scheme, 80)
    )
    make_key = manager.key_fn_by_scheme.get(scheme)
    return make_key(context) if make_key is not None else None


def botocore_error(
    exc: BaseException, url: str, headers: Mapping[str, str], body: bytes
) -> Exception:
    """The exception botocore's ``URLLib3Session.send`` raises for ``exc``, sending to ``url``.

    The same classes, chosen in the same order: urllib3's SSL errors, connection errors (a
    refused connection, a name that does not resolve), proxy errors, connect and read timeouts,
    protocol errors (a connection closed before a whole answer came), then anything else as an
    ``HTTPClientError``.
    """
    from botocore import exceptions as bx
    from urllib3 import exceptions as ux

    error: Exception
    if isinstance(exc, ux.SSLError):
        error = bx.SSLError(endpoint_url=url, error=exc)
    elif isinstance(exc, (ux.NewConnectionError, socket.gaierror)):
        error = bx.EndpointConnectionError(endpoint_url=url, error=exc)
    elif isinstance(exc, ux.ProxyError):
        error = bx.ProxyConnectionError(proxy_url=None, error=exc)  # no proxy is in use
    elif isinstance(exc, ux.ConnectTimeoutError):
        error = bx.ConnectTimeoutError(endpoint_url=url, error=exc)
    elif isinstance(exc, ux.ReadTimeoutError):
        error = bx.ReadTimeoutError(endpoint_url=url, error=exc)
    elif isinstance(exc, ux.ProtocolError):
        from botocore.awsrequest import AWSPreparedRequest

        request = AWSPreparedRequest("POST", url, dict(headers), body, stream_output=False)
        error = bx.ConnectionClosedError(error=exc, request=request, endpoint_url=url)
    else:
        logging.getLogger("botocore.httpsession").debug(
            "Exception received when sending urllib3 HTTP request", exc_info=True
        )
        error = bx.HTTPClientError(error=exc)
    return error


def direct_send_for(http: Any, url: str) -> DirectSend | None:
    """The direct send for a botocore HTTP session and endpoint, or None to keep its send."""
    if _disabled():
        return None
    try:
        from botocore.httpsession import URLLib3Session

        if type(http) is not URLLib3Session or "send" in http.__dict__:
            return None
        send = type(http).send
        if (getattr(send, "__module__", None), getattr(send, "__qualname__", None)) != _SEND_NAME:
            return None  # botocore's send is patched: whatever it does stays
        if http._proxy_config.proxy_url_for(url):
            return None  # a proxy for this endpoint: botocore's proxy managers send it
        direct = DirectSend(http, url)
    except (AttributeError, ImportError, TypeError, ValueError):  # a botocore unlike this one
        return None
    return direct if hasattr(direct._pool, "urlopen") else None
