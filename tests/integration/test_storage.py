"""The schema's invariants and the store's fenced writes, on a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from tests.helpers import store_catalog
from tms.coordination import NUM_SHARDS
from tms.domain import (
    CommitEvent,
    Decision,
    LeaseStatus,
    OperationState,
    Outcome,
    Table,
    TableSpec,
)
from tms.storage.migrate import load_migrations, migrate
from tms.storage.postgres import PostgresStore
from tms.storage.roles import DuplicateTable, EnqueueParams

pytestmark = pytest.mark.integration

ALL_SHARDS = list(range(NUM_SHARDS))


def _table(store: PostgresStore, table_id: str = "t1") -> Table:
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                          namespace="ns", table_name=table_id))
    assert view is not None
    return view.table


def _enqueue(store: PostgresStore, table: Table, action: str = "compaction",
             max_attempts: int = 3) -> int | None:
    return store.operation_enqueue(EnqueueParams(table, action, "policy", "r", max_attempts,
                                                 table.priority))


def _due(store: PostgresStore) -> dict[int, bool]:
    """Table pk -> had commits, for every table due now (their marks consumed)."""
    return {d.table.pk: d.had_commits
            for d in store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 100)}


def test_migrate_is_idempotent(pg) -> None:
    first = migrate(pg.dsn)
    on_disk = [m.version for m in load_migrations()]
    assert [m.version for m in first] == on_disk == list(range(1, len(on_disk) + 1))
    assert migrate(pg.dsn) == []


def test_register_twice_returns_none(store: PostgresStore) -> None:
    _table(store)
    assert store.table_register(TableSpec(table_id="t1", format="iceberg", catalog="c",
                                          table_name="x")) is None


def test_register_returns_the_view(store: PostgresStore) -> None:
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id="v1", format="iceberg", catalog="c",
                                          table_name="v1", owner="team", policy={"k": "v"}),
                                location="/lake/v1")
    assert view is not None
    assert (view.table.table_id, view.table.owner, view.table.policy) == ("v1", "team",
                                                                          {"k": "v"})
    assert view.stats.commit_count == 0 and view.stats.last_commit_id is None
    assert view.stats.next_check_at is not None  # a new table is checked at once
    assert view.table.location == "/lake/v1" and not view.table.discovered
    settings = store.table_get_settings(view.table.pk)
    assert settings == view.table
    assert store.table_get_settings(view.table.pk + 1000) is None


def test_notify_commit_is_idempotent(store: PostgresStore) -> None:
    _table(store)
    before = store.table_get("t1")
    assert before is not None
    assert store.commits_notify([CommitEvent("t1", "s1")]) == [True]
    assert store.commits_notify([CommitEvent("t1", "s1")]) == [False]
    assert store.commits_notify([CommitEvent("t1", "s2")]) == [True]
    assert store.commits_notify([CommitEvent("nope", "s1")]) == [None]
    # fewer recorded than sent because of an unknown table, not a replay: s3 is still new
    assert store.commits_notify([CommitEvent("t1", "s3"), CommitEvent("nope", "s3")]) == [
        True, None]
    assert store.commits_notify([CommitEvent("t1", "s3"), CommitEvent("t1", "s4")]) == [
        False, True]
    again = store.table_get("t1")
    assert again is not None and again.stats.commit_count == before.stats.commit_count + 4
    assert again.stats.last_commit_id == "s4"


def test_one_active_operation_per_table_action(store: PostgresStore) -> None:
    t = _table(store)
    first = _enqueue(store, t)
    assert first is not None
    assert _enqueue(store, t) is None
    assert store.operation_active(t.pk, "compaction") == first
    assert store.operation_active(t.pk, "expire_snapshots") is None


def test_database_refuses_second_running_per_table(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    _enqueue(store, t, "compaction")
    _enqueue(store, t, "expire_snapshots")
    assert store.operation_claim("e1", 30) is not None
    # the claim query skips the table; the index refuses even a direct write
    assert store.operation_claim("e2", 30) is None
    with psycopg.connect(db_dsn) as conn, pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE tms_operations SET state = 'RUNNING', lease_owner = 'x', "
                     "lease_expires_at = now(), attempt = 1 WHERE state = 'QUEUED'")


def test_stale_attempt_cannot_write(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = store.operation_claim("e1", 30)
    assert op is not None
    with psycopg.connect(db_dsn) as conn:  # the lease runs out
        conn.execute("UPDATE tms_operations SET lease_expires_at = now() - interval '1 s'")
    assert store.operation_reap_expired() == ([op.id], [])
    op2 = store.operation_claim("e2", 30)
    assert op2 is not None and op2.id == op.id and op2.lease.attempt == 2
    assert store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={})) is False
    assert store.operation_renew_lease(op, "e1", 30) is LeaseStatus.LOST
    assert store.operation_renew_lease(op2, "e2", 30) is LeaseStatus.HELD
    assert store.operation_finish(op2, "e2",
                                  Outcome(OperationState.SUCCEEDED, result={"n": 1})) is True
    done = store.operation_get("t1", op.id)
    assert done is not None and done.state is OperationState.SUCCEEDED
    assert done.outcome.result == {"n": 1} and done.outcome.finished_at is not None
    assert done.hold is None


def test_terminal_state_requires_finish_time(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    _enqueue(store, t)
    with psycopg.connect(db_dsn) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE tms_operations SET state = 'SUCCEEDED'")


def test_batch_notify_mixed(store: PostgresStore) -> None:
    ta, tb = _table(store, "a"), _table(store, "b")
    _due(store)  # the new tables' first checks are done with
    store.decision_finish_batch("s", [], [(ta.pk, 3600), (tb.pk, 3600)])
    store.commits_notify([CommitEvent("a", "old")])
    events = [CommitEvent("a", "old"), CommitEvent("a", "n1"), CommitEvent("b", "n1"),
              CommitEvent("zz", "x"), CommitEvent("a", "n1"), CommitEvent("a", "n2")]
    assert store.commits_notify(events) == [False, True, True, None, False, True]
    a, b = store.table_get("a"), store.table_get("b")
    assert a is not None and b is not None
    assert (a.stats.commit_count, a.stats.last_commit_id) == (3, "n2")
    assert (b.stats.commit_count, b.stats.last_commit_id) == (1, "n1")
    assert _due(store) == {ta.pk: True, tb.pk: True}
    assert store.commits_notify([]) == []


def test_notify_keeps_every_field_through_the_json_parameter(store: PostgresStore,
                                                               db_dsn: str) -> None:
    """The events travel as one JSON parameter: times, big numbers, quotes, backslashes and
    characters past the BMP come back as sent."""
    _table(store, "fields")
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    odd = 'q"uote\\back\u00e9\U0001f600/'
    assert store.commits_notify([
        CommitEvent("fields", odd, when, 2**63 - 1, 0, "over\"write", "00-t-s-01"),
        CommitEvent("fields", "bare")]) == [True, True]
    with psycopg.connect(db_dsn) as conn:
        got = conn.execute(
            "SELECT commit_id, commit_time, files_added, bytes_added, operation_type"
            " FROM tms_commit_events e JOIN tms_tables t ON t.id = e.table_pk"
            " WHERE t.table_id = 'fields' ORDER BY seq").fetchall()
    assert got == [(odd, when, 2**63 - 1, 0, 'over"write'), ("bare", None, None, None, "")]


def test_concurrent_batches_over_many_tables(store: PostgresStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = [f"t{i}" for i in range(6)]
    for n in names:
        _table(store, n)

    def batch(k: int) -> list[bool | None]:
        order = names if k % 2 else list(reversed(names))
        return store.commits_notify([CommitEvent(n, f"c{k}") for n in order])

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(batch, range(30)))
    assert all(all(r) for r in results)
    views = [store.table_get(n) for n in names]
    assert {v.stats.commit_count for v in views if v is not None} == {30}
    assert None not in views


def test_commit_during_a_decision_marks_the_table_again(store: PostgresStore) -> None:
    t = _table(store, "busy")
    store.commits_notify([CommitEvent("busy", "c1", traceparent="00-a-b-01")])
    (due,) = store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10)  # a decision starts
    assert due.table.pk == t.pk and due.had_commits and due.traceparent == "00-a-b-01"
    store.commits_notify([CommitEvent("busy", "c2")])  # a commit lands meanwhile
    store.decision_finish_batch("s", [(t.pk, Decision("compaction", False, "tidy"), None)],
                                [(t.pk, 3600)])
    (again,) = store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10)
    assert again.table.pk == t.pk and again.had_commits  # the second commit is not lost
    store.decision_finish_batch("s", [], [(t.pk, 3600)])
    assert store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10) == []


HOSTILE = 'q"uote\\back,slash{brace} NULL \'single\' \u00e9\u4e2d \U0001f600 ["x"]'


def test_decisions_keep_every_character_of_reasons_and_metrics(store: PostgresStore) -> None:
    """Reasons and metrics travel as binary arrays: whatever they hold comes back as is."""
    t = _table(store, "chars")
    metrics = {"k": HOSTILE, "nested": {"v": [HOSTILE, 1, None, 2.5]}, HOSTILE: True}
    store.decision_finish_batch("s", [
        (t.pk, Decision("compaction", True, HOSTILE, metrics, benefit=1.5), None),
        (t.pk, Decision("clustering", False, "", {}), None)], [(t.pk, 3600)])
    got = {e.action: e for e in store.decision_explain(t.pk, ["compaction", "clustering"])}
    assert got["compaction"].reason == HOSTILE and got["compaction"].metrics == metrics
    assert got["compaction"].benefit == 1.5 and got["compaction"].should_run
    assert got["clustering"].reason == "" and got["clustering"].metrics == {}


def test_a_check_without_a_changed_decision_keeps_decided_at(store: PostgresStore) -> None:
    """The scheduler passes only decisions that changed: the table's checked_at moves at
    every check, a decision's decided_at only when it is written (when it changed)."""
    t = _table(store, "quiet")
    assert store.decision_explain(t.pk, ["compaction"])[0].checked_at is None
    store.decision_finish_batch("s", [(t.pk, Decision("compaction", False, "tidy"), None)],
                                [(t.pk, 3600)])
    (first,) = store.decision_explain(t.pk, ["compaction"])
    assert first.checked_at is not None and first.decided_at is not None
    store.decision_finish_batch("s", [], [(t.pk, 3600)])  # checked, nothing changed
    (second,) = store.decision_explain(t.pk, ["compaction"])
    assert second.decided_at == first.decided_at and second.reason == "tidy"
    assert second.checked_at is not None and second.checked_at > first.checked_at


