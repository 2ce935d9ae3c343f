"""OpenTelemetry spans and metrics of lsiorm's requests and operations (the ``otel`` extra).

Everything here goes through the OpenTelemetry API (``opentelemetry-api``), imported when a
session is made, never by ``import lsiorm``. Spans and metrics go to OpenTelemetry's global
tracer and meter providers unless a `Telemetry` names others; while a provider is the API's
own (no SDK configured), nothing is recorded and each request pays for two lookups only.

* One span per DynamoDB request, opened by the driver around the request whichever lane sends
  it (`ClientTelemetry.request`): named ``DynamoDB.<Operation>``, kind CLIENT, with the
  attributes of OpenTelemetry's conventions for AWS SDK and DynamoDB calls. A failed request
  sets the span's status and ``error.type`` and records the exception as an event; a retried
  one carries ``lsiorm.attempt`` and a ``retry`` event. When an OpenTelemetry instrumentation
  wraps botocore's ``_make_api_call``, the request goes through it (the lean lane steps aside)
  and its span is the request's span: lsiorm opens none, so no request is traced twice.
* One span per session operation (``Session.all``, ``AsyncSession.batch_write``, ...), kind
  INTERNAL, the parent of its requests' spans, with the entity types, the index its queries
  chose and how many requests it sent. Batch chunks and job segments in worker threads and
  async tasks run in copies of the caller's context, so their requests find this parent.
* Metrics (see `METRICS`): request duration, consumed capacity by table and index, throttles,
  retries, outcome-unknown errors and the largest item-collection size seen per table.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar, cast
from urllib.parse import urlsplit

from lsiorm._io.api_call_wrappers import ApiCallWatch, LazyClientWatch, watch_of
from lsiorm._io.lazy_client import LazyClient
from lsiorm._model.capacity import ConsumedCapacity
from lsiorm._model.entity import Entity
from lsiorm._ops.service_errors import partition_keys
from lsiorm._ops.steps import Call
from lsiorm.errors import (
    MissingDependencyError,
    OutcomeUnknownError,
    ThrottledError,
    TransactionCanceledError,
    key_text,
)

__all__ = [
    "METRICS",
    "ClientTelemetry",
    "OperationTrace",
    "RequestTrace",
    "Telemetry",
    "recorder_of",
    "start_operation",
    "telemetry_for",
    "throttle_attributes",
    "traced_async_pages",
    "traced_pages",
]

PagesT = TypeVar("PagesT", Iterator[Any], AsyncIterator[Any])

#: One DEBUG line per request sent (operation, tables, attempt, outcome, duration).
requests_log = logging.getLogger("lsiorm.requests")

#: The instrumentation scope of lsiorm's tracer and meter.
SCOPE: Final = "lsiorm"

#: The metrics lsiorm records: name, unit, what it measures.
METRICS: Final = (
    ("lsiorm.request.duration", "s", "Duration of each DynamoDB request, by operation and table"),
    ("lsiorm.consumed_capacity", "{capacity_unit}", "Capacity units consumed, by table and index"),
    ("lsiorm.throttles", "{request}", "Requests DynamoDB throttled, by reason"),
    ("lsiorm.retries", "{request}", "Requests sent again by the retry policy"),
    ("lsiorm.outcome_unknown", "{operation}", "Writes whose outcome could not be known"),
    ("lsiorm.item_collection.largest_size", "GBy", "Largest item collection seen, per table"),
)

#: The ``lsiorm.index`` of an operation whose queries read the table itself.
TABLE_INDEX: Final = "(table)"

#: Request parameters that become span attributes as they are.
_PARAMETERS: Final = (
    ("IndexName", "aws.dynamodb.index_name"),
    ("ConsistentRead", "aws.dynamodb.consistent_read"),
    ("Limit", "aws.dynamodb.limit"),
    ("ProjectionExpression", "aws.dynamodb.projection"),
    ("Select", "aws.dynamodb.select"),
)
_READS: Final = frozenset({"Query", "Scan"})
#: Response fields that become span attributes as they are.
_COUNTS: Final = (("Count", "aws.dynamodb.count"), ("ScannedCount", "aws.dynamodb.scanned_count"))
#: What `next` gives at the end of the pages of a traced iteration.
_END: Final = object()


class _Api:
    """The OpenTelemetry API modules, imported once."""

    def __init__(self) -> None:
        from opentelemetry import context, metrics, trace

        self.context = context
        self.metrics = metrics
        self.trace = trace
        self.operation_key = context.create_key("lsiorm-operation")


_API: _Api | None = None
_API_LOCK = threading.Lock()


def _api() -> _Api | None:
    """The OpenTelemetry API, or None when ``opentelemetry-api`` is not installed."""
    global _API
    if _API is None:
        with _API_LOCK:
            if _API is None:
                try:
                    _API = _Api()
                except ImportError:
                    return None
    return _API


def _records(provider: Any) -> bool:
    """False for the API's own providers (no SDK configured: proxies and no-ops)."""
    module = type(provider).__module__
    return not module.startswith(("opentelemetry.trace", "opentelemetry.metrics"))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lsiorm")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class _Instruments:
    """lsiorm's metric instruments on one meter."""

    def __init__(self, meter: Any) -> None:
        (duration, capacity, throttles, retries, unknown, largest) = METRICS
        self.duration = meter.create_histogram(
            duration[0], unit=duration[1], description=duration[2]
        )
        self.capacity = meter.create_counter(capacity[0], unit=capacity[1], description=capacity[2])
        self.throttles = meter.create_counter(
            throttles[0], unit=throttles[1], description=throttles[2]
        )
        self.retries = meter.create_counter(retries[0], unit=retries[1], description=retries[2])
        self.unknown = meter.create_counter(unknown[0], unit=unknown[1], description=unknown[2])
        self._largest: dict[str, float] = {}
        self._lock = threading.Lock()
        meter.create_observable_gauge(
            largest[0], callbacks=[self._observe], unit=largest[1], description=largest[2]
        )

    def collection(self, table: str, gigabytes: float) -> None:
        with self._lock:
            if gigabytes > self._largest.get(table, -1.0):
                self._largest[table] = gigabytes

    def _observe(self, options: Any) -> list[Any]:
        from opentelemetry.metrics import Observation

        with self._lock:
            largest = dict(self._largest)
        return [Observation(gb, {"db.collection.name": table}) for table, gb in largest.items()]


