"""The cost of tracing: one session per telemetry setting, on a single get and a 1,000-item query.

* telemetry off (``Session(telemetry=False)``): the baseline;
* the OpenTelemetry API installed but no SDK configured (the default session, on the global
  providers, which record nothing);
* the SDK configured, its spans handed to an exporter that drops them and its metrics to a
  reader that is never read: what lsiorm itself costs with tracing on.

The time is this process's CPU time: the engine runs in another process, and the overhead is
client work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from lsiorm import Session, Telemetry, query

from .models import Order, Row, lsiorm_entities
from .timing import CPU, Variant, measure
from .workloads import Group, check

OFF = "telemetry off"
NO_SDK = "OpenTelemetry API, no SDK"
DROPPED = "SDK, spans to a no-op exporter"
SINGLE_REPEAT = 20


class _Dropping(SpanExporter):
    """Takes every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def tracing(url: str, region: str, data: list[Row], rounds: int) -> list[Group]:
    """Time a typed get and a full query of ``len(data)`` items under each telemetry setting."""
    check("no global SDK", type(trace.get_tracer_provider()).__module__ == "opentelemetry.trace")
    spans = TracerProvider()
    spans.add_span_processor(SimpleSpanProcessor(_Dropping()))
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    sdk = Telemetry(tracer_provider=spans, meter_provider=meters)
    sessions = {
        OFF: Session(endpoint_url=url, region_name=region, telemetry=False),
        NO_SDK: Session(endpoint_url=url, region_name=region),
        DROPPED: Session(endpoint_url=url, region_name=region, telemetry=sdk),
    }
    entities = lsiorm_entities(data)
    sessions[OFF].batch_write(puts=entities)
    first = entities[0]
    customer = first.customer

    def get(session: Session) -> Callable[[Any], Any]:
        return lambda _: session.get(Order, customer=customer, order_no=first.order_no)

    def read_all(session: Session) -> Callable[[Any], Any]:
        return lambda _: session.all(query(Order).where(customer=customer))

    for name, session in sessions.items():
        check(f"get, {name}", get(session)(None) == first)
        check(f"query, {name}", len(read_all(session)(None)) == len(data))
    gets = [Variant(name, get(session)) for name, session in sessions.items()]
    queries = [Variant(name, read_all(session)) for name, session in sessions.items()]
    measure(gets, rounds=rounds, warmup=2, repeat=SINGLE_REPEAT, clock=CPU)
    measure(queries, rounds=rounds, warmup=1, clock=CPU)
    for session in sessions.values():
        session.close()
    spans.shutdown()
    meters.shutdown()
    note = "CPU time of this process; the ratios are to the session with telemetry off."
    return [
        Group("tracing-get", "Tracing: single typed GetItem", CPU, OFF, gets, 1, [note]),
        Group(
            "tracing-query",
            f"Tracing: query of {len(data):,} items",
            CPU,
            OFF,
            queries,
            len(data),
            [note],
        ),
    ]
