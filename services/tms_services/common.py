"""What every TMS process shares: settings from flags or environment, signal handling."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading

from tms.telemetry import METRICS_ENV, configure_metrics

ENV_DATABASE_URL = "TMS_DATABASE_URL"
ENV_ZOOKEEPER = "TMS_ZOOKEEPER_HOSTS"


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--database-url", default=os.environ.get(ENV_DATABASE_URL),
                   help=f"PostgreSQL URL (env {ENV_DATABASE_URL})")
    p.add_argument("--metrics-listen", default=os.environ.get(METRICS_ENV, ""),
                   help=f"serve Prometheus /metrics on host:port (env {METRICS_ENV}; "
                        "default off)")
    return p


def start_metrics(process: str, parser: argparse.ArgumentParser, listen: str) -> None:
    try:
        configure_metrics(process, listen or None)
    except (ValueError, OSError) as e:
        parser.error(f"--metrics-listen: {e}")


def require(args: argparse.Namespace, parser: argparse.ArgumentParser, *names: str) -> None:
    for name in names:
        if not getattr(args, name):
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag} is required (or its environment variable)")


def member_id(prefix: str) -> str:
    return f"{prefix}-{socket.gethostname()}-{os.getpid()}"


def stop_event_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT, so loops finish their step and exit cleanly."""
    stop = threading.Event()

    def _handler(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    return stop