class _Recorder:
    """The tracer and instruments of one pair of providers (None where nothing records)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        version = _version()
        self.tracer = (
            tracer_provider.get_tracer(SCOPE, version) if _records(tracer_provider) else None
        )
        self.metrics = (
            _Instruments(meter_provider.get_meter(SCOPE, version))
            if _records(meter_provider)
            else None
        )
        self.live = self.tracer is not None or self.metrics is not None


class Telemetry:
    """Where a session sends its spans and metrics (`Session(telemetry=...)`).

    `Telemetry()` uses OpenTelemetry's global tracer and meter providers, which is what a
    session does by default; give `tracer_provider` and/or `meter_provider` to use others.
    Nothing is recorded while a provider is the API's own (no SDK configured); a provider set
    later is picked up by the next request. Needs the `otel` extra
    (`pip install "lsiorm[otel]"`); without it the constructor raises
    `MissingDependencyError`.
    """

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        api = _api()
        if api is None:
            raise MissingDependencyError("Telemetry", "opentelemetry-api", "otel")
        self._api = api
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._recorder: _Recorder | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        given = self._tracer_provider is not None or self._meter_provider is not None
        return f"Telemetry({'given providers' if given else 'global providers'})"


def recorder_of(telemetry: Telemetry) -> _Recorder | None:
    """The current tracer and instruments, or None when nothing would be recorded."""
    api = telemetry._api
    tracer_provider = telemetry._tracer_provider or api.trace.get_tracer_provider()
    meter_provider = telemetry._meter_provider or api.metrics.get_meter_provider()
    recorder = telemetry._recorder
    if (
        recorder is None
        or recorder.tracer_provider is not tracer_provider
        or recorder.meter_provider is not meter_provider
    ):
        with telemetry._lock:
            recorder = _Recorder(tracer_provider, meter_provider)
            telemetry._recorder = recorder
    return recorder if recorder.live else None


def start_operation(telemetry: Telemetry, name: str, args: Iterable[Any]) -> OperationTrace | None:
    """Start the span of one session operation, or None when nothing records."""
    recorder = recorder_of(telemetry)
    if recorder is None:
        return None
    return OperationTrace(telemetry._api, recorder, name, args)


def traced_pages(
    telemetry: Telemetry, name: str, args: Iterable[Any], pages: Iterator[Any]
) -> Iterator[Any]:
    """``pages`` inside the span of the operation that reads them."""
    return _in_operation(telemetry, name, args, pages, _traced_pages)


def traced_async_pages(
    telemetry: Telemetry, name: str, args: Iterable[Any], pages: AsyncIterator[Any]
) -> AsyncIterator[Any]:
    """``pages`` (async) inside the span of the operation that reads them."""
    return _in_operation(telemetry, name, args, pages, _async_traced_pages)


def _in_operation(
    telemetry: Telemetry,
    name: str,
    args: Iterable[Any],
    pages: PagesT,
    traced: Callable[[OperationTrace, PagesT], PagesT],
) -> PagesT:
    trace = start_operation(telemetry, name, args)
    return pages if trace is None else traced(trace, pages)


_DEFAULT: Telemetry | None = None


def telemetry_for(setting: bool | Telemetry) -> Telemetry | None:
    """A session's telemetry: None for False, or for True when the API is not installed."""
    global _DEFAULT
    if isinstance(setting, Telemetry):
        return setting
    if not setting or _api() is None:
        return None
    if _DEFAULT is None:
        _DEFAULT = Telemetry()
    return _DEFAULT


