"""The cold driver's class-data archive on real spark-submit jobs: a first job dumps it, the
next maps it, and a broken or foreign archive never fails a job."""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from tests.security.job_harness import Lake, spark_settings
from tms.engines.base import EngineResult
from tms.engines.cold_cds import ArchiveCache
from tms.engines.spark_submit import SparkSubmitEngine

pytestmark = pytest.mark.integration


def _run(engine: SparkSubmitEngine, lake: Lake, name: str, workdir: Path) -> EngineResult:
    lake.table(name)
    res = engine.run(lake.job(name), workdir, threading.Event(), lambda handle: None)
    assert res.succeeded, f"{res.error}\n{res.log_tail[-3000:]}"
    assert res.result is not None
    assert res.result["rewritten_data_files_count"] >= 2
    return res


def _foreign_archive(tmp_path: Path) -> Path:
    """A real archive of another class path (a JVM that only printed its version)."""
    path = tmp_path / "foreign.jsa"
    subprocess.run(["java", f"-XX:ArchiveClassesAtExit={path}", "-version"], check=True,
                   capture_output=True, timeout=120)
    assert path.stat().st_size > 0
    return path


def _setup(db_dsn: str, tmp_path: Path) -> tuple[Lake, SparkSubmitEngine, Path, str]:
    """A lake, an engine whose archives go under tmp_path/cds, and the key of table t's job."""
    lake = Lake(db_dsn, tmp_path / "lake")
    cds = tmp_path / "cds"
    engine = SparkSubmitEngine(spark_settings(), cds_dir=cds)
    key = engine.cds_key(lake.job("t"))
    assert key is not None
    return lake, engine, cds, key


def test_a_first_job_dumps_the_archive_and_the_next_job_maps_it(db_dsn: str,
                                                                 tmp_path: Path) -> None:
    lake, engine, cds, key = _setup(db_dsn, tmp_path)

    _run(engine, lake, "t", tmp_path / "w1")
    archive = cds / f"{key}.jsa"
    assert stat.S_IMODE(os.stat(cds).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(archive).st_mode) == 0o400 and archive.stat().st_size > 0
    assert {p.name for p in cds.iterdir()} == {f"{key}.json", f"{key}.jsa"}

    _run(engine, lake, "u", tmp_path / "w2")
    assert ArchiveCache(cds).lease(key).using == archive  # kept, still sound


def test_an_archive_that_crashes_the_jvm_is_dropped_and_the_job_still_runs(
        db_dsn: str, tmp_path: Path) -> None:
    # JDK 17 dies at start (SIGBUS) on a truncated archive; here its record was written
    # after the damage, so only the engine's fallback stands between it and the job
    lake, engine, cds, key = _setup(db_dsn, tmp_path)
    foreign = _foreign_archive(tmp_path)
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(foreign.read_bytes()[: foreign.stat().st_size // 2])
    os.makedirs(cds, mode=0o700)
    ArchiveCache(cds).install(key, truncated)
    assert ArchiveCache(cds).lease(key).using is not None  # it would be mapped

    _run(engine, lake, "t", tmp_path / "w")
    assert not (cds / f"{key}.jsa").exists()


def test_an_archive_of_another_class_path_is_ignored_by_the_jvm(db_dsn: str,
                                                                tmp_path: Path) -> None:
    lake, engine, cds, key = _setup(db_dsn, tmp_path)
    os.makedirs(cds, mode=0o700)
    ArchiveCache(cds).install(key, _foreign_archive(tmp_path))

    _run(engine, lake, "t", tmp_path / "w")
    assert (cds / f"{key}.jsa").exists()  # not a crash: the JVM mapped nothing of it
