"""The health score's parts, ramps and bands (pure), and what it keeps of an inspection."""

from __future__ import annotations

from datetime import UTC, datetime

from tms.health.figures import expired_snapshots, figures_of, partition_name, worst_partitions
from tms.health.score import WEIGHTS, Figures, band, ramp, score

NOW = datetime(2026, 11, 27, tzinfo=UTC)


def test_the_example_of_the_docs_adds_up_to_71() -> None:
    f = Figures(data_files=1204, small_files=446, small_file_bytes=16 << 20, delete_files=60,
                snapshots=40, expired_snapshots=12, manifests=180, manifests_limit=100)
    h = score(f, overdue_s=3 * 86_400, overdue_action="compaction")
    penalties = {p.name: p.penalty for p in h.parts}
    assert penalties == {"small_files": 19, "delete_files": 0, "manifests": 4, "snapshots": 1,
                         "maintenance_overdue": 5}
    assert h.score == 71 and band(h.score) == "fair"
    assert "37% of 1,204 data files are small (< 16 MiB)" in h.parts[0].detail


def test_bounds_weights_and_bands() -> None:
    assert sum(WEIGHTS.values()) == 100
    assert ramp(0.1, 0.1, 0.6) == 0.0 and ramp(0.6, 0.1, 0.6) == 1.0
    assert abs(ramp(0.35, 0.1, 0.6) - 0.5) < 1e-9
    worst = Figures(data_files=100, small_files=100, delete_files=100, expired_snapshots=500,
                    manifests=1000, manifests_limit=10)
    assert score(worst, overdue_s=30 * 86_400, overdue_action="x").score == 0
    assert score(Figures()).score == 100  # an empty table has nothing due
    few = Figures(data_files=3, small_files=3)  # too few files to judge shares
    assert score(few).score == 100
    assert [band(s) for s in (None, 0, 49, 50, 79, 80, 100)] == [
        "unknown", "poor", "poor", "fair", "fair", "healthy", "healthy"]


def test_figures_from_iceberg_and_hudi_metrics() -> None:
    day_ms = 86_400_000
    now_ms = int(NOW.timestamp() * 1000)
    times = [now_ms - d * day_ms for d in (0, 1, 6, 7, 8)]
    f = figures_of("iceberg", {"data_files": 10, "small_files": None, "total_bytes": 100,
                               "_snapshot_times_ms": times, "snapshots": 5, "manifests": 3},
                   {"expire-snapshots.max-age-s": "432000", "manifests.max-count": "bad"}, NOW)
    assert f.small_files is None and f.mean_file_bytes == 10
    assert f.expired_snapshots == 3 and f.manifests_limit == 100  # a bad value: the default
    h = figures_of("hudi", {"base_files": 4, "small_base_files": 2, "log_files": 7,
                            "base_bytes": 10, "log_bytes": 5}, {}, NOW)
    assert (h.data_files, h.small_files, h.delete_files, h.total_bytes) == (4, 2, 7, 15)
    assert expired_snapshots([now_ms - 9 * day_ms] * 3, NOW, 5 * 86_400, 2) == 1


def test_partitions_named_and_worst_first() -> None:
    spec = [["ts", "day", "timestamp"], ["id", "bucket[4]", "long"], ["d", "identity", "date"]]
    assert partition_name(spec, [0, 3, 1]) == "ts_day=1970-01-01/id_bucket[4]=3/d=1970-01-02"
    assert partition_name(None, []) == "(unpartitioned)"
    assert partition_name(spec[:1], ["<script>" * 100]).startswith("ts_day=<script>")
    assert len(partition_name(spec[:1], ["x" * 1000])) == 300
    rows = [{"spec": 0, "values": [i], "data_files": i, "small_files": i % 7, "bytes": 1}
            for i in range(300)]
    worst = worst_partitions({"_partitions": rows, "_specs": {0: spec[:1]}})
    assert len(worst) == 100 and worst[0]["small_files"] == 6
    assert all(a["small_files"] >= b["small_files"] for a, b in zip(worst, worst[1:],
                                                                     strict=False))
    assert worst_partitions({"_partitions": None}) == ()
