"""Attempt records, retry backoff and per-queue limits, on a real PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import psycopg
import pytest

from tms.domain import AttemptState, Decision, OperationState, Outcome, TableSpec
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration


def _table(store: PostgresStore, table_id: str = "t1", queue: str = "default"):
    rec = store.register_table(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                         namespace="ns", table_name=table_id, queue=queue))
    assert rec is not None
    return rec


def _expire_leases(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE tms_operations SET lease_expires_at = now() - interval '1 s' "
                     "WHERE state = 'RUNNING'")


def test_every_attempt_keeps_its_record(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    op_id = store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    a1 = store.claim("e1", 30)
    assert a1 is not None and a1.id == op_id
    assert store.set_engine_handle(a1, "e1", "local-1")
    failed = Outcome(OperationState.FAILED, {"partial": 1}, "OOM", "tail 1", 137)
    assert store.retry_later(a1, "e1", failed, 0.0)
    a2 = store.claim("e2", 30)
    assert a2 is not None and a2.attempt == 2
    _expire_leases(db_dsn)
    assert store.reap_expired() == ([op_id], [])
    a3 = store.claim("e3", 30)
    assert a3 is not None and a3.attempt == 3
    assert store.finish(a3, "e3", Outcome(OperationState.SUCCEEDED, {"files": 1}, None, "ok", 0))
    attempts = store.attempts([op_id])[op_id]
    assert [(a.attempt, a.executor_id, a.state) for a in attempts] == [
        (1, "e1", AttemptState.FAILED), (2, "e2", AttemptState.LOST),
        (3, "e3", AttemptState.SUCCEEDED)]
    first = attempts[0]
    assert (first.engine_handle, first.exit_code, first.error, first.log_tail, first.result) == (
        "local-1", 137, "OOM", "tail 1", {"partial": 1})
    assert first.retry_at is not None and first.finished_at is not None
    assert "lease expired" in (attempts[1].error or "")
    assert all(a.finished_at is not None for a in attempts)
    op = store.get_operation("t1", op_id)
    assert op is not None and op.state is OperationState.SUCCEEDED and op.attempt == 3


def test_retry_waits_for_its_backoff(store: PostgresStore) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    op = store.claim("e1", 30)
    assert op is not None
    assert store.retry_later(op, "e1", Outcome(OperationState.FAILED, error="x"), 3600.0)
    assert store.claim("e1", 30) is None  # not before an hour
    queued = store.get_operation("t1", op.id)
    assert queued is not None and queued.state is OperationState.QUEUED
    assert queued.run_after is not None and queued.error == "x"


def test_retry_is_fenced_and_bounded(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 2)
    op = store.claim("e1", 30)
    assert op is not None
    fail = Outcome(OperationState.FAILED, error="x")
    assert not store.retry_later(op, "someone-else", fail, 0)  # not the lease holder
    assert not store.retry_later(replace(op, attempt=7), "e1", fail, 0)  # stale attempt
    assert store.retry_later(op, "e1", fail, 0)
    assert not store.retry_later(op, "e1", fail, 0)  # already back in the queue
    op2 = store.claim("e1", 30)
    assert op2 is not None and op2.attempt == 2
    assert not store.retry_later(op2, "e1", fail, 0)  # attempts spent: the caller finishes it
    assert store.finish(op2, "e1", fail)


def test_cancel_request_wins_over_retry(store: PostgresStore) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    op = store.claim("e1", 30)
    assert op is not None and store.request_cancel(op.id)
    assert not store.retry_later(op, "e1", Outcome(OperationState.FAILED, error="x"), 0)


def test_handed_back_attempt_is_recorded(store: PostgresStore) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    op = store.claim("e1", 30)
    assert op is not None and store.release(op, "e1", "shutting down")
    (a,) = store.attempts([op.id])[op.id]
    assert a.state is AttemptState.HANDED_BACK and a.error == "shutting down"
    again = store.claim("e2", 30)
    assert again is not None and again.attempt == 2


def test_progress_is_kept_on_the_running_attempt_only(store: PostgresStore) -> None:
    t = _table(store)
    op_id = store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    a1 = store.claim("e1", 30)
    assert a1 is not None
    sample = {"stages": [{"id": 1, "name": "rewrite", "tasks": 8, "completed": 3, "active": 2,
                          "failed": 0}], "sampled_at": "2026-06-01T00:00:00+00:00"}
    assert store.attempt_set_progress(a1, "e1", {"stages": [], "sampled_at": "earlier"})
    assert store.attempt_set_progress(a1, "e1", sample)  # the latest replaces the previous
    assert not store.attempt_set_progress(a1, "e2", {"stages": []})  # not the lease owner
    assert not store.attempt_set_progress(replace(a1, attempt=2), "e1", {"stages": []})
    assert store.retry_later(a1, "e1", Outcome(OperationState.FAILED, error="x"), 0.0)
    assert not store.attempt_set_progress(a1, "e1", {"stages": []})  # no longer RUNNING
    a2 = store.claim("e2", 30)
    assert a2 is not None and a2.attempt == 2
    assert not store.attempt_set_progress(a1, "e1", {"stages": []})  # a stale attempt
    first, second = store.attempts([op_id])[op_id]
    assert first.progress == sample and second.progress is None


def test_executor_claims_only_its_queues(store: PostgresStore) -> None:
    small = _table(store, "small1", queue="small")
    big = _table(store, "big1", queue="big")
    store.enqueue(small, Decision("compaction", True, "r"), "policy", 3, priority=0)
    store.enqueue(big, Decision("compaction", True, "r"), "policy", 3, priority=100)
    got = store.claim("e1", 30, ["small"])
    assert got is not None and got.table_pk == small.id and got.queue == "small"
    assert store.claim("e1", 30, ["small"]) is None
    got = store.claim("e2", 30)
    assert got is not None and got.table_pk == big.id


def test_queue_limit_holds_across_concurrent_claims(store: PostgresStore) -> None:
    tables = [_table(store, f"q{i}", queue="batch") for i in range(12)]
    for t in tables:
        store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    store.set_queue_limit("batch", 3)
    with ThreadPoolExecutor(8) as pool:
        claims = list(pool.map(lambda i: store.claim(f"e{i}", 30), range(12)))
    assert sum(c is not None for c in claims) == 3
    (info,) = [q for q in store.list_queues() if q.name == "batch"]
    assert (info.max_running, info.running, info.queued) == (3, 3, 9)
    done = next(c for c in claims if c is not None)
    assert store.finish(done, done.lease_owner or "", Outcome(OperationState.SUCCEEDED, {}))
    assert store.claim("late", 30) is not None  # a slot opened
    assert store.claim("later", 30) is None
    store.set_queue_limit("batch", None)  # unlimited again
    assert store.claim("free", 30) is not None


def test_queue_limit_zero_pauses_a_queue(store: PostgresStore) -> None:
    t = _table(store, "p1", queue="paused")
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    store.set_queue_limit("paused", 0)
    assert store.claim("e1", 30) is None
    store.set_queue_limit("paused", 1)
    assert store.claim("e1", 30) is not None


def test_database_refuses_a_bad_queue_limit(store: PostgresStore) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        store.set_queue_limit("q", -1)
    with pytest.raises(psycopg.errors.CheckViolation):
        store.set_queue_limit("Bad Name", 1)
