"""The cold driver's class-data archives (tms.engines.cold_cds): keyed by the jar set, private,
used only when sound, dumped by one job at a time, dropped when they break the JVM."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from tms.domain import JobSpec
from tms.engines import cold_cds, cold_jvm, spark_submit
from tms.engines.cold_cds import ArchiveCache
from tms.engines.spark_submit import SparkSubmitEngine
from tms.spark.settings import SparkSettings

KEY = "k" * 32


def _jars(tmp_path: Path) -> tuple[Path, Path, Path]:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java")
    spark = tmp_path / "spark-jars"
    spark.mkdir()
    (spark / "spark-core.jar").write_bytes(b"core")
    extra = tmp_path / "iceberg.jar"
    extra.write_bytes(b"iceberg")
    return java, spark, extra


def _dumped(cache: ArchiveCache) -> cold_cds.Lease:
    """A lease that dumps, and the JVM's dump as it would leave it."""
    lease = cache.lease(KEY)
    assert lease.dumping is not None
    lease.dumping.write_bytes(b"archive" * 100)
    return lease


def test_the_key_follows_the_jar_set_and_nothing_else(tmp_path: Path) -> None:
    java, spark, extra = _jars(tmp_path)
    key = cold_cds.archive_key(java, [spark, extra])
    assert key == cold_cds.archive_key(java, [spark, extra])
    assert key != cold_cds.archive_key(java, [spark])  # another jar set
    extra.write_bytes(b"iceberg, another release")
    assert key != cold_cds.archive_key(java, [spark, extra])  # a changed jar
    changed = cold_cds.archive_key(java, [spark, extra])
    (spark / "spark-sql.jar").write_bytes(b"sql")
    assert changed != cold_cds.archive_key(java, [spark, extra])  # a jar added to Spark's


def test_a_first_job_dumps_into_a_private_directory_and_its_archive_is_then_used(
        tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "state" / "cds")
    lease = _dumped(cache)
    assert lease.java_options == (f"-XX:ArchiveClassesAtExit={lease.dumping}",)
    assert lease.dumping is not None and lease.dumping.parent == cache.directory
    assert stat.S_IMODE(os.stat(cache.directory).st_mode) == 0o700
    assert cache.lease(KEY).java_options == ()  # another job meanwhile: the lock is held
    lease.finish(succeeded=True)

    archive = cache.directory / f"{KEY}.jsa"
    assert stat.S_IMODE(os.stat(archive).st_mode) == 0o400
    assert not lease.dumping.exists() and not (cache.directory / f"{KEY}.lock").exists()
    using = cache.lease(KEY)
    assert using.java_options == (f"-XX:SharedArchiveFile={archive}",)
    assert using.using == archive and using.dumping is None


def test_a_failed_dumping_job_keeps_nothing(tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "cds")
    lease = _dumped(cache)
    lease.finish(succeeded=False)
    assert sorted(p.name for p in cache.directory.iterdir()) == []
    assert cache.lease(KEY).dumping is not None  # the next job dumps again


def _installed(tmp_path: Path) -> tuple[ArchiveCache, Path]:
    cache = ArchiveCache(tmp_path / "cds")
    _dumped(cache).finish(succeeded=True)
    return cache, cache.directory / f"{KEY}.jsa"


def test_a_truncated_archive_is_not_used(tmp_path: Path) -> None:
    # JDK 17 crashes at start on a truncated archive (SIGBUS): its record no longer matches
    cache, archive = _installed(tmp_path)
    os.chmod(archive, 0o600)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    os.chmod(archive, 0o400)
    lease = cache.lease(KEY)
    assert lease.using is None and lease.dumping is not None  # dumped again, not mapped


def test_an_archive_without_its_record_others_can_write_or_a_symlink_is_not_used(
        tmp_path: Path) -> None:
    cache, archive = _installed(tmp_path)
    (cache.directory / f"{KEY}.json").unlink()
    assert cache.lease(KEY).using is None

    cache, archive = _installed(tmp_path / "b")
    os.chmod(archive, 0o620)
    assert cache.lease(KEY).using is None

    cache, archive = _installed(tmp_path / "c")
    elsewhere = tmp_path / "elsewhere.jsa"
    archive.rename(elsewhere)
    archive.symlink_to(elsewhere)
    assert cache.lease(KEY).using is None


def test_a_dead_dumpers_lock_expires(tmp_path: Path) -> None:
    now = [1_000_000.0]
    cache = ArchiveCache(tmp_path / "cds", clock=lambda: now[0])
    dead = cache.lease(KEY)  # its executor is killed: finish never runs
    assert dead.lock is not None
    os.utime(dead.lock, (now[0], now[0]))
    assert cache.lease(KEY).java_options == ()
    now[0] += cold_cds.DUMP_LOCK_STALE_S + 1
    assert cache.lease(KEY).dumping is not None


def test_an_unusable_directory_costs_only_the_speed_up(tmp_path: Path) -> None:
    (tmp_path / "cds").write_text("a file where the directory should be")
    lease = ArchiveCache(tmp_path / "cds").lease(KEY)
    assert lease.java_options == ()
    lease.finish(succeeded=True)  # and nothing to finish


