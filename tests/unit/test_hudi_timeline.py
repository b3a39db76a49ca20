"""Timeline reading on real Spark-written Hudi tables (versions 6, 8, 9), unzipped per test.

The fixtures are copied into ``tests/fixtures/hudi`` (see its NOTICE.md); a test
that needs them is skipped, saying where it looked, only when that directory is absent.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.unit.fakes import make_access, make_table
from tms.domain import Table
from tms.formats.hudi.plugin import HudiFormat
from tms.formats.hudi.timeline import (
    State,
    TableType,
    TimelineError,
    UnsupportedSchemeError,
    local_path,
    parse_instant_time,
    read_timeline,
)
from tms.formats.storage import LocalStore

REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hudi"
V6_TRIPS = "quickstart_trips_table__mor__avro__v6_trips_8i3d.zip"
V6_ROLLBACK = "sample_table__mor__parquet__v6_nonpartitioned_rollback.zip"
V8_TRIPS = "quickstart_trips_table__mor__avro__v8_trips_8i3u1d.zip"
V9_ROLLBACK = "sample_table__mor__avro__v9_nonpartitioned_rollback.zip"
V9_TXNS = "sample_table__mor__avro__v9_txns_simple_meta.zip"
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def unzip(name: str, dest: Path) -> Path:
    """Extract one fixture (without its macOS resource forks); return the table's base path."""
    if not FIXTURES.is_dir():
        pytest.skip(f"Hudi fixtures not found at {FIXTURES}")
    with zipfile.ZipFile(FIXTURES / name) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX/")]
        zf.extractall(dest, members)
    (top,) = {m.split("/")[0] for m in members}
    return dest / top


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def table_at(base: Path, **policy: str) -> Table:
    return make_table(table_id="t", format="hudi", table_name="", base_path=str(base),
                      policy=dict(policy))


# fixture, version, completed instants by action, delta commits since compaction,
# last compaction, TIME_ELAPSED clock start, commits since clean, last completed instant
FACTS = [
    (V6_TRIPS, 6, {"deltacommit": 2}, 2, None, "2025-06-18 05:47:11.154", 2,
     "20250618054714114"),
    (V6_ROLLBACK, 6, {"deltacommit": 2, "rollback": 1}, 2, None, "2025-01-26 04:08:23.628", 2,
     "20250126060846931"),
    (V8_TRIPS, 8, {"commit": 1, "deltacommit": 6, "indexing": 1}, 1, "20251220210129235",
     "2025-12-20 21:01:29.235", 7, "20251220210130911"),
    (V9_ROLLBACK, 9, {"deltacommit": 2, "rollback": 1}, 2, None, "2026-04-03 18:42:38.571", 2,
     "20260403184302162"),
    (V9_TXNS, 9, {"commit": 1, "deltacommit": 10, "indexing": 2, "replacecommit": 2}, 1,
     "20260307162618152", "2026-03-07 16:26:18.152", 13, "20260307162622789"),
]


@pytest.mark.parametrize("fixture,version,by_action,deltas,compaction,clock,since_clean,last",
                         FACTS, ids=[f[0].split("__")[-1][:-4] for f in FACTS])
def test_fixture_facts(tmp_path: Path, fixture: str, version: int, by_action: dict,
                       deltas: int, compaction: str | None, clock: str, since_clean: int,
                       last: str) -> None:
    s = read_timeline(str(unzip(fixture, tmp_path)))
    assert (s.table_version, s.table_type) == (version, TableType.MERGE_ON_READ)
    assert dict(s.completed_by_action) == by_action
    assert s.delta_commits_since_compaction == deltas
    assert s.last_compaction_instant == compaction
    assert s.last_compaction_time == utc(clock)
    assert (s.pending_compactions, s.pending_clusterings) == ((), ())
    assert (s.last_clean_instant, s.commits_since_clean) == (None, since_clean)
    assert s.last_completed_instant == last
    assert all(i.state is State.COMPLETED for i in s.instants)
    # only version 8+ names carry the completion time
    assert all((i.completion_time is not None) == (version >= 8) for i in s.instants)
    json.dumps(s.metrics())  # what inspect() hands the scheduler must be JSON


def test_v8_compaction_completes_as_commit(tmp_path: Path) -> None:
    s = read_timeline(str(unzip(V8_TRIPS, tmp_path)))
    (commit,) = [i for i in s.instants if i.action == "commit"]
    assert (commit.planned_action, commit.completion_time) == ("compaction", "20251220210129883")


