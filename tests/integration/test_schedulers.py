"""Two real tms-scheduler processes, one ZooKeeper, one PostgreSQL: 50 concurrent commit
notifications for one table produce exactly the operations the policy calls for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.integration

CATALOG = "tms_it"


def _register(stub, name: str) -> None:
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=name, table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="it", table_name=name)), timeout=10)


def _all_decided(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        marks = conn.execute("SELECT count(*) FROM tms_dirty_tables").fetchone()
        decided = conn.execute(
            "SELECT count(DISTINCT table_pk) FROM tms_decisions").fetchone()
    return marks == (0,) and decided == (2,)


def test_two_schedulers_fifty_concurrent_commits(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    schedulers = [stack.start_scheduler(0), stack.start_scheduler(1)]
    catalog, _ = iceberg_catalog(stack, CATALOG)
    busy = iceberg_data.create_table(catalog, "it", "busy")
    busy_snaps = iceberg_data.append_batches(busy, 20, rows_per_commit=3)
    quiet = iceberg_data.create_table(catalog, "it", "quiet")
    quiet_snaps = iceberg_data.append_batches(quiet, 5, rows_per_commit=3)
    stub = stub_for(stack)
    _register(stub, "busy")
    _register(stub, "quiet")

    # 50 notifications for "busy" at once: its 20 real snapshots and 30 more commit ids
    commit_ids = [str(s) for s in busy_snaps] + [str(10**12 + i) for i in range(30)]
    requests = [tms_pb2.NotifyCommitRequest(table="tables/busy", commit_id=c)
                for c in commit_ids]
    requests += [tms_pb2.NotifyCommitRequest(table="tables/quiet", commit_id=str(s))
                 for s in quiet_snaps]
    with ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda r: stub.NotifyCommit(r, timeout=30), requests))
    assert not any(r.duplicate for r in replies)

    wait_for(lambda: _all_decided(stack.database_url), "both tables to be decided")
    with psycopg.connect(stack.database_url) as conn:
        ops = conn.execute(
            "SELECT t.table_id, o.action, o.state::text, o.reason FROM tms_operations o "
            "JOIN tms_tables t ON t.id = o.table_pk ORDER BY o.id").fetchall()
        decisions = dict(conn.execute(
            "SELECT t.table_id, d.should_run FROM tms_decisions d "
            "JOIN tms_tables t ON t.id = d.table_pk WHERE d.action = 'compaction'").fetchall())
        seqs = dict(conn.execute(
            "SELECT t.table_id, count(*) FROM tms_commit_events e "
            "JOIN tms_tables t ON t.id = e.table_pk GROUP BY t.table_id").fetchall())
    # the policy calls for one compaction of "busy" (20 small files >= 12) and none of "quiet"
    assert [(t, a, s) for t, a, s, _ in ops] == [("busy", "compaction", "QUEUED")]
    assert "20 of 20 data files" in ops[0][3]
    assert decisions["quiet"] is False
    assert seqs == {"busy": 50, "quiet": 5}
    assert all(s.alive for s in schedulers)


def test_table_without_notifications_is_maintained_after_its_pull_interval(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    stack.start_scheduler(0)
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "it", "silent")
    iceberg_data.append_batches(table, 3, rows_per_commit=3)
    stub = stub_for(stack)
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="silent", table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="it", table_name="silent",
        policy={"scheduler.pull-interval-s": "2"})), timeout=10)

    def explain() -> tms_pb2.ActionExplanation:
        actions = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/silent"),
                                    timeout=10).actions
        return next(a for a in actions if a.action == "compaction")

    first = wait_for(lambda: (e := explain()).decided and e, "the first (pull) decision")
    assert not first.should_run and first.reason.startswith("3 small data files")
    # the writer commits 15 more times and every notification is lost
    iceberg_data.append_batches(table, 15, rows_per_commit=3)
    later = wait_for(lambda: (e := explain()).should_run and e,
                     "a pull decision that sees the new files", timeout_s=60)
    assert "18 of 18 data files" in later.reason and later.active_operation
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/silent"),
                              timeout=10).operations
    assert [(o.action, o.state) for o in ops] == [("compaction", tms_pb2.Operation.QUEUED)]
