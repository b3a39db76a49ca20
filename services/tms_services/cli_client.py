"""The ``tms`` CLI's connection to ``tms-api``: channel, credentials, deadline, paging, names.

One channel per command: the CLI is short-lived, and a fresh channel fails fast (UNAVAILABLE)
when nothing listens instead of waiting for a server to appear, which is what a script wants.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from tms.v1 import tms_pb2_grpc
from tms_services.cli_errors import usage_error

ENV_API = "TMS_API"
ENV_TOKEN = "TMS_TOKEN"
ENV_TLS_CA = "TMS_TLS_CA"
DEFAULT_API = "127.0.0.1:50051"
DEFAULT_TIMEOUT_S = 10.0  # per call; the API answers in milliseconds unless the database is gone
MAX_PAGE_SIZE = 1000  # the API caps page_size here (AIP-158)
DEFAULT_LIST_LIMIT = 100  # rows a list command shows unless --limit / --all

TABLE_PREFIX = "tables/"
QUEUE_PREFIX = "queues/"
OPERATIONS_SEGMENT = "/operations/"


@dataclass
class Client:
    """A stub plus what every call carries: the bearer token and the deadline."""

    stub: tms_pb2_grpc.TableManagementServiceStub
    metadata: tuple[tuple[str, str], ...]
    timeout_s: float

    def call(self, method: str, request: Message) -> Any:
        rpc = getattr(self.stub, method)
        return rpc(request, timeout=self.timeout_s, metadata=self.metadata)


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


def _channel(args: argparse.Namespace) -> grpc.Channel:
    if bool(args.tls_cert) != bool(args.tls_key):
        raise usage_error("--tls-cert and --tls-key go together")
    if not (args.tls_ca or args.tls_cert):
        return grpc.insecure_channel(args.api)
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read(args.tls_ca, "--tls-ca") if args.tls_ca else None,
        private_key=_read(args.tls_key, "--tls-key") if args.tls_key else None,
        certificate_chain=_read(args.tls_cert, "--tls-cert") if args.tls_cert else None)
    return grpc.secure_channel(args.api, creds)


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[Client]:
    if args.timeout_s <= 0:
        raise usage_error("--timeout-s must be positive")
    metadata = (("authorization", f"Bearer {args.token}"),) if args.token else ()
    channel = _channel(args)
    try:
        yield Client(tms_pb2_grpc.TableManagementServiceStub(channel), metadata, args.timeout_s)
    finally:
        channel.close()


def collect(client: Client, method: str, request: Message, field: str,
            limit: int | None) -> tuple[list[Any], str]:
    """Up to ``limit`` items (all if None) of a paged list, and the token to go on from."""
    items: list[Any] = []
    while True:
        want = MAX_PAGE_SIZE if limit is None else min(MAX_PAGE_SIZE, limit - len(items))
        request.page_size = want  # type: ignore[attr-defined]
        page = client.call(method, request)
        items += list(getattr(page, field))[:want]
        token: str = page.next_page_token
        if not token or (limit is not None and len(items) >= limit):
            return items, token
        request.page_token = token  # type: ignore[attr-defined]


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


def table_name(text: str) -> str:
    """``events`` or ``tables/events`` → ``tables/events``."""
    return text if text.startswith(TABLE_PREFIX) else TABLE_PREFIX + text


def operation_name(text: str) -> str:
    """``tables/events/operations/7`` as is, or the short ``events/7``."""
    if text.startswith(TABLE_PREFIX) or text.count("/") != 1:
        return text  # full (or malformed: the server names the field at fault)
    table, op_id = text.split("/")
    return f"{TABLE_PREFIX}{table}{OPERATIONS_SEGMENT}{op_id}"


def queue_name(text: str) -> str:
    return text if text.startswith(QUEUE_PREFIX) else QUEUE_PREFIX + text


def key_value(text: str) -> tuple[str, str]:
    """argparse type of repeatable ``k=v`` options; the value may itself contain ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value
