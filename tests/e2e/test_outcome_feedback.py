"""Outcome feedback and no stale work through the whole service: real tms-api, tms-scheduler
and tms-executor processes, PostgreSQL, ZooKeeper and Spark, Iceberg tables written by
pyiceberg.

- The demo's case: 120 small commits call for a compaction and a manifest rewrite. The
  rewrite waits for the compaction, whose commit merges the manifests; checked again right
  before it would run, it is no longer needed and ends SKIPPED with the reason, never run.
- A manifest rewrite that rewrites nothing is not queued again while the table stays at the
  snapshot it left; ExplainTable says so. A writer's new snapshot lets it run again. The no-op
  is real, from a gap the planner has on purpose: the rule counts the manifests of every
  partition spec in the current snapshot, while Iceberg's ``rewrite_manifests`` rewrites only
  those of the table's current spec. After a partition-spec change with no data written since,
  the table holds manifests of the old spec only: the rule holds, the procedure matches no
  manifest and commits nothing.
"""

from __future__ import annotations

import pytest

from tests.helpers import iceberg_catalog, stub_for, wait_for
from tms.local import iceberg_data
from tms.v1 import tms_pb2

pytestmark = pytest.mark.e2e

CATALOG = "tms_outcome"
OP = tms_pb2.Operation
DEMO_COMMITS = 120  # past the default manifest threshold of 100


def _register(stub, table_id: str, name: str, policy: dict[str, str] | None = None) -> None:
    stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
        format="iceberg", catalog=CATALOG, namespace="fb", table_name=name,
        policy=policy or {})), timeout=10)


def _notify(stub, table_id: str, snapshot_ids: list[int]) -> None:
    for sid in snapshot_ids:
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(table=f"tables/{table_id}",
                                                      commit_id=str(sid)), timeout=10)


def _ops(stub, table_id: str) -> dict[str, list[tms_pb2.Operation]]:
    """The table's operations by action, oldest first."""
    out: dict[str, list[tms_pb2.Operation]] = {}
    for o in reversed(stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent=f"tables/{table_id}"), timeout=10).operations):
        out.setdefault(o.action, []).append(o)
    return out


def _ended_badly(ops: dict[str, list[tms_pb2.Operation]]) -> None:
    bad = [o for group in ops.values() for o in group if o.state in (OP.FAILED, OP.CANCELLED)]
    assert not bad, f"{bad[0].name} ended {OP.State.Name(bad[0].state)}: {bad[0].error}"


def test_stale_manifest_rewrite_ends_skipped(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "fb", "demo")
    snapshot_ids = iceberg_data.append_batches(table, DEMO_COMMITS, rows_per_commit=5)
    stub = stub_for(stack)
    _register(stub, "fb.demo", "demo")
    _notify(stub, "fb.demo", snapshot_ids)

    def both_queued() -> dict[str, list[tms_pb2.Operation]] | None:
        ops = _ops(stub, "fb.demo")
        return ops if {"compaction", "rewrite_manifests"} <= set(ops) else None

    queued = wait_for(both_queued, "the scheduler to queue a compaction and a manifest rewrite")
    manifests = queued["rewrite_manifests"][0]
    assert manifests.state == OP.QUEUED and "120 manifests" in manifests.reason
    assert "compaction" in manifests.waits_for
    assert "waits for compaction" in manifests.hold_reason
    stack.start_executor()  # only now: both were queued before anything ran

    def settled() -> dict[str, list[tms_pb2.Operation]] | None:
        ops = _ops(stub, "fb.demo")
        _ended_badly(ops)
        states = {a: [o.state for o in group] for a, group in ops.items()}
        return ops if states.get("compaction") == [OP.SUCCEEDED] and \
            states.get("rewrite_manifests") == [OP.SKIPPED] else None

    done = wait_for(settled, "the compaction to succeed and the manifest rewrite to be skipped")
    compaction, skipped = done["compaction"][0], done["rewrite_manifests"][0]
    assert compaction.result["outcome"]["data_files_rewritten"] == DEMO_COMMITS
    assert skipped.start_time.ToDatetime() >= compaction.end_time.ToDatetime()  # waited
    current = iceberg_data.stats(table)
    assert current["data_files"] == 1
    assert skipped.error.startswith("no longer needed at snapshot ")
    assert ("(a compaction, clustering or position-delete rewrite merges manifests as it "
            "commits)") in skipped.error
    assert "rewrite starts at 100" in skipped.error
    assert [a.state for a in skipped.attempts] == [tms_pb2.Attempt.SKIPPED]
    assert not skipped.engine_handle and not skipped.HasField("result")  # nothing ran
    assert f"snapshot {compaction.result['outcome']['snapshot_after']}:" in skipped.error


