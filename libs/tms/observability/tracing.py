"""Traces: one that follows a commit from NotifyCommit through the scheduler's decision to the
executor's attempt.

The processes never call each other, so the W3C trace context travels in the database: the
API stores the notification's ``traceparent`` with the table's "new commits" mark, the
scheduler continues that trace in its decision span and stores the decision's context on the
operation it queues, and the executor's attempt span continues from there. A writer that sends
``traceparent`` gRPC metadata gets the whole story inside its own trace.

Every service installs the SDK tracer provider, so trace ids exist (and appear in every log
line, see :func:`add_trace_ids`) even with no exporter; ``TMS_TRACES_EXPORTER`` picks one:
``none`` (default), ``otlp`` (needs the optional ``opentelemetry-exporter-otlp-proto-grpc``
package; configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables) or ``jsonl:PATH``
(one JSON span per line, for tests and debugging).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACES_ENV = "TMS_TRACES_EXPORTER"
TRACER_NAME = "tms"
_propagator = TraceContextTextMapPropagator()
_ids = random.Random()
# "quiet" once configure_tracing installed the SDK with no exporter: spans then only carry ids
_mode = {"tracing": "unconfigured"}


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def quiet() -> bool:
    """True when this process has trace ids but sends spans nowhere (``none`` exporter):
    a per-request span need not be recorded, only its ids (see :func:`quiet_span`)."""
    return _mode["tracing"] == "quiet"


def unconfigured() -> bool:
    """True when this process never installed the SDK (``configure_tracing``): spans are the
    API's no-op ones, which only pass the parent's context on."""
    return _mode["tracing"] == "unconfigured"


def quiet_span(parent: Context | None) -> trace.Span:
    """A span that records nothing but has the ids a recorded one would: the caller's trace
    id, flags and state (or a new sampled trace) and a new span id, so log lines and the
    stored ``traceparent`` read as with the SDK's default sampler; a fraction of the SDK
    span's cost on the API's hot path."""
    span_id = _ids.getrandbits(64) or 1
    if parent is not None:
        ctx = trace.get_current_span(parent).get_span_context()
        if ctx.is_valid:
            return trace.NonRecordingSpan(trace.SpanContext(
                ctx.trace_id, span_id, is_remote=False, trace_flags=ctx.trace_flags,
                trace_state=ctx.trace_state))
    return trace.NonRecordingSpan(trace.SpanContext(
        _ids.getrandbits(128) or 1, span_id, is_remote=False,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))


def current_traceparent() -> str | None:
    """The current span's context as a W3C ``traceparent`` value, or None without a span."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


def context_from(traceparent: str | None) -> Context | None:
    """A parent context from a stored ``traceparent``; None (start a new trace) if absent or
    malformed."""
    if not traceparent:
        return None
    ctx = _propagator.extract({"traceparent": traceparent})
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def context_from_metadata(metadata: Iterable[tuple[str, str | bytes]] | None) -> Context | None:
    """The caller's trace context from gRPC metadata (``traceparent``/``tracestate``)."""
    carrier = {k.lower(): v for k, v in (metadata or ()) if isinstance(v, str)}
    return context_from(carrier.get("traceparent"))


def add_trace_ids(_logger: Any, _method: str, event: MutableMapping[str, Any]
                  ) -> MutableMapping[str, Any]:
    """structlog processor: the current trace and span ids on every log line."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event.setdefault("trace_id", format(ctx.trace_id, "032x"))
        event.setdefault("span_id", format(ctx.span_id, "016x"))
    return event


class JsonLinesSpanExporter:
    """Writes each finished span as one JSON line (name, ids, parent, times, attributes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        lines = []
        for s in spans:
            ctx, parent = s.get_span_context(), s.parent
            lines.append(json.dumps({
                "name": s.name, "trace_id": format(ctx.trace_id, "032x"),
                "span_id": format(ctx.span_id, "016x"),
                "parent_span_id": format(parent.span_id, "016x") if parent else None,
                "start_ns": s.start_time, "end_ns": s.end_time,
                "service": s.resource.attributes.get("service.name"),
                "attributes": dict(s.attributes or {}),
                "status": s.status.status_code.name,
            }, default=str))
        with self._lock, self.path.open("a") as f:
            f.write("".join(line + "\n" for line in lines))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def configure_tracing(process: str, exporter: str | None,
                      environ: Mapping[str, str] | None = None) -> None:
    """Install the SDK tracer provider for this process, with the chosen exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": process}))
    choice = (exporter or "none").strip()
    if choice.startswith("jsonl:"):
        provider.add_span_processor(SimpleSpanProcessor(
            JsonLinesSpanExporter(Path(choice[len("jsonl:"):]))))  # type: ignore[arg-type]
    elif choice == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ValueError(f"{TRACES_ENV}=otlp needs the opentelemetry-exporter-otlp-proto-"
                             "grpc package") from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif choice != "none":
        raise ValueError(f"{TRACES_ENV}: expected none, otlp or jsonl:PATH, got {choice!r}")
    trace.set_tracer_provider(provider)
    _mode["tracing"] = "quiet" if choice == "none" else "exporting"