def test_failed_decision_puts_the_mark_back(store: PostgresStore) -> None:
    t = _table(store, "retry")
    store.decision_finish_batch("s", [], [(t.pk, 3600)])
    store.commits_notify([CommitEvent("retry", "c1", traceparent="00-x-y-01")])
    (due,) = store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10)
    assert store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10) == []  # mark consumed
    store.commits_mark_dirty(t.pk, due.traceparent)
    (back,) = store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10)
    assert back.had_commits and back.traceparent == "00-x-y-01"


def test_due_tables_only_of_the_given_shards(store: PostgresStore) -> None:
    tables = [_table(store, f"s{i}") for i in range(4)]
    mine = {tables[0].pk % NUM_SHARDS, tables[2].pk % NUM_SHARDS}
    due = store.decision_begin_batch(sorted(mine), NUM_SHARDS, 10)
    assert {d.table.pk for d in due} == {tables[0].pk, tables[2].pk}
    assert not any(d.had_commits for d in due)  # due by their first check, no commits
    rest = store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10)
    # not decided yet: still due; the limit applies
    assert {d.table.pk for d in rest} == {t.pk for t in tables}
    assert len(store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 1)) == 1


def test_decision_finish_batch_records_decisions_and_next_checks(store: PostgresStore) -> None:
    t = _table(store, "d1")
    gone = _table(store, "d2")
    op_id = _enqueue(store, t)
    d_run = Decision("compaction", True, "30 small files", {"small_files": 30})
    d_skip = Decision("expire_snapshots", False, "nothing old")
    assert store.table_delete("d2", force=False)
    store.decision_finish_batch("sched-1", [(t.pk, d_run, op_id), (t.pk, d_skip, None),
                                            (gone.pk, d_skip, None)],
                                [(t.pk, 3600), (gone.pk, 3600)])
    view = store.table_get("d1")
    assert view is not None and view.stats.next_check_at is not None
    assert store.decision_begin_batch(ALL_SHARDS, NUM_SHARDS, 10) == []
    run, skip, never = store.decision_explain(t.pk, ["compaction", "expire_snapshots",
                                                      "rewrite_manifests"])
    assert (run.should_run, run.reason, run.metrics, run.operation_id, run.scheduler_id) == (
        True, "30 small files", {"small_files": 30}, op_id, "sched-1")
    assert (run.active_id, run.active_state) == (op_id, OperationState.QUEUED)
    assert (skip.should_run, skip.operation_id, skip.active_id, skip.active_state) == (
        False, None, None, None)
    assert never.decided_at is None and never.should_run is None
    # a later decision replaces the earlier one
    store.decision_finish_batch("sched-2", [(t.pk, Decision("compaction", False, "now tidy"),
                                             None)], [])
    (latest,) = store.decision_explain(t.pk, ["compaction"])
    assert (latest.should_run, latest.reason, latest.scheduler_id) == (False, "now tidy",
                                                                       "sched-2")


