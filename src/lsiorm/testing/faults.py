"""Fault injection for your own tests: throttle, fail, drop or lose the answer of chosen requests.

`FaultInjector` steps in between lsiorm's drivers and the network, in the process, for every
session (or one session) while it is active: as a context manager, or as the pytest plugin's
``lsiorm_faults`` fixture. It works on any engine (moto, DynamoDB Local, AWS) and on both
request lanes, sync and async; an injected failure reaches lsiorm exactly where a real one
does, so it is retried, typed, traced and logged as a real one is::

    def test_saving_survives_throttling(lsiorm_session, lsiorm_faults):
        lsiorm_faults.throttle("PutItem", times=2)
        save_note(lsiorm_session, "hello")          # your code
        assert lsiorm_faults.count("PutItem") == 3  # two throttled attempts, then the write

Each rule chooses requests by operation (``"BatchWriteItem"``, several, or every data-plane
operation when none is named; the S3 and KMS requests of protected fields, such as
``"PutObject"`` or ``"Decrypt"``, when named) and either takes the next ``times`` of them or,
with ``rate``, a random share (``seed`` makes the draw repeatable). What a fault does:

* ``throttle``: DynamoDB's throttling error (``ProvisionedThroughputExceededException``);
  nothing is applied. With ``reason``, it carries DynamoDB's throttling reasons as AWS sends
  them (``TableWriteKeyRangeThroughputExceeded``: a hot partition key, ...), each naming the
  ARN of the request's table (or of its index, for an ``Index...`` reason).
* ``server_error``: an HTTP 500 ``InternalServerError`` or, with ``status=503``, a
  ``ServiceUnavailable``; nothing is applied.
* ``drop``: the connection is cut before the request reaches DynamoDB; nothing is applied (the
  client cannot tell: lsiorm treats it as a request that may have been applied).
* ``lose_answer``: the request is really sent and applied, then the connection is cut before
  the answer arrives: the case that makes idempotency matter.
* ``fail_after_apply``: the request is applied, then answered with a 500.
* ``partial``: a batch is partly processed (its first half, rounded down: none of a batch of
  one); the rest comes back as ``UnprocessedItems`` (or ``UnprocessedKeys``), as DynamoDB
  does under load.
* ``cancel_transaction``: a transaction is cancelled with the reasons you give
  (``"ConditionalCheckFailed"``, ``"TransactionConflict"``, ...); nothing is applied.

``requests`` records every request sent while the injector is active, faulted or not, so a
test can assert what a code path did: ``assert lsiorm_faults.operations == ["Query"]``.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

from lsiorm._io import interception
from lsiorm._io.telemetry import table_names
from lsiorm._ops.steps import ITEM_OPERATIONS, Call

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DATA_PLANE",
    "PROTECTION_OPERATIONS",
    "Fault",
    "FaultInjector",
    "FaultKind",
    "FaultTiming",
    "SentRequest",
]

FaultKind = Literal[
    "throttle", "error500", "error503", "drop", "lost-answer", "applied-500", "partial", "cancel"
]
"""What a fault does to a request (see the module)."""

#: The operations a rule without one chooses from: every read and write of items.
DATA_PLANE: Final = ITEM_OPERATIONS
#: The requests of protected fields a rule may name too (never chosen without being named):
#: S3's for offloaded values and KMS's for data keys.
PROTECTION_OPERATIONS: Final = frozenset(
    {
        "PutObject",
        "GetObject",
        "DeleteObject",
        "DeleteObjects",
        "ListObjectsV2",
        "GenerateDataKey",
        "Decrypt",
    }
)
_BATCHES: Final = frozenset({"BatchGetItem", "BatchWriteItem"})
_TRANSACTIONS: Final = frozenset({"TransactGetItems", "TransactWriteItems"})
_UNPROCESSED: Final = {"BatchWriteItem": "UnprocessedItems", "BatchGetItem": "UnprocessedKeys"}
_MESSAGES: Final = {
    "ConditionalCheckFailed": "The conditional request failed",
    "TransactionConflict": "Transaction is ongoing for the item",
    "ItemCollectionSizeLimitExceeded": "Collection size exceeded.",
    "ProvisionedThroughputExceeded": "The level of configured provisioned throughput exceeded.",
    "ThrottlingError": "Throughput exceeds the current capacity.",
    "ValidationError": "One or more parameter values were invalid.",
}


@dataclass(frozen=True)
class SentRequest:
    """One request sent while an injector was active, and the fault it met (None: none)."""

    operation: str
    #: The params as sent on the wire (live table names); read them, do not change them.
    params: Mapping[str, Any] = field(repr=False)
    fault: FaultKind | None = None

    @property
    def tables(self) -> tuple[str, ...]:
        """The live tables the request names."""
        return table_names(self.params)


@dataclass
class Fault:
    """One rule of an injector: which requests it takes, and what it does to them.

    ``injected`` counts the requests it has faulted so far. Made by the injector's methods.
    """

    kind: FaultKind
    operations: frozenset[str]
    times: int | None = 1
    rate: float | None = None
    when: Callable[[str, Mapping[str, Any]], bool] | None = None
    seed: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    injected: int = 0
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, not {self.rate}")
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be at least 0, not {self.times}")

    @property
    def spent(self) -> bool:
        """Whether the rule has faulted all the requests it was given."""
        return self.times is not None and self.injected >= self.times

    def takes(self, operation: str, params: Mapping[str, Any]) -> bool:
        """Whether this rule faults this request (drawing at random once, for a rate)."""
        if self.spent or operation not in self.operations:
            return False
        if self.when is not None and not self.when(operation, params):
            return False
        return self.rate is None or self._random.random() < self.rate


def _chosen(operation: str | Iterable[str] | None, among: frozenset[str]) -> frozenset[str]:
    if operation is None:
        return among
    names = frozenset((operation,) if isinstance(operation, str) else operation)
    return names


class FaultTiming(TypedDict, total=False):
    """Which of the matching requests a rule faults, as every rule method takes it.

    ``times``: the next so many (1 when not given); ``rate``: that share of them, without end
    unless ``times`` is given too; ``seed``: the rule's random choices (the injector's seed
    when not given); ``when(operation, params)``: only the requests it accepts (the params as
    sent: those of one partition key, say).
    """

    times: int | None
    rate: float | None
    seed: int | None
    when: Callable[[str, Mapping[str, Any]], bool] | None


class FaultInjector:
    """Injects faults into the requests lsiorm sends, and records every request (see module).

    Use it as a context manager (or `start` and `stop`); the pytest plugin's ``lsiorm_faults``
    fixture is one, active for the test. ``session`` limits it to that session's requests;
    otherwise it acts on every session in the process. ``seed`` is the default seed of the
    rules given a ``rate``. Thread-safe: batch chunks and job segments may send at once.
    """

    def __init__(self, *, session: Any = None, seed: int | None = 0) -> None:
        self.session = session
        self.seed = seed
        self.faults: list[Fault] = []
        #: Every request sent while active, in order.
        self.requests: list[SentRequest] = []
        #: Requests sent, requests forwarded to the engine, and faults injected by kind.
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._active = False

    # -- lifetime ---------------------------------------------------------------------------

    def start(self) -> FaultInjector:
        """Start stepping into requests."""
        if not self._active:
            interception.install(self)
            self._active = True
        return self

    def stop(self) -> None:
        """Stop; requests go out untouched again (the record is kept)."""
        if self._active:
            interception.uninstall(self)
            self._active = False

    def __enter__(self) -> FaultInjector:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- rules ------------------------------------------------------------------------------

    def inject(
        self,
        kind: FaultKind,
        operation: str | Iterable[str] | None = None,
        *,
        times: int | None = 1,
        rate: float | None = None,
        seed: int | None = None,
        when: Callable[[str, Mapping[str, Any]], bool] | None = None,
        **options: Any,
    ) -> Fault:
        """Add a rule: fault the next ``times`` matching requests, or a ``rate`` share of them.

        With ``rate`` and ``times=None`` the rule never runs out. ``when(operation, params)``
        narrows the requests further (the params as sent). Returns the rule.
        """
        among = DATA_PLANE
        if kind == "partial":
            among = _BATCHES
        elif kind == "cancel":
            among = _TRANSACTIONS
        operations = _chosen(operation, among)
        allowed = among | PROTECTION_OPERATIONS if among is DATA_PLANE else among
        wrong = operations - allowed
        if wrong:
            raise ValueError(f"a {kind!r} fault cannot apply to {sorted(wrong)}")
        if rate is not None and times == 1:
            times = None  # a share of the requests, without end, unless a count is given
        fault = Fault(
            kind,
            operations,
            times=times,
            rate=rate,
            when=when,
            seed=self.seed if seed is None else seed,
            options=dict(options),
        )
        with self._lock:
            self.faults.append(fault)
        return fault

    def throttle(
        self,
        operation: str | Iterable[str] | None = None,
        *,
        code: str = "ProvisionedThroughputExceededException",
        reason: str | Sequence[str] = (),
        **timing: Unpack[FaultTiming],
    ) -> Fault:
        """Throttle the chosen requests (``code``: or ``"ThrottlingException"``, ...).

        ``reason`` gives the throttle DynamoDB's reasons (one, or several), such as
        ``"TableWriteKeyRangeThroughputExceeded"``; each names the request's table (or its
        index) by an ARN in the client's region.
        """
        reasons = (reason,) if isinstance(reason, str) else tuple(reason)
        return self.inject("throttle", operation, code=code, reasons=reasons, **timing)

    def server_error(
        self,
        operation: str | Iterable[str] | None = None,
        *,
        status: Literal[500, 503] = 500,
        **timing: Unpack[FaultTiming],
    ) -> Fault:
        """Answer the chosen requests with an HTTP 500 (or 503) without applying them."""
        kind: FaultKind = "error503" if status == 503 else "error500"
        return self.inject(kind, operation, **timing)

    def drop(
        self, operation: str | Iterable[str] | None = None, **timing: Unpack[FaultTiming]
    ) -> Fault:
        """Cut the connection of the chosen requests before DynamoDB gets them."""
        return self.inject("drop", operation, **timing)

    def lose_answer(
        self, operation: str | Iterable[str] | None = None, **timing: Unpack[FaultTiming]
    ) -> Fault:
        """Send and apply the chosen requests, then cut the connection before the answer."""
        return self.inject("lost-answer", operation, **timing)

    def fail_after_apply(
        self, operation: str | Iterable[str] | None = None, **timing: Unpack[FaultTiming]
    ) -> Fault:
        """Send and apply the chosen requests, then answer them with an HTTP 500."""
        return self.inject("applied-500", operation, **timing)

    def partial(
        self, operation: str | Iterable[str] | None = None, **timing: Unpack[FaultTiming]
    ) -> Fault:
        """Process the first half of the chosen batches; hand the rest back unprocessed."""
        return self.inject("partial", operation, **timing)

    def cancel_transaction(
        self,
        reasons: str | Sequence[str] = "ConditionalCheckFailed",
        operation: str | Iterable[str] | None = "TransactWriteItems",
        *,
        at: int = 0,
        **timing: Unpack[FaultTiming],
    ) -> Fault:
        """Cancel the chosen transactions: action ``at`` gets ``reasons``, the others ``None``.

        Give a sequence to set the reason of each action in order (``"None"`` for those that
        did not cause it).
        """
        return self.inject("cancel", operation, reasons=reasons, at=at, **timing)

    def clear(self) -> None:
        """Remove every rule and forget the requests recorded so far."""
        with self._lock:
            self.faults.clear()
            self.requests.clear()
            self.stats.clear()

    # -- the record -------------------------------------------------------------------------

    @property
    def operations(self) -> list[str]:
        """The operation of each request sent, in order (``["Query", "BatchGetItem"]``)."""
        with self._lock:
            return [r.operation for r in self.requests]

    def count(self, operation: str | None = None, *, fault: FaultKind | None = None) -> int:
        """How many requests were sent (of ``operation``; that met ``fault``)."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (operation is None or r.operation == operation)
                and (fault is None or r.fault == fault)
            )

    # -- the interceptor --------------------------------------------------------------------

    def plan(self, call: Call, client: Any) -> interception.Plan | None:
        """Record one request and choose its fault (called by the drivers)."""
        if self.session is not None and not _of_session(self.session, call, client):
            return None
        with self._lock:
            fault = next((f for f in self.faults if f.takes(call.operation, call.params)), None)
            kind = fault.kind if fault is not None else None
            if fault is not None:
                fault.injected += 1
                self.stats[kind or ""] += 1
                self.stats["faults"] += 1
            self.stats["requests"] += 1
            self.requests.append(SentRequest(call.operation, call.params, kind))
        if fault is None:
            with self._lock:
                self.stats["forwarded"] += 1
            return None
        return _Planned(self, fault, call, client)


