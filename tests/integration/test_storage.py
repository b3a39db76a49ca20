"""The schema's invariants and the store's fenced writes, on a real PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest

from tms.domain import CommitEvent, Decision, Lease, OperationState, Outcome, TableSpec
from tms.storage.migrate import migrate
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration


def _table(store: PostgresStore, table_id: str = "t1"):
    rec = store.register_table(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                         namespace="ns", table_name=table_id))
    assert rec is not None
    return rec


def test_migrate_is_idempotent(pg) -> None:
    first = migrate(pg.dsn)
    assert [m.version for m in first] == [1, 2, 3, 4, 5, 6]
    assert migrate(pg.dsn) == []


def test_register_twice_returns_none(store: PostgresStore) -> None:
    _table(store)
    assert store.register_table(TableSpec(table_id="t1", format="iceberg", table_name="x")) is None


def test_notify_commit_is_idempotent(store: PostgresStore) -> None:
    t = _table(store)
    assert store.notify_commits([CommitEvent("t1", "s1")]) == [True]
    assert store.notify_commits([CommitEvent("t1", "s1")]) == [False]
    assert store.notify_commits([CommitEvent("t1", "s2")]) == [True]
    assert store.notify_commits([CommitEvent("nope", "s1")]) == [None]
    again = store.get_table("t1")
    assert again is not None and again.commit_count == t.commit_count + 2
    assert again.last_commit_id == "s2"


def test_one_active_operation_per_table_action(store: PostgresStore) -> None:
    t = _table(store)
    d = Decision("compaction", True, "because")
    first = store.enqueue(t, d, "policy", 3)
    assert first is not None
    assert store.enqueue(t, d, "policy", 3) is None


def test_database_refuses_second_running_per_table(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    store.enqueue(t, Decision("expire_snapshots", True, "r"), "policy", 3)
    assert store.claim("e1", 30) is not None
    # the claim query skips the table; the index refuses even a direct write
    assert store.claim("e2", 30) is None
    with psycopg.connect(db_dsn) as conn, pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE tms_operations SET state = 'RUNNING', lease_owner = 'x', "
                     "lease_expires_at = now(), attempt = 1 WHERE state = 'QUEUED'")


def test_stale_attempt_cannot_write(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    op = store.claim("e1", 30)
    assert op is not None
    with psycopg.connect(db_dsn) as conn:  # the lease runs out
        conn.execute("UPDATE tms_operations SET lease_expires_at = now() - interval '1 s'")
    assert store.reap_expired() == ([op.id], [])
    op2 = store.claim("e2", 30)
    assert op2 is not None and op2.id == op.id and op2.attempt == 2
    assert store.finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={})) is False
    assert store.renew_lease(op, "e1", 30) is Lease.LOST
    assert store.finish(op2, "e2", Outcome(OperationState.SUCCEEDED, result={"n": 1})) is True
    done = store.get_operation("t1", op.id)
    assert done is not None and done.state is OperationState.SUCCEEDED
    assert done.result == {"n": 1} and done.finished_at is not None


def test_terminal_state_requires_finish_time(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    with psycopg.connect(db_dsn) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE tms_operations SET state = 'SUCCEEDED'")


def test_batch_notify_mixed(store: PostgresStore) -> None:
    _table(store, "a")
    _table(store, "b")
    store.notify_commits([CommitEvent("a", "old")])
    events = [CommitEvent("a", "old"), CommitEvent("a", "n1"), CommitEvent("b", "n1"),
              CommitEvent("zz", "x"), CommitEvent("a", "n1"), CommitEvent("a", "n2")]
    assert store.notify_commits(events) == [False, True, True, None, False, True]
    a, b = store.get_table("a"), store.get_table("b")
    assert a is not None and b is not None
    assert (a.commit_count, a.last_commit_id) == (3, "n2")
    assert (b.commit_count, b.last_commit_id) == (1, "n1")
    assert sorted(store.due_tables(10)) == sorted([a.id, b.id])
    assert store.notify_commits([]) == []


def test_concurrent_batches_over_many_tables(store: PostgresStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = [f"t{i}" for i in range(6)]
    for n in names:
        _table(store, n)

    def batch(k: int) -> list[bool | None]:
        order = names if k % 2 else list(reversed(names))
        return store.notify_commits([CommitEvent(n, f"c{k}") for n in order])

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(batch, range(30)))
    assert all(all(r) for r in results)
    assert {store.get_table(n).commit_count for n in names} == {30}  # type: ignore[union-attr]


def test_dirty_marks_survive_a_decision_in_progress(store: PostgresStore) -> None:
    t = _table(store, "busy")
    store.notify_commits([CommitEvent("busy", "c1")])
    assert store.begin_decision(t.id)[1] is True  # a decision starts
    store.notify_commits([CommitEvent("busy", "c2")])  # a commit lands meanwhile
    assert t.id in store.due_tables(10)
    assert store.begin_decision(t.id)[1] is True and store.begin_decision(t.id)[1] is False


def test_deregistration_removes_events_and_marks(store: PostgresStore) -> None:
    t = _table(store, "gone")
    store.notify_commits([CommitEvent("gone", "c1")])
    assert store.delete_table("gone", force=False)
    assert t.id not in store.due_tables(10)
    again = _table(store, "gone")
    assert again.commit_count == 0 and again.last_commit_id is None


def test_retention_folds_old_events_and_prunes_finished_operations(store: PostgresStore,
                                                                   db_dsn: str) -> None:
    from tms.scheduler.retention import Retention

    t = _table(store, "old")
    store.notify_commits([CommitEvent("old", f"c{i}") for i in range(5)])
    store.enqueue(t, Decision("compaction", True, "r"), "policy", 3)
    op = store.claim("e1", 30)
    assert op is not None
    store.finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    with psycopg.connect(db_dsn) as conn:
        conn.execute("UPDATE tms_commit_events SET received_at = now() - interval '8 days' "
                      "WHERE commit_id IN ('c0', 'c1', 'c2', 'c3', 'c4')")
        conn.execute("UPDATE tms_operations SET finished_at = now() - interval '31 days'")
    store.notify_commits([CommitEvent("old", "fresh")])
    done = Retention(batch=2).prune(store)
    assert done == {"commit_events": 5, "operations": 1, "requests": 0}
    after = store.get_table("old")
    assert after is not None
    assert (after.commit_count, after.last_commit_id) == (6, "fresh")
    assert store.get_operation("old", op.id) is None
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM tms_commit_events").fetchone() == (1,)
        conn.execute("UPDATE tms_commit_events SET received_at = now() - interval '8 days'")
    Retention().prune(store)
    gone = store.get_table("old")
    assert gone is not None and (gone.commit_count, gone.last_commit_id) == (6, "fresh")


def test_priorities_and_a_noisy_table_cannot_starve_others(store: PostgresStore) -> None:
    from dataclasses import replace

    from tms.formats.iceberg_policy import RULES

    noisy = _table(store, "noisy")
    quiet = _table(store, "quiet")
    urgent = replace(_table(store, "urgent"), priority=50)
    for action in RULES:  # the noisy table asks for everything, twice
        assert store.enqueue(noisy, Decision(action, True, "r"), "policy", 3) is not None
        assert store.enqueue(noisy, Decision(action, True, "r"), "policy", 3) is None
    store.enqueue(quiet, Decision("compaction", True, "r"), "policy", 3)
    store.enqueue(urgent, Decision("compaction", True, "r"), "policy", 3)
    claimed = [store.claim(f"e{i}", 30) for i in range(4)]
    tables = [c.table_pk if c else None for c in claimed]
    # the higher priority first, then one of the noisy table's (oldest first), then the quiet
    # table although five more noisy operations are older: a table runs one at a time
    assert tables == [urgent.id, noisy.id, quiet.id, None]
