"""Copies of real fixture tables with instant files added or removed: pending and inflight plans
of every action, heartbeats, cleans, and the writers' cleaner policies, each decided by TMS and
checked against what Hudi would do (derived in the test, as in test_hudi_fixture_decisions)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.unit.fakes import make_access
from tests.unit.test_hudi_fixture_decisions import (
    FIXTURES,
    LOW,
    NOW,
    WRITES,
    cleanable_before,
    cleanable_files,
    decide,
    instants,
    table_files,
    unzip,
)
from tests.unit.test_hudi_plans import clustering_plan_in

V6 = "quickstart_trips_table__mor__avro__v6_trips_8i3d.zip"
V8 = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
V9_COW = "sample_table__cow__v9_txns_simple_meta.zip"
RETAIN_1 = {"hoodie.cleaner.commits.retained": "1"}
T = "20260601000000000"  # an instant newer than every fixture's


@pytest.fixture(autouse=True)
def _fixtures() -> None:
    if not FIXTURES.is_dir():
        pytest.skip(f"Hudi fixtures not found at {FIXTURES}")


def timeline(base: Path) -> Path:
    return base / ".hoodie" / "timeline" if (base / ".hoodie" / "timeline").is_dir() \
        else base / ".hoodie"


def heartbeat(base: Path, instant: str, age_s: float | None) -> None:
    """The writer's heartbeat file for ``instant``, last touched ``age_s`` before NOW."""
    folder = base / ".hoodie" / ".heartbeat"
    folder.mkdir(exist_ok=True)
    if age_s is not None:
        (folder / instant).write_bytes(b"")
        stamp = (NOW - timedelta(seconds=age_s)).timestamp()
        os.utime(folder / instant, (stamp, stamp))