def test_active_actions_are_the_queued_and_running_ones(store: PostgresStore) -> None:
    a, b, c = _table(store, "aa"), _table(store, "ab"), _table(store, "ac")
    _enqueue(store, a)  # QUEUED, then claimed: RUNNING
    assert store.operation_claim("e1", 30) is not None
    _enqueue(store, a, "expire_snapshots")  # QUEUED
    _enqueue(store, b)
    op = store.operation_claim("e1", 30)
    assert op is not None and op.table_pk == b.pk
    assert store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    assert store.operation_active_actions([a.pk, b.pk, c.pk]) == {
        a.pk: {"compaction", "expire_snapshots"}}
    assert store.operation_active_actions([]) == {}


def test_last_succeeded_per_table_and_action(store: PostgresStore) -> None:
    a, b = _table(store, "la"), _table(store, "lb")
    ids: dict[int, list[int]] = {}
    for t in (a, b, a):
        _enqueue(store, t)
        op = store.operation_claim("e1", 30)
        assert op is not None and op.table_pk == t.pk
        assert store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={}))
        ids.setdefault(t.pk, []).append(op.id)
    _enqueue(store, b, "expire_snapshots")
    op = store.operation_claim("e1", 30)
    assert op is not None
    store.operation_finish(op, "e1", Outcome(OperationState.FAILED, error="x"))
    last = store.operation_last_succeeded([a.pk, b.pk])
    assert {pk: {act: o.id for act, o in by.items()} for pk, by in last.items()} == {
        a.pk: {"compaction": ids[a.pk][-1]}, b.pk: {"compaction": ids[b.pk][0]}}
    assert last[a.pk]["compaction"].table_id == "la"
    assert store.operation_last_succeeded([]) == {}
    # a job that found nothing to plan (Hudi's "no plan") ran to the end: it counts; a skip
    # before anything ran (a recheck) does not
    for result in ({"exit_code": 255, "no_plan": "Couldn't do schedule"}, None):
        _enqueue(store, a)
        op = store.operation_claim("e1", 30)
        assert op is not None
        if result:  # the job's log tail and exit code are kept
            assert store.operation_skip(op, "e1", "nothing", result, "WARN no plan\n", 255)
        else:
            assert store.operation_skip(op, "e1", "nothing", result)
        ids[a.pk].append(op.id)
    latest = store.operation_last_succeeded([a.pk])[a.pk]["compaction"]
    assert latest.id == ids[a.pk][-2] and latest.state is OperationState.SKIPPED
    assert latest.outcome.result == {"exit_code": 255, "no_plan": "Couldn't do schedule"}
    assert (latest.outcome.log_tail, latest.outcome.exit_code) == ("WARN no plan\n", 255)


