"""ReportJobResult on a real API and PostgreSQL: the job's own hand-encoded client reports a
running attempt's result with the attempt's token; everything else is refused with the right
status, and a refused report changes nothing (attacker's tests: another operation's token, a
replay after the attempt ended, oversize and malformed results)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from tests.helpers import store_catalog
from tests.integration.conftest import Api
from tms.api.auth import Authenticator
from tms.domain import Operation, OperationState, Outcome, TableSpec
from tms.domain.jobs import new_report_token, report_token_digest
from tms.jobs import report
from tms.storage.postgres import PostgresStore
from tms.storage.roles import EnqueueParams
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration
OK = {"ok": True, "action": "compaction", "result": {"rewritten_bytes_count": 2**60 + 1},
      "spark_app_id": "app-20260101000000-0001"}


def _running(store: PostgresStore, table_id: str) -> tuple[Operation, str]:
    """A RUNNING attempt of a new operation on a new table, and its report token."""
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                          namespace="ns", table_name=table_id))
    assert view is not None
    op_id = store.operation_enqueue(EnqueueParams(view.table, "compaction", "manual", "t", 3, 0))
    assert op_id is not None
    op = store.operation_claim("ex-1", 30)
    assert op is not None and op.id == op_id
    token = new_report_token()
    assert store.attempt_set_report_token(op, "ex-1", report_token_digest(token))
    return op, token


def _target(api: Api, op: Operation) -> dict[str, Any]:
    return {"target": api.address, "operation": op.name, "attempt": op.lease.attempt}


def _refused(api: Api, check: Callable[[grpc.RpcError], bool], **fields: Any) -> None:
    stub = tms_pb2_grpc.TableManagementServiceStub(grpc.insecure_channel(api.address))
    with pytest.raises(grpc.RpcError) as info:
        stub.ReportJobResult(tms_pb2.ReportJobResultRequest(**fields), timeout=10)
    assert check(info.value), (info.value.code(), info.value.details())


def test_the_jobs_client_reports_once_and_a_replay_is_acknowledged(api: Api) -> None:
    op, token = _running(api.store, "t1")
    env = {report.ENV_JOB_TOKEN: token}
    assert api.store.attempt_reported_result(op) is None
    assert report.send(_target(api, op), OK, env)
    assert api.store.attempt_reported_result(op) == OK  # integers exact (not a double)
    assert report.send(_target(api, op), OK, env)  # a retried call after a lost answer
    with pytest.raises(report.ReportError, match="FAILED_PRECONDITION.*different result"):
        report.send(_target(api, op), {**OK, "ok": False}, env)
    assert api.store.attempt_reported_result(op) == OK


def test_a_bearer_token_is_not_needed_nor_enough(make_api: Callable[..., Api]) -> None:
    """With auth on, the job has no bearer token and needs none; an admin token is not an
    attempt's token."""
    api = make_api(auth=Authenticator.from_config({"tokens": [
        {"name": "ops", "token": "admin-token", "roles": ["admin"]}]}))
    op, token = _running(api.store, "t1")
    with pytest.raises(report.ReportError, match="PERMISSION_DENIED"):
        report.send(_target(api, op), OK, {report.ENV_JOB_TOKEN: "admin-token-" + "x" * 10})
    assert report.send(_target(api, op), OK, {report.ENV_JOB_TOKEN: token})


def test_another_operations_token_is_refused(api: Api) -> None:
    mine, _ = _running(api.store, "mine")
    other, other_token = _running(api.store, "other")
    fields = dict(operation=mine.name, attempt=1, token=other_token, result_json=json.dumps(OK))
    _refused(api, lambda e: e.code() == grpc.StatusCode.PERMISSION_DENIED, **fields)
    # nor does naming the other table with this operation's id find anything
    _refused(api, lambda e: e.code() == grpc.StatusCode.NOT_FOUND,
             **{**fields, "operation": f"tables/other/operations/{mine.id}"})
    assert api.store.attempt_reported_result(mine) is None
    assert api.store.attempt_reported_result(other) is None


