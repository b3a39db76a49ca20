"""The ``tms`` CLI's connection to ``tms-api``, through :class:`tms_client.TmsClient`: the
client owns the channel, token, TLS and error mapping; this module turns the global options
into one client, pages through lists and normalises names.

One channel per command and one attempt per call (no retries): the CLI is short-lived, and a
call to a port where nothing listens fails fast (UNAVAILABLE) instead of waiting for a server
to appear, which is what a script (or a person at a terminal) wants.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from tms_client import NO_RETRY, CancelledError, PendingCall, TlsOptions, TmsClient
from tms_services.cli.errors import ENV_TOKEN, usage_error

ENV_API = "TMS_API"
ENV_TLS_CA = "TMS_TLS_CA"
DEFAULT_API = "127.0.0.1:50051"
DEFAULT_TIMEOUT_S = 10.0  # per call; the API answers in milliseconds unless the database is gone
MAX_PAGE_SIZE = 1000  # the API caps page_size here (AIP-158)
DEFAULT_LIST_LIMIT = 100  # rows a list command shows unless --limit / --all

# --api as a URL: the scheme says whether to use TLS; without a port, the scheme's own
PLAIN_SCHEME = "http://"
TLS_SCHEME = "https://"
SCHEME_PORTS = {PLAIN_SCHEME: 80, TLS_SCHEME: 443}

# --created-after "12 hours ago", "2d", "90m": a span back from now (UTC)
SPAN_UNITS_S = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
                "h": 3600, "hr": 3600, "hour": 3600, "d": 86400, "day": 86400,
                "w": 604800, "week": 604800}
_SPAN = re.compile(r"(\d+)\s*([a-z]+)")
_RELATIVE = re.compile(r"(?:(?:\d+)\s*[a-z]+\s*)+(?:ago)?")

TABLE_PREFIX = "tables/"
OPERATIONS_SEGMENT = "/operations/"


class Client:
    """The command's :class:`TmsClient` (``.tms``) plus the call in flight, so a Ctrl-C
    handler can cancel it (:meth:`interrupt`) instead of raising inside gRPC."""

    def __init__(self, tms: TmsClient, api: str) -> None:
        self.tms = tms
        self.api = api
        self.interrupted = False
        self._inflight: PendingCall | None = None

    def call(self, method: str, request: Message) -> Any:
        """One attempt of ``method``, cancellable by :meth:`interrupt` (then it raises
        :class:`tms_client.CancelledError`)."""
        if self.interrupted:
            raise CancelledError(grpc.StatusCode.CANCELLED, f"{method} not sent: interrupted")
        pending = self.tms.start_call(method, request)
        self._inflight = pending
        if self.interrupted:  # the interrupt came between start_call and the line above
            pending.cancel()
        try:
            return pending.result()
        finally:
            self._inflight = None

    def interrupt(self) -> None:
        """Safe in a signal handler of the thread that waits in :meth:`call`: it only sets a
        flag and cancels the call in flight, which makes that wait return at once."""
        self.interrupted = True
        pending = self._inflight
        if pending is not None:
            pending.cancel()


def add_connection_options(p: argparse.ArgumentParser, defaults: bool) -> None:
    """The global options. Added twice: to the top parser with real defaults, and to every
    subcommand with ``SUPPRESS`` so they may also follow the subcommand
    (``tms tables list --json``) without a subparser's default overwriting a value given
    before it."""

    def d(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    g = p.add_argument_group("connection and output")
    g.add_argument("--api", default=d(os.environ.get(ENV_API, DEFAULT_API)), metavar="HOST:PORT",
                   help=f"tms-api address (env {ENV_API}, default {DEFAULT_API})")
    g.add_argument("--token", default=d(os.environ.get(ENV_TOKEN, "")),
                   help=f"bearer token (env {ENV_TOKEN}; prefer the variable: arguments are "
                        "visible to other users in the process list)")
    g.add_argument("--tls-ca", default=d(os.environ.get(ENV_TLS_CA, "")), metavar="PEM",
                   help=f"use TLS, trusting this CA (env {ENV_TLS_CA})")
    g.add_argument("--tls-cert", default=d(""), metavar="PEM",
                   help="client certificate for mutual TLS (with --tls-key)")
    g.add_argument("--tls-key", default=d(""), metavar="PEM", help="client key for mutual TLS")
    g.add_argument("--timeout-s", type=float, default=d(DEFAULT_TIMEOUT_S), metavar="S",
                   help=f"deadline of each call in seconds (default {DEFAULT_TIMEOUT_S:g})")
    g.add_argument("--json", action="store_true", default=d(False),
                   help="print JSON (one document per command) instead of tables")


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise usage_error(f"cannot read {what} {path}: {e.strerror}") from e


def api_target(text: str) -> tuple[str, bool]:
    """``--api`` as gRPC's ``host:port`` target, and whether the URL asked for TLS:
    ``host:port`` as is, ``http://host:port`` plaintext, ``https://host[:port]`` TLS (the
    system's CAs unless ``--tls-ca``); a trailing ``/`` is dropped."""
    target, tls = text.strip(), False
    for scheme, port in SCHEME_PORTS.items():
        if target.lower().startswith(scheme):
            target = target[len(scheme):].rstrip("/")
            tls = scheme == TLS_SCHEME
            if "/" in target:
                raise usage_error(f"--api {text!r}: give HOST:PORT or a URL without a path")
            if not target.rsplit("]", 1)[-1].count(":"):
                target = f"{target}:{port}"
    return target, tls


