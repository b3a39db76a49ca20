"""TMS's Hudi decisions on every real fixture table, against what Hudi would do.

The expectation is derived here, independently of the code under test: instants from the file
names, the latest file slices and the file-system view at every commit from the ``hudi`` package
(hudi-rs), and the cleaner's retention computed the way Hudi's CleanPlanner keeps files — every
file a query at a retained commit (or at the one just before the earliest retained) can read.
Each table is decided under a default policy and a low-threshold one.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hudi import HudiReadOptions, HudiTable

from tests.unit.fakes import make_access, make_table
from tms.domain import Decision
from tms.formats.hudi.plugin import HudiFormat

REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "hudi"
ZIPS = sorted(p.name for p in FIXTURES.glob("*.zip")) if FIXTURES.is_dir() else []
NOW = datetime(2026, 6, 1, tzinfo=UTC)
SMALL_FILE_LIMIT = 300 * 1024 * 1024  # Hudi's hoodie.clustering.plan.strategy.small.file.limit
WRITES = {"commit", "deltacommit", "replacecommit"}
DEFAULT: dict[str, str] = {}
LOW = {"compaction.delta-commits": "1", "clustering.enabled": "true", "clustering.commits": "1",
       "clean.commits": "1"}
POLICIES = {"default": (DEFAULT, 10), "low": (LOW, 1)}  # policy, writers' commits retained


def unzip(name: str, dest: Path) -> Path:
    with zipfile.ZipFile(FIXTURES / name) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX/")]
        zf.extractall(dest, members)
    (top,) = {m.split("/")[0] for m in members}
    return dest / top


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    if not ZIPS:
        pytest.skip(f"Hudi fixtures not found at {FIXTURES}")
    root = tmp_path_factory.mktemp("hudi-fixtures")
    yield {z: unzip(z, root / z[:-4]) for z in ZIPS}


# the oracle ---------------------------------------------------------------------------------
def props_of(base: Path) -> dict[str, str]:
    lines = (base / ".hoodie" / "hoodie.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and line[0] != "#")


def instants(base: Path) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """({time: (action, completion time)} completed, {time: (action, state)} pending)."""
    version = int(props_of(base)["hoodie.table.version"])
    folder = base / ".hoodie" / ("timeline" if version >= 8 else "")
    done: dict[str, tuple[str, str]] = {}
    pending: dict[str, tuple[str, str]] = {}
    for name in os.listdir(folder):
        if m := re.fullmatch(r"(\d+)_(\d+)\.([a-z]+)", name):
            done[m[1]] = (m[3], m[2])
        elif m := re.fullmatch(r"(\d+)\.([a-z]+)\.(requested|inflight)", name):
            if m[1] not in pending or m[3] == "inflight":
                pending[m[1]] = (m[2], m[3].upper())
        elif m := re.fullmatch(r"(\d+)\.inflight", name):
            pending[m[1]] = ("commit", "INFLIGHT")
        elif m := re.fullmatch(r"(\d+)\.([a-z]+)", name):
            done[m[1]] = (m[2], m[1])
    return done, {t: p for t, p in pending.items() if t not in done}


def expected_compaction(base: Path, threshold: int) -> bool:
    props = props_of(base)
    if props.get("hoodie.table.type") != "MERGE_ON_READ":
        return False
    done, pending = instants(base)
    hudi_1 = int(props["hoodie.table.version"]) >= 8  # Hudi 1.x: completed ones after a commit
    boundary = {"commit"} if hudi_1 else {"commit", "replacecommit"}
    last = max((t for t, (a, _) in done.items() if a in boundary), default=None)
    deltas = [t for t, (a, _) in (done if hudi_1 else {**done, **pending}).items()
              if a == "deltacommit"]
    counted = [t for t in deltas if last is None or t > last]
    has_logs = any(s.has_log_files() for s in HudiTable(str(base)).get_file_slices())
    return bool(deltas) and len(counted) >= threshold and has_logs


def expected_clustering(base: Path, policy: dict[str, str]) -> bool:
    if policy.get("clustering.enabled") != "true":
        return False
    table = HudiTable(str(base))
    tl = table.get_timeline()
    last = max((i.timestamp for i in tl.get_completed_clustering_commits()), default="")
    writes = [i for i in tl.get_completed_commits() + tl.get_completed_deltacommits()
              + tl.get_completed_replacecommits() if i.timestamp > last]
    small = [s for s in table.get_file_slices() if s.base_file_size < SMALL_FILE_LIMIT]
    return len(writes) >= int(policy["clustering.commits"]) and bool(small)


def table_files(base: Path, done: dict[str, tuple[str, str]]) -> set[str]:
    """Every committed base and log file under the table's partitions."""
    out = set()
    for _, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            if m := re.fullmatch(r"[^_]+_[^_]+_(\d+)\.\w+", f):
                if done.get(m[1], ("",))[0] in WRITES:
                    out.add(f)
            elif m := re.fullmatch(r"\.(.+)_(\d+)\.log\.\d+_[\d-]+", f):
                out.add(f)
    return out


