"""Retries through the whole service on real Spark: a failure that passes is retried after its
backoff and the table ends compacted; a failure no retry can fix ends the operation at once."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_retry"
BACKOFF_S = 6  # base = max: the jittered wait is between 3 and 6 s
FAST = ["--lease-s", "6", "--heartbeat-s", "1", "--poll-interval-s", "0.2",
        "--retry-base-delay-s", str(BACKOFF_S), "--retry-max-delay-s", str(BACKOFF_S)]
OP = tms_pb2.Operation
ATTEMPT = tms_pb2.Attempt


def _register(stub, table_id: str, name: str) -> None:
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="rt", table_name=name)), timeout=10)


def _get(stub, name: str) -> tms_pb2.Operation:
    return stub.GetOperation(tms_pb2.GetOperationRequest(name=name), timeout=10)


def _rename_database(stack, old: str, new: str) -> None:
    assert stack.postgres is not None
    with psycopg.connect(stack.postgres.dsn(), autocommit=True) as conn:
        # the API keeps a connection to the catalog it looked the table up in: cut it
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = %s AND pid <> pg_backend_pid()", (old,))
        conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(old), sql.Identifier(new)))


def test_transient_failure_is_retried_after_backoff(make_stack) -> None:
    stack = make_stack(executor_args=FAST)
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "rt", "flaky")
    iceberg_data.append_batches(table, 6, rows_per_commit=11)
    before = iceberg_data.stats(table)
    stub = stub_for(stack)
    _register(stub, "flaky", "flaky")
    catalog.engine.dispose()  # type: ignore[attr-defined]
    _rename_database(stack, "iceberg_catalog", "iceberg_catalog_away")  # the catalog is down
    op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/flaky", action="compaction"), timeout=10)
    assert op.max_attempts == 3
    stack.start_executor(0)
    waiting = wait_for(lambda: (o := _get(stub, op.name)).state == OP.QUEUED
                       and len(o.attempts) == 1 and o, "the first attempt to fail", 180)
    _rename_database(stack, "iceberg_catalog_away", "iceberg_catalog")  # and back
    first = waiting.attempts[0]
    assert first.state == ATTEMPT.FAILED and first.error and first.log_tail
    assert not first.error.startswith("not retryable")
    assert waiting.next_attempt_time.ToDatetime() == first.retry_time.ToDatetime()
    wait_s = (first.retry_time.ToDatetime() - first.end_time.ToDatetime()).total_seconds()
    assert BACKOFF_S / 2 - 0.5 <= wait_s <= BACKOFF_S + 0.5

    done = wait_for(lambda: (o := _get(stub, op.name)).state == OP.SUCCEEDED and o,
                    "the retry to compact the table", 180)
    assert done.attempt == 2 and [a.state for a in done.attempts] == [ATTEMPT.FAILED,
                                                                        ATTEMPT.SUCCEEDED]
    assert done.attempts[1].start_time.ToDatetime() >= first.retry_time.ToDatetime()
    assert done.attempts[1].engine_handle and done.attempts[1].exit_code == 0
    after = iceberg_data.stats(table)
    assert after["data_files"] == 1 and after["rows_scanned"] == before["rows_scanned"]


def test_missing_table_fails_without_retry(make_stack) -> None:
    stack = make_stack(executor_args=FAST)
    stack.start_api()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    iceberg_data.create_table(catalog, "rt", "dropped")
    stub = stub_for(stack)
    _register(stub, "ghost", "dropped")
    catalog.drop_table("rt.dropped")  # type: ignore[attr-defined]  # gone after registration
    op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent="tables/ghost", action="compaction"), timeout=10)
    stack.start_executor(0)
    done = wait_for(lambda: (o := _get(stub, op.name)).state == OP.FAILED and o,
                    "the operation to fail", 180)
    assert done.attempt == 1 < done.max_attempts
    assert done.error.startswith("not retryable: ") and "dropped" in done.error
    (only,) = done.attempts
    assert only.state == ATTEMPT.FAILED and not only.HasField("retry_time")
