"""SKIPPED operations, benefit-ordered claims and waits_for on a real PostgreSQL: the skip is
fenced like every other end of an attempt, the claim serves priority then benefit (unknown
last) then age by walking its index, and an operation waiting for another action of its
table is not claimed while that one is queued or running."""

from __future__ import annotations

import psycopg
import pytest

from tests.helpers import store_catalog
from tms.domain import AttemptState, Decision, Operation, OperationState, Outcome, Table, TableSpec
from tms.storage.postgres import PostgresStore
from tms.storage.queries import q
from tms.storage.roles import EnqueueParams, OperationListParams

pytestmark = pytest.mark.integration


def _table(store: PostgresStore, table_id: str = "t1") -> Table:
    store_catalog(store, "c")
    view = store.table_register(TableSpec(table_id=table_id, format="iceberg", catalog="c",
                                          namespace="ns", table_name=table_id))
    assert view is not None
    return view.table


def _enqueue(store: PostgresStore, table: Table, action: str = "compaction", *,
             priority: int = 0, benefit: float | None = None,
             waits_for: tuple[str, ...] = ()) -> int:
    op_id = store.operation_enqueue(EnqueueParams(
        table, action, "policy", "r", 3, priority, benefit=benefit, waits_for=waits_for))
    assert op_id is not None
    return op_id


def _claim(store: PostgresStore, owner: str = "e1") -> Operation:
    op = store.operation_claim(owner, 30)
    assert op is not None
    return op


def test_skip_is_fenced_and_terminal(store: PostgresStore) -> None:
    t = _table(store)
    op_id = _enqueue(store, t)
    op = _claim(store)
    assert not store.operation_skip(op, "someone-else", "no")  # another owner
    stale = Operation(**{**op.__dict__, "lease": op.lease.__class__(
        **{**op.lease.__dict__, "attempt": op.lease.attempt + 1})})
    assert not store.operation_skip(stale, "e1", "no")  # another attempt
    reason = "not run: 3 small data files; compaction starts at 12 (snapshot 42)"
    assert store.operation_skip(op, "e1", reason, {"checked_snapshot": "42"})
    assert not store.operation_skip(op, "e1", reason)  # once only
    # nothing else can move it any more: it is finished
    assert not store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED))
    got = store.operation_get("t1", op_id)
    assert got is not None
    assert got.state is OperationState.SKIPPED and got.state.terminal
    assert got.outcome.error == reason and got.outcome.finished_at is not None
    assert got.outcome.result == {"checked_snapshot": "42"}
    assert [a.state for a in got.attempts] == [AttemptState.SKIPPED]
    assert got.attempts[0].error == reason
    # a skipped operation no longer blocks a new one of the same action
    assert _enqueue(store, t) != op_id
    listed = store.operation_list(OperationListParams(state=OperationState.SKIPPED))
    assert [o.id for o in listed] == [op_id]


def test_skipped_operations_are_pruned_like_other_finished_ones(
        store: PostgresStore, db_dsn: str) -> None:
    t = _table(store)
    _enqueue(store, t)
    op = _claim(store)
    assert store.operation_skip(op, "e1", "not needed")
    with psycopg.connect(db_dsn) as conn:
        conn.execute("UPDATE tms_operations SET finished_at = now() - interval '2 days'")
    assert store.retention_prune("operations", 86_400, 100) == 1
    assert store.operation_list(OperationListParams()) == []


def test_claim_order_is_priority_then_benefit_unknown_last_then_age(
        store: PostgresStore, db_dsn: str) -> None:
    ids = {}
    for name, prio, benefit in (("a", 0, None), ("b", 0, 2.0), ("c", 0, 9.5), ("d", 5, None),
                                ("e", 0, 2.0)):
        ids[name] = _enqueue(store, _table(store, name), priority=prio, benefit=benefit)
    got = store.operation_get("c", ids["c"])
    assert got is not None and got.work.benefit == 9.5
    order = []
    for _ in ids:
        op = _claim(store)
        order.append(op.table_id)
        assert store.operation_finish(op, "e1", Outcome(OperationState.SUCCEEDED))
    assert order == ["d", "c", "b", "e", "a"]
    with psycopg.connect(db_dsn) as conn:  # the claim walks the queue index in its order
        conn.execute("SET enable_seqscan = off")  # a tiny table: ask for the index's plan
        plan = "\n".join(r[0] for r in conn.execute(
            b"EXPLAIN " + q("operation_claim").encode(),
            {"owner": "e1", "lease_s": 30, "queues": None}))
        candidates = plan.split("CTE claimed")[0]  # the CTE that picks the operation
        assert "tms_operations_queue" in candidates and "Sort " not in candidates, plan
        with pytest.raises(psycopg.errors.CheckViolation):  # benefit is finite, not negative
            conn.execute("UPDATE tms_operations SET benefit = 'NaN'")


def test_waiting_operation_is_claimed_after_what_it_waits_for(store: PostgresStore) -> None:
    t = _table(store)
    manifests = _enqueue(store, t, "rewrite_manifests", priority=10,
                         waits_for=("compaction", "clustering"))
    compaction = _enqueue(store, t, "compaction")
    queued = store.operation_get("t1", manifests)
    assert queued is not None
    assert queued.work.waits_for == ("compaction", "clustering")
    assert queued.hold is not None and f"operations/{compaction}" in queued.hold
    assert "waits for compaction" in queued.hold
    first = _claim(store)  # higher priority, but it waits: the compaction goes first
    assert first.id == compaction
    assert store.operation_claim("e2", 30) is None  # table busy and still waiting
    assert store.operation_finish(first, "e1", Outcome(OperationState.SUCCEEDED))
    second = _claim(store)
    assert second.id == manifests


def test_decisions_keep_their_benefit(store: PostgresStore) -> None:
    t = _table(store)
    store.decision_finish_batch("s1", [
        (t.pk, Decision("compaction", True, "r", {}, {}, 3.25), None),
        (t.pk, Decision("rewrite_manifests", False, "r2"), None)], [])
    got = {e.action: e for e in store.decision_explain(
        t.pk, ["compaction", "rewrite_manifests"])}
    assert got["compaction"].benefit == 3.25
    assert got["rewrite_manifests"].benefit is None
