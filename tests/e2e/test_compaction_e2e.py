"""The walking skeleton end to end: real tms-api, tms-scheduler and tms-executor processes,
real PostgreSQL, ZooKeeper and Spark, a real Iceberg table written by pyiceberg."""

from __future__ import annotations

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_e2e"
COMMITS = 15


def _register_and_notify(stub, table_id: str, name: str, snapshot_ids: list[int]) -> None:
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="e2e", table_name=name)), timeout=10)
    for sid in snapshot_ids:
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}",
                                                      commit_id=str(sid)), timeout=10)


def _only_operation(stub, table_id: str, state: int) -> tms_pb2.Operation | None:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent=f"tables/{table_id}"),
                              timeout=10).operations
    assert len(ops) <= 1, [o.name for o in ops]
    return ops[0] if ops and ops[0].state == state else None


def test_commit_to_compaction(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "e2e", "events")
    snapshot_ids = iceberg_data.append_batches(table, COMMITS)
    before = iceberg_data.stats(table)
    assert before["data_files"] == COMMITS
    stub = stub_for(stack)
    _register_and_notify(stub, "e2e.events", "events", snapshot_ids)

    queued = wait_for(lambda: _only_operation(stub, "e2e.events", tms_pb2.Operation.QUEUED),
                      "the scheduler to queue a compaction")
    assert queued.action == "compaction" and "15 of 15 data files" in queued.reason
    stack.start_executor()  # only now, so QUEUED was observable
    running = wait_for(lambda: _only_operation(stub, "e2e.events", tms_pb2.Operation.RUNNING),
                       "the executor to start the compaction", step_s=0.05)
    assert running.attempt == 1 and running.executor_id == "executor-0"
    done = wait_for(lambda: _only_operation(stub, "e2e.events", tms_pb2.Operation.SUCCEEDED),
                    "the compaction to succeed")
    assert done.result["rewritten_data_files_count"] == COMMITS
    assert done.result["added_data_files_count"] == 1
    assert done.engine_handle.startswith("local-")
    after = iceberg_data.stats(table)
    assert after["data_files"] == 1
    assert after["rows_scanned"] == before["rows_scanned"] == before["records"]


def test_failing_spark_job_ends_failed_with_log(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "e2e", "doomed")
    snapshot_ids = iceberg_data.append_batches(table, COMMITS, rows_per_commit=5)
    stub = stub_for(stack)
    _register_and_notify(stub, "e2e.doomed", "doomed", snapshot_ids)
    wait_for(lambda: _only_operation(stub, "e2e.doomed", tms_pb2.Operation.QUEUED),
             "the scheduler to queue a compaction")
    catalog.drop_table("e2e.doomed")  # the table vanishes before the job runs
    stack.start_executor()
    failed = wait_for(lambda: _only_operation(stub, "e2e.doomed", tms_pb2.Operation.FAILED),
                      "the compaction to fail")
    assert "doomed" in failed.error and "TABLE_OR_VIEW_NOT_FOUND" in failed.error
    assert failed.exit_code == 1
    assert "Traceback" in failed.log_tail or "Exception" in failed.log_tail
    assert failed.HasField("end_time")
