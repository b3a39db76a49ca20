"""The operator's side of the API on :class:`tms_client.TmsClient`: update, deregister, pause
and resume tables, cancel and retry operations, queue limits, catalogs, and raw calls.

Kept apart from the writer's methods in :mod:`tms_client.client` so that module stays what a
writer reads. ``call`` sends any method of the service by name, with the client's token, TLS,
deadline and error mapping, so a tool never needs its own channel or status parsing.
``start_call`` sends one attempt without waiting, so a caller can cancel it (a Ctrl-C handler
ending a live view while a call is in flight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import grpc
from google.protobuf.message import Message

from tms.v1 import tms_pb2
from tms_client import calls
from tms_client.errors import CancelledError, from_rpc_error
from tms_client.retry import RetryPolicy, Safety


class PendingCall:
    """One attempt of a call in flight: ``result()`` waits for it, ``cancel()`` ends it.

    ``cancel`` may be called from any thread or from a signal handler in the thread that waits
    in ``result``: gRPC guards the call with a re-entrant condition.
    """

    def __init__(self, method: str, future: grpc.Future) -> None:
        self.method = method
        self._future = future

    def cancel(self) -> bool:
        return bool(self._future.cancel())

    def done(self) -> bool:
        return bool(self._future.done())

    def result(self) -> Any:
        """The response, or a :class:`TmsError` (``CancelledError`` once cancelled)."""
        try:
            return self._future.result()
        except grpc.FutureCancelledError as e:
            raise CancelledError(grpc.StatusCode.CANCELLED,
                                 f"{self.method} cancelled by the caller") from e
        except grpc.RpcError as e:
            raise from_rpc_error(e) from e


class AdminMethods:
    """Mixed into TmsClient, which provides ``_invoke`` (retries) and ``_future``."""

    def _invoke(self, call: calls.Call, deadline_s: float | None,
                retry: RetryPolicy | None) -> Any:
        raise NotImplementedError

    def _future(self, method: str, request: Message, deadline_s: float | None) -> grpc.Future:
        raise NotImplementedError

    def call(self, method: str, request: Message, *, safety: Safety = Safety.UNSAFE,
             deadline_s: float | None = None, retry: RetryPolicy | None = None) -> Any:
        """Any RPC of the service by its name (``"ListQueues"``); retried only if ``safety``
        says sending it twice is harmless."""
        return self._invoke(calls.Call(method, request, safety), deadline_s, retry)

    def start_call(self, method: str, request: Message, *,
                   deadline_s: float | None = None) -> PendingCall:
        """One attempt, not waited for and never retried; see :class:`PendingCall`."""
        return PendingCall(method, self._future(method, request, deadline_s))

    def update_table(self, table: str, *, owner: str | None = None, queue: str | None = None,
                     priority: int | None = None, policy: Mapping[str, str] | None = None,
                     deadline_s: float | None = None,
                     retry: RetryPolicy | None = None) -> tms_pb2.Table:
        """Changes only the fields given (a field mask); a map given replaces the whole map.
        Catalog connections are Catalog resources (admin), not table fields."""
        spec = tms_pb2.Table(name=calls.table_name(table))
        paths: list[str] = []
        for path, value in (("owner", owner), ("queue", queue), ("priority", priority)):
            if value is not None:
                setattr(spec, path, value)
                paths.append(path)
        if policy is not None:
            spec.policy.update(policy)
            paths.append("policy")
        if not paths:
            raise ValueError("give at least one field to update")
        return self._invoke(calls.update_table(spec, paths), deadline_s, retry)

    def deregister_table(self, table: str, *, force: bool = False,
                         deadline_s: float | None = None,
                         retry: RetryPolicy | None = None) -> None:
        """Stops maintaining the table; ``force`` even while an operation runs."""
        self._invoke(calls.deregister_table(table, force), deadline_s, retry)

    def pause_table(self, table: str, *, deadline_s: float | None = None,
                    retry: RetryPolicy | None = None) -> tms_pb2.Table:
        return self._invoke(calls.pause_table(table), deadline_s, retry)

    def resume_table(self, table: str, *, deadline_s: float | None = None,
                     retry: RetryPolicy | None = None) -> tms_pb2.Table:
        return self._invoke(calls.resume_table(table), deadline_s, retry)

    def cancel_operation(self, name: str, *, table: str = "", deadline_s: float | None = None,
                         retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        """By full name, or by id with ``table``; a RUNNING one gets a cancel request."""
        call = calls.cancel_operation(calls.operation_name(table, name))
        return self._invoke(call, deadline_s, retry)

    def retry_operation(self, name: str, *, table: str = "", deadline_s: float | None = None,
                        retry: RetryPolicy | None = None) -> tms_pb2.Operation:
        """Queues a new try of a FAILED, CANCELLED or SKIPPED operation (never sent twice)."""
        call = calls.retry_operation(calls.operation_name(table, name))
        return self._invoke(call, deadline_s, retry)

    def list_queues(self, *, deadline_s: float | None = None,
                    retry: RetryPolicy | None = None) -> Sequence[tms_pb2.Queue]:
        return list(self._invoke(calls.list_queues(), deadline_s, retry).queues)

    def update_queue(self, queue: str, max_running: int | None, *,
                     deadline_s: float | None = None,
                     retry: RetryPolicy | None = None) -> tms_pb2.Queue:
        """Limits how many operations of the queue run at once; None removes the limit."""
        return self._invoke(calls.update_queue(queue, max_running), deadline_s, retry)

    # --- catalogs (unscoped admin tokens only) ------------------------------------------------

    def create_catalog(self, catalog_id: str, catalog: tms_pb2.Catalog, *,
                       deadline_s: float | None = None,
                       retry: RetryPolicy | None = None) -> tms_pb2.Catalog:
        """Creates ``catalogs/{catalog_id}``; secrets go in ``catalog.secrets`` as references
        (``env:TMS_SECRET_<NAME>`` or ``file:<name>``), never as values. Never sent twice."""
        return self._invoke(calls.create_catalog(catalog_id, catalog), deadline_s, retry)

    def get_catalog(self, catalog: str, *, deadline_s: float | None = None,
                    retry: RetryPolicy | None = None) -> tms_pb2.Catalog:
        """By id (``lake``) or name (``catalogs/lake``)."""
        return self._invoke(calls.get_catalog(catalog), deadline_s, retry)

    def list_catalogs(self, *, page_size: int = 0, page_token: str = "",
                      deadline_s: float | None = None,
                      retry: RetryPolicy | None = None) -> tms_pb2.ListCatalogsResponse:
        """One page of catalogs, ordered by id."""
        return self._invoke(calls.list_catalogs(page_size, page_token), deadline_s, retry)

    def update_catalog(self, catalog: str, *, properties: Mapping[str, str] | None = None,
                       secrets: Mapping[str, str] | None = None,
                       storage_options: Mapping[str, str] | None = None,
                       allowed_locations: Sequence[str] | None = None,
                       allowed_owners: Sequence[str] | None = None,
                       allowed_tokens: Sequence[str] | None = None,
                       discovery: tms_pb2.CatalogDiscovery | None = None,
                       default_policy: Mapping[str, str] | None = None,
                       deadline_s: float | None = None,
                       retry: RetryPolicy | None = None) -> tms_pb2.Catalog:
        """Changes only the fields given (a field mask); a map or list given replaces it
        whole, and so does ``discovery``."""
        spec = tms_pb2.Catalog(name=calls.catalog_name(catalog))
        paths: list[str] = []
        for path, mapping in (("properties", properties), ("secrets", secrets),
                              ("storage_options", storage_options),
                              ("default_policy", default_policy)):
            if mapping is not None:
                getattr(spec, path).update(mapping)
                paths.append(path)
        for path, items in (("allowed_locations", allowed_locations),
                            ("allowed_owners", allowed_owners),
                            ("allowed_tokens", allowed_tokens)):
            if items is not None:
                getattr(spec, path).extend(items)
                paths.append(path)
        if discovery is not None:
            spec.discovery.CopyFrom(discovery)
            paths.append("discovery")
        if not paths:
            raise ValueError("give at least one field to update")
        return self._invoke(calls.update_catalog(spec, paths), deadline_s, retry)

    def delete_catalog(self, catalog: str, *, deadline_s: float | None = None,
                       retry: RetryPolicy | None = None) -> None:
        """Removes a catalog no table uses (FailedPreconditionError while tables do)."""
        self._invoke(calls.delete_catalog(catalog), deadline_s, retry)