def _tls(args: argparse.Namespace, url_tls: bool = False) -> TlsOptions | None:
    if bool(args.tls_cert) != bool(args.tls_key):
        raise usage_error("--tls-cert and --tls-key go together")
    if not (args.tls_ca or args.tls_cert):
        return TlsOptions() if url_tls else None
    return TlsOptions(
        root_certs=_read(args.tls_ca, "--tls-ca") if args.tls_ca else None,
        client_cert=_read(args.tls_cert, "--tls-cert") if args.tls_cert else None,
        client_key=_read(args.tls_key, "--tls-key") if args.tls_key else None)


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[Client]:
    if not args.timeout_s > 0:
        raise usage_error("--timeout-s must be positive")
    target, url_tls = api_target(args.api)
    try:
        tms = TmsClient(target, token=args.token or None, tls=_tls(args, url_tls),
                        deadline_s=args.timeout_s, retry=NO_RETRY)
    except ValueError as e:  # an empty --api, a token with a line break
        raise usage_error(str(e)) from e
    try:
        yield Client(tms, target)
    finally:
        tms.close()


def collect(fetch: Callable[[int, str], Any], field: str,
            limit: int | None) -> tuple[list[Any], str]:
    """Up to ``limit`` items (all if None) of a paged list, and the token to go on from;
    ``fetch(page_size, page_token)`` returns one page."""
    items: list[Any] = []
    token = ""
    while True:
        want = MAX_PAGE_SIZE if limit is None else min(MAX_PAGE_SIZE, limit - len(items))
        page = fetch(want, token)
        items += list(getattr(page, field))[:want]
        token = page.next_page_token
        if not token or (limit is not None and len(items) >= limit):
            return items, token


def add_limit_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--limit", type=int, default=DEFAULT_LIST_LIMIT, metavar="N",
                   help=f"show at most N rows (default {DEFAULT_LIST_LIMIT})")
    g.add_argument("--all", action="store_true", help="show every row (pages through)")


def limit_of(args: argparse.Namespace) -> int | None:
    if args.all:
        return None
    if args.limit < 1:
        raise usage_error("--limit must be at least 1")
    return int(args.limit)


def upper(text: str) -> str:
    """argparse type of enum flags (``--state failed``): choices are matched in any case."""
    return text.upper()


def lower(text: str) -> str:
    """argparse type of format and action names, which the API spells in lower case."""
    return text.lower()


def table_name(text: str) -> str:
    """``events`` or ``tables/events`` → ``tables/events``."""
    return text if text.startswith(TABLE_PREFIX) else TABLE_PREFIX + text


def operation_name(text: str) -> str:
    """``tables/events/operations/7`` as is, or the short ``events/7``."""
    if text.startswith(TABLE_PREFIX) or text.count("/") != 1:
        return text  # full (or malformed: the server names the field at fault)
    table, op_id = text.split("/")
    return f"{TABLE_PREFIX}{table}{OPERATIONS_SEGMENT}{op_id}"


def key_value(text: str) -> tuple[str, str]:
    """argparse type of repeatable ``k=v`` options; the value may itself contain ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


TIME_HELP = ("ISO 8601 (UTC unless a zone is given), or a span back from now: "
             "'12 hours ago', '2d', '90m', '1h30m'")


def iso_time(text: str) -> dt.datetime:
    """argparse type: ISO 8601, UTC unless the text names a zone."""
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from e
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def span_s(text: str) -> int | None:
    """Seconds of ``12 hours ago``, ``2d``, ``1h30m``, ``90 minutes``; None if the text is no
    span (an unknown unit, a number without one)."""
    flat = " ".join(text.strip().lower().split())
    if not _RELATIVE.fullmatch(flat):
        return None
    total = 0
    for n, word in _SPAN.findall(flat.removesuffix("ago")):
        unit = word if word in SPAN_UNITS_S else word.removesuffix("s")  # hours, mins
        if unit not in SPAN_UNITS_S:
            return None
        total += int(n) * SPAN_UNITS_S[unit]
    return total


def time_arg(text: str, now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
             ) -> dt.datetime:
    """argparse type of ``--created-after`` and the like: :func:`iso_time`, or a span back
    from ``now`` (:func:`span_s`)."""
    seconds = span_s(text)
    if seconds is not None:
        return now() - dt.timedelta(seconds=seconds)
    try:
        return iso_time(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (ISO 8601 like 2026-11-28T09:00, or a span back from "
            "now like '12 hours ago', '2d', '90m')") from None
