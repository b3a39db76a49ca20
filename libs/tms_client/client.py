"""The synchronous TMS client: one method per API call a writer or an operator needs.

Failures come back as :class:`tms_client.errors.TmsError` subclasses; transient ones are
retried first where that is safe (see :mod:`tms_client.retry`). Tables may be named by id
(``sales.orders``) or resource name (``tables/sales.orders``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_client import calls
from tms_client.admin import AdminMethods
from tms_client.channel import DEFAULT_DEADLINE_S, ClientOptions, TlsOptions
from tms_client.commits import Commit, CommitResult, batch_results, chunks
from tms_client.errors import from_rpc_error
from tms_client.retry import RetryPolicy, RetryState

log = logging.getLogger("tms_client")


class TmsClient(AdminMethods):
    """A client over one gRPC channel; thread-safe, meant to be shared and long-lived.

    The operator's methods (update, deregister, cancel, queues, raw calls) come from
    :class:`tms_client.admin.AdminMethods`.

    ``deadline_s`` bounds each attempt, ``retry`` the attempts and their total time. Pass
    ``channel`` to use a channel built elsewhere (interceptors, custom options).
    """

    def __init__(self, target: str, *, token: str | None = None, tls: TlsOptions | None = None,
                 deadline_s: float = DEFAULT_DEADLINE_S, retry: RetryPolicy | None = None,
                 channel: grpc.Channel | None = None) -> None:
        self.options = ClientOptions(target, token, tls, deadline_s, retry or RetryPolicy())
        self._own_channel = channel is None
        self._channel = channel if channel is not None else self.options.sync_channel()
        self._stub = tms_pb2_grpc.TableManagementServiceStub(self._channel)
        self._metadata = self.options.metadata()

    @classmethod
    def from_tls_files(cls, target: str, root_certs: Path | None = None,
                       client_cert: Path | None = None, client_key: Path | None = None,
                       **kwargs: Any) -> TmsClient:
        return cls(target, tls=TlsOptions.from_files(root_certs, client_cert, client_key),
                   **kwargs)

    def close(self) -> None:
        if self._own_channel:
            self._channel.close()

    def __enter__(self) -> TmsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _future(self, method: str, request: Message, deadline_s: float | None) -> grpc.Future:
        rpc = getattr(self._stub, method)
        future: grpc.Future = rpc.future(request, timeout=deadline_s or self.options.deadline_s,
                                         metadata=self._metadata)
        return future

    def _invoke(self, call: calls.Call, deadline_s: float | None,
                retry: RetryPolicy | None) -> Any:
        state = RetryState(retry or self.options.retry, deadline_s or self.options.deadline_s,
                           call.safety)
        method = getattr(self._stub, call.method)
        while True:
            timeout = state.attempt_timeout_s()
            try:
                return method(call.request, timeout=timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                wait = state.next_wait_s(e.code())  # type: ignore[attr-defined]
                if wait is None:
                    raise from_rpc_error(e) from e
                log.debug("%s failed with %s (attempt %d); retrying in %.2f s", call.method,
                          e.code(), state.attempts, wait)  # type: ignore[attr-defined]
                time.sleep(wait)

    # --- tables -------------------------------------------------------------------------------

    def register_table(self, table_id: str, table: tms_pb2.Table, *,
                       request_id: str | None = None, deadline_s: float | None = None,
                       retry: RetryPolicy | None = None) -> tms_pb2.Table:
        """Registers a table; retried on transient failures only with a ``request_id``."""
        return self._invoke(calls.register_table(table_id, table, request_id), deadline_s, retry)

    def get_table(self, table: str, *, deadline_s: float | None = None,
                  retry: RetryPolicy | None = None) -> tms_pb2.Table:
        return self._invoke(calls.get_table(table), deadline_s, retry)

    def list_tables(self, *, page_size: int = 0, page_token: str = "", format: str = "",
                    state: int = 0, owner: str = "", queue: str = "",
                    catalog: str = "", namespace: str = "", search: str = "",
                    max_health: int | None = None, min_health: int | None = None,
                    order_by: str = "", deadline_s: float | None = None,
                    retry: RetryPolicy | None = None) -> tms_pb2.ListTablesResponse:
        """One page of tables (ordered by id unless ``order_by`` says otherwise: "health",
        "-health", "last_commit_time", "-last_commit_time"); see :meth:`iter_tables`."""
        call = calls.list_tables(page_size, page_token, format, state, owner, queue, catalog,
                                 namespace, search, max_health, min_health, order_by)
        return self._invoke(call, deadline_s, retry)

    def get_table_history(self, table: str, *, start: datetime | None = None,
                          end: datetime | None = None, deadline_s: float | None = None,
                          retry: RetryPolicy | None = None) -> tms_pb2.TableHistory:
        """A table's figures over time (default: the last 30 days) and operation markers."""
        return self._invoke(calls.get_table_history(table, start, end), deadline_s, retry)

    def get_fleet_status(self, *, deadline_s: float | None = None,
                         retry: RetryPolicy | None = None) -> tms_pb2.FleetStatus:
        return self._invoke(calls.get_fleet_status(), deadline_s, retry)

    def summarize_operations(self, table: str | None = None, *, days: int = 7,
                             deadline_s: float | None = None,
                             retry: RetryPolicy | None = None
                             ) -> tms_pb2.SummarizeOperationsResponse:
        """Finished operations per UTC day, the last ``days`` days (1-90) ending today."""
        return self._invoke(calls.summarize_operations(table, days), deadline_s, retry)

    def iter_tables(self, **filters: Any) -> Iterator[tms_pb2.Table]:
        token = ""
        while True:
            page = self.list_tables(page_token=token, **filters)
            yield from page.tables
            token = page.next_page_token
            if not token:
                return

    def explain_table(self, table: str, *, deadline_s: float | None = None,
                      retry: RetryPolicy | None = None) -> tms_pb2.ExplainTableResponse:
        return self._invoke(calls.explain_table(table), deadline_s, retry)

    # --- commits ------------------------------------------------------------------------------

    def notify_commit(self, table_id: str, commit_id: str, *,
                      commit_time: datetime | None = None, files_added: int | None = None,
                      bytes_added: int | None = None, operation: str = "",
                      deadline_s: float | None = None,
                      retry: RetryPolicy | None = None) -> tms_pb2.NotifyCommitResponse:
        """Tells TMS about one commit; ``.duplicate`` is true for a replay."""
        commit = Commit(table_id, commit_id, commit_time, files_added, bytes_added, operation)
        return self._invoke(calls.notify_commit(commit), deadline_s, retry)

    def notify_commits(self, commits: Iterable[Commit], *, deadline_s: float | None = None,
                       retry: RetryPolicy | None = None) -> list[CommitResult]:
        """Many commits, in calls of at most the API's batch limit, one result per commit.

        An unknown table fails only its own entries (``result.error``). A failed call raises;
        commits of earlier calls are stored by then, and sending all again is harmless.
        """
        results: list[CommitResult] = []
        for chunk in chunks(list(commits)):
            response = self._invoke(calls.notify_commits(chunk), deadline_s, retry)
            results += batch_results(chunk, response)
        return results

    # --- operations ---------------------------------------------------------------------------

    def get_operation(self, name: str, *, table: str = "", deadline_s: float | None = None,
                      retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        """By full name, or by id with ``table``."""
        call = calls.get_operation(calls.operation_name(table, name))
        return self._invoke(call, deadline_s, retry)

    def list_operations(self, table: str | None = None, *, page_size: int = 0,
                        page_token: str = "", state: int = 0, action: str = "",
                        created_after: datetime | None = None,
                        created_before: datetime | None = None,
                        deadline_s: float | None = None,
                        retry: RetryPolicy | None = None) -> tms_pb2.ListOperationsResponse:
        """One page of operations, newest first, of one table or (``table=None``) of all."""
        call = calls.list_operations(table, page_size, page_token, state, action,
                                     created_after, created_before)
        return self._invoke(call, deadline_s, retry)

    def iter_operations(self, table: str | None = None,
                        **filters: Any) -> Iterator[tms_pb2.Operation]:
        token = ""
        while True:
            page = self.list_operations(table, page_token=token, **filters)
            yield from page.operations
            token = page.next_page_token
            if not token:
                return

    def trigger_operation(self, table: str, action: str, *,
                          params: Mapping[str, str] | None = None, reason: str = "",
                          request_id: str | None = None, deadline_s: float | None = None,
                          retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        """Queues an action now; retried on transient failures only with a ``request_id``."""
        call = calls.trigger_operation(table, action, params, reason, request_id)
        return self._invoke(call, deadline_s, retry)
