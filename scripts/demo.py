"""The TMS demo: the whole service, locally, maintaining a real Iceberg table.

Starts PostgreSQL, ZooKeeper, tms-api, tms-scheduler and tms-executor on loopback; writes small
commits into an Iceberg table with pyiceberg (not Spark); registers the table and notifies every
commit through the gRPC API; waits for the scheduler to queue a compaction and the executor to
run it on Spark; prints the table before and after and the operations list. Everything started
is stopped again, on success, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path

import grpc

from tms.domain import CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.local.stack import LocalStack
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc
from tms_services.cli.format import struct_text

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_COMMITS = 120
OPERATION_TIMEOUT_S = 600.0
CATALOG_NAME = "tms_demo"
TABLE_ID = "demo.events"


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def say(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def wait_for_operation(stub: tms_pb2_grpc.TableManagementServiceStub) -> tms_pb2.Operation:
    deadline = time.monotonic() + OPERATION_TIMEOUT_S
    last_state = None
    while time.monotonic() < deadline:
        ops = stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent=f"tables/{TABLE_ID}", action="compaction"), timeout=10).operations
        if ops:
            op = ops[-1]  # the first compaction
            state = tms_pb2.Operation.State.Name(op.state)
            if state != last_state:
                say(f"{op.name}: {state} (attempt {op.attempts_used} of {op.max_attempts}) "
                    f"{op.engine_handle}")
                last_state = state
            if state in ("SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED"):
                return op
        time.sleep(0.5)
    raise TimeoutError(f"no finished compaction within {OPERATION_TIMEOUT_S:.0f} s")


def wait_until_idle(stub: tms_pb2_grpc.TableManagementServiceStub) -> None:
    """Let whatever else the scheduler queued (e.g. a manifest rewrite after 120 commits)
    finish too, so the listing shows where the table ended up."""
    deadline = time.monotonic() + OPERATION_TIMEOUT_S
    active = (tms_pb2.Operation.QUEUED, tms_pb2.Operation.RUNNING)
    while time.monotonic() < deadline:
        ops = stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent=f"tables/{TABLE_ID}"), timeout=10).operations
        if not any(o.state in active for o in ops):
            return
        time.sleep(0.5)
    say("some operations are still running; stopping anyway")


def print_operations(stub: tms_pb2_grpc.TableManagementServiceStub) -> None:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/-"),
                              timeout=10).operations
    print(f"{'OPERATION':<42} {'ACTION':<24} {'STATE':<10} {'ATT':>3} {'SECONDS':>7}  REASON")
    for op in ops:
        secs = ""
        if op.HasField("start_time") and op.HasField("end_time"):
            secs = f"{(op.end_time.ToDatetime() - op.start_time.ToDatetime()).total_seconds():.1f}"
        print(f"{op.name:<42} {op.action:<24} {tms_pb2.Operation.State.Name(op.state):<10} "
              f"{op.attempt:>3} {secs:>7}  {op.reason}")
        if op.result:
            print(f"{'':<42} result: {struct_text(op.result)}")
        if op.error:
            print(f"{'':<42} error: {op.error}")


def run(commits: int, state_dir: Path) -> int:
    if state_dir.exists():
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True)
    stack = LocalStack(state_dir, ROOT / ".tms", executor_args=["--poll-interval-s", "0.5"])
    try:
        say(f"starting PostgreSQL, ZooKeeper, tms-api, tms-scheduler, tms-executor in {state_dir}")
        stack.start()
        assert stack.postgres is not None
        say(f"api on {stack.api_address}; logs in {state_dir / 'logs'}")
        catalog_dsn = stack.postgres.create_database("iceberg_catalog")
        warehouse = state_dir / "warehouse"
        warehouse.mkdir()
        props = iceberg_data.sql_catalog_properties(catalog_dsn, warehouse.as_uri())
        catalog = iceberg_data.load_catalog(CATALOG_NAME, props)
        # what an operator does once per catalog (tms catalogs create): the connection, and
        # the locations its tables may live in
        store = PostgresStore(stack.database_url, max_size=1)
        store.catalog_create(CatalogSpec(
            CATALOG_NAME, CatalogType.SQL,
            properties={k: v for k, v in props.items() if k != "type"},
            allowed_locations=(str(warehouse),)))
        store.close()
        say(f"catalog catalogs/{CATALOG_NAME} created, tables allowed under {warehouse}")
        table = iceberg_data.create_table(catalog, "demo", "events")
        t0 = time.monotonic()
        snapshot_ids = iceberg_data.append_batches(table, commits)
        say(f"pyiceberg wrote {commits} commits in {time.monotonic() - t0:.1f} s")
        before = iceberg_data.stats(table)

        channel = grpc.insecure_channel(stack.api_address)
        stub = tms_pb2_grpc.TableManagementServiceStub(channel)
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=TABLE_ID, table=tms_pb2.Table(
            format="iceberg", catalog=CATALOG_NAME, namespace="demo", table_name="events",
            owner="demo")), timeout=10)
        t0 = time.monotonic()
        for sid in snapshot_ids:
            stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
                table=f"tables/{TABLE_ID}", commit_id=str(sid),
                stats=tms_pb2.CommitStats(files_added=1, operation="append")), timeout=10)
        say(f"notified {len(snapshot_ids)} commits in {time.monotonic() - t0:.2f} s")

        op = wait_for_operation(stub)
        wait_until_idle(stub)
        after = iceberg_data.stats(table)
        print()
        print(f"{'':<14}{'data files':>12}{'snapshots':>12}{'rows':>10}")
        print(f"{'before':<14}{before['data_files']:>12}{before['snapshots']:>12}"
              f"{before['rows_scanned']:>10}")
        print(f"{'after':<14}{after['data_files']:>12}{after['snapshots']:>12}"
              f"{after['rows_scanned']:>10}")
        print()
        print_operations(stub)
        channel.close()
        ok = (op.state == tms_pb2.Operation.SUCCEEDED
              and after["data_files"] < before["data_files"]
              and after["rows_scanned"] == before["rows_scanned"])
        if not ok:
            say("FAILED: the compaction did not leave the table compacted and whole")
            if op.log_tail:
                print(op.log_tail[-3000:])
            return 1
        say(f"OK: {before['data_files']} data files -> {after['data_files']}, "
            f"rows unchanged ({after['rows_scanned']})")
        return 0
    finally:
        say("stopping everything")
        t0 = time.monotonic()
        stack.stop()
        say(f"stopped in {time.monotonic() - t0:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--commits", type=int, default=DEFAULT_COMMITS)
    p.add_argument("--state-dir", type=Path, default=ROOT / ".tms" / "demo")
    args = p.parse_args()
    if args.commits < 1:
        p.error("--commits must be positive")
    # Explicit handlers: a demo started in the background inherits an ignored SIGINT.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        sys.exit(run(args.commits, args.state_dir))
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
