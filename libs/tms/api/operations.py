"""Operation RPCs: get, list, cancel, retry, trigger, and ExplainTable ("why / why not")."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc

from tms.api import convert, pagination
from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    MAX_REQUEST_ID_LEN,
    ServicerBase,
    log,
    rpc,
)
from tms.api.convert import read_profile_message
from tms.api.errors import ApiError, invalid, not_found
from tms.domain import Operation, OperationState, Table, TableState
from tms.policy.common import effective_policy, in_force, max_attempts
from tms.storage.roles import EnqueueParams, OperationListParams
from tms.v1 import tms_pb2

ALL_TABLES = "-"
MAX_OP_ID = 2**63 - 1
RETRYABLE = (OperationState.FAILED, OperationState.CANCELLED, OperationState.SKIPPED)
# finished for good: a cancel has nothing to stop (CANCELLED again is acknowledged)
NOT_CANCELLABLE = (OperationState.SUCCEEDED, OperationState.FAILED, OperationState.SKIPPED)


def _precondition(message: str, reason: str, **metadata: str) -> ApiError:
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION, message, reason, metadata=metadata)


def _exists(table: Table, action: str, op_id: int) -> ApiError:
    name = f"tables/{table.table_id}/operations/{op_id}"
    return ApiError(grpc.StatusCode.ALREADY_EXISTS,
                    f"{name} is already active for {action} on tables/{table.table_id}",
                    "OPERATION_ACTIVE", metadata={"operation": name})


class OperationsMixin(ServicerBase):
    def _op(self, name: str, principal: Principal) -> tuple[Table, Operation]:
        p: v.Problems = []
        table_id, op_id = v.operation_name(p, "name", name)
        if p:
            raise invalid(p)
        table = self.load_table(table_id, principal, name).table
        op = self.store.operation_get(table_id, op_id)
        if op is None:
            raise not_found(name)
        return table, op

    @rpc
    def GetOperation(self, request: tms_pb2.GetOperationRequest, context: grpc.ServicerContext,
                     principal: Principal) -> tms_pb2.Operation:
        return convert.operation_to_pb(self._op(request.name, principal)[1])

    @rpc
    def ListOperations(self, request: tms_pb2.ListOperationsRequest,
                       context: grpc.ServicerContext,
                       principal: Principal) -> tms_pb2.ListOperationsResponse:
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
        after: datetime | None = None
        before: datetime | None = None
        if request.HasField("created_after"):
            after = v.timestamp(p, "created_after", request.created_after)
        if request.HasField("created_before"):
            before = v.timestamp(p, "created_before", request.created_before)
        query = {"m": "ops", "parent": request.parent, "state": request.state,
                 "action": request.action, "after": str(after), "before": str(before)}
        before_id = self.page_token(p, request.page_token, query, int, MAX_OP_ID,
                                    lambda k: 0 < k <= MAX_OP_ID)
        if p:
            raise invalid(p)
        if table_id is not None:
            self.load_table(table_id, principal, request.parent)
        rows = self.store.operation_list(OperationListParams(
            table_id, state, request.action or None, before_id, size + 1, after, before))
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, rows[-1].id) if more else ""
        if principal.scoped and table_id is None:
            owners = self.store.table_owners(sorted({r.table_id for r in rows}))
            rows = [r for r in rows if principal.allows(r.table_id, owners.get(r.table_id))]
        return tms_pb2.ListOperationsResponse(
            operations=[convert.operation_to_pb(o, with_logs=False) for o in rows],
            next_page_token=token)

    @rpc
    def CancelOperation(self, request: tms_pb2.CancelOperationRequest,
                        context: grpc.ServicerContext,
                        principal: Principal) -> tms_pb2.Operation:
        table, op = self._op(request.name, principal)
        if op.state is OperationState.QUEUED and not self.store.operation_cancel_queued(
                op.id, f"cancelled by {principal.name}"):
            op = self._op(request.name, principal)[1]  # it started meanwhile
        if op.state is OperationState.RUNNING:
            self.store.operation_request_cancel(op.id)
        elif op.state in NOT_CANCELLABLE:
            raise _precondition(f"{request.name} already ended {op.state.value}",
                                "OPERATION_FINISHED", operation=request.name)
        log.info("operation cancel", operation=op.id, table=table.table_id,
                 principal=principal.name)
        return convert.operation_to_pb(self._op(request.name, principal)[1])

    def _check_active(self, table: Table) -> None:
        if table.state is TableState.PAUSED:
            raise _precondition(f"tables/{table.table_id} is paused; resume it first",
                                "TABLE_PAUSED", table=f"tables/{table.table_id}")

    @rpc
    def RetryOperation(self, request: tms_pb2.RetryOperationRequest,
                       context: grpc.ServicerContext, principal: Principal) -> tms_pb2.Operation:
        table, op = self._op(request.name, principal)
        if op.state not in RETRYABLE:
            raise _precondition(f"only FAILED, CANCELLED or SKIPPED operations can be retried; "
                                f"{request.name} is {op.state.value}", "NOT_RETRYABLE",
                                operation=request.name)
        self._check_active(table)
        plugin = self.formats.get(table.format)
        bad = plugin.check_params(op.action, {k: str(x) for k, x in op.work.params.items()}) \
            if plugin else []
        if bad:  # stored before the schema tightened: a retry would fail the same way
            raise _precondition(f"{request.name} carries parameters no longer accepted: "
                                + "; ".join(f"{f}: {w}" for f, w in bad), "INVALID_PARAMS",
                                operation=request.name)
        new_id = self.store.operation_enqueue(EnqueueParams(
            table, op.action, "retry", f"retry of {op.name} (by {principal.name})",
            op.lease.max_attempts, op.priority, params=dict(op.work.params), retry_of=op.id,
            benefit=op.work.benefit))
        if new_id is None:
            raise _exists(table, op.action,
                          self.store.operation_active(table.pk, op.action) or 0)
        return self._fetch(table, new_id)

    def _fetch(self, table: Table, op_id: int) -> tms_pb2.Operation:
        op = self.store.operation_get(table.table_id, op_id)
        if op is None:
            raise not_found(f"tables/{table.table_id}/operations/{op_id}")
        return convert.operation_to_pb(op)

    def _catalog_policy(self, table: Table) -> dict[str, str]:
        """The default policy of the table's catalog (empty if the catalog is gone)."""
        catalog = self.store.catalog_get(table.catalog)
        return dict(catalog.spec.default_policy) if catalog is not None else {}

    def _policy_in_force(self, table: Table) -> dict[str, str]:
        """The table's policy over its catalog's default, as the scheduler applies it."""
        plugin = self.formats.get(table.format)
        return in_force(plugin.policy_keys if plugin else {}, table.policy,
                        self._catalog_policy(table))

    @rpc
    def TriggerOperation(self, request: tms_pb2.TriggerOperationRequest,
                         context: grpc.ServicerContext,
                         principal: Principal) -> tms_pb2.Operation:
        p: v.Problems = []
        table_id = v.table_name(p, "parent", request.parent)
        v.pattern(p, "action", request.action, v.ACTION_RE, "an action name")
        v.string_map(p, "params", request.params)
        v.string(p, "reason", request.reason)
        v.string(p, "request_id", request.request_id, MAX_REQUEST_ID_LEN)
        if p:
            raise invalid(p)
        table = self.load_table(table_id, principal, request.parent).table
        plugin = self.formats.get(table.format)
        if plugin is None or request.action not in plugin.actions:
            known = ", ".join(plugin.actions) if plugin else ""
            raise invalid([("action", f"{table.format} tables support: {known}")])
        bad_params = plugin.check_params(request.action, request.params)
        if bad_params:
            raise invalid(bad_params)
        self._check_active(table)
        if request.request_id:
            earlier = self.replay(request.request_id, "TriggerOperation", request)
            if earlier is not None:
                return convert.operation_to_pb(self._op(earlier, principal)[1])
        note = request.reason or "triggered through the API"
        try:
            new_id = self.store.operation_enqueue(EnqueueParams(
                table, request.action, "manual", f"manual: {note} (by {principal.name})",
                max_attempts(self._policy_in_force(table)), table.priority,
                params=dict(request.params)))
            if new_id is None:
                raise _exists(table, request.action,
                              self.store.operation_active(table.pk, request.action) or 0)
        except BaseException:
            if request.request_id:
                self.store.request_forget(request.request_id)
            raise
        result = self._fetch(table, new_id)
        if request.request_id:
            self.store.request_set_resource(request.request_id, result.name)
        log.info("operation triggered", table=table.table_id, action=request.action,
                 operation=new_id, principal=principal.name)
        return result

    @rpc
    def ExplainTable(self, request: tms_pb2.ExplainTableRequest,
                     context: grpc.ServicerContext,
                     principal: Principal) -> tms_pb2.ExplainTableResponse:
        p: v.Problems = []
        table_id = v.table_name(p, "name", request.name)
        if p:
            raise invalid(p)
        table = self.load_table(table_id, principal, request.name).table
        plugin = self.formats.get(table.format)
        actions = plugin.actions if plugin else ()
        out = []
        checked_at = None
        for e in self.store.decision_explain(table.pk, actions):
            checked_at = e.checked_at or checked_at
            item = tms_pb2.ActionExplanation(
                action=e.action, decided=e.decided_at is not None,
                should_run=bool(e.should_run), reason=e.reason or "",
                scheduler_id=e.scheduler_id or "", benefit=e.benefit)
            if e.decided_at is not None:
                item.decide_time.FromDatetime(e.decided_at)
            if e.metrics:
                item.metrics.update(e.metrics)
            if e.operation_id:
                item.operation = f"tables/{table_id}/operations/{e.operation_id}"
            if e.active_id:
                item.active_operation = f"tables/{table_id}/operations/{e.active_id}"
            if e.active_state is not None:
                item.active_state = tms_pb2.Operation.State.Value(e.active_state.value)
            out.append(item)
        policy = [tms_pb2.PolicyValue(key=e.key, value=e.value, source=e.source,
                                      default=e.default, unit=e.unit, doc=e.doc)
                  for e in effective_policy(plugin.policy_keys if plugin else {},
                                            table.policy, self._catalog_policy(table))]
        response = tms_pb2.ExplainTableResponse(
            table=request.name, state=tms_pb2.Table.State.Value(table.state.value), actions=out,
            policy=policy)
        if checked_at is not None:
            response.check_time.FromDatetime(checked_at)
        profile = self.store.read_profile(table.pk, datetime.now(UTC))
        if profile is not None:
            response.read_profile.CopyFrom(read_profile_message(profile))
        return response