def _of_session(session: Any, call: Call, client: Any) -> bool:
    """Whether ``client`` is the session's: its DynamoDB client, or one of its KMS and S3
    clients."""
    if call.service == "dynamodb":
        # A Session's driver holds its client as the session keeps it (not built yet, maybe:
        # lsiorm._io.lazy_client), which reading session.client would build.
        kept = vars(session)
        return client is (kept["_client"] if "_client" in kept else kept.get("client"))
    services = getattr(session, "services", None)
    return services is not None and client is services(call.service)


def _client_error(operation: str, status: int, code: str, message: str, **extra: Any) -> Any:
    from botocore.exceptions import ClientError

    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "lsiorm-fault"},
        **extra,
    }
    return ClientError(response, operation)


def _throttling_reasons(
    code: str, reasons: Sequence[str], params: Mapping[str, Any], client: Any
) -> dict[str, Any]:
    """The throttling reasons of an injected throttle, as AWS puts them in its answer (under
    ``throttlingReasons`` in a ThrottlingException); none when the rule gives none."""
    if not reasons:
        return {}
    region = getattr(getattr(client, "meta", None), "region_name", None) or "us-east-1"
    tables = table_names(params) or ("unknown",)
    index = params.get("IndexName")
    listed = []
    for reason in reasons:
        arn = f"arn:aws:dynamodb:{region}:000000000000:table/{tables[0]}"
        if reason.startswith("Index") and isinstance(index, str):
            arn += f"/index/{index}"
        listed.append({"reason": reason, "resource": arn})
    name = "throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"
    return {name: listed}


