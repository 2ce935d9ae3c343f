"""The lean request lane: lsiorm's own data-plane requests sent without botocore's request path.

lsiorm builds and checks every parameter of its data-plane requests itself, so botocore's
parameter validation, its serializer and its event machinery only cost time (about 3 ms for one
25-item BatchWriteItem). The lean lane sends such a request directly:

* the body is ``orjson.dumps`` of the parameters (bytes, the B and BS values, in base64 as
  botocore writes them);
* it is signed with SigV4 as botocore's signer signs it (`SigV4Signer`: the same canonical
  request, headers and signature, checked against botocore's ``SigV4Auth`` by the tests; the
  signing key is kept for the day), with the client's credentials fetched for every request
  (``get_frozen_credentials``, so refreshing credentials refresh as they do in botocore), its
  region and its signing name;
* it goes out through the client's own HTTP session (botocore's urllib3 pool, or
  aiobotocore's aiohttp one: their proxies, timeouts, TLS settings and pool size), to the
  client's endpoint, with its user agent; a sync client's request is handed to that pool
  directly (`lsiorm._io.direct_send`) unless it goes through a proxy or botocore's send was
  replaced;
* the response is checked (HTTP status, ``x-amz-crc32``, its content encoding: see
  `lsiorm._io.integrity`) and parsed by orjson through
  `lsiorm._io.fastjson` (B and BS values base64-decoded), or by botocore's own parser when
  that path declines; an error response is parsed by botocore's parser into the very shape a
  ``ClientError`` carries (with a throttle's reasons read from the body even when botocore's
  model does not know them: `lsiorm._io.fastjson.error_fields`), and raised as one.

Safety comes first. The lane is only used when nothing else can be watching the client's
requests; otherwise the request goes to botocore as before (see `LeanLane.usable`):

* moto's in-process ``mock_aws`` is active (checked on every request);
* the client's ``_make_api_call`` is wrapped (checked on every request): OpenTelemetry's
  botocore instrumentation, the X-Ray SDK and ddtrace trace botocore there, and a test may
  patch it; every such call goes through botocore, so each wrapper sees what it saw before
  (`lsiorm._io.api_call_wrappers`);
* any handler on the client's events that botocore does not install itself: botocore's
  ``Stubber``, a user's ``before-send``, ``before-call``, ``before-parameter-build`` (and so on)
  handlers, moto's handler when its mock is on (checked again whenever a handler is added or
  removed);
* a client whose botocore retries are on (a client passed in as it is) or in adaptive mode
  (its rate limiter runs in botocore's send path), endpoint discovery on, credentials that
  carry an account id or ``account_id_endpoint_mode="required"`` (botocore would pick an
  account-based endpoint, or refuse the request), no credentials (unsigned), or a signature
  other than SigV4;
* an operation outside `OPERATIONS`, or parameters orjson cannot write.

``LSIORM_LEAN=0`` in the environment, or ``Session(lean=False)``, turns the lane off;
``LSIORM_DIRECT_SEND=0`` keeps it on botocore's ``URLLib3Session.send``.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import hashlib
import hmac
import inspect
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from lsiorm._io import direct_send, fastjson, integrity
from lsiorm._io.api_call_wrappers import ApiCallWatch

__all__ = [
    "DISABLE_ENV",
    "OPERATIONS",
    "AsyncLeanLane",
    "LeanLane",
    "SigV4Signer",
    "lean_lane_for",
    "moto_mock_active",
    "with_error_fields",
]

#: The operations the lean lane sends; every other request goes through botocore.
OPERATIONS: Final = fastjson.OPERATIONS

#: Set to ``0``, ``false``, ``no`` or ``off`` to keep every request on botocore's path.
DISABLE_ENV: Final = "LSIORM_LEAN"
_OFF_VALUES: Final = frozenset({"0", "false", "no", "off"})

_TARGET_PREFIX: Final = "DynamoDB_20120810."
_CONTENT_TYPE: Final = "application/x-amz-json-1.0"
#: The events botocore emits on its way from a call to its result; a handler on any of them
#: that botocore did not install itself means someone watches or changes requests.
_WATCHED_EVENTS: Final = (
    "provide-client-params",
    "before-parameter-build",
    "before-endpoint-resolution",
    "before-call",
    "request-created",
    "choose-signer",
    "before-sign",
    "before-send",
    "response-received",
    "needs-retry",
    "after-call",
    "after-call-error",
    "before-parse",
)


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in _OFF_VALUES


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return binascii.b2a_base64(bytes(value), newline=False).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not written by the lean lane")


def moto_mock_active() -> bool:
    """True while moto's in-process ``mock_aws`` is on (it answers botocore's requests)."""
    models = sys.modules.get("moto.core.models")
    stubber = getattr(models, "botocore_stubber", None) if models is not None else None
    return bool(getattr(stubber, "enabled", False))


def _handler_name(handler: Any) -> str:
    func = getattr(handler, "__func__", handler)
    module = getattr(func, "__module__", None) or type(handler).__module__
    name = getattr(func, "__qualname__", None) or type(handler).__qualname__
    return f"{module}.{name}"


_BASELINES: dict[str, frozenset[str]] = {}
_BASELINE_LOCK = threading.Lock()
_MOTO_STUBBER: Final = "moto.core.botocore_stubber.BotocoreStubber"


def _retry_mode(client: Any) -> str:
    retries = getattr(client.meta.config, "retries", None) or {}
    return str(retries.get("mode") or "legacy")


def _baseline(client: Any) -> frozenset[str]:
    """The handlers botocore itself installs on a DynamoDB client of ``client``'s retry mode.

    Worked out once per retry mode, from a fresh client built with the data loader of
    ``client`` (the service model and endpoint data it has read already are not read again).
    """
    mode = _retry_mode(client)
    with _BASELINE_LOCK:
        known = _BASELINES.get(mode)
        if known is None:
            import botocore.session
            from botocore import UNSIGNED
            from botocore.config import Config

            session = botocore.session.Session()
            loader = getattr(client, "_loader", None)
            if loader is not None:
                session.register_component("data_loader", loader)
            fresh = session.create_client(
                "dynamodb",
                region_name="us-east-1",
                endpoint_url="http://127.0.0.1:9",
                config=Config(signature_version=UNSIGNED, retries={"mode": mode}),
            )
            trie = fresh.meta.events._emitter._handlers
            names = {
                _handler_name(handler)
                for event in _WATCHED_EVENTS
                for handler in trie.prefix_search(f"{event}.dynamodb.PutItem")
            }
            fresh.close()
            names.discard(_MOTO_STUBBER)  # judged on every request: safe only while it is off
            names.add(_handler_name(fastjson.ResponseFastPath.before_parse))
            names.add(_handler_name(integrity.before_parse))
            known = _BASELINES[mode] = frozenset(names)
        return known


class SigV4Signer:
    """SigV4 signing of the lean lane's POST requests, exactly as botocore's ``SigV4Auth``.

    The canonical path, query string and host come from the endpoint URL once (worked out by
    botocore's own helpers); per request only the date, the target, the optional session token
    and the body's SHA-256 change. The signing key is derived once per secret key and day.
    """

    def __init__(self, url: str, region: str, service: str) -> None:
        from urllib.parse import urlsplit

        from botocore.auth import SigV4Auth, _host_from_url

        helper = SigV4Auth(None, service, region)
        parts = urlsplit(url)
        path = helper._normalize_url_path(parts.path)
        query = helper._canonical_query_string_url(parts)
        self._prefix = f"POST\n{path}\n{query}\n"
        self._host = _host_from_url(url)
        self._region = region
        self._service = service
        self._key: tuple[str, str, bytes] | None = None  # (secret key, day, signing key)

    def _signing_key(self, secret: str, day: str) -> bytes:
        cached = self._key
        if cached is not None and cached[0] == secret and cached[1] == day:
            return cached[2]
        key = f"AWS4{secret}".encode()
        for part in (day, self._region, self._service, "aws4_request"):
            key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
        self._key = (secret, day, key)
        return key

    def sign(
        self, headers: dict[str, str], body: bytes, credentials: Any, now: _dt.datetime
    ) -> None:
        """Add X-Amz-Date, the security token (if any) and Authorization to ``headers``.

        ``headers`` holds the request's other headers, all signed but User-Agent and
        X-Amzn-Trace-Id (as botocore leaves them out).
        """
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        headers["X-Amz-Date"] = stamp
        if credentials.token:
            headers["X-Amz-Security-Token"] = credentials.token
        signed = {"host": self._host}
        for name, value in headers.items():
            lower = name.lower()
            if lower not in _UNSIGNED_HEADERS:
                signed[lower] = " ".join(value.split())
        names = sorted(signed)
        signed_names = ";".join(names)
        canonical = "".join(
            (
                self._prefix,
                "\n".join(f"{name}:{signed[name]}" for name in names),
                "\n\n",
                signed_names,
                "\n",
                hashlib.sha256(body).hexdigest(),
            )
        )
        scope = f"{day}/{self._region}/{self._service}/aws4_request"
        to_sign = (
            f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n"
            f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"
        )
        signature = hmac.new(
            self._signing_key(credentials.secret_key, day),
            to_sign.encode("utf-8"),
            hashlib.sha256,
        ).hexdigest()
        headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={signed_names}, Signature={signature}"
        )


#: Headers botocore's SigV4 signer leaves out of the signature.
_UNSIGNED_HEADERS: Final = frozenset(
    {"expect", "transfer-encoding", "user-agent", "x-amzn-trace-id"}
)


def _utc_now() -> _dt.datetime:
    # What botocore's signer reads (botocore.compat.get_current_datetime): naive UTC.
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


class LeanLane:
    """Sends lsiorm's data-plane requests for one botocore DynamoDB client (see the module)."""

    def __init__(self, client: Any, *, direct: bool = True) -> None:
        from botocore.awsrequest import AWSPreparedRequest
        from botocore.endpoint import convert_to_response_dict

        self.client = client
        self._emitter = client.meta.events._emitter
        self._http = client._endpoint.http_session
        self._url = client.meta.endpoint_url
        self._region = client._request_signer._region_name
        self._signing_name = client._request_signer._signing_name
        self._credentials = client._request_signer._credentials
        self._user_agent = client._user_agent_creator.to_string()
        self._service = client.meta.service_model
        self._parser = client._response_parser
        # Bodies are parsed by orjson when the client has the fast JSON path, as botocore's lane
        # would parse them; otherwise by botocore's parser.
        fast = fastjson.fast_path_of(client)
        self._fast = ResponseParse(fast) if fast is not None else None
        self._sigv4 = SigV4Signer(self._url, self._region, self._signing_name)
        self._request = AWSPreparedRequest
        self._to_response_dict = convert_to_response_dict
        self._seen: object = None
        self._verdicts: dict[str, bool] = {}
        self._api_call = ApiCallWatch(client)
        #: The direct send to the client's urllib3 pool (None: botocore's send sends).
        self.direct = direct_send.direct_send_for(self._http, self._url) if direct else None
        #: How many requests took the lane, how many of those the direct send sent, and how
        #: many went to botocore instead (read through `sent`, `sent_direct`, `declined`).
        self._counts = [0, 0, 0]
        self._count = threading.Lock()  # requests may come from several threads

    # -- when the lane may be used ----------------------------------------------------------

    def usable(self, operation: str) -> bool:
        """True when ``operation`` may take the lane right now (see the module)."""
        if operation not in OPERATIONS or moto_mock_active() or self._api_call.wrapped():
            return False
        cache = self._emitter._lookup_cache
        if cache is not self._seen:  # a handler was added or removed since the last look
            self._verdicts = {}
            self._seen = cache
        verdict = self._verdicts.get(operation)
        if verdict is None:
            verdict = self._verdicts[operation] = self._only_botocore_handlers(operation)
        return verdict

    def _only_botocore_handlers(self, operation: str) -> bool:
        allowed = _baseline(self.client)
        trie = self._emitter._handlers
        for event in _WATCHED_EVENTS:
            for handler in trie.prefix_search(f"{event}.dynamodb.{operation}"):
                name = _handler_name(handler)
                if name == _MOTO_STUBBER:
                    continue  # its switch is read on every request (moto_mock_active)
                if name.startswith("aiobotocore."):
                    continue  # aiobotocore's own versions of botocore's handlers
                if name not in allowed:
                    return False
        return True

    # -- sending ----------------------------------------------------------------------------

    def send(
        self, operation: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Send one request and return botocore's result for it, or None to use botocore.

        Raises ``botocore.exceptions.ClientError`` for an error response (with the response
        shape botocore gives) and botocore's connection errors, as the client would.
        ``timeout`` (seconds) bounds the direct send's wait for the answer, when shorter than
        the client's own timeouts.
        """
        response = self.exchange(operation, params, timeout=timeout)
        if response is None:
            return None
        parsed = self._parsed_success(operation, response)
        if parsed is not None:
            return parsed
        operation_model = self._service.operation_model(operation)
        parsed = self._parser.parse(response, operation_model.output_shape)
        if response["status_code"] >= 300:
            error_shape = self._error_shape(parsed)
            if error_shape is not None:
                parsed.update(self._parser.parse(response, error_shape))
            with_error_fields(parsed, response)
        return self._final(operation, response, parsed)

    def exchange(
        self, operation: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Send one request; return botocore's response dict, its body checked, not parsed.

        None when the request must go to botocore instead. Raises botocore's connection errors
        and `TransportError` for a damaged body (see `lsiorm._io.integrity`).
        """
        body = self._body(operation, params)
        if body is None:
            return None
        credentials = self._credentials.get_frozen_credentials()
        if not self._endpoint_holds(credentials):
            self._decline()
            return None
        headers = self._signed_headers(operation, body, credentials)
        direct = self.direct
        response: dict[str, Any]
        if direct is not None and direct.usable():
            response = direct.send(headers, body, operation, timeout=timeout)
            self._count_sent(direct=True)
        else:
            http_response = self._http.send(
                self._request("POST", self._url, headers, body, stream_output=False)
            )
            self._count_sent()
            operation_model = self._service.operation_model(operation)
            response = self._to_response_dict(http_response, operation_model)
        response["body"] = integrity.verified_body(response["headers"], response["body"])
        return response

    def _endpoint_holds(self, credentials: Any) -> bool:
        """Whether botocore would send with ``credentials`` to the lane's endpoint: not for
        credentials that carry an account id (botocore picks an account-based endpoint)."""
        return not getattr(credentials, "account_id", None)

    # -- counts -----------------------------------------------------------------------------

    @property
    def sent(self) -> int:
        """Requests sent on the lean lane."""
        return self._count_of(0)

    @property
    def sent_direct(self) -> int:
        """Of those, the ones the direct send sent."""
        return self._count_of(1)

    @property
    def declined(self) -> int:
        """Requests left to botocore."""
        return self._count_of(2)

    def _count_of(self, index: int) -> int:
        return self._counts[index]

    def _count_sent(self, *, direct: bool = False) -> None:
        with self._count:
            self._counts[0] += 1
            self._counts[1] += direct

    def _decline(self) -> None:
        with self._count:
            self._counts[2] += 1

    def _body(self, operation: str, params: Mapping[str, Any]) -> bytes | None:
        if not self.usable(operation):
            self._decline()
            return None
        try:
            return orjson.dumps(params, default=_default)
        except TypeError:
            self._decline()
            return None

    def _signed(self, operation: str, body: bytes, credentials: Any) -> Any:
        headers = self._signed_headers(operation, body, credentials)
        return self._request("POST", self._url, headers, body, stream_output=False)

    def _signed_headers(self, operation: str, body: bytes, credentials: Any) -> dict[str, str]:
        headers = {
            "X-Amz-Target": _TARGET_PREFIX + operation,
            "Content-Type": _CONTENT_TYPE,
            "User-Agent": self._user_agent,
        }
        trace = _trace_id()
        if trace is not None:
            headers["X-Amzn-Trace-Id"] = trace
        self._sigv4.sign(headers, body, credentials, _utc_now())
        # What AWSRequest.prepare() gives for a bytes body: the same headers and Content-Length.
        headers["Content-Length"] = str(len(body))
        return headers

    def _parsed_success(self, operation: str, response: dict[str, Any]) -> dict[str, Any] | None:
        """Parse a 2xx response (its body verified) the fast way; None for the slow way."""
        if response["status_code"] >= 300:
            return None
        parsed = self._fast.parse(operation, response) if self._fast is not None else None
        if parsed is not None:
            parsed["ResponseMetadata"] = _metadata(response)
        return parsed

    def _error_shape(self, parsed: Mapping[str, Any]) -> Any:
        error_code = parsed.get("Error", {}).get("Code")
        return self._service.shape_for_error_code(error_code) if error_code else None

    def _final(
        self, operation: str, response: Mapping[str, Any], parsed: dict[str, Any]
    ) -> dict[str, Any]:
        if response["status_code"] >= 300:
            from botocore.exceptions import ClientError

            raise ClientError(parsed, operation)
        return parsed


class AsyncLeanLane(LeanLane):
    """The lean lane of an aiobotocore client: the same requests, awaited on its aiohttp pool."""

    def __init__(self, client: Any) -> None:
        super().__init__(client, direct=False)  # aiobotocore's aiohttp session sends
        from aiobotocore.endpoint import convert_to_response_dict

        self._to_async_response_dict = convert_to_response_dict

    async def send(  # type: ignore[override]
        self, operation: str, params: Mapping[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Send one request and return aiobotocore's result for it, or None to use it."""
        body = self._body(operation, params)
        if body is None:
            return None
        credentials = self._credentials.get_frozen_credentials()
        if inspect.isawaitable(credentials):
            credentials = await credentials
        if getattr(credentials, "account_id", None):
            self._decline()  # aiobotocore would pick an account-based endpoint
            return None
        http_response = await self._http.send(self._signed(operation, body, credentials))
        self._count_sent()
        operation_model = self._service.operation_model(operation)
        response = await self._to_async_response_dict(http_response, operation_model)
        response["body"] = integrity.verified_body(response["headers"], response["body"])
        parsed = self._parsed_success(operation, response)
        if parsed is not None:
            return parsed
        parsed = await _maybe_await(self._parser.parse(response, operation_model.output_shape))
        if response["status_code"] >= 300:
            error_shape = self._error_shape(parsed)
            if error_shape is not None:
                parsed.update(await _maybe_await(self._parser.parse(response, error_shape)))
            with_error_fields(parsed, response)
        return self._final(operation, response, parsed)


def with_error_fields(parsed: dict[str, Any], response: Mapping[str, Any]) -> None:
    """Add what botocore's model may not know of an error body (a throttle's reasons)."""
    for name, value in fastjson.error_fields(response).items():
        parsed.setdefault(name, value)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ResponseParse:
    """The fast path's parser, without counting into its statistics twice."""

    def __init__(self, fast: fastjson.ResponseFastPath) -> None:
        self.fast = fast

    def parse(self, operation: str, response: Mapping[str, Any]) -> dict[str, Any] | None:
        parsed = self.fast.parse(operation, response)
        if parsed is None:
            self.fast.stats.fallbacks += 1
        else:
            self.fast.stats.parsed += 1
        return parsed


def _metadata(response: Mapping[str, Any]) -> dict[str, Any]:
    # What botocore's parser puts in ResponseMetadata, for a first attempt.
    headers = response["headers"]
    metadata: dict[str, Any] = {}
    if "x-amzn-requestid" in headers:
        metadata["RequestId"] = headers["x-amzn-requestid"]
    metadata["HTTPStatusCode"] = response["status_code"]
    metadata["HTTPHeaders"] = {k.lower(): v for k, v in headers.items()}
    metadata["RetryAttempts"] = 0
    return metadata


def _trace_id() -> str | None:
    # botocore's add_recursion_detection_header: inside Lambda, pass the X-Ray trace id on.
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        return None
    return os.environ.get("_X_AMZN_TRACE_ID")


def lean_lane_for(client: Any) -> LeanLane | None:
    """Return a lean lane for a botocore or aiobotocore DynamoDB client, or None.

    None when the lane is turned off or the client must keep botocore's path (see the module).
    """
    if _disabled() or not _eligible(client):
        return None
    try:
        module = type(client._endpoint.http_session).__module__
        if module == "botocore.httpsession":
            return LeanLane(client)
        if module == "aiobotocore.httpsession":
            return AsyncLeanLane(client)
    except (AttributeError, ImportError):  # a botocore without what the lane reads
        return None
    return None


_Check = Callable[[Any], bool]


def _eligible(client: Any) -> bool:
    try:
        meta = client.meta
        if meta.service_model.service_name != "dynamodb" or meta.service_model.protocol != "json":
            return False
        config = meta.config
        retries = config.retries or {}
        attempts = retries.get("total_max_attempts")
        if attempts is None and retries.get("max_attempts") is not None:
            attempts = retries["max_attempts"] + 1
        if attempts != 1:
            return False  # botocore would retry; only lsiorm's own retries may be in play
        if retries.get("mode") == "adaptive":
            return False  # its client-side rate limiter waits in botocore's send path
        if config.endpoint_discovery_enabled:
            return False
        if getattr(config, "account_id_endpoint_mode", None) == "required":
            return False  # botocore refuses such a request without an account id
        if config.signature_version not in (None, "v4"):
            return False
        signer = client._request_signer
        if signer._signature_version not in ("v4", None):
            return False
        credentials = signer._credentials
        if credentials is None:
            return False
    except AttributeError:
        return False
    return True
