"""The warm engine with the real driver: real Spark, real Iceberg tables in a PostgreSQL JDBC
catalog (written by pyiceberg, as in test_spark_job.py), cold spark-submit as the fallback.

Each test starts its own driver (a JVM start plus a first, slower operation: 15-25 s here), so
tables are tiny and the tests do only what they must to show the behaviour.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_for
from tms.domain import JobSpec
from tms.engines.base import EngineResult, ExecutionEngine, ProgressCallback
from tms.engines.spark_submit import SparkSubmitEngine
from tms.engines.warm import WarmSparkEngine
from tms.engines.warm_process import group_members
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.local.iceberg_data import append_batches, create_table, sql_catalog_properties, stats
from tms.spark.provision import ICEBERG_RUNTIME_JAR
from tms.spark.settings import SparkSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

CATALOG_NAME = "tms_warm"
ROWS_PER_COMMIT = 20
GROUP_GONE_TIMEOUT_S = 30.0
CHILD_TIMEOUT_S = 180.0
PROGRESS_SAMPLE_S = 0.1  # the driver samples often, so even a short job is seen running

# An executor stand-in: runs one job through a warm engine, reports the driver's pid, then
# waits to be killed.
EXECUTOR_SCRIPT = """\
import json, sys, threading, time
from pathlib import Path
from tms.engines.warm import WarmSparkEngine
from tms.domain import JobSpec
from tms.spark.settings import SparkSettings

home, state, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
engine = WarmSparkEngine(SparkSettings.from_env(Path(home)), None, Path(state))
job = JobSpec("pyspark", spec.pop("app"), spec)
res = engine.run(job, Path(state) / "op", threading.Event(), lambda h: None)
print(json.dumps({"ok": res.succeeded, "pid": engine.driver.pid if engine.driver else None}),
      flush=True)
