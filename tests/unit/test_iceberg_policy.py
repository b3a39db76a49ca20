"""The Iceberg compaction policy's edge cases, on fake metrics (no catalog needed)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tms.domain import OperationRecord, OperationState, TableRecord, TableSpec, TableState
from tms.formats.iceberg import DEFAULT_MIN_SMALL_FILES, IcebergFormat

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def table(**policy: str) -> TableRecord:
    return TableRecord(
        id=1, table_id="t", format="iceberg", catalog="c", namespace="ns", table_name="t",
        base_path="", catalog_properties={"type": "sql"}, owner="", queue="default",
        priority=0, policy=dict(policy), state=TableState.ACTIVE, commit_count=1,
        last_commit_id=None, last_commit_time=None, next_check_at=NOW, created_at=NOW,
        updated_at=NOW)


def metrics(small: int | None, files: int = 100) -> dict:
    return {"small_files": small, "data_files": files, "small_file_bytes": 16 << 20}


def last_run(ago_s: float) -> OperationRecord:
    t = NOW - timedelta(seconds=ago_s)
    return OperationRecord(
        id=9, table_pk=1, action="compaction", state=OperationState.SUCCEEDED, attempt=1,
        max_attempts=3, priority=0, trigger="policy", reason="r", params={}, metrics={},
        created_at=t, started_at=t, finished_at=t, lease_owner="e", lease_expires_at=None,
        engine_handle=None, exit_code=0, result={}, error=None, log_tail=None)


def decide(tbl: TableRecord, m: dict, last: OperationRecord | None = None):
    (d,) = IcebergFormat().evaluate(tbl, m, {"compaction": last}, NOW)
    return d


def test_at_threshold_runs_with_target_param() -> None:
    d = decide(table(), metrics(DEFAULT_MIN_SMALL_FILES))
    assert d.should_run and d.params == {"target-file-size-bytes": str(128 << 20)}
    assert f"{DEFAULT_MIN_SMALL_FILES} of 100 data files" in d.reason


def test_one_below_threshold_waits() -> None:
    d = decide(table(), metrics(DEFAULT_MIN_SMALL_FILES - 1))
    assert not d.should_run and "starts at 12" in d.reason


def test_too_few_files_to_count_small_ones() -> None:
    d = decide(table(), metrics(None, files=3))
    assert not d.should_run and d.reason.startswith("3 small data files")


def test_disabled_by_policy() -> None:
    d = decide(table(**{"compaction.enabled": "false"}), metrics(500))
    assert not d.should_run and "disabled" in d.reason


def test_override_threshold() -> None:
    assert decide(table(**{"compaction.min-small-files": "2"}), metrics(2)).should_run
    assert not decide(table(**{"compaction.min-small-files": "50"}), metrics(49)).should_run


def test_min_interval() -> None:
    tbl = table(**{"compaction.min-interval-s": "300"})
    d = decide(tbl, metrics(100), last_run(299))
    assert not d.should_run and "minimum interval 300 s" in d.reason
    assert decide(tbl, metrics(100), last_run(300)).should_run


def test_metrics_are_kept_with_the_decision() -> None:
    m = metrics(20)
    assert decide(table(), m).metrics == m


SPEC = TableSpec(table_id="t", format="iceberg", catalog="cat", namespace="a.b",
                 table_name="t", catalog_properties={"type": "sql"})


@pytest.mark.parametrize("change,field", [
    ({"catalog": "bad-name"}, "table.catalog"),
    ({"namespace": ""}, "table.namespace"),
    ({"namespace": "a..b"}, "table.namespace"),
    ({"table_name": "t;drop"}, "table.table_name"),
    ({"catalog_properties": {}}, "table.catalog_properties"),
    ({"policy": {"compaction.min-small-files": "1"}}, "table.policy[compaction.min-small-files]"),
    ({"policy": {"compaction.enabled": "maybe"}}, "table.policy[compaction.enabled]"),
])
def test_validate(change: dict, field: str) -> None:
    problems = IcebergFormat().validate(replace(SPEC, **change))
    assert field in [f for f, _ in problems]


def test_validate_accepts_good_spec() -> None:
    assert IcebergFormat().validate(SPEC) == []
