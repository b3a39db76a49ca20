"""grpc.aio variants of ``bench/api_floor.py``: would tms-api's intake be cheaper on asyncio?

``aio-noop``   a grpc.aio server answering NotifyCommit at once (api_bench's no-op on asyncio);
``aio-write``  a grpc.aio server whose NotifyCommit decodes the request, runs the intake's fast
               validation (``tms.api.commits._fast_event``) and awaits a future while a flusher
               task writes everything waiting with one ``commits_notify`` of the real
               PostgreSQL store on a thread: the group commit with no thread hand-off per call,
               and without tms-api's handler stack (authentication, span, metrics, decode
               guard). It needs the ``notify`` variant's database and tables.

Each runs in its own process (``api_floor.py --serve ADDR --variant aio-...``), on the default
asyncio loop in the main thread.
"""

from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from tms.api.server import MAX_MESSAGE_BYTES, SERVICE_NAME
from tms.v1 import tms_pb2

AIO_VARIANTS = ("aio-noop", "aio-write")
MAX_GROUP_EVENTS = 256
FLUSH_THREADS = 1


def _noop() -> Any:
    async def notify(request: tms_pb2.NotifyCommitRequest,
                     context: grpc.aio.ServicerContext) -> tms_pb2.NotifyCommitResponse:
        return tms_pb2.NotifyCommitResponse(duplicate=False)

    return notify


def _writer(dsn: str) -> Any:
    from tms.api.commit_ids import CommitIdChecks
    from tms.api.commits import _fast_event
    from tms.formats.registry import load_formats
    from tms.storage.postgres import PostgresStore

    store = PostgresStore(dsn, max_size=FLUSH_THREADS + 1)
    refused = CommitIdChecks(load_formats()).refused  # the formats' checks, as the API's
    threads = ThreadPoolExecutor(FLUSH_THREADS)
    waiting: list[tuple[Any, asyncio.Future[bool | str | None]]] = []
    flushing = [False]

    async def flush() -> None:
        loop = asyncio.get_running_loop()
        try:
            while waiting:
                group = waiting[:MAX_GROUP_EVENTS]
                del waiting[:MAX_GROUP_EVENTS]
                try:
                    outcomes = await loop.run_in_executor(
                        threads, store.commits_notify, [e for e, _ in group])
                except Exception as e:
                    for _, fut in group:
                        fut.set_exception(e)
                    continue
                for (_, fut), outcome in zip(group, outcomes, strict=True):
                    fut.set_result(outcome)
        finally:
            flushing[0] = False

    async def notify(request: tms_pb2.NotifyCommitRequest,
                     context: grpc.aio.ServicerContext) -> tms_pb2.NotifyCommitResponse:
        event = _fast_event(request, "", refused)
        if event is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "not a fast-path request")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool | str | None] = loop.create_future()
        waiting.append((event, fut))
        if not flushing[0]:
            flushing[0] = True
            loop.create_task(flush())
        outcome = await fut
        if outcome is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, request.table)
        if isinstance(outcome, str):  # the table's format refuses the commit id
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "commit_id")
        return tms_pb2.NotifyCommitResponse(duplicate=not outcome)

    return notify


async def _serve(listen: str, variant: str, dsn: str) -> None:
    notify = _noop() if variant == "aio-noop" else _writer(dsn)
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "NotifyCommit": grpc.unary_unary_rpc_method_handler(
            notify, request_deserializer=tms_pb2.NotifyCommitRequest.FromString,
            response_serializer=tms_pb2.NotifyCommitResponse.SerializeToString)}),))
    if server.add_insecure_port(listen) == 0:
        raise SystemExit(f"cannot listen on {listen}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)


def serve(listen: str, variant: str, dsn: str) -> None:
    """One aio variant's server, until SIGTERM."""
    asyncio.run(_serve(listen, variant, dsn))