time.sleep(600)
"""


class CountingEngine:
    """The real cold engine, counting the jobs handed to it."""

    name = "counting"

    def __init__(self, inner: ExecutionEngine) -> None:
        self.inner, self.jobs = inner, 0

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None],
            on_progress: ProgressCallback | None = None) -> EngineResult:
        self.jobs += 1
        return self.inner.run(job, workdir, stop, on_handle, on_progress)

    def close(self) -> None:
        self.inner.close()


class Lake:
    """Iceberg tables in one PostgreSQL database, and jobs for them."""

    def __init__(self, dsn: str, warehouse: Path) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        warehouse.mkdir(parents=True)
        self.props = sql_catalog_properties(dsn, warehouse.as_uri())
        self.catalog = SqlCatalog(CATALOG_NAME, **self.props)
        self.namespace = f"it_{uuid.uuid4().hex[:8]}"

    def table(self, name: str, commits: int) -> Any:
        table = create_table(self.catalog, self.namespace, name)
        append_batches(table, commits, ROWS_PER_COMMIT)
        return table

    def job(self, name: str, action: str = "compaction",
            options: dict[str, str] | None = None) -> JobSpec:
        return JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), {
            "catalog_name": CATALOG_NAME, "catalog_properties": self.props,
            "table": f"{self.namespace}.{name}", "action": action,
            "options": options if options is not None else {"min-input-files": "2"},
            "allowed_locations": [self.props["warehouse"]]})


class Harness:
    def __init__(self, settings: SparkSettings, tmp_path: Path) -> None:
        self.fallback = CountingEngine(SparkSubmitEngine(settings))
        self.engine = WarmSparkEngine(settings, self.fallback, tmp_path / "warm",
                                      progress_interval_s=PROGRESS_SAMPLE_S)
        self.tmp_path = tmp_path
        self.handles: list[str] = []
        self.progress: list[dict[str, Any]] = []
        self.runs = 0

    def workdir(self) -> Path:
        self.runs += 1
        return self.tmp_path / f"op{self.runs}"

    def run(self, job: JobSpec, stop: threading.Event | None = None,
            workdir: Path | None = None) -> EngineResult:
        return self.engine.run(job, workdir or self.workdir(), stop or threading.Event(),
                               self.handles.append, self.progress.append)

    def driver_pid(self) -> int:
        driver = self.engine.driver
        assert driver is not None and driver.pid is not None
        return driver.pid


@pytest.fixture
def settings(tms_home: Path) -> SparkSettings:
    settings = SparkSettings.from_env(tms_home)
    assert any(Path(j).name == ICEBERG_RUNTIME_JAR for j in settings.jars) or settings.packages, (
        f"Iceberg runtime not provisioned in {tms_home}/jars; run scripts/setup")
    return settings


@pytest.fixture
def harness(settings: SparkSettings, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(settings, tmp_path)
    yield h
    driver = h.engine.driver
    h.engine.close()
    if driver is not None and driver.pid is not None:
        assert group_members(driver.pid) == [], "close() left driver processes behind"


@pytest.fixture
def lake(pg: Any, tmp_path: Path) -> Lake:
    return Lake(pg.dsn, tmp_path / "warehouse")


def _compacted(res: EngineResult, files_before: int) -> None:
    assert res.succeeded, f"{res.error}\n{res.log_tail[-3000:]}"
    assert res.result is not None
    assert res.result["rewritten_data_files_count"] == files_before
    assert res.result["added_data_files_count"] == 1


def test_operations_in_a_row_on_two_tables_share_one_driver(harness: Harness, lake: Lake
                                                            ) -> None:
    a, b = lake.table("a", commits=8), lake.table("b", commits=5)

    first = harness.run(lake.job("a"))
    _compacted(first, 8)
    pid, app_id = harness.driver_pid(), first.handle
    assert app_id and app_id.startswith("local-")
    manifests = harness.run(lake.job("b", "rewrite_manifests", {}))
    assert manifests.succeeded and manifests.result is not None
    outcome = manifests.result.pop("outcome")  # the warm driver measures what it did too
    assert outcome["changed_nothing"] is False and outcome["snapshots_added"] == 1
    fence = manifests.result.pop("fence")  # armed per job in the warm driver, on table b
    assert fence["state"] == "armed" and fence["refused"] == 0, fence
    assert fence["roots"] == [Path(b.location().removeprefix("file:").removeprefix("//"))
                              .resolve().as_uri()], fence
    assert manifests.result == {"rewritten_manifests_count": 5, "added_manifests_count": 1}
    append_batches(a, 4, ROWS_PER_COMMIT)  # new commits land between operations
    again = harness.run(lake.job("a"))
    _compacted(again, 5)  # the REFRESH saw the new files: the compacted one plus four
    _compacted(harness.run(lake.job("b")), 5)

    assert harness.driver_pid() == pid and harness.handles == [app_id] * 4
    assert {again.handle, manifests.handle} == {app_id} and harness.fallback.jobs == 0
    sa, sb = stats(a), stats(b)
    assert (sa["data_files"], sa["rows_scanned"]) == (1, 12 * ROWS_PER_COMMIT)
    assert (sb["data_files"], sb["rows_scanned"]) == (1, 5 * ROWS_PER_COMMIT)
    assert "request 3 started" in again.log_tail and "request 2 " not in again.log_tail


def test_the_driver_warms_its_data_path_up_before_it_serves(
        harness: Harness, lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMS_WARMUP_ROWS", "20000")  # off for the other tests (conftest)
    lake.table("t", commits=3)

    _compacted(harness.run(lake.job("t")), 3)  # its own catalog did not get in the way

    log = harness.engine.log_path.read_text()
    assert "warm-up done in" in log and "warm-up failed" not in log
    # files written as pyiceberg writes them, compacted the way a request's table is
    assert "warm-up: 20,000 rows in pyarrow-written files; files" in log and "JVM CPU" in log
    assert log.index("warm-up done in") < log.index("request 1 started")


def test_a_running_job_reports_its_spark_progress(harness: Harness, lake: Lake) -> None:
    lake.table("t", commits=6)

    _compacted(harness.run(lake.job("t")), 6)

    assert harness.progress, "no progress sample while the compaction ran"
    stages = [s for sample in harness.progress for s in sample["stages"]]
    assert stages and all(s["tasks"] >= 1 and 0 <= s["completed"] <= s["tasks"] for s in stages)
    assert all(isinstance(s["id"], int) and s["name"] for s in stages)
    assert all(sample["sampled_at"] for sample in harness.progress)
    json.dumps(harness.progress)  # stored as jsonb as it is


def test_stop_during_an_operation_kills_the_driver_group(harness: Harness, lake: Lake) -> None:
    table = lake.table("t", commits=6)
    stop, workdir = threading.Event(), harness.workdir()
    seen: dict[str, int] = {}

    log = harness.engine.log_path
    offset = log.stat().st_size if log.exists() else 0

    def stop_once_sent() -> None:  # the driver logs each request it starts
        wait_for(lambda: log.exists() and b" started: " in log.read_bytes()[offset:],
                 "the request", step_s=0.01)
        seen["pid"] = harness.driver_pid()
        seen["members"] = len(group_members(seen["pid"]))
        stop.set()

    stopper = threading.Thread(target=stop_once_sent, daemon=True)
    stopper.start()
    res = harness.run(lake.job("t"), stop, workdir)
    stopper.join(5)

    assert res.stopped and not res.succeeded and res.error == "stopped"
    assert seen["members"] >= 2  # the Python driver and its JVM, at least
    assert group_members(seen["pid"]) == [] and harness.engine.driver is None
    after = harness.run(lake.job("t"))  # a fresh driver
    assert after.succeeded, after.error
    assert harness.driver_pid() != seen["pid"]
    assert stats(table)["rows_scanned"] == 6 * ROWS_PER_COMMIT


def test_a_driver_killed_between_jobs_does_not_fail_the_next(harness: Harness, lake: Lake
                                                            ) -> None:
    lake.table("t", commits=4)
    _compacted(harness.run(lake.job("t")), 4)
    pid = harness.driver_pid()

    os.kill(pid, signal.SIGKILL)
    # Its JVM reads EOF on the stdin the driver held and exits too: nothing is orphaned.
    wait_for(lambda: group_members(pid) == [], "the killed driver's JVM to exit",
             timeout_s=GROUP_GONE_TIMEOUT_S)
    lake.table("u", commits=3)
    res = harness.run(lake.job("u"))

    _compacted(res, 3)
    assert harness.driver_pid() != pid or harness.fallback.jobs == 1


def test_a_catalog_name_with_other_properties_restarts_the_driver(
        harness: Harness, lake: Lake, pg: Any, tmp_path: Path) -> None:
    second = Lake(pg.server.create_database(f"second_{uuid.uuid4().hex[:8]}"),
                  tmp_path / "warehouse2")
    first_table, second_table = lake.table("t", commits=3), second.table("t", commits=4)
    assert lake.props != second.props

    _compacted(harness.run(lake.job("t")), 3)
    pid = harness.driver_pid()
    res = harness.run(second.job("t"))  # same catalog name, another database

    _compacted(res, 4)
    assert harness.driver_pid() != pid and group_members(pid) == []
    assert stats(second_table)["data_files"] == 1
    assert stats(first_table)["snapshots"] == 4  # three appends and the one compaction


def test_a_missing_table_fails_and_is_not_retryable(harness: Harness, lake: Lake) -> None:
    lake.table("present", commits=3)

    res = harness.run(lake.job("no_such_table"))

    assert not res.succeeded and res.retryable is False and res.exit_code == 1
    assert res.error and "no_such_table" in res.error and "NOT_FOUND" in res.error
    assert res.handle and "no_such_table" in res.log_tail
    pid = harness.driver_pid()  # the driver stays up for the next job
    _compacted(harness.run(lake.job("present")), 3)
    assert harness.driver_pid() == pid and harness.fallback.jobs == 0


def test_engine_closes_within_bounds(harness: Harness, lake: Lake) -> None:
    lake.table("t", commits=2)
    assert harness.run(lake.job("t")).succeeded
    pid = harness.driver_pid()
    t0 = time.monotonic()
    harness.engine.close()
    assert time.monotonic() - t0 < 30 and group_members(pid) == []


def test_kill_9_of_the_executor_takes_the_driver_down(lake: Lake, tms_home: Path,
                                                      tmp_path: Path) -> None:
    lake.table("t", commits=3)
    script = tmp_path / "executor.py"
    script.write_text(EXECUTOR_SCRIPT)
    spec = {**lake.job("t").spec, "app": str(ICEBERG_MAINTENANCE_APP)}
    child = subprocess.Popen([sys.executable, str(script), str(tms_home), str(tmp_path / "warm"),
                              json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = ""
        while not line.startswith('{"ok"'):  # structlog writes to stdout too
            line = child.stdout.readline()  # bounded by the test's timeout
            assert line, "the executor stand-in exited before it reported"
        report = json.loads(line)
        assert report["ok"] and report["pid"], line
        pid = report["pid"]
        assert len(group_members(pid)) >= 2

        child.kill()  # SIGKILL: no close(), no cleanup code runs in the "executor"
        child.wait(CHILD_TIMEOUT_S)

        wait_for(lambda: group_members(pid) == [], "the orphaned driver group to die",
                 timeout_s=GROUP_GONE_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