def _connection_cut(client: Any) -> Any:
    from botocore.exceptions import ConnectionClosedError

    url = getattr(getattr(client, "meta", None), "endpoint_url", None)
    return ConnectionClosedError(endpoint_url=url if isinstance(url, str) else "lsiorm-fault")


def _cancellation(operation: str, params: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
    actions = len(params.get("TransactItems") or ()) or 1
    given = options.get("reasons", "ConditionalCheckFailed")
    if isinstance(given, str):
        codes = ["None"] * actions
        codes[min(max(0, int(options.get("at", 0))), actions - 1)] = given
    else:
        codes = [*given, *(["None"] * max(0, actions - len(given)))][:actions]
    reasons = [
        {"Code": code, **({"Message": _MESSAGES[code]} if code in _MESSAGES else {})}
        for code in codes
    ]
    message = (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        f"[{', '.join(codes)}]"
    )
    return _client_error(
        operation, 400, "TransactionCanceledException", message, CancellationReasons=reasons
    )


def _halves(operation: str, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a batch's RequestItems into the first half (sent) and the rest (unprocessed)."""
    items = params.get("RequestItems") or {}
    if operation == "BatchWriteItem":
        flat = [(table, request) for table, requests in items.items() for request in requests]
        keep = len(flat) // 2
        sent: dict[str, Any] = {}
        left: dict[str, Any] = {}
        for i, (table, request) in enumerate(flat):
            (sent if i < keep else left).setdefault(table, []).append(request)
        return sent, left
    keys = [(table, key) for table, spec in items.items() for key in spec.get("Keys") or ()]
    keep = len(keys) // 2
    sent, left = {}, {}
    for i, (table, key) in enumerate(keys):
        side = sent if i < keep else left
        side.setdefault(table, {**items[table], "Keys": []})["Keys"].append(key)
    return sent, left


class _Planned:
    """The plan of one faulted request (see `lsiorm._io.interception.Plan`)."""

    def __init__(self, injector: FaultInjector, fault: Fault, call: Call, client: Any) -> None:
        self._injector = injector
        self._fault = fault
        self._call = call
        self._client = client
        self._left: dict[str, Any] = {}

    def before(self) -> dict[str, Any] | None:
        call, kind = self._call, self._fault.kind
        operation = call.operation
        if kind == "throttle":
            code = str(self._fault.options.get("code", "ProvisionedThroughputExceededException"))
            reasons = _throttling_reasons(
                code, self._fault.options.get("reasons", ()), call.params, self._client
            )
            raise _client_error(
                operation, 400, code, "Injected throttling: rate exceeded.", **reasons
            )
        if kind == "error500":
            raise _client_error(operation, 500, "InternalServerError", "Injected server error.")
        if kind == "error503":
            raise _client_error(operation, 503, "ServiceUnavailable", "Injected: unavailable.")
        if kind == "drop":
            raise _connection_cut(self._client)
        if kind == "cancel":
            raise _cancellation(operation, call.params, self._fault.options)
        params: dict[str, Any] = dict(call.params)
        if kind == "partial":
            sent, self._left = _halves(operation, call.params)
            if not sent:
                return None  # nothing processed: the whole batch comes back
            params["RequestItems"] = sent
        with self._injector._lock:
            self._injector.stats["forwarded"] += 1
        return params

    def after(self, response: dict[str, Any]) -> dict[str, Any]:
        kind = self._fault.kind
        if kind == "lost-answer":
            raise _connection_cut(self._client)
        if kind == "applied-500":
            raise _client_error(
                self._call.operation, 500, "InternalServerError", "Injected: applied, then 500."
            )
        if kind == "partial":
            name = _UNPROCESSED[self._call.operation]
            merged = dict(response)
            if self._call.operation == "BatchGetItem":
                merged.setdefault("Responses", {})
            left = {table: _copy(part) for table, part in (merged.get(name) or {}).items()}
            for table, part in self._left.items():
                if self._call.operation == "BatchWriteItem":
                    left.setdefault(table, []).extend(part)
                else:
                    left.setdefault(table, {**part, "Keys": []})["Keys"].extend(part["Keys"])
            merged[name] = left
            return merged
        return response


def _copy(part: Any) -> Any:
    if isinstance(part, list):
        return list(part)
    if isinstance(part, dict):
        return {**part, "Keys": list(part.get("Keys") or ())}
    return part