def test_an_archive_that_crashed_the_jvm_before_spark_started_is_dropped(
        tmp_path: Path) -> None:
    cache, archive = _installed(tmp_path)
    lease = cache.lease(KEY)
    banner = f"#\n# {cold_cds.JVM_FATAL_MARKS[0]}:\n#  SIGBUS (0x7)\n"
    assert not lease.crashed_at_start(0, banner)
    assert not lease.crashed_at_start(1, "INFO SparkContext: Running Spark\n" + banner)
    assert not lease.crashed_at_start(1, "[tms-job] Py4JNetworkError: ...\n" + banner)
    assert archive.exists()  # Spark ran: the job's own failure, not the archive's
    assert lease.crashed_at_start(134, banner)
    assert not archive.exists() and not (cache.directory / f"{KEY}.json").exists()
    again = cache.lease(KEY)  # the jar set gets no archive again: no dump, crash, dump loop
    assert again.java_options == () and not again.crashed_at_start(134, banner)


def test_a_jdk_that_cannot_dump_gets_no_archive_again(tmp_path: Path) -> None:
    # dumping needs the JDK's base archive; without it the JVM refuses to start (exit 1)
    cache = ArchiveCache(tmp_path / "cds")
    lease = cache.lease(KEY)
    assert lease.dumping is not None
    refusal = ("Error occurred during initialization of VM\n"
               "DynamicDumpSharedSpaces is unsupported when base CDS archive is not loaded\n")
    assert lease.crashed_at_start(1, refusal)
    lease.finish(succeeded=True)  # the job's second run, without the archive's options
    again = cache.lease(KEY)
    assert again.java_options == () and not (cache.directory / f"{KEY}.jsa").exists()


def _job() -> JobSpec:
    return JobSpec("pyspark", "/app.py", {"catalog_name": "c", "table": "n.t",
                                         "action": "compaction"})


def test_the_executor_keeps_archives_in_its_state_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spark_submit.ENV_CDS_DIR, raising=False)
    engine = SparkSubmitEngine.from_settings(SparkSettings(master="local[2]"), tmp_path)
    assert engine.cds is not None and engine.cds.directory == tmp_path / cold_cds.CDS_DIR_NAME
    lease = engine.lease(_job())
    assert lease is not None and lease.dumping is not None
    sub = engine.submission(_job(), tmp_path / "w", lease.java_options)
    option = (f"{cold_jvm.DRIVER_JAVA_OPTIONS}=-XX:TieredStopAtLevel=1 "
              f"-XX:ArchiveClassesAtExit={lease.dumping}")
    assert sub.argv[sub.argv.index(option) - 1] == "--conf"
    assert sub.env[cold_jvm.ENV_LAUNCHER_OPTS] == "-XX:TieredStopAtLevel=1"
    lease.finish(succeeded=False)


def test_the_archives_directory_may_be_shared_or_off(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    local = SparkSettings(master="local[2]")
    monkeypatch.setenv(spark_submit.ENV_CDS_DIR, str(tmp_path / "home" / "cds"))
    engine = SparkSubmitEngine.from_settings(local, tmp_path / "work" / "executor-1")
    assert engine.cds is not None and engine.cds.directory == tmp_path / "home" / "cds"
    monkeypatch.setenv(spark_submit.ENV_CDS_DIR, spark_submit.CDS_OFF)
    assert SparkSubmitEngine.from_settings(local, tmp_path).cds is None


def test_no_archive_where_the_operator_owns_the_jvm_options_or_without_a_cache(
        tmp_path: Path) -> None:
    theirs = SparkSettings(master="local[2]", conf={cold_jvm.DRIVER_JAVA_OPTIONS: "-Xss4m"})
    assert SparkSubmitEngine(theirs, cds_dir=tmp_path).lease(_job()) is None
    yarn = SparkSettings(master="yarn", deploy_mode="client")
    assert SparkSubmitEngine(yarn, cds_dir=tmp_path).lease(_job()) is None
    assert SparkSubmitEngine(SparkSettings(master="local[2]")).lease(_job()) is None
    hudi = JobSpec("jvm", "org.apache.hudi.Main")
    assert SparkSubmitEngine(SparkSettings(master="local[2]"), cds_dir=tmp_path).lease(
        hudi) is None
    assert not list(tmp_path.iterdir())


def test_no_archive_when_the_environment_carries_jvm_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = SparkSubmitEngine(SparkSettings(master="local[2]"), cds_dir=tmp_path)
    assert engine.cds_key(_job()) is not None
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:StartFlightRecording")
    assert engine.cds_key(_job()) is None and engine.lease(_job()) is None


def test_the_key_does_not_depend_on_what_a_table_owner_sets(tmp_path: Path) -> None:
    engine = SparkSubmitEngine(SparkSettings(master="local[2]"), cds_dir=tmp_path)
    owner = JobSpec("pyspark", "/app.py", {"catalog_name": "c", "table": "evil.t",
                                          "action": "compaction",
                                          "options": {"target-file-size-bytes": "1"}})
    assert engine.cds_key(owner) == engine.cds_key(_job())


def test_concurrent_jobs_dump_once(tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "cds")
    leases: list[cold_cds.Lease] = []
    threads = [threading.Thread(target=lambda: leases.append(cache.lease(KEY)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(lease.dumping is not None for lease in leases) == 1


def test_archives_unused_for_a_month_go_when_another_is_installed(tmp_path: Path) -> None:
    now = [time.time()]
    cache = ArchiveCache(tmp_path / "cds", clock=lambda: now[0])
    _dumped(cache).finish(succeeded=True)
    old = cache.directory / f"{KEY}.json"
    os.utime(old, (now[0], now[0]))
    now[0] += cold_cds.UNUSED_ARCHIVE_S + 1
    other = "o" * 32
    lease = cache.lease(other)
    assert lease.dumping is not None
    lease.dumping.write_bytes(b"another jar set's archive")
    lease.finish(succeeded=True)
    assert {p.name for p in cache.directory.iterdir()} == {f"{other}.json", f"{other}.jsa"}
