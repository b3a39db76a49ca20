"""Every RPC beyond the basics: idempotent registration, field-mask updates, pause / resume,
deregistration, batch commits, trigger / cancel / retry transitions, listing, ExplainTable."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import field_mask_pb2, timestamp_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.integration.test_api import error_of
from tms.domain import Decision, LeaseStatus, OperationState, Outcome
from tms.storage.roles import EnqueueParams
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
OP = tms_pb2.Operation


def register(stub, table_id: str = "events", request_id: str = "", **over) -> tms_pb2.Table:
    name = str(over.pop("table_name", table_id.replace(".", "_")))
    return stub.RegisterTable(tms_pb2.RegisterTableRequest(
        table_id=table_id, table=stub.catalog.pb("ns", name, **over), request_id=request_id))


def error_info(call) -> tuple[grpc.StatusCode, dict[str, str]]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    status = rpc_status.from_call(info.value)
    meta: dict[str, str] = {}
    for d in status.details if status else []:
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            ei = error_details_pb2.ErrorInfo()
            d.Unpack(ei)
            meta = dict(ei.metadata)
            meta["reason"] = ei.reason
    return info.value.code(), meta


def trigger(stub, table: str = "tables/events", **kw) -> tms_pb2.Operation:
    return stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent=table, action="compaction", **kw))


def test_register_request_id_replay(api) -> None:
    stub = api.stub()
    first = register(stub, request_id="req-1", owner="team-a")
    again = register(stub, request_id="req-1", owner="team-a")
    assert again == first
    code, fields = error_of(lambda: register(stub, request_id="req-1", owner="team-b"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "request_id" in fields
    # a request that failed does not burn its id
    code, _ = error_of(lambda: register(stub, request_id="req-2"))
    assert code == grpc.StatusCode.ALREADY_EXISTS
    assert register(stub, "other", request_id="req-2").name == "tables/other"


def test_update_with_field_mask(api) -> None:
    stub = api.stub()
    register(stub, owner="a")
    shown = stub.GetTable(tms_pb2.GetTableRequest(name="tables/events"))
    shown.owner, shown.priority = "b", 7
    shown.policy["compaction.min-small-files"] = "40"
    shown.queue = "ignored-not-in-mask"
    updated = stub.UpdateTable(tms_pb2.UpdateTableRequest(
        table=shown, update_mask=field_mask_pb2.FieldMask(
            paths=["owner", "priority", "policy"])))
    assert (updated.owner, updated.priority, updated.queue) == ("b", 7, "default")
    assert updated.policy["compaction.min-small-files"] == "40"
    for mask, field in ((["name"], "update_mask"), ([], "update_mask"),
                        (["catalog_properties"], "update_mask"), (["location"], "update_mask"),
                        (["catalog"], "update_mask")):
        code, fields = error_of(lambda m=mask: stub.UpdateTable(tms_pb2.UpdateTableRequest(
            table=shown, update_mask=field_mask_pb2.FieldMask(paths=m))))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields
    shown.policy["compaction.min-small-files"] = "zero"
    code, fields = error_of(lambda: stub.UpdateTable(tms_pb2.UpdateTableRequest(
        table=shown, update_mask=field_mask_pb2.FieldMask(paths=["policy"]))))
    assert "table.policy[compaction.min-small-files]" in fields
    code, _ = error_of(lambda: stub.UpdateTable(tms_pb2.UpdateTableRequest(
        table=tms_pb2.Table(name="tables/nope"),
        update_mask=field_mask_pb2.FieldMask(paths=["owner"]))))
    assert code == grpc.StatusCode.NOT_FOUND


def test_pause_and_resume(api) -> None:
    stub = api.stub()
    register(stub)
    op = trigger(stub)
    paused = stub.PauseTable(tms_pb2.PauseTableRequest(name="tables/events"))
    assert paused.state == tms_pb2.Table.PAUSED
    assert api.store.operation_claim("e1", 30) is None  # queued work of a paused table waits
    code, meta = error_info(lambda: trigger(stub))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and meta["reason"] == "TABLE_PAUSED"
    listed = stub.ListTables(tms_pb2.ListTablesRequest(state=tms_pb2.Table.PAUSED))
    assert [t.name for t in listed.tables] == ["tables/events"]
    resumed = stub.ResumeTable(tms_pb2.ResumeTableRequest(name="tables/events"))
    assert resumed.state == tms_pb2.Table.ACTIVE
    claimed = api.store.operation_claim("e1", 30)
    assert claimed is not None and claimed.name.endswith(op.name.rsplit("/", 1)[1])


def test_deregister(api) -> None:
    stub = api.stub()
    register(stub)
    trigger(stub)
    assert api.store.operation_claim("e1", 30) is not None
    code, meta = error_info(lambda: stub.DeregisterTable(
        tms_pb2.DeregisterTableRequest(name="tables/events")))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and meta["reason"] == "OPERATION_RUNNING"
    stub.DeregisterTable(tms_pb2.DeregisterTableRequest(name="tables/events", force=True))
    code, _ = error_of(lambda: stub.GetTable(tms_pb2.GetTableRequest(name="tables/events")))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = error_of(lambda: stub.DeregisterTable(
        tms_pb2.DeregisterTableRequest(name="tables/events")))
    assert code == grpc.StatusCode.NOT_FOUND


def test_batch_notify(api) -> None:
    stub = api.stub()
    register(stub, "a")
    register(stub, "b")
    req = tms_pb2.NotifyCommitsRequest(commits=[
        tms_pb2.NotifyCommitRequest(table="tables/a", commit_id="1"),
        tms_pb2.NotifyCommitRequest(table="tables/b", commit_id="1"),
        tms_pb2.NotifyCommitRequest(table="tables/zz", commit_id="1"),
        tms_pb2.NotifyCommitRequest(table="tables/a", commit_id="1"),
    ])
    res = stub.NotifyCommits(req).results
    assert [r.duplicate for r in res] == [False, False, False, True]
    assert [r.error.code for r in res] == [0, 0, grpc.StatusCode.NOT_FOUND.value[0], 0]
    assert [r.duplicate for r in stub.NotifyCommits(req).results[:2]] == [True, True]
    for n in (0, 1001):
        code, fields = error_of(lambda n=n: stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(
            commits=[tms_pb2.NotifyCommitRequest(table="tables/a", commit_id=str(i))
                     for i in range(n)])))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "commits" in fields
    code, fields = error_of(lambda: stub.NotifyCommits(tms_pb2.NotifyCommitsRequest(commits=[
        tms_pb2.NotifyCommitRequest(table="tables/a", commit_id="7"),
        tms_pb2.NotifyCommitRequest(table="tables/a", commit_id="")])))
    assert fields == ["commits[1].commit_id"]


def test_trigger_collision_names_the_active_operation(api) -> None:
    stub = api.stub()
    register(stub)
    op = trigger(stub, reason="before the quarterly report", request_id="t-1")
    assert op.state == OP.QUEUED and op.trigger == "manual"
    assert "before the quarterly report" in op.reason
    assert trigger(stub, reason="before the quarterly report", request_id="t-1") == op
    code, meta = error_info(lambda: trigger(stub))
    assert code == grpc.StatusCode.ALREADY_EXISTS and meta["operation"] == op.name
    code, fields = error_of(lambda: stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/events", action="defragment")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "action" in fields


def test_cancel_queued_and_running(api) -> None:
    stub = api.stub()
    register(stub)
    queued = trigger(stub)
    cancelled = stub.CancelOperation(tms_pb2.CancelOperationRequest(name=queued.name))
    assert cancelled.state == OP.CANCELLED and cancelled.HasField("end_time")
    again = stub.CancelOperation(tms_pb2.CancelOperationRequest(name=queued.name))
    assert again.state == OP.CANCELLED  # idempotent
    running_name = trigger(stub).name
    claimed = api.store.operation_claim("e1", 30)
    assert claimed is not None
    asked = stub.CancelOperation(tms_pb2.CancelOperationRequest(name=running_name))
    assert asked.state == OP.RUNNING and asked.cancel_requested
    assert api.store.operation_renew_lease(claimed, "e1", 30) is LeaseStatus.CANCEL_REQUESTED
    api.store.operation_finish(claimed, "e1", Outcome(OperationState.CANCELLED, error="stopped"))
    assert stub.GetOperation(tms_pb2.GetOperationRequest(name=running_name)).state == OP.CANCELLED
    done_name = trigger(stub).name
    op = api.store.operation_claim("e1", 30)
    assert op is not None
    api.store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    code, meta = error_info(lambda: stub.CancelOperation(
        tms_pb2.CancelOperationRequest(name=done_name)))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and meta["reason"] == "OPERATION_FINISHED"


def test_retry(api) -> None:
    stub = api.stub()
    register(stub)
    first = trigger(stub, params={"target-file-size-bytes": "1024"})
    code, meta = error_info(lambda: stub.RetryOperation(
        tms_pb2.RetryOperationRequest(name=first.name)))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and meta["reason"] == "NOT_RETRYABLE"
    stub.CancelOperation(tms_pb2.CancelOperationRequest(name=first.name))
    retry = stub.RetryOperation(tms_pb2.RetryOperationRequest(name=first.name))
    assert (retry.state, retry.trigger, retry.retry_of) == (OP.QUEUED, "retry", first.name)
    assert retry.params["target-file-size-bytes"] == "1024"
    code, meta = error_info(lambda: stub.RetryOperation(
        tms_pb2.RetryOperationRequest(name=first.name)))
    assert code == grpc.StatusCode.ALREADY_EXISTS and meta["operation"] == retry.name


def test_list_operations_pages_filters_and_time_range(api) -> None:
    stub = api.stub()
    names = []
    for i in range(7):
        register(stub, f"t{i}")
        names.append(trigger(stub, f"tables/t{i}").name)
    stub.CancelOperation(tms_pb2.CancelOperationRequest(name=names[2]))
    seen, token, pages = [], "", 0
    while True:
        page = stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent="tables/-", page_size=3, page_token=token))
        seen += [o.name for o in page.operations]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == list(reversed(names)) and pages == 3
    only = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-",
                                                             state=OP.CANCELLED))
    assert [o.name for o in only.operations] == [names[2]]
    assert len(stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/t3", action="compaction")).operations) == 1
    future = timestamp_pb2.Timestamp(seconds=4_000_000_000)
    assert not stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/-", created_after=future)).operations
    assert len(stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/-", created_before=future)).operations) == 7


def test_explain_table(api) -> None:
    stub = api.stub()
    register(stub)
    fresh = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"))
    from tms.formats.iceberg.policy import RULES

    assert [(a.action, a.decided) for a in fresh.actions] == [(a, False) for a in RULES]
    assert not fresh.HasField("check_time")  # never looked at
    view = api.store.table_get("events")
    assert view is not None
    table = view.table
    decision = Decision("compaction", True, "30 of 30 data files are small",
                        {"small_files": 30, "data_files": 30})
    op_id = api.store.operation_enqueue(EnqueueParams(
        table, decision.action, "policy", decision.reason, 3, table.priority,
        metrics=decision.metrics))
    assert op_id is not None
    api.store.decision_finish_batch("scheduler-x", [(table.pk, decision, op_id)],
                                    [(table.pk, 3600)])
    explained = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"))
    why = explained.actions[0]
    assert explained.HasField("check_time")
    assert explained.check_time.ToDatetime() >= why.decide_time.ToDatetime()
    api.store.decision_finish_batch("scheduler-x", [], [(table.pk, 3600)])  # checked again
    again = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events"))
    assert again.check_time.ToDatetime() > explained.check_time.ToDatetime()
    assert again.actions[0].decide_time == why.decide_time  # the decision did not change
    assert why.action == "compaction"
    assert why.decided and why.should_run and why.reason == decision.reason
    assert why.metrics["small_files"] == 30 and why.scheduler_id == "scheduler-x"
    assert why.operation == why.active_operation == f"tables/events/operations/{op_id}"
    assert why.active_state == OP.QUEUED
    running = api.store.operation_claim("e1", 30)
    assert running is not None and running.id == op_id
    why = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events")).actions[0]
    assert why.active_state == OP.RUNNING
    api.store.operation_finish(running, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    why = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/events")).actions[0]
    assert why.operation == f"tables/events/operations/{op_id}"
    assert not why.active_operation and why.active_state == OP.STATE_UNSPECIFIED
    code, _ = error_of(lambda: stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/x")))
    assert code == grpc.StatusCode.NOT_FOUND


def test_operations_show_every_attempt(api) -> None:
    stub = api.stub()
    register(stub)
    op = trigger(stub)
    store = api.store
    first = store.operation_claim("exec-a", 30)
    assert first is not None and store.attempt_set_engine_handle(first, "exec-a", "local-17")
    assert store.operation_retry_later(first, "exec-a", Outcome(
        OperationState.FAILED, {"rewritten": 0}, "OOM", "driver log tail", 137), 3600)
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=op.name))
    assert got.state == OP.QUEUED and got.queue == "default" and got.error == "OOM"
    assert got.HasField("next_attempt_time")
    assert (got.attempt, got.attempts_used, got.attempts_handed_back) == (1, 1, 0)
    assert got.hold_reason.startswith("backing off until ")
    (a,) = got.attempts
    assert (a.attempt, a.executor_id, a.state, a.engine_handle, a.exit_code, a.error) == (
        1, "exec-a", tms_pb2.Attempt.FAILED, "local-17", 137, "OOM")
    assert a.log_tail == "driver log tail" and a.HasField("retry_time")
    assert a.HasField("end_time") and dict(a.result) == {"rewritten": 0}
    listed = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/events"))
    (la,) = listed.operations[0].attempts
    assert la.error == "OOM" and la.log_tail == ""  # logs only through GetOperation


def test_queues_list_and_limits(api) -> None:
    stub = api.stub()
    register(stub, queue="batch")
    trigger(stub)
    q = stub.UpdateQueue(tms_pb2.UpdateQueueRequest(name="queues/batch", max_running=2))
    assert (q.name, q.max_running, q.queued, q.running) == ("queues/batch", 2, 1, 0)
    queues = {x.name: x for x in stub.ListQueues(tms_pb2.ListQueuesRequest()).queues}
    assert queues["queues/batch"].max_running == 2
    q = stub.UpdateQueue(tms_pb2.UpdateQueueRequest(name="queues/batch"))
    assert not q.HasField("max_running")
    for req, field in ((tms_pb2.UpdateQueueRequest(name="batch", max_running=1), "name"),
                       (tms_pb2.UpdateQueueRequest(name="queues/Bad!", max_running=1), "name"),
                       (tms_pb2.UpdateQueueRequest(name="queues/", max_running=1), "name"),
                       (tms_pb2.UpdateQueueRequest(name="queues/ok", max_running=-1),
                        "max_running"),
                       (tms_pb2.UpdateQueueRequest(name="queues/ok", max_running=10**6),
                        "max_running")):
        code, fields = error_of(lambda r=req: stub.UpdateQueue(r))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and field in fields


def test_hand_back_and_hold_reason_are_shown(api) -> None:
    stub = api.stub()
    register(stub)
    op = trigger(stub)
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=op.name))
    assert got.hold_reason == "waiting for an executor of queue default"
    store = api.store
    first = store.operation_claim("exec-a", 30)
    assert first is not None and store.operation_release(first, "exec-a", "shutting down")
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=op.name))
    assert got.state == OP.QUEUED
    assert (got.attempt, got.attempts_used, got.attempts_handed_back) == (1, 0, 1)
    assert [a.state for a in got.attempts] == [tms_pb2.Attempt.HANDED_BACK]
    second = store.operation_claim("exec-b", 30)
    assert second is not None
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=op.name))
    assert got.state == OP.RUNNING and got.hold_reason == ""
    assert (got.attempt, got.attempts_used, got.attempts_handed_back) == (2, 1, 1)
    other = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/events", action="expire_snapshots"))
    assert other.hold_reason == f"table busy: {op.name} is running"
    listed = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/events"))
    assert [(o.name, o.hold_reason) for o in listed.operations] == [
        (other.name, f"table busy: {op.name} is running"), (op.name, "")]
