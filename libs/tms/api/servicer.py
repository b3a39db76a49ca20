"""The TableManagementService servicer: validate, call the store, convert.

Every handler runs inside :func:`_rpc`, which maps ApiError to its status and a lost database
to UNAVAILABLE, so a client never sees INTERNAL for something it or the network did.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
import psycopg
import psycopg_pool
import structlog

from tms.api import convert, pagination
from tms.api import validate as v
from tms.api.errors import ApiError, already_exists, invalid, not_found, unavailable
from tms.domain import CommitEvent, OperationState, TableSpec
from tms.formats.base import TableFormatPlugin
from tms.storage.base import Store
from tms.v1 import tms_pb2, tms_pb2_grpc

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
ALL_TABLES = "-"
_MAX_OP_ID = 2**63 - 1

log = structlog.get_logger("tms.api")
R = TypeVar("R")


def _rpc(fn: Callable[..., R]) -> Callable[..., R]:
    @functools.wraps(fn)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> R:
        try:
            return fn(self, request, context)
        except ApiError as e:
            context.abort_with_status(e.to_status())
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as e:
            log.warning("database unavailable", method=fn.__name__, error=str(e))
            context.abort_with_status(unavailable("database unavailable, retry").to_status())
        raise AssertionError("unreachable")  # abort_with_status always raises

    return wrapper


class TableManagementServicer(tms_pb2_grpc.TableManagementServiceServicer):
    def __init__(self, store: Store, formats: dict[str, TableFormatPlugin]) -> None:
        self._store = store
        self._formats = formats

    # tables ---------------------------------------------------------------------------------
    @_rpc
    def RegisterTable(self, request: tms_pb2.RegisterTableRequest,
                      context: grpc.ServicerContext) -> tms_pb2.Table:
        p: v.Problems = []
        v.pattern(p, "table_id", request.table_id, v.TABLE_ID_RE,
                  "1-63 of a-z 0-9 _ . - starting with a letter")
        if not request.HasField("table"):
            raise invalid([*p, ("table", "required")])
        t = request.table
        spec = TableSpec(
            table_id=request.table_id, format=t.format, catalog=t.catalog,
            namespace=t.namespace, table_name=t.table_name, base_path=t.base_path,
            catalog_properties=dict(t.catalog_properties), owner=t.owner,
            queue=t.queue or "default", priority=t.priority, policy=dict(t.policy),
        )
        self._validate_spec(p, spec)
        if p:
            raise invalid(p)
        rec = self._store.register_table(spec)
        if rec is None:
            raise already_exists(f"tables/{spec.table_id}")
        log.info("table registered", table=rec.table_id, format=rec.format)
        return convert.table_to_pb(rec)

    def _validate_spec(self, p: v.Problems, s: TableSpec) -> None:
        plugin = self._formats.get(s.format)
        if not s.format:
            p.append(("table.format", f"required; one of: {', '.join(sorted(self._formats))}"))
        elif plugin is None:
            p.append(("table.format", f"unknown format {s.format[:40]!r}; "
                                      f"one of: {', '.join(sorted(self._formats))}"))
        v.string(p, "table.catalog", s.catalog)
        v.string(p, "table.namespace", s.namespace)
        v.string(p, "table.table_name", s.table_name)
        v.path(p, "table.base_path", s.base_path)
        if not s.table_name and not s.base_path:
            p.append(("table.table_name", "table_name or base_path is required"))
        v.string_map(p, "table.catalog_properties", s.catalog_properties)
        v.string_map(p, "table.policy", s.policy)
        v.string(p, "table.owner", s.owner, v.MAX_OWNER_LEN)
        v.pattern(p, "table.queue", s.queue, v.QUEUE_RE, "1-63 of a-z 0-9 _ -")
        if not -1000 <= s.priority <= 1000:
            p.append(("table.priority", f"must be between -1000 and 1000, got {s.priority}"))
        if plugin is not None and not p:
            p.extend(plugin.validate(s))

    @_rpc
    def GetTable(self, request: tms_pb2.GetTableRequest,
                 context: grpc.ServicerContext) -> tms_pb2.Table:
        p: v.Problems = []
        table_id = v.table_name(p, "name", request.name)
        if p:
            raise invalid(p)
        rec = self._store.get_table(table_id)
        if rec is None:
            raise not_found(request.name)
        return convert.table_to_pb(rec)

    @_rpc
    def ListTables(self, request: tms_pb2.ListTablesRequest,
                   context: grpc.ServicerContext) -> tms_pb2.ListTablesResponse:
        p: v.Problems = []
        size = v.page_size(p, request.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        v.string(p, "format", request.format, 32)
        v.string(p, "page_token", request.page_token, v.MAX_PAGE_TOKEN_LEN)
        query = {"m": "tables", "format": request.format}
        after = self._token(p, request.page_token, query, str, "")
        if p:
            raise invalid(p)
        rows = self._store.list_tables(after, size + 1, request.format or None)
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, rows[-1].table_id) if more else ""
        return tms_pb2.ListTablesResponse(tables=[convert.table_to_pb(r) for r in rows],
                                          next_page_token=token)

    @staticmethod
    def _token(p: v.Problems, token: str, query: dict[str, Any], key_type: type,
               default: Any) -> Any:
        if not token or p:
            return default
        try:
            return pagination.decode(token, query, key_type)
        except pagination.BadPageToken as e:
            p.append(("page_token", str(e)))
            return default

    # commits --------------------------------------------------------------------------------
    @_rpc
    def NotifyCommit(self, request: tms_pb2.NotifyCommitRequest,
                     context: grpc.ServicerContext) -> tms_pb2.NotifyCommitResponse:
        p: v.Problems = []
        table_id = v.table_name(p, "table", request.table)
        v.string(p, "commit_id", request.commit_id, v.MAX_COMMIT_ID_LEN, required=True)
        commit_time = None
        if request.HasField("commit_time"):
            commit_time = v.timestamp(p, "commit_time", request.commit_time)
        st = request.stats
        if st.files_added < 0:
            p.append(("stats.files_added", "must not be negative"))
        if st.bytes_added < 0:
            p.append(("stats.bytes_added", "must not be negative"))
        v.string(p, "stats.operation", st.operation, v.MAX_OPERATION_TYPE_LEN)
        if p:
            raise invalid(p)
        has_stats = request.HasField("stats")
        (outcome,) = self._store.notify_commits([CommitEvent(
            table_id=table_id, commit_id=request.commit_id, commit_time=commit_time,
            files_added=st.files_added if has_stats else None,
            bytes_added=st.bytes_added if has_stats else None, operation_type=st.operation,
        )])
        if outcome is None:
            raise not_found(request.table)
        return tms_pb2.NotifyCommitResponse(duplicate=not outcome)

    # operations -----------------------------------------------------------------------------
    @_rpc
    def GetOperation(self, request: tms_pb2.GetOperationRequest,
                     context: grpc.ServicerContext) -> tms_pb2.Operation:
        p: v.Problems = []
        table_id, op_id = v.operation_name(p, "name", request.name)
        if p:
            raise invalid(p)
        op = self._store.get_operation(table_id, op_id)
        if op is None:
            raise not_found(request.name)
        return convert.operation_to_pb(op)

    @_rpc
    def ListOperations(self, request: tms_pb2.ListOperationsRequest,
                       context: grpc.ServicerContext) -> tms_pb2.ListOperationsResponse:
        p: v.Problems = []
        table_id: str | None = None
        if request.parent != f"tables/{ALL_TABLES}":
            table_id = v.table_name(p, "parent", request.parent) or None
        size = v.page_size(p, request.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        state: OperationState | None = None
        if request.state not in tms_pb2.Operation.State.values():
            p.append(("state", f"unknown state {request.state}"))
        elif request.state:
            state = OperationState(tms_pb2.Operation.State.Name(request.state))
        v.pattern(p, "action", request.action, v.ACTION_RE, "an action name", required=False)
        v.string(p, "page_token", request.page_token, v.MAX_PAGE_TOKEN_LEN)
        query = {"m": "ops", "parent": request.parent, "state": request.state,
                 "action": request.action}
        before = self._token(p, request.page_token, query, int, _MAX_OP_ID)
        if p:
            raise invalid(p)
        if table_id is not None and self._store.get_table(table_id) is None:
            raise not_found(request.parent)
        rows = self._store.list_operations(table_id, state, request.action or None, before,
                                           size + 1)
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, rows[-1].id) if more else ""
        return tms_pb2.ListOperationsResponse(
            operations=[convert.operation_to_pb(o) for o in rows], next_page_token=token)
