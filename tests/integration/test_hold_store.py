"""Held actions on a real PostgreSQL: failures in a row counted from the operations, holds
placed and released with fenced writes, listed and released by table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.helpers import store_catalog
from tms.domain import OperationState, Outcome, Table, TableSpec
from tms.storage.postgres import PostgresStore
from tms.storage.roles import EnqueueParams

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 28, 3, 0, tzinfo=UTC)


def _table(store: PostgresStore, table_id: str) -> Table:
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                          namespace="ns", table_name=table_id))
    assert view is not None
    return view.table


def _run(store: PostgresStore, table: Table, state: OperationState,
         action: str = "compaction", error: str = "boom") -> int:
    op_id = store.operation_enqueue(EnqueueParams(table, action, "policy", "r", 1, 0))
    assert op_id is not None
    op = store.operation_claim("e1", 30)
    assert op is not None and op.id == op_id
    assert store.operation_finish(op, "e1", Outcome(state, error=error if state is
                                                     OperationState.FAILED else None))
    return op_id


def test_failures_in_a_row_count_from_the_last_success(store: PostgresStore) -> None:
    t = _table(store, "t1")
    _run(store, t, OperationState.FAILED)
    _run(store, t, OperationState.SUCCEEDED)
    _run(store, t, OperationState.FAILED)
    _run(store, t, OperationState.CANCELLED)  # neither counts nor breaks the run
    last = _run(store, t, OperationState.FAILED, error="missing file: /x")
    _run(store, t, OperationState.FAILED, action="expire_snapshots")
    streaks = store.hold_streaks([t.pk])[t.pk]
    s = streaks["compaction"]
    assert (s.failures, s.last_failed_id, s.last_error) == (2, last, "missing file: /x")
    assert not s.held and s.version == -1
    assert streaks["expire_snapshots"].failures == 1
    assert store.hold_streaks([_table(store, "t2").pk]) == {}


def test_place_is_fenced_and_release_resets_the_count(store: PostgresStore) -> None:
    t = _table(store, "t1")
    for _ in range(3):
        _run(store, t, OperationState.FAILED)
    s = store.hold_streaks([t.pk])[t.pk]["compaction"]
    until = NOW + timedelta(hours=1)
    assert store.hold_place(s, 1, "3 failed", NOW, until, "d1")
    assert not store.hold_place(s, 1, "3 failed", NOW, until, "d1")  # stale: no row read
    held = store.hold_streaks([t.pk])[t.pk]["compaction"]
    assert held.held and held.held_failures == 3 and held.held_until == until
    assert held.policy_digest == "d1" and held.version == 0
    assert store.hold_counts() == {"compaction": 1}
    [shown] = store.hold_list(None, None, ("", ""), 10)
    assert (shown.table_id, shown.action, shown.failures, shown.reason) == (
        "t1", "compaction", 3, "3 failed")
    assert store.hold_list("t2", None, ("", ""), 10) == []
    assert store.hold_list(None, "compaction", ("t1", "compaction"), 10) == []  # after it
    assert [h.action for h in store.hold_of_table(t.pk)] == ["compaction"]

    # a second scheduler with the row read before the first one's write loses
    assert store.hold_release(held, "policy", NOW)
    assert not store.hold_release(held, "policy", NOW)
    after = store.hold_streaks([t.pk])[t.pk]["compaction"]
    assert after.failures == 0 and not after.held  # the failures so far stop counting
    _run(store, t, OperationState.FAILED)
    assert store.hold_streaks([t.pk])[t.pk]["compaction"].failures == 1


def test_resume_releases_every_held_action_of_the_table(store: PostgresStore) -> None:
    t, other = _table(store, "t1"), _table(store, "t2")
    for table in (t, other):
        _run(store, table, OperationState.FAILED)
        s = store.hold_streaks([table.pk])[table.pk]["compaction"]
        assert store.hold_place(s, 1, "r", NOW, NOW + timedelta(hours=1), "d")
    assert store.hold_release_table(t.pk) == ["compaction"]
    assert store.hold_release_table(t.pk) == []
    assert [h.table_id for h in store.hold_list(None, None, ("", ""), 10)] == ["t2"]
    assert store.hold_streaks([t.pk])[t.pk]["compaction"].failures == 0