def test_deregistration_removes_events_and_marks(store: PostgresStore) -> None:
    t = _table(store, "gone")
    store.commits_notify([CommitEvent("gone", "c1")])
    assert store.table_delete("gone", force=False)
    assert t.pk not in _due(store)
    assert store.table_get("gone") is None
    _table(store, "gone")
    again = store.table_get("gone")
    assert again is not None
    assert again.stats.commit_count == 0 and again.stats.last_commit_id is None


def test_retention_folds_old_events_and_prunes_finished_operations(store: PostgresStore,
                                                                   db_dsn: str) -> None:
    from tms.scheduler.retention import Retention

    t = _table(store, "old")
    store.commits_notify([CommitEvent("old", f"c{i}") for i in range(5)])
    _enqueue(store, t)
    op = store.operation_claim("e1", 30)
    assert op is not None
    store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED, result={}))
    with psycopg.connect(db_dsn) as conn:
        conn.execute("UPDATE tms_commit_events SET received_at = now() - interval '8 days' "
                      "WHERE commit_id IN ('c0', 'c1', 'c2', 'c3', 'c4')")
        conn.execute("UPDATE tms_operations SET finished_at = now() - interval '31 days'")
    store.commits_notify([CommitEvent("old", "fresh")])
    done = Retention(batch=2).prune(store)
    assert done == {"commit_events": 5, "operations": 1, "requests": 0, "processes": 0}
    after = store.table_get("old")
    assert after is not None
    assert (after.stats.commit_count, after.stats.last_commit_id) == (6, "fresh")
    assert store.operation_get("old", op.id) is None
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM tms_commit_events").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM tms_attempts").fetchone() == (0,)
        conn.execute("UPDATE tms_commit_events SET received_at = now() - interval '8 days'")
    Retention().prune(store)
    gone = store.table_get("old")
    assert gone is not None
    assert (gone.stats.commit_count, gone.stats.last_commit_id) == (6, "fresh")
    with pytest.raises(ValueError):
        store.retention_prune("tables", 1, 1)


