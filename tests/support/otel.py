"""OpenTelemetry's SDK with an in-memory span exporter and metric reader, for telemetry tests.

Nothing here touches OpenTelemetry's global providers: each `Recording` has providers of its
own, handed to sessions through `lsiorm.Telemetry` (and to instrumentors as arguments).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from lsiorm import Telemetry

__all__ = ["CountingHook", "Recording", "otel"]


class Recording:
    """A tracer and a meter provider whose spans and metrics stay in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.telemetry = Telemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def spans(self) -> list[ReadableSpan]:
        """Every finished span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def requests(self) -> list[ReadableSpan]:
        """The spans of DynamoDB requests (kind CLIENT, named DynamoDB.<Operation>)."""
        return [
            s for s in self.spans() if s.kind == SpanKind.CLIENT and s.name.startswith("DynamoDB.")
        ]

    def operations(self) -> list[ReadableSpan]:
        """The spans of session operations (kind INTERNAL, named after the method)."""
        return [s for s in self.spans() if s.kind == SpanKind.INTERNAL]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        """The finished span that is ``span``'s parent, if any."""
        if span.parent is None:
            return None
        return next(
            (s for s in self.spans() if s.context.span_id == span.parent.span_id),
            None,
        )

    def clear(self) -> None:
        """Forget the spans so far (metrics are cumulative: read them as differences)."""
        self.exporter.clear()

    def points(self, name: str) -> list[Any]:
        """The data points of one metric, as the reader collects them now."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found

    def total(self, name: str, **attributes: Any) -> float:
        """The sum of a counter (or the count of a histogram) over points with these attributes."""
        total = 0.0
        for point in self.points(name):
            if all(point.attributes.get(k) == v for k, v in attributes.items()):
                total += getattr(point, "value", None) or getattr(point, "count", 0)
        return total

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


@pytest.fixture
def otel() -> Iterator[Recording]:
    """A `Recording` for one test."""
    recording = Recording()
    yield recording
    recording.shutdown()


class CountingHook:
    """A session hook that counts the requests really sent (answered or failed), by operation."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()

    def after(self, request: Any, response: Any) -> None:
        self.sent[request.operation] += 1

    def error(self, request: Any, error: BaseException) -> None:
        self.sent[request.operation] += 1

    @property
    def total(self) -> int:
        return sum(self.sent.values())