def test_v9_clustering_is_told_from_insert_overwrite(tmp_path: Path) -> None:
    """Both replacecommits complete alike; only 619269 was planned as clustering (614221 has a
    requested file whose operationType is null)."""
    s = read_timeline(str(unzip(V9_TXNS, tmp_path)))
    assert s.last_clustering_instant == "20260307162619269"
    assert s.commits_since_clustering == 1  # the deltacommit 20260307162620509


def test_v9_writer_time_zone(tmp_path: Path) -> None:
    """This table's writer ran on US Central time: its hoodie.properties says
    'Updated at 2026-03-07T22:26:23Z' and 'Sat Mar 07 16:26:23 CST 2026'."""
    base = str(unzip(V9_TXNS, tmp_path))
    assert read_timeline(base).last_completed_time == utc("2026-03-07 16:26:22.789")
    chicago = read_timeline(base, ZoneInfo("America/Chicago"))
    assert chicago.last_completed_time == utc("2026-03-07 22:26:22.789")
    assert chicago.timezone == "America/Chicago"


def test_table_property_utc_wins_over_argument(tmp_path: Path) -> None:
    base = unzip(V8_TRIPS, tmp_path)
    with (base / ".hoodie" / "hoodie.properties").open("a") as f:
        f.write("hoodie.table.timeline.timezone=UTC\n")
    s = read_timeline(str(base), ZoneInfo("Asia/Shanghai"))
    assert s.last_completed_time == utc("2025-12-20 21:01:30.911")


def test_metadata_table_with_zero_instants(tmp_path: Path) -> None:
    """The metadata table's bootstrap instants (00000000000000000...) have no date."""
    s = read_timeline(str(unzip(V8_TRIPS, tmp_path) / ".hoodie" / "metadata"))
    assert dict(s.completed_by_action) == {"commit": 1, "deltacommit": 12}
    assert (s.last_compaction_instant, s.delta_commits_since_compaction) == (
        "20251220210130942", 0)


def test_pending_compaction_v8_is_executed(tmp_path: Path) -> None:
    base = unzip(V8_TRIPS, tmp_path)
    timeline = base / ".hoodie" / "timeline"
    (timeline / "20251220210140000.compaction.requested").write_bytes(b"")
    (timeline / "20251220210150000.compaction.requested").write_bytes(b"")
    (timeline / "20251220210150000.compaction.inflight").write_bytes(b"")
    s = read_timeline(f"file://{base}")
    assert s.pending_compactions == ("20251220210140000", "20251220210150000")
    assert [i.state for i in s.instants[-2:]] == [State.REQUESTED, State.INFLIGHT]
    plugin = HudiFormat()
    (d, _, _) = plugin.evaluate(table_at(base), plugin.inspect(table_at(base), make_access()),
                                {}, NOW)
    assert d.should_run and d.params == {"mode": "execute", "instant": "20251220210140000"}
    assert "20251220210140000 is REQUESTED (2 pending)" in d.reason


def test_pending_compaction_v6_then_completed(tmp_path: Path) -> None:
    base = unzip(V6_TRIPS, tmp_path)
    meta, t = base / ".hoodie", "20250618054800000"
    (meta / f"{t}.compaction.requested").write_bytes(b"")
    plugin = HudiFormat()
    metrics = plugin.inspect(table_at(base), make_access())
    assert metrics["pending_compactions"] == [t]
    (d, _, _) = plugin.evaluate(table_at(base), metrics, {}, NOW)
    assert d.params == {"mode": "execute", "instant": t}
    (meta / f"{t}.compaction.inflight").write_bytes(b"")
    (meta / f"{t}.commit").write_bytes(b"{}")  # a v6 compaction completes as <t>.commit
    s = read_timeline(str(base))
    assert (s.pending_compactions, s.last_compaction_instant) == ((), t)
    assert s.delta_commits_since_compaction == 0
    assert s.last_compaction_time == utc("2025-06-18 05:48:00")