def test_priorities_and_a_noisy_table_cannot_starve_others(store: PostgresStore) -> None:
    from dataclasses import replace

    from tms.formats.iceberg.policy import RULES

    noisy = _table(store, "noisy")
    quiet = _table(store, "quiet")
    urgent = replace(_table(store, "urgent"), priority=50)
    for action in RULES:  # the noisy table asks for everything, twice
        assert _enqueue(store, noisy, action) is not None
        assert _enqueue(store, noisy, action) is None
    _enqueue(store, quiet)
    _enqueue(store, urgent)
    claimed = [store.operation_claim(f"e{i}", 30) for i in range(4)]
    tables = [c.table_pk if c else None for c in claimed]
    # the higher priority first, then one of the noisy table's (oldest first), then the quiet
    # table although five more noisy operations are older: a table runs one at a time
    assert tables == [urgent.pk, noisy.pk, quiet.pk, None]


def test_request_ids(store: PostgresStore) -> None:
    assert store.request_claim("r1", "RegisterTable", "fp") is None  # new: reserved
    first = store.request_claim("r1", "RegisterTable", "fp")
    assert first is not None and (first.method, first.fingerprint, first.resource) == (
        "RegisterTable", "fp", "")
    store.request_set_resource("r1", "tables/x")
    done = store.request_claim("r1", "RegisterTable", "other")
    assert done is not None and (done.fingerprint, done.resource) == ("fp", "tables/x")
    store.request_forget("r1")  # only while unfinished: a made resource keeps its id
    assert store.request_claim("r1", "RegisterTable", "fp") is not None
    assert store.request_claim("r2", "TriggerOperation", "fp") is None
    store.request_forget("r2")
    assert store.request_claim("r2", "TriggerOperation", "fp2") is None


def test_table_list_update_and_state(store: PostgresStore) -> None:
    from tms.domain import TableState, TableUpdate
    from tms.storage.roles import TableListParams

    store_catalog(store, "c")
    store_catalog(store, "d")
    for i in range(5):
        store.table_register(TableSpec(table_id=f"l{i}", format="iceberg",
                                       catalog="d" if i == 4 else "c", table_name=f"l{i}",
                                       owner="odd" if i % 2 else "even"))
    store.commits_notify([CommitEvent("l1", "c1")])
    page = store.table_list(TableListParams(limit=2))
    assert [v.table.table_id for v in page] == ["l0", "l1"]
    assert page[1].stats.commit_count == 1 and page[1].stats.last_commit_id == "c1"
    rest = store.table_list(TableListParams(after="l1", limit=10))
    assert [v.table.table_id for v in rest] == ["l2", "l3", "l4"]
    assert [v.table.table_id for v in store.table_list(TableListParams(owner="odd"))] == [
        "l1", "l3"]
    assert store.table_owners(["l0", "l1", "nope"]) == {"l0": "even", "l1": "odd"}
    assert [v.table.table_id for v in store.table_list(TableListParams(catalog="d"))] == ["l4"]
    updated = store.table_update("l1", TableUpdate(owner="new", priority=5,
                                                   policy={"a": "b"}))
    assert updated is not None
    t = updated.table
    assert (t.owner, t.priority, t.policy, t.queue) == ("new", 5, {"a": "b"}, "default")
    assert updated.stats.commit_count == 1  # a view, with its statistics
    assert store.table_update("nope", TableUpdate(owner="x")) is None
    paused = store.table_set_state("l2", TableState.PAUSED)
    assert paused is not None and paused.table.state is TableState.PAUSED
    assert [v.table.table_id
            for v in store.table_list(TableListParams(state=TableState.PAUSED))] == ["l2"]
    assert store.table_set_state("nope", TableState.PAUSED) is None
    assert store.table_get_settings(t.pk) == t