def cleanable_files(base: Path, retained: int) -> int:
    """Hudi's KEEP_LATEST_COMMITS: files no query at a retained commit, nor at the commit just
    before the earliest retained one, can read."""
    done, pending = instants(base)
    commits = sorted(t for t, (a, _) in done.items() if a in WRITES)
    if len(commits) <= retained:
        return 0
    earliest = commits[len(commits) - retained]
    first_pending = min((t for t, (a, _) in pending.items()
                         if a in WRITES | {"compaction", "clustering"}), default=None)
    if first_pending is not None and earliest > first_pending:
        earliest = max((t for t in commits if t < first_pending), default="")
    return cleanable_before(base, earliest)


def cleanable_before(base: Path, earliest: str) -> int:
    """Files the commit policies clean given the earliest commit to retain."""
    done, _ = instants(base)
    commits = sorted(t for t, (a, _) in done.items() if a in WRITES)
    before = [t for t in commits if t < earliest]
    start = before[-1] if before else earliest
    table = HudiTable(str(base))
    kept: set[str] = set()
    for t in (t for t in commits if t >= start):
        for s in table.get_file_slices(HudiReadOptions().with_as_of_timestamp(t)):
            kept |= {s.base_file_name, *s.log_file_names} - {""}
    # a file group replaced at or after the earliest retained commit keeps every version
    tl = table.get_timeline()
    for instant in tl.get_completed_replacecommits():
        if instant.timestamp >= earliest:
            meta = json.loads(tl.get_instant_metadata_in_json(instant))
            ids = {i for v in meta["partitionToReplaceFileIds"].values() for i in v}
            kept |= {f for f in table_files(base, done) if f.lstrip(".").split("_")[0] in ids}
    return len(table_files(base, done) - kept)


def writes_since_clean(base: Path) -> int:
    done, _ = instants(base)
    last = max((t for t, (a, _) in done.items() if a == "clean"), default="")
    return sum(1 for t, (a, _) in done.items() if a in WRITES and t > last)


# the code under test --------------------------------------------------------------------------
def decide(base: Path, policy: dict[str, str], writer: dict[str, str] | None,
           monkeypatch: pytest.MonkeyPatch, now: datetime = NOW
           ) -> tuple[dict[str, Decision], dict[str, Any]]:
    monkeypatch.setattr("tms.formats.hudi.plugin.writer_properties", lambda table, catalog: writer)
    table = make_table(table_id="t", format="hudi", table_name="", base_path=str(base),
                       policy=dict(policy))
    plugin = HudiFormat(clock=lambda: now)
    metrics = plugin.inspect(table, make_access(str(base.parent)))
    return {d.action: d for d in plugin.evaluate(table, metrics, {}, now)}, metrics


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("fixture", ZIPS, ids=[z[:-4] for z in ZIPS])
def test_decisions_match_hudi(tables: dict[str, Path], fixture: str, name: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    base = tables[fixture]
    policy, retained = POLICIES[name]
    writer = {"hoodie.cleaner.commits.retained": str(retained)}
    got, metrics = decide(base, policy, writer, monkeypatch)

    threshold = int(policy.get("compaction.delta-commits", "5"))
    compact = got["compaction"]
    assert compact.should_run is expected_compaction(base, threshold), compact.reason
    assert compact.params == ({"mode": "scheduleAndExecute", "trigger_strategy": "NUM_COMMITS",
                               "max_delta_commits": str(threshold), "max_delta_seconds": "3600"}
                              if compact.should_run else {})

    cluster = got["clustering"]
    assert cluster.should_run is expected_clustering(base, policy), cluster.reason
    assert cluster.params == ({"mode": "scheduleAndExecute"} if cluster.should_run else {})

    cleanable = cleanable_files(base, retained)
    assert metrics["cleanable_files"] == cleanable
    due = writes_since_clean(base) >= int(policy.get("clean.commits", "10"))
    assert got["clean"].should_run is (due and cleanable > 0), got["clean"].reason
    assert got["clean"].params == {}


@pytest.mark.parametrize("fixture", ZIPS, ids=[z[:-4] for z in ZIPS])
def test_clean_refused_without_the_writers_retention(tables: dict[str, Path], fixture: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for writer in (None, {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS"}):
        got, _ = decide(tables[fixture], LOW, writer, monkeypatch)
        assert not got["clean"].should_run and got["clean"].params == {}
        assert "hoodie.cleaner.commits.retained" in got["clean"].reason


def test_the_oracle_sees_work_somewhere(tables: dict[str, Path]) -> None:
    """The comparisons above are not all 'nothing to do': the fixtures hold tables with log
    files to compact, base-file-only merge-on-read tables, and cleanable versions."""
    mor = [b for b in tables.values() if props_of(b).get("hoodie.table.type") == "MERGE_ON_READ"]
    assert any(expected_compaction(b, 1) for b in mor)
    assert any(not expected_compaction(b, 1) and instants(b)[0] for b in mor)
    assert sum(1 for b in tables.values() if cleanable_files(b, 1)) >= 5
    assert any(expected_compaction(b, 5) for b in mor)