# -- operations -------------------------------------------------------------------------------


def _classes(module: str, *names: str) -> tuple[type, ...]:
    """The classes ``names`` of ``module``, or none while it is not imported: no argument can
    be a query or a transaction action before its module is (so a get does not import them)."""
    found = sys.modules.get(module)
    if found is None:
        return ()
    return tuple(cls for name in names if isinstance(cls := getattr(found, name, None), type))


def entity_types(values: Iterable[Any]) -> tuple[str, ...]:
    """The names of the entity classes that an operation's arguments are about, sorted."""
    reads = _classes("lsiorm._query.values", "Query", "Scan")
    actions = _classes("lsiorm._requests.transactions", "Put")
    targeted = _classes(
        "lsiorm._requests.transactions", "Update", "Delete", "ConditionCheck", "Get"
    )
    names: dict[str, None] = {}
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, type):
            if issubclass(value, Entity):
                names[value.__name__] = None
        elif isinstance(value, Entity):
            names[type(value).__name__] = None
        elif isinstance(value, reads):
            stack.extend(cast("Any", value).entities)
        elif isinstance(value, actions):
            stack.append(cast("Any", value).entity)
        elif isinstance(value, targeted):
            stack.append(cast("Any", value).target)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return tuple(sorted(names))


class OperationTrace:
    """The span of one session operation, and what its requests tell it (thread-safe).

    Use it as a context manager around the operation: the span is current inside, and ends
    with the operation's outcome.
    """

    def __init__(self, api: _Api, recorder: _Recorder, name: str, args: Iterable[Any]) -> None:
        self._api = api
        self._recorder = recorder
        self.name = name
        self.requests = 0
        self.retries = 0
        self.indexes: dict[str, None] = {}
        self.tables: dict[str, None] = {}
        self._lock = threading.Lock()
        self._tokens: list[Any] = []
        context = api.context.get_current()
        self.span: Any = None
        if recorder.tracer is not None:
            self.span = recorder.tracer.start_span(
                name,
                kind=api.trace.SpanKind.INTERNAL,
                attributes={"lsiorm.entity_types": entity_types(args)},
            )
            context = api.trace.set_span_in_context(self.span, context)
        self.context = api.context.set_value(api.operation_key, self, context)

    def counted(self, call: Call) -> None:
        """One request of this operation was sent."""
        with self._lock:
            self.requests += 1
            if call.retry is not None:
                self.retries += 1
            for table in table_names(call.params):
                self.tables[table] = None
            if call.operation in _READS:
                self.indexes[call.params.get("IndexName") or TABLE_INDEX] = None

    def __enter__(self) -> OperationTrace:
        self._tokens.append(self._api.context.attach(self.context))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._api.context.detach(self._tokens.pop())
        self.end(exc)

    def resumed(self) -> _Resumed:
        """A context manager that makes the span current for one step of an iteration."""
        return _Resumed(self)

    def end(self, error: BaseException | None) -> None:
        """End the span with the operation's outcome."""
        metrics = self._recorder.metrics
        if isinstance(error, OutcomeUnknownError) and metrics is not None:
            metrics.unknown.add(1, {"lsiorm.operation": self.name, "rpc.method": error.operation})
        span = self.span
        if span is None:
            return
        with self._lock:
            attributes: dict[str, Any] = {
                "lsiorm.request_count": self.requests,
                "lsiorm.retry_count": self.retries,
            }
            if self.tables:
                attributes["aws.dynamodb.table_names"] = tuple(self.tables)
            if len(self.indexes) == 1:
                attributes["lsiorm.index"] = next(iter(self.indexes))
            elif self.indexes:
                attributes["lsiorm.index"] = ",".join(self.indexes)
        span.set_attributes(attributes)
        if error is not None:
            _failed(span, error)
        span.end()


