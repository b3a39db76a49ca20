"""The checks run after every fault (and at the end of a soak), read straight from PostgreSQL.

They are the service's promises, stated as queries: every acknowledged commit is stored and
counted once; every operation ends, or is legitimately waiting or running under a live lease;
no table ever has two active operations for one action; no two attempts on one table ran at the
same time; an Iceberg table reads back whole. Each check records its evidence and counts into a
:class:`FaultRecord`, so the report shows numbers, not just a verdict.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.faults.load import Key, Ledger
from bench.faults.report import FaultRecord

SETTLE_STEP_S = 0.5
MAX_LISTED = 5  # evidence lists are cut to this many items
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED")

OVERLAPPING_ATTEMPTS_SQL = """
SELECT a.operation_id, a.attempt, a.executor_id, b.operation_id, b.attempt, b.executor_id
FROM tms_attempts a
JOIN tms_operations oa ON oa.id = a.operation_id
JOIN tms_operations ob ON ob.table_pk = oa.table_pk
JOIN tms_attempts b ON b.operation_id = ob.id
WHERE (a.operation_id, a.attempt) < (b.operation_id, b.attempt)
  AND tstzrange(a.started_at, coalesce(a.finished_at, 'infinity'), '[)')
      && tstzrange(b.started_at, coalesce(b.finished_at, 'infinity'), '[)')
"""

OPERATIONS_SQL = """
SELECT o.id, t.table_id, o.action, o.state::text AS state, o.attempt,
       o.state = 'RUNNING' AND o.lease_expires_at > now() AS live_lease
FROM tms_operations o JOIN tms_tables t ON t.id = o.table_pk
"""

# an attempt record still RUNNING whose operation is not running that very attempt: an attempt
# nobody will ever close
DANGLING_ATTEMPTS_SQL = """
SELECT a.operation_id, a.attempt FROM tms_attempts a
JOIN tms_operations o ON o.id = a.operation_id
WHERE a.state = 'RUNNING' AND NOT (o.state = 'RUNNING' AND o.attempt = a.attempt)
"""

STUCK_SQL = """
SELECT count(*) FROM tms_operations
WHERE state = 'RUNNING' AND (lease_expires_at IS NULL OR lease_expires_at <= now())
"""


def _listed(items: Iterable[Any]) -> str:
    items = sorted(items, key=str)
    more = f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else ""
    return ", ".join(map(str, items[:MAX_LISTED])) + more


def stored_commits(dsn: str) -> set[Key]:
    """Every (table id, commit id) PostgreSQL holds."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT t.table_id, e.commit_id FROM tms_commit_events e "
                            "JOIN tms_tables t ON t.id = e.table_pk").fetchall()
    return {(t, c) for t, c in rows}


def check_acks(rec: FaultRecord, dsn: str, ledger: Ledger) -> None:
    """Every acknowledged commit is stored; nothing is stored that nobody sent; a "duplicate"
    answer only ever follows a failed attempt of the same commit; counts are exact."""
    stored = stored_commits(dsn)
    with ledger.lock:
        acked = set(ledger.acked)
        sent = set(ledger.sent)
        dup_without_retry = {k for k, dup in ledger.acked.items()
                             if dup and k not in ledger.retried}
        refused = dict(ledger.refused)
        gave_up = set(ledger.gave_up)
        failed = dict(ledger.failed_attempts)
    missing = acked - stored
    phantom = stored - sent
    rec.counts.update(acks_sent=len(acked), acks_found=len(acked & stored),
                      commits_sent=len(sent), commits_stored=len(stored),
                      unacked_but_stored=len((sent - acked) & stored),
                      failed_attempts=sum(failed.values()),
                      failed_attempts_by_code=failed,
                      acked_after_retry=len(ledger.retried),
                      duplicates_after_failure=ledger.duplicates_after_failure)
    rec.check("every acknowledged commit is stored", not missing,
              f"{len(acked) - len(missing)} of {len(acked)} found"
              + (f"; missing {_listed(missing)}" if missing else ""))
    rec.check("nothing stored that was not sent", not phantom,
              f"{len(phantom)} unexpected" + (f": {_listed(phantom)}" if phantom else ""))
    rec.check("'duplicate' only after a failed attempt (nothing counted twice)",
              not dup_without_retry,
              f"{len(dup_without_retry)} commits sent once but answered duplicate"
              + (f": {_listed(dup_without_retry)}" if dup_without_retry else ""))
    rec.check("every commit acknowledged within the retry budget", not refused and not gave_up,
              f"refused {len(refused)}, gave up {len(gave_up)}"
              + (f"; e.g. {_listed(refused.values())}" if refused else ""))
    with psycopg.connect(dsn) as conn:
        bad = conn.execute(
            "SELECT v.table_id, v.commit_count, count(e.commit_id) FROM tms_tables_view v "
            "LEFT JOIN tms_commit_events e ON e.table_pk = v.id "
            "GROUP BY v.table_id, v.commit_count HAVING v.commit_count <> count(e.commit_id)"
        ).fetchall()
    rec.check("each table's commit count equals its distinct stored commits", not bad,
              _listed(bad) if bad else f"{len(stored)} commits in all")


