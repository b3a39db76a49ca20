"""No stale work, in units: the job's outcome block, the scheduler's no-op hold, the
executor's re-check before a run (SKIPPED, never run), benefits and waits_for as queued."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import (
    NOW,
    FakeCoordinator,
    FakeEngine,
    FakeFormat,
    FakeStore,
    make_op,
    make_table,
)
from tms.catalogs import CatalogAccess
from tms.domain import Decision, Operation, OperationResult, OperationState, OperationWork, Table
from tms.executor.loop import Executor
from tms.formats.iceberg import recheck as iceberg_recheck
from tms.formats.iceberg.plugin import IcebergFormat
from tms.jobs import outcome
from tms.scheduler.loop import Scheduler

# --- the outcome block ----------------------------------------------------------------------

REPLACE_SUMMARY = {"operation": "replace", "added-data-files": "1", "deleted-data-files": "8",
                   "added-files-size": "9000", "removed-files-size": "12000",
                   "changed-partition-count": "3"}


def test_outcome_of_a_compaction_that_merged_files() -> None:
    got = outcome.build("compaction", {"rewritten_data_files_count": 8,
                                       "added_data_files_count": 1,
                                       "rewritten_bytes_count": 12000}, "1", "2",
                        [REPLACE_SUMMARY])
    assert got == {
        "data_files_rewritten": 8, "data_files_added": 1, "data_files_removed": 8,
        "data_bytes_rewritten": 12000, "data_bytes_added": 9000, "data_bytes_removed": 12000,
        "delete_files_removed": 0, "partitions_touched": 3, "snapshot_before": "1",
        "snapshot_after": "2", "snapshots_added": 1, "changed_nothing": False}


def test_outcome_of_a_compaction_that_rewrote_nothing() -> None:
    got = outcome.build("compaction", {"rewritten_data_files_count": 0,
                                       "added_data_files_count": 0}, "7", "7", [])
    assert got["changed_nothing"] is True and got["snapshot_after"] == "7"
    assert got["partitions_touched"] is None  # unknown: no snapshot to read it from


def test_outcome_partitions_unknown_over_several_commits() -> None:
    got = outcome.build("compaction", {"rewritten_data_files_count": 16}, "1", "3",
                        [REPLACE_SUMMARY, REPLACE_SUMMARY])
    assert got["partitions_touched"] is None and got["data_files_removed"] == 16
    assert got["snapshots_added"] == 2


@pytest.mark.parametrize("action, result, changed", [
    ("expire_snapshots", {"deleted_data_files_count": 0, "deleted_manifest_files_count": 0},
     False),
    ("expire_snapshots", {"deleted_manifest_lists_count": 2}, True),
    ("expire_snapshots", {"deleted_position_delete_files_count": 1}, True),
    ("remove_orphan_files", {"orphan_file_location_count": 3, "dry_run": True}, False),
    ("remove_orphan_files", {"orphan_file_location_count": 3, "dry_run": False,
                             "orphan_files_not_deleted_count": 1}, True),
    ("rewrite_manifests", {"rewritten_manifests_count": 0}, False),
])
def test_outcome_of_actions_without_a_new_snapshot(action: str, result: dict[str, Any],
                                                   changed: bool) -> None:
    assert outcome.build(action, result, "5", "5", [])["changed_nothing"] is not changed


def test_outcome_tolerates_odd_columns() -> None:
    got = outcome.build("compaction", {"rewritten_data_files_count": "x",
                                       "added_data_files_count": None}, None, None, [])
    assert got["changed_nothing"] is True and got["snapshot_before"] is None


class _Snap:
    def __init__(self, sid: int, parent: int | None, summary: dict[str, str]) -> None:
        self.sid, self.parent, self._summary = sid, parent, summary

    def snapshotId(self) -> int:  # noqa: N802 - the Java API's name
        return self.sid

    def parentId(self) -> int | None:  # noqa: N802
        return self.parent

    def summary(self) -> dict[str, str]:
        return self._summary


class _Handle:
    """The Py4J Table the job reads, as far as outcome.measure reads it."""

    def __init__(self, snaps: list[_Snap]) -> None:
        self.snaps = {s.sid: s for s in snaps}
        self.current = snaps[-1]
        self.refreshed = 0

    def refresh(self) -> None:
        self.refreshed += 1

    def currentSnapshot(self) -> _Snap:  # noqa: N802
        return self.current

    def snapshot(self, sid: int) -> _Snap | None:
        return self.snaps.get(sid)


def test_measure_walks_the_new_snapshots_back_to_the_one_before() -> None:
    handle = _Handle([_Snap(1, None, {}), _Snap(2, 1, REPLACE_SUMMARY),
                      _Snap(3, 2, REPLACE_SUMMARY)])
    got = outcome.measure(handle, "compaction", {"rewritten_data_files_count": 16}, "1")
    assert handle.refreshed == 1
    assert (got["snapshot_after"], got["snapshots_added"], got["data_files_added"]) == (
        "3", 2, 2)
    assert outcome.current_snapshot(handle) == "3"


# --- the no-op hold -------------------------------------------------------------------------

def _last(action: str = "compaction", params: dict[str, str] | None = None,
          result: dict[str, Any] | None = None) -> Operation:
    op = make_op(action=action, state=OperationState.SUCCEEDED, finished_at=NOW,
                 params=params if params is not None else {"target-file-size-bytes": "1024"})
    return replace(op, outcome=OperationResult(finished_at=NOW, result=result if result
                                               is not None else {"outcome": outcome.build(
                                                   action, {}, "42", "42", [])}))


RUN = Decision("compaction", True, "20 of 20 data files are small", {},
               {"target-file-size-bytes": "1024"})


def test_hold_when_the_same_run_changed_nothing_at_this_snapshot() -> None:
    held = iceberg_recheck.unchanged_since({"snapshot_id": "42"}, RUN, _last())
    assert held == ("last compaction rewrote 0 data files at snapshot 42; "
                    "waiting for a new snapshot")


@pytest.mark.parametrize("metrics, decision, last", [
    ({"snapshot_id": "43"}, RUN, _last()),  # a new snapshot since
    ({"snapshot_id": "42"}, RUN, _last(params={"target-file-size-bytes": "2048"})),
    ({"snapshot_id": "42"}, RUN, _last(result={"outcome": {
        **outcome.build("compaction", {}, "41", "42", [REPLACE_SUMMARY])}})),  # it did work
    ({"snapshot_id": "42"}, RUN, _last(result={})),  # an older job: no outcome
    ({"snapshot_id": "42"}, RUN, None),  # never ran
    ({"snapshot_id": None}, RUN, _last()),  # an empty table
    ({"snapshot_id": "42"}, replace(RUN, action="expire_snapshots"),
     _last("expire_snapshots")),  # not an action that is held
], ids=["new-snapshot", "other-params", "changed", "no-outcome", "never", "empty",
        "expire"])
def test_no_hold(metrics: dict[str, Any], decision: Decision, last: Operation | None) -> None:
    assert iceberg_recheck.unchanged_since(metrics, decision, last) is None


class HoldingFormat(FakeFormat):
    """FakeFormat with a hold, a benefit per decision and an ordering."""

    waits_for = {"compaction": ("clustering",)}

    def __init__(self, hold: str | None = None, benefit: float | None = 2.5) -> None:
        super().__init__()
        self.hold = hold
        self.benefit = benefit
        self.asked: list[Operation | None] = []

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime) -> list[Decision]:
        return [replace(d, benefit=self.benefit)
                for d in super().evaluate(table, metrics, last_runs, now)]

    def unchanged_since(self, table: Table, metrics: Mapping[str, Any], decision: Decision,
                        last: Operation | None) -> str | None:
        self.asked.append(last)
        return self.hold


def _scheduler(store: FakeStore, fmt: FakeFormat) -> Scheduler:
    return Scheduler(store, FakeCoordinator(), {"fake": fmt},  # type: ignore[arg-type]
                     "s1", pull_interval_s=60.0, now=lambda: NOW)


def test_scheduler_holds_a_repeated_no_op() -> None:
    last = _last()
    store = FakeStore(tables={1: make_table()}, dirty={1},
                      last_succeeded={1: {"compaction": last}})
    fmt = HoldingFormat(hold="last compaction rewrote 0 data files at snapshot 42; "
                             "waiting for a new snapshot")
    assert _scheduler(store, fmt).run_once() == 1
    assert store.ops == [] and fmt.asked == [last]
    (_, decision, op_id), = store.decisions
    assert op_id is None and not decision.should_run
    assert decision.reason == ("20 small files; not queued: last compaction rewrote 0 data "
                               "files at snapshot 42; waiting for a new snapshot")


def test_scheduler_queues_with_benefit_and_waits_for() -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    assert _scheduler(store, HoldingFormat()).run_once() == 1
    (params,) = store.enqueued
    assert params.benefit == 2.5 and params.waits_for == ("clustering",)
    assert store.decisions[0][1].benefit == 2.5


@pytest.mark.parametrize("odd", [math.nan, math.inf, -1.0])
def test_an_odd_benefit_is_stored_as_unknown(odd: float) -> None:
    store = FakeStore(tables={1: make_table()}, dirty={1})
    assert _scheduler(store, HoldingFormat(benefit=odd)).run_once() == 1
    assert store.enqueued[0].benefit is None and store.decisions[0][1].benefit is None


# --- the re-check before a run -------------------------------------------------------------

class RecheckingFormat(FakeFormat):
    def __init__(self, reason: str | None = None, fail: bool = False) -> None:
        super().__init__()
        self.reason = reason
        self.recheck_fails = fail
        self.rechecked: list[int] = []

    def recheck(self, table: Table, catalog: CatalogAccess, operation: Operation
                ) -> str | None:
        self.rechecked.append(operation.id)
        if self.recheck_fails:
            raise OSError("catalog down")
        return self.reason


def _executor(store: FakeStore, fmt: FakeFormat, engine: FakeEngine, tmp_path: Path
              ) -> Executor:
    return Executor(store, {"fake": fmt}, engine, "e1", tmp_path)  # type: ignore[arg-type]


def test_stale_operation_ends_skipped_and_never_runs(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    engine = FakeEngine()
    fmt = RecheckingFormat("no longer needed at snapshot 9: 3 manifests")
    assert _executor(store, fmt, engine, tmp_path).run_once()
    assert engine.jobs == [] and store.finished == [] and store.retried == []
    ((op, reason, _),) = store.skipped
    assert op.id == 1 and reason == "no longer needed at snapshot 9: 3 manifests"


@pytest.mark.parametrize("trigger", ["manual", "retry"])
def test_operations_asked_for_by_a_person_are_not_rechecked(tmp_path: Path,
                                                            trigger: str) -> None:
    op = make_op()
    op = replace(op, work=replace(op.work, trigger=trigger))
    store = FakeStore(tables={1: make_table()}, to_claim=[op])
    engine = FakeEngine()
    fmt = RecheckingFormat("would skip")
    _executor(store, fmt, engine, tmp_path).run_once()
    assert fmt.rechecked == [] and store.skipped == [] and len(engine.jobs) == 1


def test_a_failed_recheck_runs_as_decided(tmp_path: Path) -> None:
    store = FakeStore(tables={1: make_table()}, to_claim=[make_op()])
    engine = FakeEngine()
    fmt = RecheckingFormat(fail=True)
    _executor(store, fmt, engine, tmp_path).run_once()
    assert fmt.rechecked == [1] and store.skipped == [] and len(engine.jobs) == 1
    assert store.finished[0][1].state is OperationState.SUCCEEDED


class _Inspected(IcebergFormat):
    """The Iceberg plugin with inspection replaced by fixed metrics."""

    def __init__(self, metrics: dict[str, Any]) -> None:
        super().__init__()
        self.metrics = metrics

    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        return dict(self.metrics)


METRICS = {"snapshot_id": "77", "data_files": 3, "delete_files": 0, "total_bytes": 3000,
           "records": 30, "small_files": 3, "small_file_bytes": 1024, "manifests": 3,
           "snapshots": 5, "_snapshot_times_ms": [1, 2, 3, 4, 5], "oldest_snapshot_ms": 1,
           "last_commit_ms": int(NOW.timestamp() * 1000)}


def _iceberg_op(action: str, waits_for: tuple[str, ...] = ()) -> Operation:
    op = make_op(action=action)
    return replace(op, work=OperationWork("policy", "r", {}, {}, waits_for=waits_for))


def test_iceberg_recheck_skips_a_manifest_rewrite_a_compaction_made_moot() -> None:
    plugin = _Inspected(METRICS)
    table = make_table(format="iceberg", namespace="ns")
    reason = iceberg_recheck.recheck(plugin, table, None,  # type: ignore[arg-type]
                                     _iceberg_op("rewrite_manifests",
                                                 iceberg_recheck.WAITS_FOR["rewrite_manifests"]),
                                     NOW)
    assert reason is not None and reason.startswith("no longer needed at snapshot 77: ")
    assert ("(a compaction, clustering or position-delete rewrite merges manifests as it "
            "commits)") in reason
    assert "3 manifests; rewrite starts at 100" in reason


def test_iceberg_recheck_lets_a_still_needed_operation_run() -> None:
    plugin = _Inspected({**METRICS, "manifests": 150})
    table = make_table(format="iceberg", namespace="ns")
    assert iceberg_recheck.recheck(plugin, table, None,  # type: ignore[arg-type]
                                   _iceberg_op("rewrite_manifests"), NOW) is None


# --- what the CLI shows ---------------------------------------------------------------------

def test_cli_shows_what_a_run_did() -> None:
    from tms.v1 import tms_pb2
    from tms_services.cli.operations import detail, outcome_text

    op = tms_pb2.Operation(state=tms_pb2.Operation.SUCCEEDED, reason="20 small files")
    op.result.update({"outcome": outcome.build("compaction", {
        "rewritten_data_files_count": 8, "added_data_files_count": 1}, "1", "2",
        [REPLACE_SUMMARY])})
    assert outcome_text(op) == "8 data files rewritten, 1 added, 3 partitions"
    assert detail(op) == "8 data files rewritten, 1 added, 3 partitions; 20 small files"
    op.result.update({"outcome": outcome.build("compaction", {}, "9", "9", [])})
    assert outcome_text(op) == "changed nothing at snapshot 9"
    assert outcome_text(tms_pb2.Operation()) == "-"  # an older job: no outcome