class _Resumed:
    def __init__(self, trace: OperationTrace) -> None:
        self._trace = trace

    def __enter__(self) -> None:
        trace = self._trace
        trace._tokens.append(trace._api.context.attach(trace.context))

    def __exit__(self, *exc: object) -> None:
        trace = self._trace
        trace._api.context.detach(trace._tokens.pop())


class _Ended:
    """Ends a trace when the iteration it wraps ends: with its error, or without one when it
    ends early (closed, or interrupted)."""

    def __init__(self, trace: OperationTrace) -> None:
        self._trace = trace

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._trace.end(exc if isinstance(exc, Exception) else None)


def _traced_pages(trace: OperationTrace, pages: Iterator[Any]) -> Iterator[Any]:
    with _Ended(trace):
        while True:
            with trace.resumed():
                page = next(pages, _END)
            if page is _END:
                return
            yield page


async def _async_traced_pages(
    trace: OperationTrace, pages: AsyncIterator[Any]
) -> AsyncIterator[Any]:
    with _Ended(trace):
        while True:
            with trace.resumed():
                page = await anext(pages, _END)
            if page is _END:
                return
            yield page


# -- requests ---------------------------------------------------------------------------------


def table_names(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The tables a request names: TableName, RequestItems' keys, or each transact item's."""
    name = params.get("TableName")
    if name is not None:
        return (name,)
    items = params.get("RequestItems")
    if items:
        return tuple(items)
    names: dict[str, None] = {}
    for entry in params.get("TransactItems") or ():
        for action in entry.values():
            if isinstance(action, Mapping) and "TableName" in action:
                names[action["TableName"]] = None
    return tuple(names)


def _json(value: Any) -> str:
    import orjson  # here: ``import lsiorm`` does not load it

    return orjson.dumps(value, default=_plain).decode()


def _plain(value: Any) -> Any:
    import base64
    from decimal import Decimal

    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    raise TypeError(type(value).__name__)


def request_attributes(call: Call, common: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a request's span known before it is sent."""
    params = call.params
    attributes = dict(common)
    attributes["rpc.method"] = call.operation
    attributes["db.operation"] = call.operation
    tables = table_names(params)
    if tables:
        attributes["aws.dynamodb.table_names"] = tables
    for parameter, attribute in _PARAMETERS:
        value = params.get(parameter)
        if value is not None:
            attributes[attribute] = value
    if call.retry is not None:
        attributes["lsiorm.attempt"] = call.retry.attempt
    return attributes


def _consumed(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = response.get("ConsumedCapacity")
    if not raw:
        return []
    return list(raw) if isinstance(raw, list) else [raw]


def response_attributes(response: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a request's span read from its response."""
    attributes: dict[str, Any] = {}
    consumed = _consumed(response)
    if consumed:
        attributes["aws.dynamodb.consumed_capacity"] = tuple(_json(c) for c in consumed)
    for field, attribute in (
        ("Count", "aws.dynamodb.count"),
        ("ScannedCount", "aws.dynamodb.scanned_count"),
    ):
        if field in response:
            attributes[attribute] = response[field]
    metrics = response.get("ItemCollectionMetrics")
    if metrics:
        attributes["aws.dynamodb.item_collection_metrics"] = _json(metrics)
    request_id = (response.get("ResponseMetadata") or {}).get("RequestId")
    if request_id:
        attributes["aws.request_id"] = request_id
    return attributes


def _collection_sizes(call: Call, response: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """(table, upper bound in GB) of each item collection metric of a write's response."""
    metrics = response.get("ItemCollectionMetrics")
    if not metrics:
        return
    if "SizeEstimateRangeGB" in metrics:  # a single write's: one metric
        table = call.params.get("TableName")
        if table is not None:
            yield table, float(max(metrics["SizeEstimateRangeGB"]))
        return
    for table, entries in metrics.items():
        for entry in entries or ():
            bounds = entry.get("SizeEstimateRangeGB")
            if bounds:
                yield table, float(max(bounds))


def error_type(error: BaseException) -> str:
    """DynamoDB's error code when there is one, else the error's class name."""
    return getattr(error, "code", "") or type(error).__name__


#: The codes of a cancelled transaction's actions that were throttled.
_THROTTLED_ACTIONS: Final = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})


def throttle_attributes(call: Call | None, error: BaseException) -> dict[str, Any]:
    """What a throttled request's span says of its throttle (empty for any other failure):
    DynamoDB's reasons (or the error's code when it gave none; a cancelled transaction's
    throttled actions' codes), the throttled resources' ARNs, and the partition key values the
    request targeted, as text (``PK=USER#1``): the one parameter value that becomes an
    attribute, on a throttled request only, to name a hot partition."""
    keys: list[str] = []
    if isinstance(error, ThrottledError):
        reasons = [r.reason for r in error.reasons] or [error.code or type(error).__name__]
        resources = [r.resource for r in error.reasons if r.resource]
        if error.partition_key:
            keys.append(key_text(error.partition_key))
    elif isinstance(error, TransactionCanceledError):
        throttled = [r for r in error.failed if r.code in _THROTTLED_ACTIONS]
        if not throttled:
            return {}
        reasons, resources = [r.code for r in throttled], []
        actions = list(call.params.get("TransactItems") or ()) if call is not None else []
        for reason in throttled:
            if call is not None and reason.index < len(actions):
                action = {"TransactItems": [actions[reason.index]]}
                keys += [
                    key_text(k) for _, k in partition_keys(call.operation, action, call.tables)
                ]
    else:
        return {}
    found: dict[str, Any] = {"lsiorm.throttle.reasons": tuple(reasons)}
    if resources:
        found["lsiorm.throttle.resources"] = tuple(resources)
    if keys:
        found["lsiorm.throttle.partition_keys"] = tuple(dict.fromkeys(keys))
    return found


def _failed(span: Any, error: BaseException, call: Call | None = None) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attributes(throttle_attributes(call, error))
    span.set_attribute("error.type", error_type(error))
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))


