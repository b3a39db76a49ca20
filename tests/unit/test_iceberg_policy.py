"""Every Iceberg trigger policy's edge cases, on metrics made up in the test (no catalog)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.fakes import make_op
from tms.domain import Decision, Operation, OperationState, TableSpec
from tms.formats.iceberg.plugin import DEFAULT_MIN_SMALL_FILES, IcebergFormat
from tms.formats.iceberg.policy import RULES, compaction

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DAY_MS = 86_400_000
NOW_MS = int(NOW.timestamp() * 1000)


def metrics(small: int | None = 0, files: int = 100, snapshot_ages_ms: tuple[int, ...] = (0,),
            manifests: int = 1, delete_files: int = 0) -> dict[str, Any]:
    times = [NOW_MS - age for age in snapshot_ages_ms]
    return {"small_files": small, "data_files": files, "small_file_bytes": 16 << 20,
            "manifests": manifests, "delete_files": delete_files, "snapshots": len(times),
            "_snapshot_times_ms": times}


def last_run(ago_s: float) -> Operation:
    return make_op(9, action="x", state=OperationState.SUCCEEDED,
                   finished_at=NOW - timedelta(seconds=ago_s))


def decide(action: str, m: dict[str, Any], last: Operation | None = None,
           **policy: str) -> Decision:
    return RULES[action](policy, m, last, NOW)


# compaction ---------------------------------------------------------------------------------
def test_compaction_at_threshold_runs_with_target_param() -> None:
    d = decide("compaction", metrics(DEFAULT_MIN_SMALL_FILES))
    assert d.should_run and d.params == {"target-file-size-bytes": str(128 << 20)}
    assert f"{DEFAULT_MIN_SMALL_FILES} of 100 data files" in d.reason


def test_compaction_one_below_threshold_waits() -> None:
    d = decide("compaction", metrics(DEFAULT_MIN_SMALL_FILES - 1))
    assert not d.should_run and "starts at 12" in d.reason


def test_compaction_too_few_files_to_count() -> None:
    d = decide("compaction", metrics(None, files=3))
    assert not d.should_run and d.reason.startswith("3 small data files")


def test_compaction_disabled_and_overrides() -> None:
    assert "disabled" in decide("compaction", metrics(500),
                                **{"compaction.enabled": "false"}).reason
    assert decide("compaction", metrics(2), **{"compaction.min-small-files": "2"}).should_run
    assert not decide("compaction", metrics(49),
                      **{"compaction.min-small-files": "50"}).should_run


def test_compaction_min_interval() -> None:
    pol = {"compaction.min-interval-s": "300"}
    d = decide("compaction", metrics(100), last_run(299), **pol)
    assert not d.should_run and "minimum interval 300 s" in d.reason
    assert decide("compaction", metrics(100), last_run(300), **pol).should_run


def test_stored_metrics_leave_out_bulky_inputs() -> None:
    d = decide("compaction", metrics(20))
    assert "_snapshot_times_ms" not in d.metrics and d.metrics["small_files"] == 20


# clustering ---------------------------------------------------------------------------------
def test_clustering_off_by_default_and_needs_an_order() -> None:
    assert not decide("clustering", metrics(snapshot_ages_ms=(0,) * 50)).should_run
    d = decide("clustering", metrics(), **{"clustering.enabled": "true"})
    assert not d.should_run and "sort-order" in d.reason


def test_clustering_counts_new_snapshots_since_last_run() -> None:
    pol = {"clustering.enabled": "true", "clustering.zorder-columns": "a, b",
           "clustering.min-interval-s": "0"}
    ages = tuple(range(0, 20_000, 1000))  # 20 snapshots, one per second
    d = decide("clustering", metrics(snapshot_ages_ms=ages), last_run(9.5), **pol)
    assert d.should_run and d.params["zorder-columns"] == "a, b"  # 10 newer: at threshold
    below = decide("clustering", metrics(snapshot_ages_ms=ages), last_run(8.5), **pol)
    assert not below.should_run and "9 new snapshots" in below.reason
    sort = decide("clustering", metrics(snapshot_ages_ms=ages),
                  **{"clustering.enabled": "true", "clustering.sort-order": "id DESC"})
    assert sort.should_run and sort.params["sort-order"] == "id DESC"


# snapshot expiry ----------------------------------------------------------------------------
def test_expire_snapshots_needs_old_snapshots_beyond_those_kept() -> None:
    young = metrics(snapshot_ages_ms=(0, DAY_MS, 2 * DAY_MS))
    assert not decide("expire_snapshots", young).should_run
    old = metrics(snapshot_ages_ms=(0, 6 * DAY_MS, 7 * DAY_MS))
    d = decide("expire_snapshots", old)
    assert d.should_run and "2 of 3 snapshots" in d.reason
    assert d.params == {"older-than": "2026-05-27T00:00:00.000Z", "retain-last": "1"}
    kept = decide("expire_snapshots", old, **{"expire-snapshots.retain-last": "3"})
    assert not kept.should_run


def test_expire_snapshots_interval_and_disable() -> None:
    old = metrics(snapshot_ages_ms=(0, 9 * DAY_MS))
    assert not decide("expire_snapshots", old, last_run(60)).should_run
    assert not decide("expire_snapshots", old, **{"expire-snapshots.enabled": "false"}).should_run


# orphan files -------------------------------------------------------------------------------
def test_orphan_files_only_when_enabled_and_due() -> None:
    assert not decide("remove_orphan_files", metrics()).should_run
    pol = {"orphan-files.enabled": "true"}
    d = decide("remove_orphan_files", metrics(), **pol)
    assert d.should_run and d.params == {"older-than": "2026-05-29T00:00:00.000Z"}
    assert not decide("remove_orphan_files", metrics(), last_run(3600), **pol).should_run


# manifests and position deletes ---------------------------------------------------------------
def test_manifest_rewrite_threshold() -> None:
    assert not decide("rewrite_manifests", metrics(manifests=99)).should_run
    assert decide("rewrite_manifests", metrics(manifests=100)).should_run
    assert decide("rewrite_manifests", metrics(manifests=5),
                  **{"manifests.max-count": "5"}).should_run


def test_position_delete_rewrite_threshold() -> None:
    assert not decide("rewrite_position_deletes", metrics(delete_files=19)).should_run
    d = decide("rewrite_position_deletes", metrics(delete_files=20))
    assert d.should_run and "20 delete files" in d.reason


def test_evaluate_decides_every_action() -> None:
    from tests.unit.fakes import make_table

    table = replace(make_table(), format="iceberg")
    decisions = IcebergFormat().evaluate(table, metrics(), {}, NOW)
    assert [d.action for d in decisions] == list(RULES)


# registration -------------------------------------------------------------------------------
SPEC = TableSpec(table_id="t", format="iceberg", catalog="cat", namespace="a.b",
                 table_name="t")


@pytest.mark.parametrize("change,field", [
    ({"catalog": "bad-name"}, "table.catalog"),
    ({"namespace": ""}, "table.namespace"),
    ({"namespace": "a..b"}, "table.namespace"),
    ({"table_name": "t;drop"}, "table.table_name"),
    ({"policy": {"compaction.min-small-files": "1"}}, "table.policy[compaction.min-small-files]"),
    ({"policy": {"compaction.enabled": "maybe"}}, "table.policy[compaction.enabled]"),
    ({"policy": {"clustering.sort-order": "id; DROP TABLE x"}},
     "table.policy[clustering.sort-order]"),
    ({"policy": {"clustering.zorder-columns": "a,"}}, "table.policy[clustering.zorder-columns]"),
    ({"policy": {"orphan-files.older-than-s": "60"}}, "table.policy[orphan-files.older-than-s]"),
    ({"policy": {"scheduler.pull-interval-s": "0"}}, "table.policy[scheduler.pull-interval-s]"),
    ({"policy": {"scheduler.pull-interval-s": "99999999999999999999"}},
     "table.policy[scheduler.pull-interval-s]"),
    ({"policy": {"compaction.min-small-files": "\u0665\u0660"}},
     "table.policy[compaction.min-small-files]"),
    ({"policy": {"compaction.enabled": "1"}}, "table.policy[compaction.enabled]"),
    ({"policy": {"clustering.sort-order": "id\nDESC"}}, "table.policy[clustering.sort-order]"),
    ({"policy": {"compaction.no-such-key": "1"}}, "table.policy[compaction.no-such-key]"),
    # the tier fanout: a number from 1.1 to 1000, nothing else (a fanout of 1 or less would
    # merge a partition's largest file with nothing; NaN or infinity compare false forever)
    ({"policy": {"compaction.tier-fanout": "1"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "0.5"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "-8"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "1001"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "nan"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "inf"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "1e3"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "8 "}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "\u0668"}}, "table.policy[compaction.tier-fanout]"),
    ({"policy": {"compaction.tier-fanout": "8" * 5000}},
     "table.policy[compaction.tier-fanout]"),
])
def test_validate(change: dict, field: str) -> None:
    spec = replace(SPEC, **change)
    problems = IcebergFormat().validate(spec) + IcebergFormat().check_policy(spec.policy)
    assert field in [f for f, _ in problems]


def test_validate_accepts_good_spec() -> None:
    good = replace(SPEC, policy={"clustering.sort-order": "id DESC NULLS LAST, kind",
                                 "scheduler.pull-interval-s": "60",
                                 "compaction.tier-fanout": "4.5"})
    assert IcebergFormat().validate(good) == []
    assert IcebergFormat().check_policy(good.policy) == []


def _quiet(small: int, idle_s: float, **pol: str) -> Any:
    m = metrics(small=small, files=small + 1)
    m["last_commit_ms"] = NOW_MS - int(idle_s * 1000)
    return compaction({**pol}, m, None, NOW)


def test_quiet_table_is_tidied_below_the_threshold() -> None:
    d = _quiet(3, 7200)
    assert d.should_run and "no commit for 7200 s" in d.reason
    assert d.params["target-file-size-bytes"] == str(128 << 20)


def test_quiet_rule_edges() -> None:
    assert not _quiet(3, 3599).should_run  # not quiet long enough (default 3600 s)
    assert not _quiet(1, 7200).should_run  # one small file: nothing to merge
    assert not _quiet(3, 7200, **{"compaction.quiet-s": "0"}).should_run  # switched off
    assert _quiet(2, 11, **{"compaction.quiet-s": "10"}).should_run
    ran = compaction({"compaction.quiet-s": "10"},
                     {**metrics(small=3, files=4), "last_commit_ms": NOW_MS - 60_000},
                     last_run(5), NOW)
    assert not ran.should_run and "minimum interval" in ran.reason