@dataclass
class OperationsState:
    total: int
    by_state: Counter[str]
    duplicate_active: int
    extra_per_table: int
    stuck: int
    overlapping: list[tuple[Any, ...]]
    dangling: list[tuple[Any, ...]]


def operations_state(dsn: str) -> OperationsState:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(OPERATIONS_SQL).fetchall()
        overlapping = conn.execute(OVERLAPPING_ATTEMPTS_SQL).fetchall()
        dangling = conn.execute(DANGLING_ATTEMPTS_SQL).fetchall()
        stuck = conn.execute(STUCK_SQL).fetchone()
    active = Counter((t, a) for _, t, a, s, _, _ in rows if s in ("QUEUED", "RUNNING"))
    per_table = Counter((t, a) for _, t, a, _, _, _ in rows)
    return OperationsState(
        total=len(rows), by_state=Counter(s for _, _, _, s, _, _ in rows),
        duplicate_active=sum(n - 1 for n in active.values() if n > 1),
        extra_per_table=sum(n - 1 for n in per_table.values() if n > 1),
        stuck=int(stuck[0]) if stuck else 0, overlapping=overlapping, dangling=dangling)


def wait_no_stuck(dsn: str, timeout_s: float) -> float:
    """Wait (bounded) until no RUNNING operation has an expired lease: the reaper's job after
    an executor is lost. Returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if operations_state(dsn).stuck == 0:
            break
        time.sleep(SETTLE_STEP_S)
    return time.monotonic() - t0


def check_operations(rec: FaultRecord, dsn: str, *, one_per_table: bool = False,
                     expect_tables: set[str] | None = None, all_final: bool = False,
                     settle_s: float = 0.0) -> OperationsState:
    """No operation lost, stuck or doubled; no two attempts on a table at once.

    ``one_per_table``: no executor ran, so each (table, action) must have exactly one
    operation however often it was decided. ``expect_tables``: exactly these tables have
    operations. ``all_final``: every operation must have ended. ``settle_s``: first wait this
    long (at most) for expired leases to be reaped."""
    if settle_s:
        rec.counts["settle_wait_s"] = round(wait_no_stuck(dsn, settle_s), 1)
    st = operations_state(dsn)
    rec.counts.update(operations=st.total, operations_by_state=dict(st.by_state),
                      duplicate_operations=st.duplicate_active
                      + (st.extra_per_table if one_per_table else 0),
                      overlapping_attempts=len(st.overlapping),
                      stuck_operations=st.stuck, dangling_attempts=len(st.dangling))
    rec.check("at most one active operation per (table, action)", st.duplicate_active == 0,
              f"{st.duplicate_active} extra active operations")
    if one_per_table:
        rec.check("one operation per (table, action) while none can finish",
                  st.extra_per_table == 0, f"{st.extra_per_table} extra operations")
    rec.check("no operation RUNNING with an expired lease (stuck)", st.stuck == 0,
              f"{st.stuck} stuck; states {dict(st.by_state)}")
    rec.check("no attempt record left running by a lost attempt", not st.dangling,
              _listed(st.dangling) if st.dangling else "none")
    rec.check("no two attempts on one table overlap in time", not st.overlapping,
              _listed(st.overlapping) if st.overlapping else
              f"{sum(st.by_state.values())} operations checked")
    if all_final:
        unfinished = st.total - sum(st.by_state[s] for s in TERMINAL)
        rec.check("every operation ended", unfinished == 0,
                  f"{unfinished} unfinished; states {dict(st.by_state)}")
    if expect_tables is not None:
        with psycopg.connect(dsn) as conn:
            got = {t for (t,) in conn.execute(
                "SELECT DISTINCT t.table_id FROM tms_operations o "
                "JOIN tms_tables t ON t.id = o.table_pk").fetchall()}
        lost, unwanted = expect_tables - got, got - expect_tables
        rec.check("exactly the tables that need maintenance got an operation",
                  not lost and not unwanted,
                  f"{len(got & expect_tables)} of {len(expect_tables)}"
                  + (f"; none for {_listed(lost)}" if lost else "")
                  + (f"; unexpected {_listed(unwanted)}" if unwanted else ""))
    return st


def check_iceberg_rows(rec: FaultRecord, before: Mapping[str, int],
                       after: Mapping[str, int]) -> None:
    """Each Iceberg table reads back whole: the rows scanned are those written."""
    bad = {t: (before[t], after.get(t)) for t in before if after.get(t) != before[t]}
    rec.counts["iceberg_rows"] = {t: after.get(t) for t in before}
    rec.check("every Iceberg table reads back whole (row count unchanged)", not bad,
              _listed(f"{t}: {b} -> {a}" for t, (b, a) in bad.items()) if bad else
              ", ".join(f"{t}: {n} rows" for t, n in before.items()))
