"""OpenTelemetry metrics for every process, exported for Prometheus on a /metrics port.

Instruments are made once, on the global meter provider; until a process calls
:func:`configure_metrics` they are OpenTelemetry's no-op proxies, so libraries and tests can
record freely. Names are chosen so the Prometheus exporter's output reads naturally: counters
gain ``_total``, and instruments with unit ``s`` gain ``_seconds``
(``tms_api_request_duration`` becomes ``tms_api_request_duration_seconds``).

Label values are bounded sets (method, status code, action, queue, state, outcome): never a
table id, which would make one series per table.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

METER_NAME = "tms"
METRICS_ENV = "TMS_METRICS_LISTEN"
# Seconds; covers an RPC (ms) and a Spark attempt (minutes to hours) alike.
DURATION_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                      10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0)

_configured = threading.Lock()
_server_started = False


@dataclass(frozen=True)
class Instruments:
    api_requests: metrics.Counter
    api_request_duration: metrics.Histogram
    commits_received: metrics.Counter
    decisions: metrics.Counter
    lease_expiries: metrics.Counter
    attempts_started: metrics.Counter
    attempt_duration: metrics.Histogram
    operations_finished: metrics.Counter
    retries_queued: metrics.Counter
    holds_placed: metrics.Counter


@cache
def instruments() -> Instruments:
    m = metrics.get_meter(METER_NAME)
    return Instruments(
        api_requests=m.create_counter(
            "tms_api_requests", description="API requests by method and status code"),
        api_request_duration=m.create_histogram(
            "tms_api_request_duration", unit="s", description="API request latency by method"),
        commits_received=m.create_counter(
            "tms_commits_received",
            description="commit notifications by result: new, duplicate, unknown_table"),
        decisions=m.create_counter(
            "tms_scheduler_decisions",
            description="scheduler decisions by action and outcome: queued, not_needed, "
                        "already_active, inspection_failed, held"),
        lease_expiries=m.create_counter(
            "tms_lease_expiries",
            description="RUNNING operations whose lease expired, by what the reaper did: "
                        "requeued, failed, cancelled"),
        attempts_started=m.create_counter(
            "tms_attempts_started", description="attempts claimed by executors, by action "
                                                "and queue"),
        attempt_duration=m.create_histogram(
            "tms_attempt_duration", unit="s",
            description="attempt run time by action and outcome"),
        operations_finished=m.create_counter(
            "tms_operations_finished",
            description="operations reaching a final state, by action and state"),
        retries_queued=m.create_counter(
            "tms_retries_queued", description="failed attempts queued again after a backoff"),
        holds_placed=m.create_counter(
            "tms_action_holds_placed",
            description="actions held after failing too often in a row, by action"),
    )


def observe(name: str, description: str,
            read: Callable[[], Iterable[tuple[float, dict[str, str]]]], unit: str = "") -> None:
    """An observable gauge whose values ``read()`` gives at scrape time. A failing read (the
    database is away) reports nothing for that scrape instead of breaking /metrics."""

    def callback(_options: CallbackOptions) -> Iterable[Observation]:
        try:
            return [Observation(value, attrs) for value, attrs in read()]
        except Exception:  # scrape time: never let one source break the endpoint
            return []

    metrics.get_meter(METER_NAME).create_observable_gauge(
        name, callbacks=[callback], unit=unit, description=description)


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--metrics-listen: expected host:port, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def configure_metrics(process: str, listen: str | None) -> int | None:
    """Install the SDK meter provider with a Prometheus reader and serve /metrics on
    ``listen`` (host:port; port 0 picks a free one). Returns the port, or None when off."""
    global _server_started
    if not listen:
        return None
    host, port = parse_listen(listen)
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource
    from prometheus_client import start_http_server

    with _configured:
        if _server_started:
            raise RuntimeError("metrics are already configured in this process")
        provider = MeterProvider(
            metric_readers=[PrometheusMetricReader()],
            resource=Resource.create({"service.name": process}),
            views=[View(instrument_name="*_duration",
                        aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS_S))])
        metrics.set_meter_provider(provider)
        server, _thread = start_http_server(port, addr=host)
        _server_started = True
        return int(server.server_port)
