"""The partitioned table-health bench's arithmetic, against figures computed by hand."""

from __future__ import annotations

import logging
import math

import pytest

from bench.table_health_metrics import (
    PartitionFiles,
    SnapshotLedger,
    files_vs_ideal,
    ideal_files,
    operation_outcome,
    write_amplification,
)
from bench.table_health_stream import PYICEBERG_COMMIT_LOGGER, Failures, plan

MIB = 1024 * 1024


@pytest.mark.parametrize(("data_bytes", "ideal"), [
    (0, 1),                 # an empty partition still needs a file
    (1, 1),
    (128 * MIB, 1),         # exactly one target
    (128 * MIB + 1, 2),     # one byte over: two files
    (300 * MIB, 3),         # 2.34 targets
])
def test_ideal_files_rounds_up(data_bytes: int, ideal: int) -> None:
    assert ideal_files(data_bytes, 128 * MIB) == ideal


def test_ideal_files_rejects_a_zero_target() -> None:
    with pytest.raises(ValueError, match="target"):
        ideal_files(10, 0)


def test_files_vs_ideal_sums_per_partition_ideals() -> None:
    parts = {
        "p0": PartitionFiles(data_files=12, data_bytes=40 * MIB),            # ideal 1
        "p1": PartitionFiles(data_files=3, data_bytes=300 * MIB, delete_files=2),  # ideal 3
        "p2": PartitionFiles(data_files=1, data_bytes=5 * MIB),              # ideal 1
        "p3": PartitionFiles(data_files=0, data_bytes=0, delete_files=4),    # not counted
    }
    fvi = files_vs_ideal(parts, 128 * MIB)
    assert (fvi.files, fvi.ideal, fvi.partitions, fvi.delete_files) == (16, 5, 3, 6)
    assert fvi.ratio == pytest.approx(16 / 5)
    assert fvi.worst == pytest.approx(12.0)  # p0: 12 files where 1 would do


def test_files_vs_ideal_of_a_table_without_data_is_nan() -> None:
    fvi = files_vs_ideal({}, 128 * MIB)
    assert fvi.files == 0 and math.isnan(fvi.ratio)


def test_one_file_per_partition_is_ideal_even_when_tiny() -> None:
    parts = {p: PartitionFiles(1, 10_000) for p in range(16)}
    fvi = files_vs_ideal(parts, 128 * MIB)
    assert fvi.ratio == 1.0 and fvi.worst == 1.0


def test_ledger_counts_writers_and_maintenance_once_each() -> None:
    ledger = SnapshotLedger()
    first = [
        (1, "append", {"added-files-size": "1000"}),
        (2, "append", {"added-files-size": "1500"}),
        (3, "overwrite", {"added-files-size": "200"}),   # a merge-on-read DELETE's delete file
    ]
    ledger.observe(first)
    # later: 1 expired, 2 and 3 listed again, a compaction (replace) and another append
    ledger.observe([
        (2, "append", {"added-files-size": "1500"}),
        (3, "overwrite", {"added-files-size": "200"}),
        (4, "replace", {"added-files-size": "2400", "removed-files-size": "2700"}),
        (5, "append", {"added-files-size": "300"}),
        (6, "replace", {}),   # a manifest rewrite: no files
    ])
    assert ledger.writer_bytes == 1000 + 1500 + 200 + 300
    assert ledger.writer_snapshots == 4
    assert ledger.rewritten_bytes == 2700
    assert ledger.maintenance_added_bytes == 2400
    assert ledger.maintenance_snapshots == 2


def test_write_amplification() -> None:
    assert write_amplification(5400, 3000) == pytest.approx(1.8)
    assert write_amplification(0, 3000) == 0.0
    assert write_amplification(100, 0) == 0.0  # nothing written: nothing amplified


def test_outcome_block_wins_over_engine_counters() -> None:
    out = operation_outcome({"outcome": {"changed_nothing": True, "data_bytes_rewritten": 0.0},
                             "rewritten_data_files_count": 3.0})
    assert (out.changed_nothing, out.bytes_rewritten, out.source) == (True, 0, "outcome")


def test_outcome_block_without_flag_is_read_from_its_file_counts() -> None:
    changed = operation_outcome({"outcome": {"data_files_rewritten": 4, "data_files_added": 1,
                                             "data_bytes_rewritten": 9000}})
    assert (changed.changed_nothing, changed.bytes_rewritten) == (False, 9000)
    nothing = operation_outcome({"outcome": {"data_files_rewritten": 0, "data_files_added": 0}})
    assert nothing.changed_nothing is True
    unknown = operation_outcome({"outcome": {"partitions": ["p1"]}})
    assert unknown.changed_nothing is None


