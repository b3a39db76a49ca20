"""Requests of every client method, built once for the sync and the asyncio client alike.

Each builder returns the stub method's name, the request and whether the call may be retried
(see :mod:`tms_client.retry`), so the two clients differ only in how they wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from tms.v1 import tms_pb2
from tms_client.commits import Commit, batch_request, table_name
from tms_client.retry import Safety

OPERATION_NAME_PART = "/operations/"
ALL_TABLES = "tables/-"
QUEUE_PREFIX = "queues/"


@dataclass(frozen=True)
class Call:
    method: str
    request: Message
    safety: Safety


def _ts(when: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(when if when.tzinfo else when.replace(tzinfo=UTC))
    return ts


def register_table(table_id: str, table: tms_pb2.Table, request_id: str | None) -> Call:
    # Without a request id a replay after a lost answer would hit ALREADY_EXISTS (or, worse,
    # register twice after a deregister): only keyed registrations are retried.
    req = tms_pb2.RegisterTableRequest(table_id=table_id, table=table,
                                       request_id=request_id or "")
    return Call("RegisterTable", req, Safety.SAFE if request_id else Safety.UNSAFE)


def get_table(table: str) -> Call:
    return Call("GetTable", tms_pb2.GetTableRequest(name=table_name(table)), Safety.SAFE)


def list_tables(page_size: int, page_token: str, format: str, state: int, owner: str,
                queue: str, catalog: str = "", namespace: str = "", search: str = "",
                max_health: int | None = None, min_health: int | None = None,
                order_by: str = "") -> Call:
    req = tms_pb2.ListTablesRequest(page_size=page_size, page_token=page_token, format=format,
                                    state=state,  # type: ignore[arg-type]
                                    owner=owner, queue=queue, catalog=catalog,
                                    namespace=namespace, search=search, max_health=max_health,
                                    min_health=min_health, order_by=order_by)
    return Call("ListTables", req, Safety.SAFE)


def get_table_history(table: str, start: datetime | None, end: datetime | None) -> Call:
    req = tms_pb2.GetTableHistoryRequest(name=table_name(table))
    if start is not None:
        req.start_time.CopyFrom(_ts(start))
    if end is not None:
        req.end_time.CopyFrom(_ts(end))
    return Call("GetTableHistory", req, Safety.SAFE)


def get_fleet_status() -> Call:
    return Call("GetFleetStatus", tms_pb2.GetFleetStatusRequest(), Safety.SAFE)


def summarize_operations(table: str | None, days: int) -> Call:
    parent = table_name(table) if table else ""
    return Call("SummarizeOperations",
                tms_pb2.SummarizeOperationsRequest(parent=parent, days=days), Safety.SAFE)


def notify_commit(commit: Commit) -> Call:
    # Idempotent on (table, commit id): a replay is acknowledged as a duplicate.
    return Call("NotifyCommit", commit.to_proto(), Safety.SAFE)


def notify_commits(commits: Sequence[Commit]) -> Call:
    return Call("NotifyCommits", batch_request(commits), Safety.SAFE)


def operation_name(table: str, operation: str | int) -> str:
    """``tables/{t}/operations/{id}``; a full name passed as ``operation`` is kept."""
    op = str(operation)
    if OPERATION_NAME_PART in op:
        return op
    return f"{table_name(table)}{OPERATION_NAME_PART}{op}"


def get_operation(name: str) -> Call:
    return Call("GetOperation", tms_pb2.GetOperationRequest(name=name), Safety.SAFE)


def list_operations(table: str | None, page_size: int, page_token: str, state: int,
                    action: str, created_after: datetime | None,
                    created_before: datetime | None) -> Call:
    req = tms_pb2.ListOperationsRequest(
        parent=table_name(table) if table else ALL_TABLES, page_size=page_size,
        page_token=page_token, state=state, action=action)  # type: ignore[arg-type]
    if created_after is not None:
        req.created_after.CopyFrom(_ts(created_after))
    if created_before is not None:
        req.created_before.CopyFrom(_ts(created_before))
    return Call("ListOperations", req, Safety.SAFE)


def explain_table(table: str) -> Call:
    return Call("ExplainTable", tms_pb2.ExplainTableRequest(name=table_name(table)),
                Safety.SAFE)


def trigger_operation(table: str, action: str, params: Mapping[str, str] | None, reason: str,
                      request_id: str | None) -> Call:
    req = tms_pb2.TriggerOperationRequest(parent=table_name(table), action=action,
                                          params=dict(params or {}), reason=reason,
                                          request_id=request_id or "")
    return Call("TriggerOperation", req, Safety.SAFE if request_id else Safety.UNSAFE)


# --- the operator's calls (tms_client.admin) -----------------------------------------------

def update_table(table: tms_pb2.Table, paths: Sequence[str]) -> Call:
    # Absolute values under a field mask: sending the same update twice ends in the same state.
    req = tms_pb2.UpdateTableRequest(table=table)
    req.update_mask.paths.extend(paths)
    return Call("UpdateTable", req, Safety.SAFE)


def deregister_table(table: str, force: bool) -> Call:
    # A replay after a lost answer would report NOT_FOUND for a table that was deregistered.
    return Call("DeregisterTable",
                tms_pb2.DeregisterTableRequest(name=table_name(table), force=force),
                Safety.UNSAFE)


def pause_table(table: str) -> Call:
    return Call("PauseTable", tms_pb2.PauseTableRequest(name=table_name(table)), Safety.SAFE)


def resume_table(table: str) -> Call:
    return Call("ResumeTable", tms_pb2.ResumeTableRequest(name=table_name(table)), Safety.SAFE)


def cancel_operation(name: str) -> Call:
    # Cancelling twice leaves the operation as the first cancel did.
    return Call("CancelOperation", tms_pb2.CancelOperationRequest(name=name), Safety.SAFE)


def retry_operation(name: str) -> Call:
    # Each retry queues a new operation: never sent twice.
    return Call("RetryOperation", tms_pb2.RetryOperationRequest(name=name), Safety.UNSAFE)


def list_queues() -> Call:
    return Call("ListQueues", tms_pb2.ListQueuesRequest(), Safety.SAFE)


def update_queue(queue: str, max_running: int | None) -> Call:
    name = queue if queue.startswith(QUEUE_PREFIX) else QUEUE_PREFIX + queue
    req = tms_pb2.UpdateQueueRequest(name=name)
    if max_running is not None:
        req.max_running = max_running
    return Call("UpdateQueue", req, Safety.SAFE)


# --- catalogs (tms_client.admin) -----------------------------------------------------------

CATALOG_PREFIX = "catalogs/"


def catalog_name(catalog: str) -> str:
    """``lake`` or ``catalogs/lake`` → ``catalogs/lake``."""
    return catalog if catalog.startswith(CATALOG_PREFIX) else CATALOG_PREFIX + catalog


def create_catalog(catalog_id: str, catalog: tms_pb2.Catalog) -> Call:
    # A replay after a lost answer would report ALREADY_EXISTS for the catalog it created.
    req = tms_pb2.CreateCatalogRequest(catalog_id=catalog_id.removeprefix(CATALOG_PREFIX),
                                       catalog=catalog)
    return Call("CreateCatalog", req, Safety.UNSAFE)


def get_catalog(catalog: str) -> Call:
    return Call("GetCatalog", tms_pb2.GetCatalogRequest(name=catalog_name(catalog)),
                Safety.SAFE)


def list_catalogs(page_size: int, page_token: str) -> Call:
    return Call("ListCatalogs", tms_pb2.ListCatalogsRequest(page_size=page_size,
                                                            page_token=page_token), Safety.SAFE)


def update_catalog(catalog: tms_pb2.Catalog, paths: Sequence[str]) -> Call:
    # Absolute values under a field mask: sending the same update twice ends in the same state.
    req = tms_pb2.UpdateCatalogRequest(catalog=catalog)
    req.update_mask.paths.extend(paths)
    return Call("UpdateCatalog", req, Safety.SAFE)


def delete_catalog(catalog: str) -> Call:
    # A replay after a lost answer would report NOT_FOUND for a catalog that was deleted.
    return Call("DeleteCatalog", tms_pb2.DeleteCatalogRequest(name=catalog_name(catalog)),
                Safety.UNSAFE)