class ClientTelemetry:
    """What watches one client's requests: the session's telemetry (None when off) and the
    ``lsiorm.requests`` logger, and what each request's span carries."""

    def __init__(self, telemetry: Telemetry | None, client: Any) -> None:
        self.telemetry = telemetry
        self.common: dict[str, Any] = {
            "rpc.system": "aws-api",
            "rpc.service": "DynamoDB",
            "db.system": "dynamodb",
        }
        meta = client if isinstance(client, LazyClient) else getattr(client, "meta", None)
        region = getattr(meta, "region_name", None)
        if isinstance(region, str) and region:
            self.common["cloud.region"] = region
        url = getattr(meta, "endpoint_url", None)
        if isinstance(url, str):
            parts = urlsplit(url)
            if parts.hostname:
                self.common["server.address"] = parts.hostname
                self.common["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        self.watch: ApiCallWatch | LazyClientWatch | None = (
            watch_of(client) if meta is not None else None
        )

    def request(self, call: Call) -> RequestTrace | None:
        """Start watching one request, or None when nothing records or logs it."""
        telemetry = self.telemetry
        recorder = recorder_of(telemetry) if telemetry is not None else None
        logged = requests_log.isEnabledFor(logging.DEBUG)
        if recorder is None and not logged:
            return None
        own_span = self.watch is None or not self.watch.traced_by_opentelemetry()
        api = telemetry._api if telemetry is not None else None
        return RequestTrace(api, recorder, self, call, own_span=own_span, logged=logged)