def test_compaction_result_that_rewrote_nothing() -> None:
    result = {"rewritten_data_files_count": 0.0, "added_data_files_count": 0.0,
              "rewritten_bytes_count": 0.0, "failed_data_files_count": 0.0,
              "removed_delete_files_count": 0.0}
    out = operation_outcome(result)
    assert (out.changed_nothing, out.bytes_rewritten, out.source) == (True, 0, "result")


def test_compaction_that_only_removed_deletes_changed_something() -> None:
    out = operation_outcome({"rewritten_data_files_count": 0, "added_data_files_count": 0,
                             "rewritten_bytes_count": 0, "removed_delete_files_count": 3})
    assert out.changed_nothing is False


def test_failed_files_alone_do_not_count_as_a_change() -> None:
    out = operation_outcome({"rewritten_data_files_count": 0, "failed_data_files_count": 5})
    assert out.changed_nothing is True


def test_result_without_counters_says_nothing() -> None:
    for result in (None, {}, {"dry_run": False}, {"rewritten_data_files_count": "3"}):
        assert operation_outcome(result).changed_nothing is None


def test_plan_mixes_appends_late_data_and_deletes() -> None:
    steps = plan(commits=100, partitions=16, late_every=10, delete_every=25)
    kinds = [s.kind for s in steps]
    # deletes at 25, 50, 75; late at 10..90 except 50 (a delete); none at 0
    assert kinds.count("delete") == 3
    assert kinds.count("late") == 8
    assert kinds.count("append") == 89
    for i, s in enumerate(steps):
        current = i * 16 // 100
        if s.kind == "append":
            assert s.part == current
        elif s.kind == "late":
            assert 0 <= s.part < current
        else:
            assert 0 <= s.part <= current
    assert [s.part for s in steps if s.kind == "append"][-1] == 15  # every partition reached
    assert steps == plan(commits=100, partitions=16, late_every=10, delete_every=25)


def test_pyiceberg_commit_retries_are_counted_against_the_table_being_written() -> None:
    failures = Failures(current="maintained")
    log = logging.getLogger(PYICEBERG_COMMIT_LOGGER)
    with failures.capture_pyiceberg():
        log.warning("Commit failed due to a concurrent update, retrying (%s/%s)", 1, 4)
    log.warning("after the stream: not counted")
    assert failures.messages == [
        ("maintained", "pyiceberg append: Commit failed due to a concurrent update, "
                       "retrying (1/4)")]


def test_operations_summary_counts_no_ops_and_retried_attempts() -> None:
    from google.protobuf.struct_pb2 import Struct

    from bench.table_health_observe import summarize_operations
    from tms.v1 import tms_pb2

    def op(action: str, state: int, result: dict[str, float], errors: tuple[str, ...] = ()
           ) -> tms_pb2.Operation:
        s = Struct()
        s.update(result)
        attempts = [tms_pb2.Attempt(attempt=i + 1, error=e) for i, e in enumerate(errors)]
        return tms_pb2.Operation(action=action, state=state, result=s, attempts=attempts)

    done, queued = tms_pb2.Operation.SUCCEEDED, tms_pb2.Operation.QUEUED
    summary = summarize_operations([
        op("compaction", done, {"rewritten_data_files_count": 0, "rewritten_bytes_count": 0}),
        op("compaction", done, {"rewritten_data_files_count": 6, "rewritten_bytes_count": 900}),
        op("rewrite_manifests", done, {"rewritten_manifests_count": 4},
           ("ValidationException: Deleted manifest m1.avro could not be found", "")),
        op("compaction", queued, {}),
    ])
    assert (summary["finished"], summary["changed_nothing"], summary["unknown"]) == (3, 1, 0)
    assert summary["rewritten_bytes"] == 900
    assert summary["by_action"]["compaction"]["other"] == 1
    assert summary["by_action"]["compaction"]["states"] == ["QUEUED"]
    assert summary["by_action"]["rewrite_manifests"]["failed_attempts"] == 1
    assert summary["errors"] == ["rewrite_manifests (SUCCEEDED in the end) attempt 1: "
                                 "ValidationException: Deleted manifest m1.avro could not be found"]
    assert summary["all_from_outcome"] is False


def test_report_groups_messages_that_differ_only_in_paths_and_ids() -> None:
    from bench.table_health_report import shape

    a = "ValidationException: Deleted manifest file:/w/m1.avro not in snapshot 1992659523354706255"
    b = "ValidationException: Deleted manifest file:/w/m7.avro not in snapshot 5185797724572952508"
    assert shape(a) == shape(b) == ("ValidationException: Deleted manifest <path> not in "
                                    "snapshot <n>")


def test_report_keeps_retry_counters_that_look_like_fractions() -> None:
    from bench.table_health_report import shape

    assert shape("Commit failed, retrying (1/4) in 103 ms") == (
        "Commit failed, retrying (1/4) in 103 ms")