def test_unknown_operations_and_attempts_are_not_found(api: Api) -> None:
    op, token = _running(api.store, "t1")
    fields = dict(operation=op.name, attempt=1, token=token, result_json=json.dumps(OK))
    for changed in ({"operation": f"tables/t1/operations/{op.id + 1000}"},
                    {"operation": f"tables/nope/operations/{op.id}"}, {"attempt": 2}):
        _refused(api, lambda e: e.code() == grpc.StatusCode.NOT_FOUND, **{**fields, **changed})


def test_a_replay_after_the_attempt_ended_changes_nothing(api: Api) -> None:
    op, token = _running(api.store, "t1")
    assert api.store.operation_finish(op, "ex-1", Outcome(OperationState.FAILED, error="x"))
    with pytest.raises(report.ReportError, match="FAILED_PRECONDITION.*has ended"):
        report.send(_target(api, op), OK, {report.ENV_JOB_TOKEN: token})
    assert api.store.attempt_reported_result(op) is None
    # the next attempt has a token of its own: the old one is worth nothing there
    op2 = api.store.operation_get("t1", op.id)
    assert op2 is not None and op2.state is OperationState.FAILED


def test_an_attempt_without_a_token_takes_no_report(api: Api) -> None:
    store = api.store
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id="t1", format="iceberg", catalog="c",
                                          namespace="ns", table_name="t1"))
    assert view is not None
    store.operation_enqueue(EnqueueParams(view.table, "compaction", "manual", "t", 3, 0))
    op = store.operation_claim("ex-1", 30)
    assert op is not None
    _refused(api, lambda e: e.code() == grpc.StatusCode.PERMISSION_DENIED,
             operation=op.name, attempt=1, token=new_report_token(),
             result_json=json.dumps(OK))


@pytest.mark.parametrize(("result_json", "why"), [
    ("", "required"),
    ("[1]", "JSON object"),
    ('{"ok": "yes"}', "boolean 'ok'"),
    ('{"ok": true, "n": NaN}', "not a JSON object"),
    ('{"ok": true, "s": "a\\u0000b"}', "NUL"),
    ('{"ok": true, "d": ' + "[" * 40 + "]" * 40 + "}", "nested deeper"),
    ('{"ok": true, "d": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper|recursion"),
    ('{"ok": true, "big": "' + "x" * (256 * 1024) + '"}', "larger than"),
    ("{not json", "not a JSON object"),
])
def test_bad_results_are_invalid_and_name_the_field(api: Api, result_json: str,
                                                    why: str) -> None:
    op, token = _running(api.store, "t1")
    _refused(api, lambda e: (e.code() == grpc.StatusCode.INVALID_ARGUMENT
                             and "result_json" in e.details()),
             operation=op.name, attempt=1, token=token, result_json=result_json)
    assert api.store.attempt_reported_result(op) is None


@pytest.mark.parametrize("fields", [
    {"token": ""}, {"token": "short"}, {"token": "x" * 200}, {"token": "bad token with spaces!"},
    {"attempt": 0}, {"attempt": -1}, {"operation": ""}, {"operation": "tables/t1"},
    {"operation": "tables/t1/operations/x"},
])
def test_bad_fields_are_invalid(api: Api, fields: dict[str, Any]) -> None:
    op, token = _running(api.store, "t1")
    base = dict(operation=op.name, attempt=1, token=token, result_json=json.dumps(OK))
    field = next(iter(fields))
    _refused(api, lambda e: (e.code() == grpc.StatusCode.INVALID_ARGUMENT
                             and field in e.details()), **{**base, **fields})


def test_the_job_keeps_an_oversize_result_within_the_limit() -> None:
    big = {"ok": True, "result": {"x": "y" * (300 * 1024)}, "spark_app_id": "app-1"}
    text = report.result_json(big)
    assert len(text.encode()) < report.MAX_RESULT_JSON_BYTES
    assert json.loads(text)["ok"] is False and "larger than" in json.loads(text)["error"]