class RequestTrace:
    """The span, metrics and log line of one request: a context manager around sending it.

    `done` hands the response over; leaving the block with an error records the failure.
    """

    __slots__ = (
        "_api",
        "_call",
        "_logged",
        "_operation",
        "_recorder",
        "_response",
        "_started",
        "_token",
        "span",
    )

    def __init__(
        self,
        api: _Api | None,
        recorder: _Recorder | None,
        client: ClientTelemetry,
        call: Call,
        *,
        own_span: bool,
        logged: bool,
    ) -> None:
        self._api = api
        self._recorder = recorder
        self._call = call
        self._logged = logged
        self._operation: OperationTrace | None = (
            api.context.get_value(api.operation_key) if api is not None else None
        )
        self._response: Mapping[str, Any] | None = None
        self._token: Any = None
        self.span: Any = None
        if api is not None and recorder is not None and recorder.tracer is not None and own_span:
            self.span = recorder.tracer.start_span(
                f"DynamoDB.{call.operation}",
                kind=api.trace.SpanKind.CLIENT,
                attributes=request_attributes(call, client.common),
            )
            if call.retry is not None:
                self.span.add_event(
                    "retry",
                    {
                        "lsiorm.attempt": call.retry.attempt,
                        "error.type": call.retry.reason,
                        "lsiorm.retry.delay": call.retry.delay,
                    },
                )
        self._started = time.perf_counter()

    def __enter__(self) -> RequestTrace:
        api = self._api
        if self.span is not None and api is not None:
            self._token = api.context.attach(api.trace.set_span_in_context(self.span))
        return self

    def done(self, response: dict[str, Any]) -> dict[str, Any]:
        """Hand over the response; return it."""
        self._response = response
        return response

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        elapsed = time.perf_counter() - self._started
        api = self._api
        if self._token is not None and api is not None:
            api.context.detach(self._token)
        call = self._call
        if self._logged:
            _log_request(call, elapsed, exc)
        if self._operation is not None:
            self._operation.counted(call)
        metrics = self._recorder.metrics if self._recorder is not None else None
        if metrics is not None:
            self._measure(metrics, elapsed, exc)
        span = self.span
        if span is None:
            return
        if exc is not None:
            _failed(span, exc, call)
        elif self._response is not None:
            span.set_attributes(response_attributes(self._response))
        span.end()

    def _measure(self, metrics: _Instruments, elapsed: float, error: BaseException | None) -> None:
        call = self._call
        tables = ",".join(table_names(call.params))
        labels: dict[str, Any] = {"rpc.method": call.operation, "db.collection.name": tables}
        if call.retry is not None:
            metrics.retries.add(1, {**labels, "error.type": call.retry.reason})
        if error is not None:
            metrics.duration.record(elapsed, {**labels, "error.type": error_type(error)})
            throttle = throttle_attributes(call, error)
            if throttle:
                reasons = ",".join(sorted(set(throttle["lsiorm.throttle.reasons"])))
                metrics.throttles.add(1, {**labels, "lsiorm.throttle.reason": reasons})
            return
        metrics.duration.record(elapsed, labels)
        response = self._response
        if response is None:
            return
        for entry in _consumed(response):
            _count_capacity(metrics, call.operation, entry)
        for table, gigabytes in _collection_sizes(call, response):
            metrics.collection(table, gigabytes)


def _log_request(call: Call, elapsed: float, error: BaseException | None) -> None:
    """One DEBUG line: the operation, its tables, the attempt and the outcome; no values."""
    attempt = f" (attempt {call.retry.attempt})" if call.retry is not None else ""
    requests_log.debug(
        "%s %s%s: %s in %.1f ms",
        call.operation,
        ",".join(table_names(call.params)) or "-",
        attempt,
        "ok" if error is None else error_type(error),
        elapsed * 1000,
    )


def _count_capacity(metrics: _Instruments, operation: str, entry: Mapping[str, Any]) -> None:
    consumed = ConsumedCapacity.from_consumed(entry)
    labels = {"rpc.method": operation, "db.collection.name": consumed.table}
    table_units = consumed.table_units
    if not table_units and not consumed.per_index:  # ReturnConsumedCapacity=TOTAL
        table_units = float(entry.get("CapacityUnits") or 0.0)
    if table_units:
        metrics.capacity.add(table_units, labels)
    for index, units in consumed.per_index.items():
        metrics.capacity.add(units, {**labels, "aws.dynamodb.index_name": index})