def test_v6_pending_clustering_needs_a_clustering_plan(tmp_path: Path) -> None:
    """Version 6 names clustering and insert_overwrite alike (replacecommit); the requested
    file tells them apart. Real plan bytes come from the v9 fixture."""
    plans = unzip(V9_TXNS, tmp_path / "v9") / ".hoodie" / "timeline"
    base = unzip(V6_TRIPS, tmp_path)
    meta = base / ".hoodie"
    cases = {"20250618054800001": (plans / "20260307162619269.clustering.requested").read_bytes(),
             "20250618054800002": (plans / "20260307162614221.replacecommit.requested")
             .read_bytes(),
             "20250618054800003": b""}
    for t, content in cases.items():
        (meta / f"{t}.replacecommit.requested").write_bytes(content)
    s = read_timeline(str(base))
    assert s.pending_clusterings == ("20250618054800001",)
    (meta / "20250618054800001.replacecommit").write_bytes(b"{}")
    s = read_timeline(str(base))
    assert (s.pending_clusterings, s.last_clustering_instant) == ((), "20250618054800001")
    assert s.commits_since_clustering == 0


def test_v9_pending_clustering_by_action_name(tmp_path: Path) -> None:
    base = unzip(V9_ROLLBACK, tmp_path)
    (base / ".hoodie" / "timeline" / "20260403184400000.clustering.requested").write_bytes(b"x")
    s = read_timeline(str(base))
    assert s.pending_clusterings == ("20260403184400000",)


def test_copy_on_write_has_no_compaction(tmp_path: Path) -> None:
    base = unzip(V6_TRIPS, tmp_path)
    props = base / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("MERGE_ON_READ", "COPY_ON_WRITE"))
    (base / ".hoodie" / "20250618054800000.commit").write_bytes(b"{}")
    s = read_timeline(str(base))
    assert s.table_type is TableType.COPY_ON_WRITE
    assert (s.last_compaction_instant, s.delta_commits_since_compaction) == (None, 0)


def test_reads_only_properties_and_replace_plans(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    base = unzip(V9_TXNS, tmp_path)
    opened: list[str] = []
    real_read = LocalStore.read

    def spy(self: LocalStore, path: str, *args: object) -> bytes:
        opened.append(Path(path).name)
        return real_read(self, path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalStore, "read", spy)  # every file the reader opens
    read_timeline(str(base))
    # the newest replacecommit was planned as clustering: no plan needed to be read
    assert opened == ["hoodie.properties"]


def test_summary_is_immutable(tmp_path: Path) -> None:
    s = read_timeline(str(unzip(V6_TRIPS, tmp_path)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.table_version = 7  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.completed_by_action["commit"] = 1  # type: ignore[index]


def test_not_a_hudi_table(tmp_path: Path) -> None:
    with pytest.raises(TimelineError, match="not a Hudi table"):
        read_timeline(str(tmp_path))


@pytest.mark.parametrize("uri", ["s3a://bucket/t", "hdfs://nn:8020/t", "file://otherhost/t"])
def test_other_schemes_are_not_local(uri: str) -> None:
    scheme = uri.split(":")[0]
    with pytest.raises(UnsupportedSchemeError, match=f"scheme '{scheme}'"):
        local_path(uri)


@pytest.mark.parametrize("uri", ["file://otherhost/t", "ftp://host/t", "s3://bad_bucket!/t"])
def test_unreadable_base_paths_are_refused(uri: str) -> None:
    """Object stores are read through pyarrow (tests/integration/test_hudi_s3.py); a file: URI
    on another host, an unknown scheme or a malformed bucket never are."""
    with pytest.raises(UnsupportedSchemeError):
        read_timeline(uri)


def test_local_paths() -> None:
    assert local_path("/data/t") == Path("/data/t")
    assert local_path("file:///data/t%20x") == Path("/data/t x")
    assert local_path("file:/data/t") == Path("/data/t")  # Hadoop's spelling
    assert local_path("file://localhost/data/t") == Path("/data/t")


def test_parse_instant_time() -> None:
    assert parse_instant_time("20250618054711154") == utc("2025-06-18 05:47:11.154")
    assert parse_instant_time("20250618054711") == utc("2025-06-18 05:47:11")
    shanghai = parse_instant_time("20250618054711154", ZoneInfo("Asia/Shanghai"))
    assert shanghai == utc("2025-06-17 21:47:11.154") and shanghai.tzinfo is UTC
    for bad in ("00000000000000000", "2025061805471", "202506180547111", "2025-06-18"):
        with pytest.raises(ValueError):
            parse_instant_time(bad)
