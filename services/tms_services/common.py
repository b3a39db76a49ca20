"""What every TMS process shares: settings from flags or environment, signal handling, and
one clear line (not a traceback) when the database or ZooKeeper cannot be reached at start-up.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import psycopg
from kazoo.handlers.threading import KazooTimeoutError
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import PoolTimeout

from tms.observability.metrics import METRICS_ENV, configure_metrics

ENV_DATABASE_URL = "TMS_DATABASE_URL"
ENV_ZOOKEEPER = "TMS_ZOOKEEPER_HOSTS"
EXIT_UNREACHABLE = 1  # what orchestrators see: the pod restarts and tries again
DB_CONNECT_TIMEOUT_S = 5  # libpq's connect_timeout for the start-up check (whole seconds)

RETRY_CHATTER_LOGGERS = ("kazoo",)  # log every connection attempt while starting

T = TypeVar("T")


class Unreachable(Exception):
    """A service the process cannot work without did not answer; the message says which."""


def database_address(dsn: str) -> str:
    """``host:port/dbname`` of a PostgreSQL URL or DSN, never its user or password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "(unparsable --database-url)"
    return f"{info.get('host', 'localhost')}:{info.get('port', '5432')}/{info.get('dbname', '')}"


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__


def check_database(dsn: str) -> None:
    """Connect once, so a wrong URL or a database that is down fails the start (with the
    server's own reason) instead of the pool retrying in the background forever."""
    try:
        psycopg.connect(dsn, connect_timeout=DB_CONNECT_TIMEOUT_S).close()
    except psycopg.Error as e:
        raise Unreachable(f"cannot reach the database at {database_address(dsn)}: "
                          f"{first_line(e)}") from e


@contextmanager
def reaching(what: str, quiet: tuple[str, ...] = RETRY_CHATTER_LOGGERS) -> Iterator[None]:
    """Connection failures inside the block become :class:`Unreachable` naming ``what``.

    The ``quiet`` loggers are held to errors inside the block: a client library's line per
    reconnect attempt would bury the one line that says what is wrong.
    """
    levels = {name: logging.getLogger(name).level for name in quiet}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    except (KazooTimeoutError, psycopg.OperationalError, PoolTimeout) as e:
        raise Unreachable(f"cannot reach {what}: {first_line(e)}") from e
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def exit_if_unreachable(process: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorates a service's main: :class:`Unreachable` ends the process with one line on
    stderr (``tms-api: cannot reach the database at ...``) and exit code 1."""

    def wrap(main: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(main)
        def run(*args: object, **kwargs: object) -> T:
            try:
                return main(*args, **kwargs)
            except Unreachable as e:
                print(f"{process}: {e}", file=sys.stderr)
                sys.exit(EXIT_UNREACHABLE)
        return run
    return wrap


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


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_event_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT, so loops finish their step and exit cleanly.

    The event is set by a watcher thread woken through the interpreter's signal wake-up fd,
    never from the Python-level handler itself, for two reasons found on a loaded machine:
    the kernel may deliver the signal to one of gRPC's threads, and then a main thread blocked
    in ``Event.wait()`` without a timeout never runs the handler; and a handler that calls
    ``Event.set()`` while the main thread is inside that event's own ``wait()`` (holding its
    condition lock) deadlocks. The C-level handler writes the wake-up fd from whichever thread
    received the signal, so the watcher always sees it.
    """
    stop = threading.Event()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    wanted = {int(s) for s in STOP_SIGNALS}

    def _watch() -> None:
        while True:
            received = os.read(read_fd, 64)
            if not received or wanted & set(received):
                stop.set()
                return

    def _handler(signum: int, _frame: object) -> None:
        """Installed so the default action (terminate at once) does not apply; the watcher
        thread sets the event."""

    for signum in STOP_SIGNALS:
        signal.signal(signum, _handler)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch, name="tms-stop-signals", daemon=True).start()
    return stop
