"""kill -9 of an executor in the middle of a compaction: its Spark driver dies with it, the
lease expires, the reaper requeues the operation, and a second executor completes it."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import replace

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_kill"
KILL_ROUNDS = 5  # a fault that depends on timing deserves more than one try
FAST_LEASE = ["--lease-s", "3", "--heartbeat-s", "1", "--poll-interval-s", "0.3"]


def _op(stub) -> tms_pb2.Operation | None:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/killed"),
                              timeout=10).operations
    assert len(ops) <= 1
    return ops[0] if ops else None


def _spark_pids(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return out.split()


@pytest.mark.parametrize("round_", range(KILL_ROUNDS))
def test_kill_9_executor_mid_compaction(make_stack, round_: int) -> None:
    stack = make_stack(executor_args=FAST_LEASE)
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "it", "killed")
    snaps = iceberg_data.append_batches(table, 14, rows_per_commit=7)
    before = iceberg_data.stats(table)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="killed", table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="it", table_name="killed")), timeout=10)
    for s in snaps:
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table="tables/killed", commit_id=str(s)))

    first = stack.start_executor(0)
    running = wait_for(lambda: (o := _op(stub)) and o.state == tms_pb2.Operation.RUNNING and o,
                       "the first executor to start the job", step_s=0.05)
    marker = f"op-{running.name.rsplit('/', 1)[1]}-attempt-1"
    wait_for(lambda: _spark_pids(marker), "spark-submit to start")
    assert first.proc is not None
    first.proc.send_signal(signal.SIGKILL)  # the executor alone, not its process group
    first.proc.wait()
    wait_for(lambda: not _spark_pids(marker), "the orphaned Spark driver to die", 30)
    # the spec was inline (no file to sweep); had the driver outlived its executor, it would
    # have finished and reported its result for attempt 1 (checked below)
    assert not (stack.workdir(0) / marker / "spec.json").exists()

    stack.start_executor(1)
    done = wait_for(lambda: (o := _op(stub)) and o.state == tms_pb2.Operation.SUCCEEDED and o,
                    "the second executor to complete the operation")
    assert done.attempt == 2 and done.executor_id == "executor-1"
    after = iceberg_data.stats(table)
    assert after["data_files"] == 1 and after["rows_scanned"] == before["rows_scanned"]
    store = PostgresStore(stack.database_url)
    try:
        op = store.operation_get("killed", int(done.name.rsplit("/", 1)[1]))
        assert op is not None and store.attempt_reported_result(op) is not None  # attempt 2
        first_attempt = replace(op, lease=replace(op.lease, attempt=1))
        assert store.attempt_reported_result(first_attempt) is None  # the killed driver
    finally:
        store.close()


def test_cancel_running_compaction_stops_spark(make_stack) -> None:
    stack = make_stack(executor_args=FAST_LEASE)
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "it", "killed")
    iceberg_data.append_batches(table, 3, rows_per_commit=7)
    before = iceberg_data.stats(table)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="killed", table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="it", table_name="killed")), timeout=10)
    op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/killed", action="compaction", reason="cancel test"), timeout=10)
    stack.start_executor(0)
    wait_for(lambda: (o := _op(stub)) and o.state == tms_pb2.Operation.RUNNING,
             "the job to start", step_s=0.05)
    marker = f"op-{op.name.rsplit('/', 1)[1]}-attempt-1"
    wait_for(lambda: _spark_pids(marker), "spark-submit to start")
    asked = stub.CancelOperation(tms_pb2.CancelOperationRequest(name=op.name), timeout=10)
    assert asked.cancel_requested or asked.state == tms_pb2.Operation.CANCELLED
    done = wait_for(lambda: (o := _op(stub)) and o.state == tms_pb2.Operation.CANCELLED and o,
                    "the operation to end CANCELLED", 60)
    assert done.error == "cancelled by request"
    assert not _spark_pids(marker)  # the whole process group is gone
    after = iceberg_data.stats(table)
    assert after["rows_scanned"] == before["rows_scanned"]
