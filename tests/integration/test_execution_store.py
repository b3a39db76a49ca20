"""Attempt records, retry backoff, hand-backs, per-queue limits and why a queued operation
waits, on a real PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import psycopg
import pytest

from tests.helpers import store_catalog
from tms.domain import (
    Attempt,
    AttemptState,
    Operation,
    OperationState,
    Outcome,
    Table,
    TableSpec,
    TableState,
)
from tms.storage.postgres import PostgresStore
from tms.storage.roles import EnqueueParams, OperationListParams

pytestmark = pytest.mark.integration

FAIL = Outcome(OperationState.FAILED, error="x")


def _table(store: PostgresStore, table_id: str = "t1", queue: str = "default") -> Table:
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                          namespace="ns", table_name=table_id, queue=queue))
    assert view is not None
    return view.table


def _enqueue(store: PostgresStore, table: Table, action: str = "compaction",
             max_attempts: int = 3, priority: int = 0) -> int:
    op_id = store.operation_enqueue(EnqueueParams(table, action, "policy", "r", max_attempts,
                                                  priority))
    assert op_id is not None
    return op_id


def _claim(store: PostgresStore, owner: str, queues: list[str] | None = None) -> Operation:
    op = store.operation_claim(owner, 30, queues)
    assert op is not None
    return op


def _expire_leases(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE tms_operations SET lease_expires_at = now() - interval '1 s' "
                     "WHERE state = 'RUNNING'")


def _get(store: PostgresStore, op: Operation | int, table_id: str = "t1") -> Operation:
    got = store.operation_get(table_id, op if isinstance(op, int) else op.id)
    assert got is not None
    return got


def test_every_attempt_keeps_its_record(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    a1 = _claim(store, "e1")
    assert a1.id == op_id and a1.lease.owner == "e1" and a1.lease.expires_at is not None
    assert store.attempt_set_engine_handle(a1, "e1", "local-1")
    assert not store.attempt_set_engine_handle(a1, "e2", "local-x")  # fenced
    failed = Outcome(OperationState.FAILED, {"partial": 1}, "OOM", "tail 1", 137)
    assert store.operation_retry_later(a1, "e1", failed, 0.0)
    a2 = _claim(store, "e2")
    assert a2.lease.attempt == 2
    _expire_leases(db_dsn)
    assert store.operation_reap_expired() == ([op_id], [])
    a3 = _claim(store, "e3")
    assert a3.lease.attempt == 3
    assert store.operation_finish(a3, "e3", Outcome(OperationState.SUCCEEDED, {"files": 1},
                                                    None, "ok", 0))
    op = _get(store, op_id)
    attempts = op.attempts
    assert [(a.attempt, a.executor_id, a.state) for a in attempts] == [
        (1, "e1", AttemptState.FAILED), (2, "e2", AttemptState.LOST),
        (3, "e3", AttemptState.SUCCEEDED)]
    first = attempts[0]
    assert (first.engine_handle, first.exit_code, first.error, first.log_tail, first.result) == (
        "local-1", 137, "OOM", "tail 1", {"partial": 1})
    assert first.retry_at is not None and first.finished_at is not None
    assert "lease expired" in (attempts[1].error or "")
    assert all(a.finished_at is not None for a in attempts)
    assert op.state is OperationState.SUCCEEDED and op.lease.attempt == 3
    assert op.outcome.result == {"files": 1} and op.outcome.exit_code == 0
    (listed,) = store.operation_list(OperationListParams(table_id="t1"))
    assert listed.attempts == attempts


def test_retry_waits_for_its_backoff(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = _claim(store, "e1")
    assert store.operation_retry_later(op, "e1", FAIL, 3600.0)
    assert store.operation_claim("e1", 30) is None  # not before an hour
    queued = _get(store, op)
    assert queued.state is OperationState.QUEUED
    assert queued.lease.run_after is not None and queued.outcome.error == "x"
    assert queued.lease.owner is None and queued.lease.expires_at is None


def test_retry_is_fenced_and_bounded(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t, max_attempts=2)
    op = _claim(store, "e1")
    assert not store.operation_retry_later(op, "someone-else", FAIL, 0)  # not the lease holder
    stale = replace(op, lease=replace(op.lease, attempt=7))
    assert not store.operation_retry_later(stale, "e1", FAIL, 0)  # stale attempt
    assert store.operation_retry_later(op, "e1", FAIL, 0)
    assert not store.operation_retry_later(op, "e1", FAIL, 0)  # already back in the queue
    op2 = _claim(store, "e1")
    assert op2.lease.attempt == 2 and op2.lease.attempts_used == 2
    assert not store.operation_retry_later(op2, "e1", FAIL, 0)  # attempts spent: finish it
    assert store.operation_finish(op2, "e1", FAIL)
    assert _get(store, op).state is OperationState.FAILED


def test_cancel_request_wins_over_retry(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = _claim(store, "e1")
    assert store.operation_request_cancel(op.id)
    assert _get(store, op).lease.cancel_requested
    assert not store.operation_retry_later(op, "e1", FAIL, 0)
    assert store.operation_finish(op, "e1", Outcome(OperationState.CANCELLED, error="stopped"))
    assert not store.operation_request_cancel(op.id)  # nothing running to stop


def test_cancel_queued(store: PostgresStore) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    assert store.operation_cancel_queued(op_id, "not wanted")
    assert not store.operation_cancel_queued(op_id, "again")
    op = _get(store, op_id)
    assert op.state is OperationState.CANCELLED and op.outcome.error == "not wanted"
    assert op.outcome.finished_at is not None and op.attempts == () and op.hold is None
    assert store.operation_claim("e1", 30) is None


def test_handed_back_attempt_is_recorded(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = _claim(store, "e1")
    assert store.operation_release(op, "e1", "shutting down")
    assert not store.operation_release(op, "e1", "again")  # fenced
    back = _get(store, op)
    (a,) = back.attempts
    assert a.state is AttemptState.HANDED_BACK and a.error == "shutting down"
    assert back.state is OperationState.QUEUED and back.lease.handed_back == 1
    assert back.lease.attempts_used == 0
    again = _claim(store, "e2")
    assert again.lease.attempt == 2 and again.lease.handed_back == 1


def test_progress_is_kept_on_the_running_attempt_only(store: PostgresStore) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    a1 = _claim(store, "e1")
    sample = {"stages": [{"id": 1, "name": "rewrite", "tasks": 8, "completed": 3, "active": 2,
                          "failed": 0}], "sampled_at": "2026-06-01T00:00:00+00:00"}
    assert store.attempt_set_progress(a1, "e1", {"stages": [], "sampled_at": "earlier"})
    assert store.attempt_set_progress(a1, "e1", sample)  # the latest replaces the previous
    assert not store.attempt_set_progress(a1, "e2", {"stages": []})  # not the lease owner
    stale = replace(a1, lease=replace(a1.lease, attempt=2))
    assert not store.attempt_set_progress(stale, "e1", {"stages": []})
    assert store.operation_retry_later(a1, "e1", Outcome(OperationState.FAILED, error="x"), 0.0)
    assert not store.attempt_set_progress(a1, "e1", {"stages": []})  # no longer RUNNING
    a2 = _claim(store, "e2")
    assert a2.lease.attempt == 2
    assert not store.attempt_set_progress(a1, "e1", {"stages": []})  # a stale attempt
    first, second = _get(store, op_id).attempts
    assert first.progress == sample and second.progress is None


# --- hand-backs do not use up attempts ----------------------------------------------------

def test_hand_back_does_not_count_against_max_attempts(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t, max_attempts=1)
    first = _claim(store, "e1")
    assert (first.lease.attempt, first.lease.handed_back, first.lease.attempts_used) == (1, 0, 1)
    assert store.operation_release(first, "e1", "shutting down")
    second = _claim(store, "e2")  # the hand-back left the one attempt unused
    assert (second.lease.attempt, second.lease.handed_back, second.lease.attempts_used) == (
        2, 1, 1)
    assert second.lease.attempts_used <= second.lease.max_attempts
    # this is the one real attempt: a failure cannot be retried ...
    assert not store.operation_retry_later(second, "e2", FAIL, 0)
    still = _get(store, second)
    assert still.state is OperationState.RUNNING and still.lease.attempt == 2
    # ... but the attempt runs and ends normally
    assert store.operation_finish(second, "e2", Outcome(OperationState.SUCCEEDED, result={}))
    done = _get(store, second)
    assert done.state is OperationState.SUCCEEDED
    assert (done.lease.attempt, done.lease.handed_back, done.lease.attempts_used) == (2, 1, 1)
    assert [a.state for a in done.attempts] == [AttemptState.HANDED_BACK,
                                                AttemptState.SUCCEEDED]


def test_many_hand_backs_still_leave_the_attempts(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t, max_attempts=2)
    for i in range(3):
        op = _claim(store, f"e{i}")
        assert op.lease.attempts_used == 1
        assert store.operation_release(op, f"e{i}", "shutting down")
    op = _claim(store, "e9")
    assert (op.lease.attempt, op.lease.handed_back, op.lease.attempts_used) == (4, 3, 1)
    assert store.operation_retry_later(op, "e9", FAIL, 0)  # 1 of 2 used: may retry
    last = _claim(store, "e9")
    assert (last.lease.attempt, last.lease.attempts_used) == (5, 2)
    assert not store.operation_retry_later(last, "e9", FAIL, 0)  # 2 of 2: spent


def test_reaper_counts_attempts_used_not_attempt(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=2)
    op = _claim(store, "e1")
    assert store.operation_release(op, "e1", "shutting down")
    op = _claim(store, "e2")  # attempt 2, but only the first that counts
    _expire_leases(db_dsn)
    assert store.operation_reap_expired() == ([op_id], [])  # 1 of 2 used: back to the queue
    requeued = _get(store, op_id)
    assert requeued.state is OperationState.QUEUED and requeued.lease.attempts_used == 1
    op = _claim(store, "e3")  # attempt 3, the second that counts: the last
    assert (op.lease.attempt, op.lease.attempts_used) == (3, 2)
    _expire_leases(db_dsn)
    assert store.operation_reap_expired() == ([], [op_id])
    failed = _get(store, op_id)
    assert failed.state is OperationState.FAILED and failed.outcome.finished_at is not None
    assert "last attempt" in (failed.outcome.error or "")
    assert failed.lease.attempts_used == failed.lease.max_attempts == 2
    assert [a.state for a in failed.attempts] == [
        AttemptState.HANDED_BACK, AttemptState.LOST, AttemptState.LOST]


def test_reaper_fails_the_only_attempt_after_a_hand_back(store: PostgresStore,
                                                         db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=1)
    op = _claim(store, "e1")
    assert store.operation_release(op, "e1", "shutting down")
    op = _claim(store, "e2")
    _expire_leases(db_dsn)
    assert store.operation_reap_expired() == ([], [op_id])
    failed = _get(store, op_id)
    assert failed.state is OperationState.FAILED
    assert failed.lease.attempts_used == 1 <= failed.lease.max_attempts


def test_reaper_ends_a_cancelled_operation(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=3)
    _claim(store, "e1")
    assert store.operation_request_cancel(op_id)
    _expire_leases(db_dsn)
    assert store.operation_reap_expired() == ([], [op_id])  # ended, although attempts remain
    op = _get(store, op_id)
    assert op.state is OperationState.CANCELLED and op.outcome.finished_at is not None
    (a,) = op.attempts
    assert a.state is AttemptState.LOST and a.finished_at is not None


def test_attempts_used_never_exceeds_max_attempts(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=2)
    seen: list[tuple[int, int]] = []
    # hand-back, failure, hand-back, lost: whatever happens, at most two count
    for step in ("release", "retry", "release", "reap"):
        op = _claim(store, "e")
        seen.append((op.lease.attempts_used, op.lease.max_attempts))
        if step == "release":
            assert store.operation_release(op, "e", "bye")
        elif step == "retry":
            assert store.operation_retry_later(op, "e", FAIL, 0)
        else:
            _expire_leases(db_dsn)
            assert store.operation_reap_expired() == ([], [op_id])
    assert store.operation_claim("e", 30) is None
    assert all(used <= limit for used, limit in seen)
    end = _get(store, op_id)
    assert end.state is OperationState.FAILED
    assert (end.lease.attempt, end.lease.handed_back, end.lease.attempts_used) == (4, 2, 2)
    with psycopg.connect(db_dsn) as conn:  # the schema keeps handed_back within attempt
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE tms_operations SET handed_back = attempt + 1")


# --- why a queued operation waits -----------------------------------------------------------

def test_hold_waiting_for_an_executor(store: PostgresStore) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    assert _get(store, op_id).hold == "waiting for an executor of queue default"
    running = _claim(store, "e1")
    assert _get(store, running).hold is None  # only QUEUED operations are held


def test_hold_table_busy(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t, "compaction", priority=10)
    waiting = _enqueue(store, t, "expire_snapshots")
    running = _claim(store, "e1")
    assert running.action == "compaction"
    hold = _get(store, waiting).hold
    assert hold == f"table busy: tables/t1/operations/{running.id} is running"
    (listed,) = store.operation_list(OperationListParams(table_id="t1",
                                                         state=OperationState.QUEUED))
    assert listed.id == waiting and listed.hold == hold
    assert store.operation_finish(running, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    assert _get(store, waiting).hold == "waiting for an executor of queue default"


def test_hold_queue_at_its_limit(store: PostgresStore) -> None:
    a, b = _table(store, "qa", queue="batch"), _table(store, "qb", queue="batch")
    _enqueue(store, a, priority=10)
    waiting = _enqueue(store, b)
    store.queue_set_limit("batch", 1)
    running = _claim(store, "e1")
    assert running.table_pk == a.pk
    assert store.operation_claim("e2", 30) is None
    assert _get(store, waiting, "qb").hold == "queue batch at its limit (1 of 1 running)"
    store.queue_set_limit("batch", 0)
    assert _get(store, waiting, "qb").hold == "queue batch at its limit (1 of 0 running)"
    store.queue_set_limit("batch", None)
    assert _get(store, waiting, "qb").hold == "waiting for an executor of queue batch"


def test_hold_backing_off(store: PostgresStore) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = _claim(store, "e1")
    assert store.operation_retry_later(op, "e1", FAIL, 3600.0)
    queued = _get(store, op)
    assert queued.lease.run_after is not None
    assert queued.hold == (
        f"backing off until {queued.lease.run_after.isoformat(timespec='seconds')}")


def test_hold_table_paused(store: PostgresStore) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    assert store.table_set_state("t1", TableState.PAUSED) is not None
    assert _get(store, op_id).hold == "tables/t1 is paused"
    assert store.operation_claim("e1", 30) is None
    store.table_set_state("t1", TableState.ACTIVE)
    assert _get(store, op_id).hold == "waiting for an executor of queue default"
    assert _claim(store, "e1").id == op_id


# --- every end of an attempt closes its record once -----------------------------------------

def _attempt_rows(dsn: str, op_id: int) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT attempt, state::text, finished_at, error, result, "
                            "log_tail, exit_code, retry_at FROM tms_attempts "
                            "WHERE operation_id = %s ORDER BY attempt", (op_id,)).fetchall()


def _close_again(dsn: str, op_id: int, attempt: int) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT tms_attempt_close(%s, %s, 'SUCCEEDED', 'late')",
                           (op_id, attempt)).fetchone()
    assert row is not None
    return bool(row[0])


def _end(store: PostgresStore, dsn: str, how: str, op: Operation) -> bool:
    if how == "succeeded":
        return store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, {"n": 1},
                                                        None, "ok", 0))
    if how == "failed":
        return store.operation_finish(op, "e1", Outcome(OperationState.FAILED, None, "boom",
                                                        "tail", 1))
    if how == "cancelled":
        return store.operation_finish(op, "e1", Outcome(OperationState.CANCELLED,
                                                        error="stopped"))
    if how == "retry":
        return store.operation_retry_later(op, "e1", Outcome(OperationState.FAILED,
                                                             {"p": 1}, "OOM", "t", 137), 60)
    if how == "release":
        return store.operation_release(op, "e1", "shutting down")
    assert how in ("reap", "reap_last", "reap_cancelled")
    _expire_leases(dsn)
    requeued, ended = store.operation_reap_expired()
    return op.id in requeued + ended


ENDINGS = {
    "succeeded": (AttemptState.SUCCEEDED, OperationState.SUCCEEDED),
    "failed": (AttemptState.FAILED, OperationState.FAILED),
    "cancelled": (AttemptState.CANCELLED, OperationState.CANCELLED),
    "retry": (AttemptState.FAILED, OperationState.QUEUED),
    "release": (AttemptState.HANDED_BACK, OperationState.QUEUED),
    "reap": (AttemptState.LOST, OperationState.QUEUED),
    "reap_last": (AttemptState.LOST, OperationState.FAILED),
    "reap_cancelled": (AttemptState.LOST, OperationState.CANCELLED),
}


@pytest.mark.parametrize("how", list(ENDINGS))
def test_each_end_of_an_attempt_closes_its_record_once(store: PostgresStore, db_dsn: str,
                                                       how: str) -> None:
    attempt_state, op_state = ENDINGS[how]
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=1 if how == "reap_last" else 3)
    op = _claim(store, "e1")
    assert store.attempt_set_engine_handle(op, "e1", "app-1")
    if how == "reap_cancelled":
        assert store.operation_request_cancel(op_id)
    (running,) = _get(store, op_id).attempts
    assert running.state is AttemptState.RUNNING and running.finished_at is None
    assert _end(store, db_dsn, how, op)
    after = _get(store, op_id)
    assert after.state is op_state
    (rec,) = after.attempts  # exactly one record for the one attempt, now ended
    assert (rec.attempt, rec.executor_id, rec.state) == (1, "e1", attempt_state)
    assert rec.finished_at is not None and rec.finished_at >= rec.started_at
    assert rec.engine_handle == "app-1"
    if how == "retry":
        assert (rec.error, rec.result, rec.log_tail, rec.exit_code) == ("OOM", {"p": 1}, "t",
                                                                        137)
        assert rec.retry_at is not None and rec.retry_at == after.lease.run_after
    if how == "succeeded":
        assert (rec.result, rec.log_tail, rec.exit_code, rec.error) == ({"n": 1}, "ok", 0,
                                                                        None)
    if how == "release":
        assert rec.error == "shutting down" and after.lease.handed_back == 1
    if how.startswith("reap"):
        assert rec.error == after.outcome.error and rec.error
    # a second end of the same attempt changes nothing: not through the store ...
    snapshot = _attempt_rows(db_dsn, op_id)
    for again in ENDINGS:
        if not again.startswith("reap"):
            assert not _end(store, db_dsn, again, op), again
    assert store.operation_reap_expired() == ([], [])
    # ... nor through the function itself
    assert not _close_again(db_dsn, op_id, 1)
    assert _attempt_rows(db_dsn, op_id) == snapshot
    final = _get(store, op_id)
    assert (final.state, final.lease.attempt, final.outcome) == (op_state, 1, after.outcome)


def test_the_next_attempt_gets_its_own_record(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    first = _claim(store, "e1")
    assert store.operation_release(first, "e1", "bye")
    second = _claim(store, "e2")
    # closing the old attempt again cannot touch the new one's record
    assert not _close_again(db_dsn, op_id, 1)
    assert not store.operation_finish(first, "e1", Outcome(OperationState.SUCCEEDED, {}))
    rows = _attempt_rows(db_dsn, op_id)
    assert [(r[0], r[1], r[2] is None) for r in rows] == [(1, "HANDED_BACK", False),
                                                          (2, "RUNNING", True)]
    assert store.operation_finish(second, "e2", Outcome(OperationState.SUCCEEDED, {}))
    assert [a.state for a in _get(store, op_id).attempts] == [AttemptState.HANDED_BACK,
                                                              AttemptState.SUCCEEDED]


def _running_records(op: Operation) -> list[Attempt]:
    return [a for a in op.attempts if a.state is AttemptState.RUNNING]


def test_at_most_the_current_attempt_is_running(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = _enqueue(store, t, max_attempts=5)
    for step in ("retry", "release", "reap", "retry"):
        op = _claim(store, "e1")
        (current,) = _running_records(_get(store, op_id))
        assert current.attempt == op.lease.attempt
        if step == "retry":
            assert store.operation_retry_later(op, "e1", FAIL, 0)
        elif step == "release":
            assert store.operation_release(op, "e1", "bye")
        else:
            _expire_leases(db_dsn)
            assert store.operation_reap_expired() == ([op_id], [])
        assert _running_records(_get(store, op_id)) == []
    done = _get(store, op_id)
    assert len(done.attempts) == done.lease.attempt == 4
    assert all(a.finished_at is not None for a in done.attempts)


# --- queues ----------------------------------------------------------------------------------

def test_executor_claims_only_its_queues(store: PostgresStore) -> None:
    small = _table(store, "small1", queue="small")
    big = _table(store, "big1", queue="big")
    _enqueue(store, small, priority=0)
    _enqueue(store, big, priority=100)
    got = _claim(store, "e1", ["small"])
    assert got.table_pk == small.pk and got.queue == "small"
    assert store.operation_claim("e1", 30, ["small"]) is None
    got = _claim(store, "e2")
    assert got.table_pk == big.pk


def test_queue_limit_holds_across_concurrent_claims(store: PostgresStore) -> None:
    tables = [_table(store, f"q{i}", queue="batch") for i in range(12)]
    for t in tables:
        _enqueue(store, t)
    store.queue_set_limit("batch", 3)
    with ThreadPoolExecutor(8) as pool:
        claims = list(pool.map(lambda i: store.operation_claim(f"e{i}", 30), range(12)))
    assert sum(c is not None for c in claims) == 3
    (info,) = [q for q in store.queue_list() if q.name == "batch"]
    assert (info.max_running, info.running, info.queued) == (3, 3, 9)
    done = next(c for c in claims if c is not None)
    assert store.operation_finish(done, done.lease.owner or "",
                                  Outcome(OperationState.SUCCEEDED, {}))
    assert store.operation_claim("late", 30) is not None  # a slot opened
    assert store.operation_claim("later", 30) is None
    store.queue_set_limit("batch", None)  # unlimited again
    assert store.operation_claim("free", 30) is not None


def test_queue_limit_zero_pauses_a_queue(store: PostgresStore) -> None:
    t = _table(store, "p1", queue="paused")
    _enqueue(store, t)
    store.queue_set_limit("paused", 0)
    assert store.operation_claim("e1", 30) is None
    store.queue_set_limit("paused", 1)
    assert store.operation_claim("e1", 30) is not None


def test_database_refuses_a_bad_queue_limit(store: PostgresStore) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        store.queue_set_limit("q", -1)
    with pytest.raises(psycopg.errors.CheckViolation):
        store.queue_set_limit("Bad Name", 1)
