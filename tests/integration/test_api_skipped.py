"""SKIPPED operations and benefits through the API: GetOperation and ListOperations show them
(state filter included), a skipped operation cannot be cancelled but can be retried, a state
number the API does not know is refused naming the field, and ExplainTable shows a
decision's benefit."""

from __future__ import annotations

import grpc
import pytest

from tests.integration.test_api import error_of
from tests.integration.test_api_rpcs import error_info, register
from tms.domain import Decision
from tms.storage.roles import EnqueueParams
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration
OP = tms_pb2.Operation
REASON = "not run: 3 manifests now; rewrite starts at 100 (snapshot 7)"


def _skipped(api, table_id: str = "events") -> str:
    """A policy operation with a benefit, claimed and skipped as an executor would."""
    view = api.store.table_get(table_id)
    assert view is not None
    op_id = api.store.operation_enqueue(EnqueueParams(
        view.table, "rewrite_manifests", "policy", "120 manifests", 3, 0, benefit=1.5,
        waits_for=("compaction",)))
    assert op_id is not None
    op = api.store.operation_claim("e1", 30)
    assert op is not None and op.id == op_id
    assert api.store.operation_skip(op, "e1", REASON)
    return f"tables/{table_id}/operations/{op_id}"


def test_skipped_operation_shows_state_reason_and_benefit(api) -> None:
    stub = api.stub()
    register(stub)
    name = _skipped(api)
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=name))
    assert got.state == OP.SKIPPED and got.error == REASON and got.HasField("end_time")
    assert got.HasField("benefit") and got.benefit == 1.5
    assert list(got.waits_for) == ["compaction"]
    assert [a.state for a in got.attempts] == [tms_pb2.Attempt.SKIPPED]
    listed = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-",
                                                               state=OP.SKIPPED))
    assert [o.name for o in listed.operations] == [name]
    assert not stub.ListOperations(tms_pb2.ListOperationsRequest(
        parent="tables/-", state=OP.SUCCEEDED)).operations


def test_cancel_refuses_and_retry_accepts_a_skipped_operation(api) -> None:
    stub = api.stub()
    register(stub)
    name = _skipped(api)
    code, meta = error_info(lambda: stub.CancelOperation(
        tms_pb2.CancelOperationRequest(name=name)))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and meta["reason"] == "OPERATION_FINISHED"
    retry = stub.RetryOperation(tms_pb2.RetryOperationRequest(name=name))
    # a retry is asked for by a person: it runs without the policy's re-check
    assert (retry.state, retry.trigger, retry.retry_of) == (OP.QUEUED, "retry", name)
    assert retry.benefit == 1.5


def test_unknown_state_filter_is_refused_naming_the_field(api) -> None:
    stub = api.stub()
    for bad in (7, 99, -1):
        code, fields = error_of(lambda bad=bad: stub.ListOperations(
            tms_pb2.ListOperationsRequest(parent="tables/-", state=bad)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "state" in fields


def test_explain_shows_the_benefit(api) -> None:
    stub = api.stub()
    register(stub)
    view = api.store.table_get("events")
    assert view is not None
    api.store.decision_finish_batch("s", [
        (view.table.pk, Decision("compaction", True, "r", {}, {}, 0.25), None)], [])
    actions = {a.action: a for a in stub.ExplainTable(
        tms_pb2.ExplainTableRequest(name="tables/events")).actions}
    assert actions["compaction"].HasField("benefit") and actions["compaction"].benefit == 0.25
    assert not actions["rewrite_manifests"].HasField("benefit")


def test_cli_shows_skip_reason_and_benefit(api) -> None:
    from tms_services.cli.operations import detail, operation_text

    stub = api.stub()
    register(stub)
    got = stub.GetOperation(tms_pb2.GetOperationRequest(name=_skipped(api)))
    assert detail(got) == f"skipped: {REASON}"
    text = operation_text(got)
    assert "SKIPPED" in text and "1.5" in text and "compaction" in text
