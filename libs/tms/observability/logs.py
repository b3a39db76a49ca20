"""Logging set-up shared by every process: structlog, JSON lines on stderr, context bound per
table / operation / attempt by the callers."""

from __future__ import annotations

import logging
import os
import sys

import structlog

from tms.observability.tracing import TRACES_ENV, add_trace_ids, configure_tracing

LOG_LEVEL_ENV = "TMS_LOG_LEVEL"


def configure_logging(process: str) -> None:
    """JSON logs with the process, and the trace and span ids of the current span, on every
    line; also installs the tracer provider (``TMS_TRACES_EXPORTER``) so those ids exist."""
    try:
        configure_tracing(process, os.environ.get(TRACES_ENV))
    except ValueError as e:
        sys.exit(f"{process}: {e}")
    level = getattr(logging, os.environ.get(LOG_LEVEL_ENV, "INFO").upper(), logging.INFO)
    logging.basicConfig(stream=sys.stderr, level=level, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_trace_ids,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(process=process, pid=os.getpid())