# pending plans run first, even when scheduling is disabled -----------------------------------
@pytest.mark.parametrize("fixture", [V6, V8])
def test_requested_compaction_runs_while_disabled(tmp_path: Path, fixture: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(fixture, tmp_path)
    (timeline(base) / f"{T}.compaction.requested").write_bytes(b"")
    got, _ = decide(base, {"compaction.enabled": "false"}, RETAIN_1, monkeypatch)
    d = got["compaction"]
    assert d.should_run and d.params == {"mode": "execute", "instant": T}
    assert f"compaction plan {T} is REQUESTED" in d.reason
    assert "although compaction.enabled=false" in d.reason


@pytest.mark.parametrize("age_s,expiry_s,runs", [
    (30, 120, False), (120, 120, False), (121, 120, True), (None, 120, True),
    (31, 30, True), (29, 30, False)])
def test_inflight_compaction_waits_for_its_heartbeat(tmp_path: Path, age_s: float | None,
                                                     expiry_s: int, runs: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Hudi deems a writer dead when its heartbeat is older than interval x tolerable misses
    (defaults 60 s x 2), or when it has none; only then may the plan be rolled back and run."""
    base = unzip(V8, tmp_path)
    for state in ("requested", "inflight"):
        (timeline(base) / f"{T}.compaction.{state}").write_bytes(b"")
    heartbeat(base, T, age_s)
    writer = dict(RETAIN_1)
    if expiry_s != 120:
        writer |= {"hoodie.client.heartbeat.interval_in_ms": "10000",
                   "hoodie.client.heartbeat.tolerable.misses": "3"}
    d = decide(base, {}, writer, monkeypatch)[0]["compaction"]
    assert d.should_run is runs, d.reason
    assert f"compaction {T} is INFLIGHT" in d.reason
    if age_s is None:
        assert "no heartbeat file" in d.reason
    else:
        assert f"last heartbeat {age_s} s ago (expiry {expiry_s} s)" in d.reason
    assert d.params == ({"mode": "execute", "instant": T} if runs else {})


def test_removed_completion_leaves_the_compaction_inflight(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Without its completed instant the v8 compaction is INFLIGHT again (a crashed run): its
    base files are not part of the table and it is executed, there being no heartbeat."""
    base = unzip(V8, tmp_path)
    done = "20251220210129235"
    (timeline(base) / f"{done}_20251220210129883.commit").unlink()
    d = decide(base, {}, RETAIN_1, monkeypatch)[0]["compaction"]
    assert d.should_run and d.params == {"mode": "execute", "instant": done}
    assert done not in {f.rsplit("_", 1)[-1].split(".")[0]
                        for f in table_files(base, instants(base)[0])}


def test_pending_clustering_runs_while_disabled(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for fixture, name in ((V9_COW, f"{T}.clustering.requested"),
                          (V6, f"{T}.replacecommit.requested")):  # v6: the plan tells
        base = unzip(fixture, tmp_path / fixture[:-4])
        (timeline(base) / name).write_bytes(clustering_plan_in(base))  # a real plan, moved
        d = decide(base, {}, RETAIN_1, monkeypatch)[0]["clustering"]
        assert d.should_run and d.params == {"mode": "execute", "instant": T}, d.reason
        assert "although clustering.enabled=false" in d.reason


def test_insert_overwrite_in_flight_is_not_a_clustering(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V6, tmp_path)
    (timeline(base) / f"{T}.replacecommit.requested").write_bytes(b"")
    d = decide(base, {}, RETAIN_1, monkeypatch)[0]["clustering"]
    assert not d.should_run and "disabled by policy" in d.reason


# clean ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("enabled", ["true", "false"])
def test_pending_clean_is_reported_and_run(tmp_path: Path, enabled: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V8, tmp_path)
    (timeline(base) / f"{T}.clean.requested").write_bytes(b"")
    got, metrics = decide(base, {"clean.enabled": enabled}, RETAIN_1, monkeypatch)
    assert {"instant": T, "action": "clean", "state": "REQUESTED",
            "heartbeat_s": None} in metrics["pending"]
    d = got["clean"]
    assert d.should_run and d.params == {"instant": T}
    assert f"clean plan {T} is REQUESTED" in d.reason


def test_pending_clean_waits_for_the_writers_retention(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V8, tmp_path)
    (timeline(base) / f"{T}.clean.requested").write_bytes(b"")
    d = decide(base, {}, None, monkeypatch)[0]["clean"]
    assert not d.should_run and d.params == {}
    assert f"clean {T} is REQUESTED" in d.reason
    assert "hoodie.cleaner.commits.retained" in d.reason


def test_completed_clean_resets_the_count(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V9_COW, tmp_path)
    (timeline(base) / f"{T}_{T[:-1]}1.clean").write_bytes(b"")
    got, metrics = decide(base, LOW, RETAIN_1, monkeypatch)
    assert metrics["commits_since_clean"] == 0 and metrics["cleanable_files"] > 0
    assert not got["clean"].should_run
    assert got["clean"].reason == "0 commits since the last clean (threshold 1)"


def test_pending_write_holds_the_retention_back(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Hudi never retains from later than the earliest pending write: a write still in flight
    since the third commit keeps every version a query at the second can read."""
    base = unzip(V9_COW, tmp_path)
    before = cleanable_files(base, 1)
    commits = sorted(t for t, (a, _) in instants(base)[0].items() if a in WRITES)
    stuck = commits[2][:-1] + "1"  # just after the third commit
    (timeline(base) / f"{stuck}.commit.requested").write_bytes(b"")
    (timeline(base) / f"{stuck}.inflight").write_bytes(b"")
    got, metrics = decide(base, LOW, RETAIN_1, monkeypatch)
    assert metrics["earliest_commit_to_retain"] == commits[2]
    assert metrics["cleanable_files"] == cleanable_files(base, 1) < before
    assert {"instant": stuck, "action": "commit", "state": "INFLIGHT",
            "heartbeat_s": None} in metrics["pending"]


@pytest.mark.parametrize("index", [3, -1, None])
def test_keep_latest_by_hours(tmp_path: Path, index: int | None,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """KEEP_LATEST_BY_HOURS retains from the first commit at or after now - hours (instant
    times in the writers' zone, UTC here); with none that recent, nothing is cleaned."""
    base = unzip(V9_COW, tmp_path)
    commits = sorted(t for t, (a, _) in instants(base)[0].items() if a in WRITES)
    at = commits[index] if index is not None else "20300101000000000"
    now = datetime.strptime(at[:14], "%Y%m%d%H%M%S").replace(
        tzinfo=UTC, microsecond=int(at[14:]) * 1000) + timedelta(hours=2)
    writer = {"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS",
              "hoodie.cleaner.hours.retained": "2"}
    got, metrics = decide(base, LOW, writer, monkeypatch, now=now)
    expected = at if index is not None else None
    assert metrics["earliest_commit_to_retain"] == expected
    assert metrics["cleanable_files"] == (cleanable_before(base, at) if expected else 0)
    assert got["clean"].should_run is (metrics["cleanable_files"] > 0)
    if index == -1:
        assert metrics["cleanable_files"] == cleanable_files(base, 1) > 0


def test_keep_latest_file_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KEEP_LATEST_FILE_VERSIONS keeps the newest N versions of each live file group; a
    replaced file group goes entirely."""
    base = unzip(V9_COW, tmp_path)
    from hudi import HudiTable

    table = HudiTable(str(base))
    live = {s.file_id for s in table.get_file_slices()}
    versions: dict[str, set[str]] = {}
    for f in table_files(base, instants(base)[0]):
        file_id, instant = f.split("_")[0], f.rsplit("_", 1)[-1].split(".")[0]
        versions.setdefault(file_id, set()).add(instant)
    for keep in (1, 2):
        expected = sum(max(len(v) - keep, 0) if fid in live else len(v)
                       for fid, v in versions.items())
        writer = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                  "hoodie.cleaner.fileversions.retained": str(keep)}
        got, metrics = decide(base, LOW, writer, monkeypatch)
        assert metrics["cleanable_files"] == expected > 0
        assert got["clean"].should_run
        assert f"hoodie.cleaner.fileversions.retained={keep}" in got["clean"].reason


def test_long_retention_with_matching_archival_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V9_COW, tmp_path)
    writer = {"hoodie.cleaner.commits.retained": "30", "hoodie.keep.min.commits": "31",
              "hoodie.keep.max.commits": "40"}
    got, metrics = decide(base, LOW, writer, monkeypatch)
    assert metrics["cleaner_retained"] == 30 and metrics["cleanable_files"] == 0
    assert got["clean"].reason.endswith("no file version is cleanable under "
                                        "KEEP_LATEST_COMMITS with "
                                        "hoodie.cleaner.commits.retained=30")


@pytest.mark.parametrize("writer,words", [
    ({"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS"}, "hoodie.cleaner.hours.retained"),
    ({"hoodie.cleaner.policy": "KEEP_ALL"}, "is not one of"),
    ({"hoodie.cleaner.commits.retained": "0"}, "whole number from 1"),
    ({"hoodie.cleaner.commits.retained": "ten"}, "whole number from 1"),
    ({"hoodie.cleaner.commits.retained": "-3"}, "whole number from 1"),
    ({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
      "hoodie.cleaner.commits.retained": "3"}, "hoodie.cleaner.fileversions.retained"),
    ({"hoodie.cleaner.commits.retained": "30"}, "hoodie.keep.min.commits (20) must exceed"),
    ({"hoodie.cleaner.commits.retained": "3", "hoodie.keep.min.commits": "40"},
     "hoodie.keep.max.commits (30) must exceed"),
    ({"hoodie.cleaner.commits.retained": "3", "hoodie.keep.min.commits": "x"},
     "are not numbers"),
])
def test_unusable_retention_refuses_clean(tmp_path: Path, writer: dict[str, str], words: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V9_COW, tmp_path)
    d = decide(base, LOW, writer, monkeypatch)[0]["clean"]
    assert not d.should_run and d.reason.startswith("clean refused: ") and words in d.reason


# compaction counting ----------------------------------------------------------------------------
def test_num_commits_after_last_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction requested after the last delta commit: NUM_COMMITS still counts from the last
    completed compaction, NUM_COMMITS_AFTER_LAST_REQUEST from the request."""
    base = unzip(V8, tmp_path)
    (timeline(base) / f"{T}.compaction.requested").write_bytes(b"")
    metrics = decide(base, {}, RETAIN_1, monkeypatch)[1]
    assert (metrics["hudi_delta_commits"], metrics["hudi_delta_commits_after_request"]) == (1, 0)


def test_pending_delta_commits_count_and_start_the_clock(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Hudi counts delta commits in every state, and with no compaction its clock starts at the
    first delta commit of any state."""
    base = unzip(V6, tmp_path)
    first = min(t for t, (a, _) in instants(base)[0].items() if a == "deltacommit")
    early = str(int(first) - 1000)
    (timeline(base) / f"{early}.deltacommit.requested").write_bytes(b"")
    (timeline(base) / f"{T}.deltacommit.inflight").write_bytes(b"")
    metrics = decide(base, {}, RETAIN_1, monkeypatch)[1]
    assert metrics["hudi_delta_commits"] == metrics["delta_commits_since_compaction"] + 2
    assert metrics["hudi_compaction_clock"] == datetime.strptime(
        early[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC, microsecond=int(early[14:]) * 1000
                                            ).isoformat()


def test_hudi_1_counts_completed_delta_commits_only(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Hudi 1.x counts completed delta commits only, so one in flight does not trigger."""
    base = unzip(V8, tmp_path)
    (timeline(base) / f"{T}.deltacommit.requested").write_bytes(b"")
    (timeline(base) / f"{T}.deltacommit.inflight").write_bytes(b"")
    got, metrics = decide(base, {"compaction.delta-commits": "2"}, RETAIN_1, monkeypatch)
    assert (metrics["hudi_delta_commits"], metrics["hudi_counting"]) == (1, "1.x")
    assert not got["compaction"].should_run
    assert got["compaction"].reason.startswith("1 delta commits since the last compaction "
                                               "(threshold 2, NUM_COMMITS); completed delta")


@pytest.mark.parametrize("table_utc", [False, True])
def test_instant_times_in_the_writers_zone(tmp_path: Path, table_utc: bool,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Instant times are the writers' local time (the policy's timeline.timezone) unless the
    table keeps its timeline in UTC."""
    base = unzip(V8, tmp_path)
    if table_utc:
        with open(base / ".hoodie" / "hoodie.properties", "a") as f:
            f.write("hoodie.table.timeline.timezone=UTC\n")
    metrics = decide(base, {"timeline.timezone": "Asia/Shanghai"}, RETAIN_1, monkeypatch)[1]
    local = datetime(2025, 12, 20, 21, 1, 29, 235000)
    expected = local.replace(tzinfo=UTC) if table_utc else (local - timedelta(hours=8)
                                                             ).replace(tzinfo=UTC)
    assert metrics["hudi_compaction_clock"] == expected.isoformat()


def test_the_operators_writer_zone_wins_over_the_policy(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The zone the operator states for the writers (tms.hudi.writer-timezone) decides how a
    local-time timeline is read, whatever the table's policy says."""
    base = unzip(V8, tmp_path)
    monkeypatch.setattr("tms.formats.hudi.plugin.writer_zone",
                        lambda table, catalog: "Asia/Kolkata")
    metrics = decide(base, {"timeline.timezone": "Asia/Shanghai"}, RETAIN_1, monkeypatch)[1]
    local = datetime(2025, 12, 20, 21, 1, 29, 235000)
    expected = (local - timedelta(hours=5, minutes=30)).replace(tzinfo=UTC)
    assert metrics["hudi_compaction_clock"] == expected.isoformat()


def test_trino_layouts_never_crash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Name-only version-5 layouts (empty instant files, no data): decided without a crash."""
    import shutil

    for src in sorted((FIXTURES / "trino-v5-names-only").iterdir()):
        if not src.is_dir():
            continue
        base = tmp_path / src.name
        shutil.copytree(src, base)
        got, _ = decide(base, LOW, RETAIN_1, monkeypatch)
        assert set(got) == {"compaction", "clustering", "clean"}
        assert all(not d.should_run or d.action == "clustering" for d in got.values())


def test_slice_errors_are_scrubbed_and_block_new_plans(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """When hudi-rs cannot read the slices, nothing new is scheduled, a pending plan still
    runs, and the error shown (ExplainTable) never carries the catalog's secrets."""
    from tests.unit.fakes import make_table
    from tms.catalogs import CatalogAccess
    from tms.domain import CatalogType
    from tms.formats.hudi import inspect as hudi_inspect
    from tms.formats.hudi.plugin import HudiFormat
    from tms.formats.hudi.slices import SlicesError

    base = unzip(V8, tmp_path)
    (timeline(base) / f"{T}.clustering.requested").write_bytes(b"")  # planned (version 8)

    def broken(*_: object) -> None:
        raise SlicesError("hudi-rs cannot read the file slices: key s3cr3t-v4lue refused")

    monkeypatch.setattr(hudi_inspect, "latest_slices", broken)
    monkeypatch.setattr("tms.formats.hudi.plugin.writer_properties",
                        lambda table, catalog: RETAIN_1)
    access = CatalogAccess("c", CatalogType.HADOOP, {}, {}, (str(tmp_path),),
                           secret_values=("s3cr3t-v4lue",))
    table = make_table(table_id="t", format="hudi", table_name="", base_path=str(base),
                       policy={"compaction.delta-commits": "1"})
    plugin = HudiFormat(clock=lambda: NOW)
    metrics = plugin.inspect(table, access)
    assert "s3cr3t" not in repr(metrics) and "****" in metrics["slices_error"]
    got = {d.action: d for d in plugin.evaluate(table, metrics, {}, NOW)}
    assert not got["compaction"].should_run and "file slices are unknown" in \
        got["compaction"].reason
    assert got["clustering"].should_run and got["clustering"].params["instant"] == T
    assert not got["clean"].should_run and "replaced file groups are unknown" in \
        got["clean"].reason


def test_file_versions_are_listed_only_when_a_clean_may_be_decided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tms.formats.hudi import inspect as hudi_inspect

    base = unzip(V9_COW, tmp_path)
    listed: list[str] = []
    real = hudi_inspect.all_file_groups

    def spy(store, root, *rest):  # type: ignore[no-untyped-def]
        listed.append(root)
        return real(store, root, *rest)

    monkeypatch.setattr(hudi_inspect, "all_file_groups", spy)
    got, metrics = decide(base, {"clean.enabled": "false"}, RETAIN_1, monkeypatch)
    assert listed == [] and "cleanable_files" not in metrics
    assert got["clean"].reason == "clean is disabled by policy (clean.enabled=false)"
    decide(base, {}, None, monkeypatch)  # retention unknown: nothing to weigh
    assert listed == []
    decide(base, {}, RETAIN_1, monkeypatch)
    assert listed == [str(base)]


def test_recheck_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right before a queued operation runs, the decision is taken again: a plan that is no
    longer pending, a clean with nothing left to delete, or a schedule while a plan appeared
    in the meantime end SKIPPED with the reason; what still holds runs."""
    from tests.unit.fakes import make_op, make_table
    from tms.formats.hudi.plugin import HudiFormat

    base = unzip(V8, tmp_path)
    monkeypatch.setattr("tms.formats.hudi.plugin.writer_properties",
                        lambda table, catalog: RETAIN_1)
    table = make_table(table_id="t", format="hudi", table_name="", base_path=str(base),
                       policy=dict(LOW))
    plugin = HudiFormat(clock=lambda: NOW)
    access = make_access(str(tmp_path))

    def recheck(action: str, **params: str) -> str | None:
        return plugin.recheck(table, access, make_op(action=action, params=params))

    assert recheck("compaction", mode="scheduleAndExecute") is None
    assert recheck("clean") is None
    assert recheck("compaction", mode="execute", instant=T) == (
        f"plan {T} is no longer pending: 1 delta commits since the last compaction "
        "(threshold 1, NUM_COMMITS); completed delta commits, as Hudi 1.x counts them; "
        "1 file slices have log files")
    (timeline(base) / f"{T}.compaction.requested").write_bytes(b"")
    assert recheck("compaction", mode="execute", instant=T) is None
    assert (recheck("compaction", mode="scheduleAndExecute") or "").startswith(
        f"a plan is pending now and runs first: compaction plan {T} is REQUESTED")
    writer = {"hoodie.cleaner.commits.retained": "10"}
    monkeypatch.setattr("tms.formats.hudi.plugin.writer_properties", lambda table, catalog: writer)
    assert (recheck("clean") or "").startswith("no longer needed: ")
