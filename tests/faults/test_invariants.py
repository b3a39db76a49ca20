"""The fault checks themselves must be able to fail: rows that break each invariant, written
straight into a fresh TMS database, are each reported (a check that can never fail would make
every fault run pass)."""

from __future__ import annotations

import time

import psycopg
import pytest

from bench.faults.invariants import check_acks, check_iceberg_rows, check_operations
from bench.faults.load import Ledger
from bench.faults.report import FaultRecord, FaultReport

pytestmark = pytest.mark.integration


def _failed(rec: FaultRecord) -> set[str]:
    return {c.name for c in rec.checks if not c.passed}


def _seed(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO tms_catalogs (catalog_id, type) VALUES ('c', 'hadoop')")
        (pk,) = conn.execute("INSERT INTO tms_tables (table_id, format, catalog, table_name) "
                             "VALUES ('t1', 'constant', 'c', 't1') RETURNING id").fetchone()
        conn.execute("INSERT INTO tms_commit_events (table_pk, commit_id) VALUES "
                     "(%s, 'stored'), (%s, 'phantom')", (pk, pk))
        # two operations of one table whose attempts overlap, one of them RUNNING on a dead lease
        (a,) = conn.execute(
            "INSERT INTO tms_operations (table_pk, action, state, attempt, reason, started_at,"
            " finished_at) VALUES (%s, 'compaction', 'SUCCEEDED', 1, 'x', now() - interval "
            "'1 min', now()) RETURNING id", (pk,)).fetchone()
        (b,) = conn.execute(
            "INSERT INTO tms_operations (table_pk, action, state, attempt, reason, started_at,"
            " lease_owner, lease_expires_at) VALUES (%s, 'compaction', 'RUNNING', 1, 'x', "
            "now() - interval '30 s', 'gone', now() - interval '10 s') RETURNING id",
            (pk,)).fetchone()
        conn.execute(
            "INSERT INTO tms_attempts (operation_id, attempt, executor_id, state, started_at, "
            "finished_at) VALUES (%s, 1, 'e0', 'SUCCEEDED', now() - interval '1 min', now())",
            (a,))
        conn.execute("INSERT INTO tms_attempts (operation_id, attempt, executor_id, started_at)"
                     " VALUES (%s, 1, 'e1', now() - interval '30 s')", (b,))


def test_each_check_reports_its_violation(db_dsn: str) -> None:
    _seed(db_dsn)
    ledger = Ledger()
    now = time.monotonic()
    ledger.record_sent([("t1", "stored"), ("t1", "lost"), ("t1", "dup")])
    ledger.record_ack(("t1", "stored"), False, False, now)
    ledger.record_ack(("t1", "lost"), False, False, now)  # acknowledged, not in the database
    ledger.record_ack(("t1", "dup"), True, False, now)  # "duplicate" with no failed attempt
    report = FaultReport("self-test")
    with report.fault("self-test", "rows that break every invariant") as rec:
        check_acks(rec, db_dsn, ledger)
        check_operations(rec, db_dsn, one_per_table=True, all_final=True,
                         expect_tables={"t1", "t2"})
        check_iceberg_rows(rec, {"ns.t": 10}, {"ns.t": 9})
    assert _failed(rec) == {
        "every acknowledged commit is stored",
        "nothing stored that was not sent",
        "'duplicate' only after a failed attempt (nothing counted twice)",
        "one operation per (table, action) while none can finish",
        "no operation RUNNING with an expired lease (stuck)",
        "no two attempts on one table overlap in time",
        "every operation ended",
        "exactly the tables that need maintenance got an operation",
        "every Iceberg table reads back whole (row count unchanged)",
    }
    assert rec.counts["acks_sent"] == 3 and rec.counts["acks_found"] == 1
    assert rec.counts["overlapping_attempts"] == 1 and rec.counts["stuck_operations"] == 1
    assert not rec.passed
    with pytest.raises(AssertionError, match="every acknowledged commit is stored"):
        rec.assert_ok()
    md = report.to_markdown()
    assert "| self-test | FAIL | 3 / 1 |" in md
