"""Helpers of the client tests: call counting, server restarts on the same port, DB rows."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import psycopg

from tests.integration.conftest import Api
from tms.api.server import ApiServer
from tms.formats.registry import load_formats
from tms.v1 import tms_pb2
from tms_client.channel import CHANNEL_OPTIONS

RESTART_DELAY_S = 1.0


def iceberg_table(api: Api, namespace: str = "ns", name: str = "events") -> tms_pb2.Table:
    """``namespace.name`` of the API fixture's catalog, created there first (unless the
    identifier is empty: a request meant to be refused)."""
    return api.catalog.pb(namespace, name, create=bool(namespace and name))


def _method(details: Any) -> str:
    method = details.method
    if isinstance(method, bytes):
        method = method.decode()
    return str(method).rsplit("/", 1)[-1]


class CallCounter(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Counts attempts per method as they leave the client (retries included)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any,
                              request: Any) -> Any:
        self.calls[_method(details)] += 1
        return continuation(details, request)


class AioCallCounter(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any,
                                    request: Any) -> Any:
        self.calls[_method(details)] += 1
        return await continuation(details, request)


def counted_channel(address: str) -> tuple[grpc.Channel, CallCounter]:
    counter = CallCounter()
    channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    return grpc.intercept_channel(channel, counter), counter


def start_again(api: Api) -> ApiServer:
    """A new API server on the stopped one's address and database."""
    server = ApiServer(api.store, load_formats(), api.address)
    server.start()
    return server


@contextmanager
def restarted_later(api: Api, delay_s: float = RESTART_DELAY_S) -> Iterator[list[ApiServer]]:
    """Stops the API now and starts a new one on the same port ``delay_s`` later."""
    api.server.stop(0)
    started: list[ApiServer] = []

    def later() -> None:
        time.sleep(delay_s)
        started.append(start_again(api))

    thread = threading.Thread(target=later, daemon=True)
    thread.start()
    try:
        yield started
    finally:
        thread.join()
        for server in started:
            server.stop(0)


def commit_rows(dsn: str, table_id: str) -> list[tuple[Any, ...]]:
    """The commit events stored for a table, as comparable tuples, ordered by commit id."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT e.commit_id, e.commit_time, e.files_added, e.bytes_added, e.operation_type"
            " FROM tms_commit_events e JOIN tms_tables t ON t.id = e.table_pk"
            " WHERE t.table_id = %s ORDER BY e.commit_id", (table_id,)).fetchall()