NO_OP_POLICY = {
    # two manifests call for a rewrite; compaction (which would merge the manifests as it
    # commits) is off
    "manifests.max-count": "2", "manifests.min-interval-s": "0",
    "compaction.enabled": "false", "scheduler.pull-interval-s": "1",
}


def test_no_op_is_not_repeated_until_a_new_snapshot(make_stack) -> None:
    stack = make_stack()
    stack.start_api()
    stack.start_scheduler()
    catalog, _ = iceberg_catalog(stack, CATALOG)
    table = iceberg_data.create_table(catalog, "fb", "quiet")
    iceberg_data.append_batches(table, 2, rows_per_commit=5)  # two manifests of spec 0
    with table.update_spec() as spec:  # a new current spec; no snapshot, no manifest of it
        spec.add_identity("kind")
    table = table.refresh()
    at = table.current_snapshot().snapshot_id
    assert table.spec().spec_id == 1
    assert [m.partition_spec_id for m in table.current_snapshot().manifests(table.io)] == [0, 0]
    stub = stub_for(stack)
    _register(stub, "fb.quiet", "quiet", NO_OP_POLICY)
    _notify(stub, "fb.quiet", [at])
    stack.start_executor()

    def finished(n: int) -> tms_pb2.Operation | None:
        ops = _ops(stub, "fb.quiet")
        _ended_badly(ops)
        found = ops.get("rewrite_manifests", [])
        return found[n - 1] if len(found) >= n and found[n - 1].state == OP.SUCCEEDED else None

    first = wait_for(lambda: finished(1), "a first manifest rewrite to finish")
    assert first.result["rewritten_manifests_count"] == 0
    assert first.result["added_manifests_count"] == 0
    noop = first.result["outcome"]
    assert noop["changed_nothing"] is True and noop["snapshots_added"] == 0
    assert noop["snapshot_before"] == noop["snapshot_after"] == str(at)

    def held() -> tms_pb2.ActionExplanation | None:
        explained = stub.ExplainTable(tms_pb2.ExplainTableRequest(name="tables/fb.quiet"),
                                      timeout=10)
        why = next(a for a in explained.actions if a.action == "rewrite_manifests")
        decided_after = why.decide_time.ToDatetime() > first.end_time.ToDatetime()
        return why if decided_after and "not queued" in why.reason else None

    why = wait_for(held, "the scheduler to hold the repeated no-op back")
    assert not why.should_run and not why.active_operation
    assert (f"2 manifests in the current snapshot (threshold 2); not queued: last "
            f"rewrite_manifests changed nothing at snapshot {at}; waiting for a new snapshot"
            ) == why.reason
    assert len(_ops(stub, "fb.quiet")["rewrite_manifests"]) == 1  # decided, not queued

    newer = iceberg_data.append_batches(table, 1, rows_per_commit=5)  # a writer commits
    _notify(stub, "fb.quiet", newer)
    second = wait_for(lambda: finished(2), "the rewrite to run again at the new snapshot")
    assert second.result["outcome"]["snapshot_before"] == str(newer[-1])
