"""Operation RPCs: get, list, cancel, retry, trigger, and ExplainTable ("why / why not")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import grpc

from tms import catalogs
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
from tms.api.errors import ApiError, invalid, not_found, unavailable
from tms.api.fleet import health_to_pb, partitions_to_pb
from tms.api.holds import hold_to_pb
from tms.domain import Operation, OperationState, Table, TableState
from tms.formats.base import CatalogUnreachable, TableFormatPlugin, TableNotInCatalog
from tms.policy.common import effective_policy, in_force, max_attempts
from tms.secrets import SecretError
from tms.storage.roles import OPERATION_ORDERS, EnqueueParams, OperationListParams
from tms.v1 import tms_pb2

ALL_TABLES = "-"
MAX_OP_ID = 2**63 - 1
RETRYABLE = (OperationState.FAILED, OperationState.CANCELLED, OperationState.SKIPPED)
# finished for good: a cancel has nothing to stop (CANCELLED again is acknowledged)
NOT_CANCELLABLE = (OperationState.SUCCEEDED, OperationState.FAILED, OperationState.SKIPPED)


def _op_page_key(op: Operation, order: str) -> int | list[object]:
    """What a page token carries for the last operation of a page in ``order``."""
    if order == "create_time":
        return [0, op.id]
    if order == "-end_time":
        end = op.outcome.finished_at
        return [end.astimezone(UTC).isoformat() if end else "-infinity", op.id]
    if order == "priority":
        return [op.priority, op.id]
    return op.id


def _valid_op_key(key: object, order: str) -> bool:
    """A page token's [key, id], checked like any input (tokens are not signed)."""
    if not isinstance(key, list) or len(key) != 2 or not isinstance(key[1], int) \
            or isinstance(key[1], bool) or not 0 < key[1] <= MAX_OP_ID:
        return False
    k = key[0]
    if order in ("create_time", "priority"):
        return isinstance(k, int) and not isinstance(k, bool) and -2**31 <= k < 2**31
    if not isinstance(k, str) or len(k) > 40:
        return False
    if k == "-infinity":
        return True
    try:
        return datetime.fromisoformat(k).tzinfo is not None
    except ValueError:
        return False


def _keyset(key: list[Any], order: str) -> dict[str, Any]:
    if order == "-end_time":
        return {"after_id": key[1], "after_time": key[0] if key[0] == "-infinity"
                else datetime.fromisoformat(key[0])}
    if order == "priority":
        return {"after_id": key[1], "after_priority": key[0]}
    return {"after_id": key[1]}


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
        v.pattern(p, "queue", request.queue, v.QUEUE_RE, "a queue name", required=False)
        order = request.order_by or OPERATION_ORDERS[0]
        if order not in OPERATION_ORDERS:
            p.append(("order_by", f"unknown order {request.order_by[:40]!r}; one of: "
                                  + ", ".join(OPERATION_ORDERS)))
        query: dict[str, object] = {
            "m": "ops", "parent": request.parent, "state": request.state,
            "action": request.action, "after": str(after), "before": str(before)}
        # added only when set, so a page token of a query without them stays valid
        query.update({k: x for k, x in (("queue", request.queue),
                                        ("order_by", request.order_by)) if x})
        before_id, keyset = MAX_OP_ID, dict[str, Any]()
        if order == OPERATION_ORDERS[0] or order not in OPERATION_ORDERS:
            before_id = self.page_token(p, request.page_token, query, int, MAX_OP_ID,
                                        lambda k: 0 < k <= MAX_OP_ID)
        else:
            found = self.page_token(p, request.page_token, query, list, None,
                                    lambda k: _valid_op_key(k, order))
            if found is not None:
                keyset = _keyset(found, order)
        if p:
            raise invalid(p)
        if table_id is not None:
            self.load_table(table_id, principal, request.parent)
        rows = self.store.operation_list(OperationListParams(
            table_id, state, request.action or None, before_id, size + 1, after, before,
            request.queue or None, order, **keyset))
        more = len(rows) > size
        rows = rows[:size]
        token = pagination.encode(query, _op_page_key(rows[-1], order)) if more else ""
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

    def _trigger_checked(self, table: Table, plugin: TableFormatPlugin, action: str,
                         params: dict[str, str], policy: dict[str, str]) -> dict[str, str]:
        """The action's parameters checked against the table's state and policy before the
        operation is queued (INVALID_ARGUMENT naming the field now, not a failure at run
        time); returns what the plugin adds from the policy."""
        catalog = self.store.catalog_get(table.catalog)
        access = None
        if catalog is not None:
            try:
                access = catalogs.access(catalog)
            except SecretError:  # the plugin decides without looking; the job would fail
                access = None
        try:
            problems, added = plugin.check_trigger(table, action, params, policy, access)
        except TableNotInCatalog as e:
            raise _precondition(f"tables/{table.table_id} is not in its catalog any more: "
                                f"{str(e)[:300]}", "TABLE_NOT_IN_CATALOG",
                                table=f"tables/{table.table_id}") from None
        except CatalogUnreachable as e:
            log.warning("catalog unreachable", catalog=table.catalog,
                        error_type=type(e.__cause__ or e).__name__)
            raise unavailable(f"catalogs/{table.catalog} cannot be reached to check the "
                              f"table's state: {str(e)[:300]}") from None
        if problems:
            raise invalid(problems)
        return added

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
        policy = self._policy_in_force(table)
        params = {**self._trigger_checked(table, plugin, request.action,
                                          dict(request.params), policy),
                  **request.params}
        if request.request_id:
            earlier = self.replay(request.request_id, "TriggerOperation", request)
            if earlier is not None:
                return convert.operation_to_pb(self._op(earlier, principal)[1])
        note = request.reason or "triggered through the API"
        try:
            new_id = self.store.operation_enqueue(EnqueueParams(
                table, request.action, "manual", f"manual: {note} (by {principal.name})",
                max_attempts(policy), table.priority, params=params))
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
        held = {h.action: h for h in self.store.hold_of_table(table.pk)}
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
            if e.action in held:
                item.hold.CopyFrom(hold_to_pb(held[e.action]))
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
        health = self.store.health_get(table.pk)
        if health is not None:
            response.health.CopyFrom(health_to_pb(health))
            response.partitions.extend(partitions_to_pb(health))
        profile = self.store.read_profile(table.pk, datetime.now(UTC))
        if profile is not None:
            response.read_profile.CopyFrom(read_profile_message(profile))
        return response