def test_maintenance_figures(store: PostgresStore, db_dsn: str) -> None:
    t = _table(store, "late")
    store.decision_finish_batch("s", [], [(t.pk, 3600)])
    assert store.table_count_overdue(60) == 0
    store.commits_notify([CommitEvent("late", "c1")])
    with psycopg.connect(db_dsn) as conn:
        conn.execute("UPDATE tms_dirty_tables SET since = now() - interval '5 min'")
    assert store.table_count_overdue(60) == 1
    assert store.table_count_overdue(600) == 0
    _enqueue(store, t)
    (stat,) = store.queue_stats()
    assert (stat["queue"], stat["action"], stat["queued"]) == ("default", "compaction", 1)
    assert stat["oldest_age_s"] >= 0


def test_one_physical_table_one_registration(store: PostgresStore) -> None:
    store_catalog(store, "c")
    store_catalog(store, "c2")
    first = store.table_register(TableSpec("a", "iceberg", "c", "ns", "t"), "s3://lake/wh/t")
    assert first is not None
    clashes = [  # (spec, location, what): the same table under another id
        (TableSpec("b", "iceberg", "c", "ns", "t"), "s3://lake/other", "identifier"),
        (TableSpec("b", "iceberg", "c2", "ns", "t"), "s3://lake/wh/t", "location"),
        (TableSpec("b", "iceberg", "c2", "ns", "t"), "s3://lake/wh/t/data", "location"),
        (TableSpec("b", "iceberg", "c2", "ns", "t"), "s3://lake/wh", "location"),
        (TableSpec("b", "hudi", "c2", base_path="/h"), "s3://lake/wh/t/x", "location"),
    ]
    for spec, location, what in clashes:
        with pytest.raises(DuplicateTable) as info:
            store.table_register(spec, location)
        assert (info.value.table_id, info.value.what) == ("a", what), (spec, location)
    # neighbours on whole path segments are not the same table
    assert store.table_register(TableSpec("b", "iceberg", "c", "ns", "t2"),
                                "s3://lake/wh/t2") is not None
    assert store.table_register(TableSpec("c", "hudi", "c2", base_path="/h/t"), "") is not None
    assert store.table_register(TableSpec("d", "hudi", "c2", base_path="/h/t"), "") is not None
    assert store.table_set_location(first.table.pk, "s3://lake/wh/t2/sub") == "b"
    assert store.table_set_location(first.table.pk, "s3://lake/wh/moved") is None
    assert store.table_get("a").table.location == "s3://lake/wh/moved"


def test_concurrent_registrations_of_one_location(store: PostgresStore) -> None:
    """Registrations that overlap only by prefix (no unique index can see it) are serialised
    by the location lock: exactly one wins, whatever the interleaving."""
    from concurrent.futures import ThreadPoolExecutor

    store_catalog(store, "c")

    def register(i: int) -> bool:
        try:
            return store.table_register(TableSpec(f"r{i}", "iceberg", "c", "ns", f"r{i}"),
                                        "/lake/r" + "/x" * i) is not None
        except DuplicateTable:
            return False

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(register, range(8)))
    assert sum(won) == 1


def test_concurrent_location_writes_that_overlap(store: PostgresStore) -> None:
    """The scheduler's location writes (pipelined behind the location lock) from many
    threads at once: of tables whose new locations nest in one another, exactly one gets its
    location; every other one is told whose it overlaps."""
    from concurrent.futures import ThreadPoolExecutor

    tables = [_table(store, f"w{i}") for i in range(8)]

    def place(i: int) -> str | None:
        return store.table_set_location(tables[i].pk, "/lake/w" + "/x" * i)

    with ThreadPoolExecutor(8) as pool:
        clashes = list(pool.map(place, range(8)))
    assert clashes.count(None) == 1
    winner = tables[clashes.index(None)].table_id
    assert all(c == winner for c in clashes if c is not None)
