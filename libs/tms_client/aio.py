"""The asyncio TMS client (grpc.aio): the same methods, retries and errors as TmsClient.

For writers that already run an event loop (async ingestion services, catalog servers);
waiting between retries is ``asyncio.sleep``, so a retrying call never blocks the loop.
Create and use it inside one running event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any

import grpc

from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_client import calls
from tms_client.channel import DEFAULT_DEADLINE_S, ClientOptions, TlsOptions
from tms_client.commits import Commit, CommitResult, batch_results, chunks
from tms_client.errors import from_rpc_error
from tms_client.retry import RetryPolicy, RetryState

log = logging.getLogger("tms_client")


class AsyncTmsClient:
    """See :class:`tms_client.client.TmsClient`; every method is a coroutine here."""

    def __init__(self, target: str, *, token: str | None = None, tls: TlsOptions | None = None,
                 deadline_s: float = DEFAULT_DEADLINE_S, retry: RetryPolicy | None = None,
                 channel: grpc.aio.Channel | None = None) -> None:
        self.options = ClientOptions(target, token, tls, deadline_s, retry or RetryPolicy())
        self._own_channel = channel is None
        self._channel = channel if channel is not None else self.options.aio_channel()
        self._stub = tms_pb2_grpc.TableManagementServiceStub(self._channel)
        self._metadata = self.options.metadata()

    async def close(self) -> None:
        if self._own_channel:
            await self._channel.close()

    async def __aenter__(self) -> AsyncTmsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _invoke(self, call: calls.Call, deadline_s: float | None,
                      retry: RetryPolicy | None) -> Any:
        state = RetryState(retry or self.options.retry, deadline_s or self.options.deadline_s,
                           call.safety)
        method = getattr(self._stub, call.method)
        while True:
            timeout = state.attempt_timeout_s()
            try:
                return await method(call.request, timeout=timeout, metadata=self._metadata)
            except grpc.aio.AioRpcError as e:
                wait = state.next_wait_s(e.code())
                if wait is None:
                    raise from_rpc_error(e) from e
                log.debug("%s failed with %s (attempt %d); retrying in %.2f s", call.method,
                          e.code(), state.attempts, wait)
                await asyncio.sleep(wait)

    async def register_table(self, table_id: str, table: tms_pb2.Table, *,
                             request_id: str | None = None, deadline_s: float | None = None,
                             retry: RetryPolicy | None = None) -> tms_pb2.Table:
        call = calls.register_table(table_id, table, request_id)
        return await self._invoke(call, deadline_s, retry)

    async def get_table(self, table: str, *, deadline_s: float | None = None,
                        retry: RetryPolicy | None = None) -> tms_pb2.Table:
        return await self._invoke(calls.get_table(table), deadline_s, retry)

    async def list_tables(self, *, page_size: int = 0, page_token: str = "", format: str = "",
                          state: int = 0, owner: str = "", queue: str = "",
                          catalog: str = "", deadline_s: float | None = None,
                          retry: RetryPolicy | None = None) -> tms_pb2.ListTablesResponse:
        call = calls.list_tables(page_size, page_token, format, state, owner, queue, catalog)
        return await self._invoke(call, deadline_s, retry)

    async def iter_tables(self, **filters: Any) -> AsyncIterator[tms_pb2.Table]:
        token = ""
        while True:
            page = await self.list_tables(page_token=token, **filters)
            for table in page.tables:
                yield table
            token = page.next_page_token
            if not token:
                return

    async def explain_table(self, table: str, *, deadline_s: float | None = None,
                            retry: RetryPolicy | None = None) -> tms_pb2.ExplainTableResponse:
        return await self._invoke(calls.explain_table(table), deadline_s, retry)

    async def notify_commit(self, table_id: str, commit_id: str, *,
                            commit_time: datetime | None = None,
                            files_added: int | None = None, bytes_added: int | None = None,
                            operation: str = "", deadline_s: float | None = None,
                            retry: RetryPolicy | None = None) -> tms_pb2.NotifyCommitResponse:
        commit = Commit(table_id, commit_id, commit_time, files_added, bytes_added, operation)
        return await self._invoke(calls.notify_commit(commit), deadline_s, retry)

    async def notify_commits(self, commits: Iterable[Commit], *,
                             deadline_s: float | None = None,
                             retry: RetryPolicy | None = None) -> list[CommitResult]:
        results: list[CommitResult] = []
        for chunk in chunks(list(commits)):
            response = await self._invoke(calls.notify_commits(chunk), deadline_s, retry)
            results += batch_results(chunk, response)
        return results

    async def get_operation(self, name: str, *, table: str = "",
                            deadline_s: float | None = None,
                            retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        call = calls.get_operation(calls.operation_name(table, name))
        return await self._invoke(call, deadline_s, retry)

    async def list_operations(self, table: str | None = None, *, page_size: int = 0,
                              page_token: str = "", state: int = 0, action: str = "",
                              created_after: datetime | None = None,
                              created_before: datetime | None = None,
                              deadline_s: float | None = None,
                              retry: RetryPolicy | None = None
                              ) -> tms_pb2.ListOperationsResponse:
        call = calls.list_operations(table, page_size, page_token, state, action,
                                     created_after, created_before)
        return await self._invoke(call, deadline_s, retry)

    async def trigger_operation(self, table: str, action: str, *,
                                params: Mapping[str, str] | None = None, reason: str = "",
                                request_id: str | None = None, deadline_s: float | None = None,
                                retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        call = calls.trigger_operation(table, action, params, reason, request_id)
        return await self._invoke(call, deadline_s, retry)
