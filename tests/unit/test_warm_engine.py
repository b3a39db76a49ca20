"""The warm engine without Spark: protocol parsing, catalog conflicts, the failure cooldown
with a fake clock, result mapping, and the engine's process handling against a stand-in driver
(a small Python script speaking the same line protocol). tests/integration/test_warm_engine.py
runs the real driver."""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.fakes import FakeEngine, make_table
from tms.domain import JobSpec
from tms.engines.base import EngineResult
from tms.engines.profiles import ENGINE_COLD, ENGINE_WARM, EngineRouter, QueueProfile
from tms.engines.spark_submit import result_from_payload
from tms.engines.warm import (
    MAX_CONSECUTIVE_FAILURES,
    WARM_DRIVER_CONF,
    CatalogRegistry,
    DriverHealth,
    WarmSparkEngine,
    catalog_of,
    driver_launch,
)
from tms.engines.warm_process import encode_request, group_members, parse_message, read_log_since
from tms.jobs import ICEBERG_MAINTENANCE_APP, iceberg_maintenance, warm_driver
from tms.jobs.spark_progress import ENV_PROGRESS_INTERVAL_S, PROGRESS_INTERVAL_S
from tms.spark.job_package import job_zip
from tms.spark.settings import SparkSettings

# Speaks the driver protocol; the spec's "behave" picks what a request does. Like the real
# driver, it keeps a child (standing in for the JVM) in its process group.
STAND_IN_DRIVER = r'''
import json, os, pathlib, subprocess, sys, time
mode = os.environ.get("STAND_IN_MODE", "ok")
out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
if mode == "fatal":
    out.write(json.dumps({"fatal": "no JVM today"}) + "\n")
    sys.exit(1)
jvm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
out.write(json.dumps({"ready": True, "spark_app_id": f"local-{os.getpid()}"}) + "\n")
print("stray print goes to the log")
for line in sys.stdin:
    req = json.loads(line)
    spec = req["spec"]
    behave = spec.get("behave", "ok")
    print(f"request {req['id']}: {behave}", file=sys.stderr, flush=True)
    if behave == "sleep":
        time.sleep(600)
    if behave == "die":
        os._exit(9)
    if behave == "progress":  # a sample for another request first: the engine must skip it
        for n in (req["id"] + 100, req["id"]):
            stage = {"id": n, "name": "rewrite", "tasks": 4, "completed": 1, "active": 2,
                     "failed": 0}
            out.write(json.dumps({"id": n, "progress": {"stages": [stage],
                                                        "sampled_at": "now"}}) + "\n")
    payload = {"ok": True, "action": spec["action"], "spark_app_id": f"local-{os.getpid()}",
               "result": {"pid": os.getpid(), "table": spec["table"]}}
    if behave == "scan":  # while the request runs: is the secret anywhere on disk?
        secret = spec["catalog_properties"]["token"].encode()
        found = [str(p) for p in pathlib.Path(spec["scan_root"]).rglob("*")
                 if p.is_file() and secret in p.read_bytes()]
        payload["result"].update(found=found, resolved=bool(secret))
    if behave == "missing":
        payload = {"ok": False, "error_type": "AnalysisException", "retryable": False,
                   "error": "[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found."}
    with open(req["result"], "w") as f:
        json.dump(payload, f)
    out.write(json.dumps({"id": req["id"], "done": True}) + "\n")
jvm.kill()
'''


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def job(table: str = "ns.t", behave: str = "ok", catalog: str = "cat",
        props: dict[str, str] | None = None) -> JobSpec:
    return JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), {
        "catalog_name": catalog, "catalog_properties": props or {"uri": "jdbc:a"},
        "table": table, "action": "compaction", "options": {}, "behave": behave})


class StandIn:
    """A warm engine whose driver is the stand-in script; ``mode`` applies to the next start."""

    def __init__(self, tmp_path: Path, clock: FakeClock | None = None) -> None:
        self.script = tmp_path / "stand_in_driver.py"
        self.script.write_text(STAND_IN_DRIVER)
        self.mode = "ok"
        self.starts = 0
        self.fallback = FakeEngine(EngineResult(True, {"cold": True}, None, "", 0, "cold-1"))
        self.engine = WarmSparkEngine(SparkSettings(), self.fallback, tmp_path / "warm",
                                      clock=clock or FakeClock(), launch=self._launch)
        self.tmp_path = tmp_path
        self.handles: list[str] = []
        self.runs = 0

    def _launch(self) -> tuple[list[str], dict[str, str]]:
        self.starts += 1
        return [sys.executable, str(self.script)], {**os.environ, "STAND_IN_MODE": self.mode}

    def run(self, j: JobSpec, stop: threading.Event | None = None,
            on_progress: Callable[[dict[str, Any]], None] | None = None) -> EngineResult:
        self.runs += 1
        return self.engine.run(j, self.tmp_path / f"op{self.runs}", stop or threading.Event(),
                               self.handles.append, on_progress)


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[StandIn]:
    s = StandIn(tmp_path)
    yield s
    s.engine.close()


# --- protocol ----------------------------------------------------------------------------------

def test_request_lines_round_trip_and_bad_ones_are_named() -> None:
    spec = {"action": "compaction", "table": ["ns", "t"],
            "catalog_properties": {"s3.secret-access-key": "SECRET-in-the-pipe-only"}}
    line = encode_request(7, spec, Path("/w/result.json")).decode()
    assert warm_driver.parse_request(line) == (7, spec, Path("/w/result.json"))
    # what the driver logs of a request: action and table, never the catalog's secrets
    assert warm_driver.describe_request(spec) == "compaction on ns.t"
    for bad, why in [("{", "not JSON"), ("[1]", "object"), ('{"id": "1", "spec": {}, '
                     '"result": "r"}', "'id'"), ('{"id": true, "spec": {}, "result": "r"}',
                     "'id'"), ('{"id": 1, "spec": "/w/spec.json", "result": "r"}',
                     "'spec' must be a JSON object"),
                     ('{"id": 1, "spec": {}, "result": ""}', "'result'")]:
        with pytest.raises(warm_driver.RequestError, match=why):
            warm_driver.parse_request(bad)


def test_only_json_objects_are_messages() -> None:
    assert parse_message(b'{"id": 3, "done": true}\n') == {"id": 3, "done": True}
    assert parse_message(b"Setting default log level\n") is None
    assert parse_message(b"[1, 2]\n") is None


def test_catalog_name_reused_with_other_properties_conflicts() -> None:
    registry = CatalogRegistry()
    registry.add("cat", {"uri": "jdbc:a"})
    assert not registry.conflicts("cat", {"uri": "jdbc:a"})
    assert registry.conflicts("cat", {"uri": "jdbc:b"})
    assert not registry.conflicts("other", {"uri": "jdbc:b"})
    registry.clear()
    assert not registry.conflicts("cat", {"uri": "jdbc:b"})
    assert catalog_of({"catalog_name": "c", "catalog_properties": {"n": 1}}) == ("c", {"n": "1"})
    assert catalog_of({"catalog_name": 3}) is None


def test_driver_refuses_a_catalog_name_with_other_properties() -> None:
    class Conf:
        def __init__(self) -> None:
            self.values: dict[str, str] = {}

        def set(self, key: str, value: str) -> None:
            self.values[key] = value

    class Session:
        conf = Conf()

    def spec(warehouse: str) -> iceberg_maintenance.MaintenanceRequest:
        return iceberg_maintenance.parse_spec({"catalog_name": "cat", "table": "ns.t",
                                               "allowed_locations": ["/wh"],
                                               "action": "compaction",
                                               "catalog_properties": {"warehouse": warehouse}})

    spark, registered = Session(), {}  # type: ignore[var-annotated]
    warm_driver.register_catalog(spark, spec("file:///w"), registered)
    assert spark.conf.values == {
        "spark.sql.catalog.cat": iceberg_maintenance.SPARK_CATALOG_CLASS,
        "spark.sql.catalog.cat.warehouse": "file:///w",
        "spark.sql.catalog.cat.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO"}
    warm_driver.register_catalog(spark, spec("file:///w"), registered)  # known: nothing to do
    other = spec("file:///x")
    with pytest.raises(RuntimeError, match="other properties"):
        warm_driver.register_catalog(spark, other, registered)


S3_A = {"warehouse": "s3a://lake/wh", "s3.endpoint": "http://127.0.0.1:9001",
        "s3.access-key-id": "key-a", "s3.secret-access-key": "secret-a"}


def test_a_driver_serves_one_storage_identity() -> None:
    """Hadoop caches an object-store file system per scheme, bucket and user: two catalogs
    reaching a bucket of the same name through another endpoint or other keys must never
    share one driver (the engine restarts it; the driver itself refuses)."""
    registry = CatalogRegistry()
    registry.add("a", S3_A)
    assert not registry.conflicts("a2", {**S3_A, "uri": "jdbc:other"})  # same store
    for change in ({"s3.endpoint": "http://127.0.0.1:9002"}, {"s3.access-key-id": "key-b"},
                   {"s3.secret-access-key": "secret-b"}, {"s3.region": "eu-west-1"},
                   {"fs.s3a.connection.maximum": "5"}):
        assert registry.conflicts("b", {**S3_A, **change}), change
    assert registry.conflicts("local", {"warehouse": "file:///w"})

    class Conf:
        def __init__(self) -> None:
            self.values: dict[str, str] = {}

        def set(self, key: str, value: str) -> None:
            self.values[key] = value

    class Session:
        conf = Conf()

    def spec(name: str, props: dict[str, str]) -> iceberg_maintenance.MaintenanceRequest:
        return iceberg_maintenance.parse_spec({
            "catalog_name": name, "table": "ns.t", "allowed_locations": ["s3a://lake"],
            "action": "compaction", "catalog_properties": props})

    spark, registered = Session(), {}  # type: ignore[var-annotated]
    warm_driver.register_catalog(spark, spec("a", S3_A), registered)
    warm_driver.register_catalog(spark, spec("a2", {**S3_A, "uri": "jdbc:x"}), registered)
    with pytest.raises(RuntimeError, match="another endpoint or other credentials"):
        warm_driver.register_catalog(
            spark, spec("b", {**S3_A, "s3.endpoint": "http://127.0.0.1:9002"}), registered)
    assert "spark.sql.catalog.b" not in spark.conf.values and set(registered) == {"a", "a2"}


class StoppedSession:
    """Just enough of a SparkSession for the serve loop's paths that never reach Spark."""

    def __init__(self, stopped: bool) -> None:
        context = SimpleNamespace(isStopped=lambda: stopped)
        self.sparkContext = SimpleNamespace(setJobGroup=lambda *a: None,
                                            _jsc=SimpleNamespace(sc=lambda: context))
        self.catalog = SimpleNamespace(clearCache=lambda: None)


def test_driver_answers_bad_requests_and_bad_specs_and_keeps_serving(tmp_path: Path) -> None:
    spec, result = {"catalog_name": "c", "table": "ns.t",
                    "allowed_locations": ["/wh"], "action": "vacuum"}, \
        tmp_path / "result.json"
    sent: list[dict[str, object]] = []
    lines = ["not json\n", "\n", encode_request(4, spec, result).decode()]
    assert warm_driver.serve(StoppedSession(False), lines, sent.append) == warm_driver.EXIT_OK
    assert sent[0]["error"] and sent[1:] == [{"id": 4, "done": True}]
    payload = json.loads(result.read_text())
    assert payload["error_type"] == "SpecError" and payload["retryable"] is False


def test_driver_whose_session_is_gone_exits_without_answering(tmp_path: Path) -> None:
    sent: list[dict[str, object]] = []
    lines = [encode_request(1, {"action": "compaction"}, tmp_path / "result.json").decode()]
    status = warm_driver.serve(StoppedSession(True), lines, sent.append)
    assert status == warm_driver.EXIT_SESSION_LOST and sent == []
    assert not (tmp_path / "result.json").exists()  # the engine reruns the job elsewhere


def test_cooldown_after_consecutive_failures_uses_the_clock() -> None:
    clock = FakeClock()
    health = DriverHealth(clock, max_failures=3, cooldown_s=300)
    health.failed()
    health.failed()
    health.succeeded()  # a success resets the count
    health.failed()
    health.failed()
    assert health.usable()
    health.failed()
    assert not health.usable()
    clock.now += 299
    assert not health.usable()
    clock.now += 1
    assert health.usable() and health.failures == 0


def test_log_slice_is_this_operations_part_bounded_at_a_line(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    path.write_bytes(b"earlier operation\n")
    start = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"".join(f"line {i}\n".encode() for i in range(100)))
    assert read_log_since(path, start, 1 << 20).startswith("line 0\n")
    tail = read_log_since(path, start, 30)
    assert tail.endswith("line 99\n") and len(tail) <= 30 and tail.startswith("line")
    path.write_bytes(b"after truncation\n")  # the engine empties an oversized log
    assert read_log_since(path, start, 1 << 20) == "after truncation\n"
    assert read_log_since(tmp_path / "none.log", 0, 10) == ""


# --- result mapping and retryable --------------------------------------------------------------

def test_retryable_passes_through_and_defaults_to_true() -> None:
    def missing() -> str:
        return "no result"

    failed = {"ok": False, "error_type": "AnalysisException", "error": "gone", "retryable": False}
    res = result_from_payload(failed, "", 1, "app", missing)
    assert (res.succeeded, res.error, res.retryable) == (False, "AnalysisException: gone", False)
    assert result_from_payload({"ok": False, "error": "x"}, "", 1, None, missing).retryable
    assert result_from_payload(None, "", 1, None, missing).error == "no result"
    ok = result_from_payload({"ok": True, "result": {"n": 1}, "spark_app_id": "local-9"}, "", 0,
                             "other", missing)
    assert (ok.succeeded, ok.result, ok.handle) == (True, {"n": 1}, "local-9")


@pytest.mark.parametrize("exc, retryable", [
    (iceberg_maintenance.SpecError("bad option"), False),
    (Exception("[TABLE_OR_VIEW_NOT_FOUND] The table or view `c`.`ns`.`t` cannot be found."),
     False),
    (Exception("Table or view not found: c.ns.t"), False),
    (Exception("org.apache.iceberg.exceptions.NoSuchTableException: Table does not exist"),
     False),
    (Exception("Commit failed: CommitFailedException"), True),
    (ConnectionError("catalog unreachable"), True),
])
def test_failures_say_whether_a_retry_can_help(exc: Exception, retryable: bool) -> None:
    payload = iceberg_maintenance.failure_payload(exc)
    assert payload["ok"] is False and payload["retryable"] is retryable


def test_not_found_exception_class_is_not_retryable() -> None:
    class NoSuchTableException(Exception):
        pass

    assert iceberg_maintenance.failure_payload(NoSuchTableException("t"))["retryable"] is False


def test_bad_spec_result_file_is_not_retryable(tmp_path: Path) -> None:
    spec, result = tmp_path / "spec.json", tmp_path / "result.json"
    spec.write_text(json.dumps({"catalog_name": "c", "table": "ns.t",
                                "allowed_locations": ["/wh"], "action": "vacuum"}))
    assert iceberg_maintenance.main(["--spec", str(spec), "--result", str(result)]) == 1
    payload = json.loads(result.read_text())
    assert payload["error_type"] == "SpecError" and payload["retryable"] is False


# --- routing and launch ------------------------------------------------------------------------

def test_launch_hands_spark_submit_options_to_pyspark() -> None:
    settings = SparkSettings(conf={"spark.x": "a b"})
    argv, env = driver_launch(settings)
    assert argv[1].endswith("warm_driver.py") and argv[0] == env["PYSPARK_DRIVER_PYTHON"]
    package = str(job_zip())  # the job's package: for the executors, and first on the path
    submit = settings.submit_argv(argv[1], [], py_files=[package], extra_conf=WARM_DRIVER_CONF)
    assert shlex.split(env["PYSPARK_SUBMIT_ARGS"]) == [*submit[1:-1], "pyspark-shell"]
    assert env["PYTHONPATH"].split(os.pathsep)[0] == package
    assert "PYSPARK_GATEWAY_PORT" not in env
    assert env[ENV_PROGRESS_INTERVAL_S] == str(PROGRESS_INTERVAL_S)
    assert driver_launch(settings, 0.25)[1][ENV_PROGRESS_INTERVAL_S] == "0.25"


def test_warm_driver_has_no_console_progress_bar_unless_the_operator_wants_one() -> None:
    args = shlex.split(driver_launch(SparkSettings())[1]["PYSPARK_SUBMIT_ARGS"])
    assert "spark.ui.showConsoleProgress=false" in args
    mine = SparkSettings(conf={"spark.ui.showConsoleProgress": "true"})
    args = shlex.split(driver_launch(mine)[1]["PYSPARK_SUBMIT_ARGS"])
    assert "spark.ui.showConsoleProgress=true" in args
    assert "spark.ui.showConsoleProgress=false" not in args


@pytest.mark.parametrize("j, settings", [
    (JobSpec("pyspark", "/elsewhere/other_job.py", {}), SparkSettings()),
    (JobSpec("jvm", "org.apache.hudi.utilities.HoodieCleaner"), SparkSettings()),
    (job(), SparkSettings(master="yarn", deploy_mode="cluster")),  # no stdin in cluster mode
], ids=["other-app", "jvm", "cluster-mode"])
def test_other_jobs_go_to_the_fallback(tmp_path: Path, j: JobSpec, settings: SparkSettings
                                       ) -> None:
    fallback = FakeEngine()
    engine = WarmSparkEngine(settings, fallback, tmp_path, launch=lambda: pytest.fail("start"))
    res = engine.run(j, tmp_path / "op", threading.Event(), lambda h: None)
    assert res.succeeded and fallback.jobs == [j] and engine.driver is None


# --- the engine against the stand-in driver ------------------------------------------------------

def test_jobs_share_one_driver(stand_in: StandIn) -> None:
    results = [stand_in.run(job(t)) for t in ("ns.a", "ns.b", "ns.a")]
    assert all(r.succeeded for r in results) and stand_in.starts == 1
    assert {r.result["pid"] for r in results if r.result} == {stand_in.engine.driver.pid}  # type: ignore[union-attr]
    assert [r.result["table"] for r in results if r.result] == ["ns.a", "ns.b", "ns.a"]
    assert stand_in.handles == [results[0].handle] * 3 and results[0].exit_code == 0
    assert "request 2: ok" in results[1].log_tail and "request 1" not in results[1].log_tail
    assert stand_in.fallback.jobs == []


def test_stop_kills_the_driver_group_and_the_next_job_starts_afresh(stand_in: StandIn) -> None:
    first = stand_in.run(job())
    driver = stand_in.engine.driver
    assert first.succeeded and driver is not None and driver.pid is not None
    assert len(group_members(driver.pid)) >= 2  # the stand-in and its "JVM"
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    t0 = time.monotonic()
    res = stand_in.run(job(behave="sleep"), stop)
    assert res.stopped and not res.succeeded and time.monotonic() - t0 < 10
    assert group_members(driver.pid) == [] and stand_in.engine.driver is None
    assert stand_in.run(job()).succeeded and stand_in.starts == 2


def test_a_driver_dying_mid_operation_hands_the_job_to_the_fallback(stand_in: StandIn) -> None:
    res = stand_in.run(job(behave="die"))
    assert res.result == {"cold": True} and len(stand_in.fallback.jobs) == 1
    assert stand_in.engine.driver is None
    after = stand_in.run(job())
    assert after.succeeded and after.result and "pid" in after.result and stand_in.starts == 2


def test_a_driver_killed_between_jobs_is_restarted(stand_in: StandIn) -> None:
    assert stand_in.run(job()).succeeded
    driver = stand_in.engine.driver
    assert driver is not None and driver.proc is not None
    driver.proc.kill()
    driver.proc.wait()
    res = stand_in.run(job())
    assert res.succeeded and stand_in.starts == 2 and stand_in.fallback.jobs == []


def test_start_failures_open_a_cooldown(tmp_path: Path) -> None:
    clock = FakeClock()
    s = StandIn(tmp_path, clock)
    s.mode = "fatal"
    for i in range(MAX_CONSECUTIVE_FAILURES):
        assert s.run(job()).result == {"cold": True}
        assert s.starts == i + 1
    assert s.run(job()).result == {"cold": True} and s.starts == MAX_CONSECUTIVE_FAILURES
    s.mode = "ok"
    clock.now += s.engine.health.cooldown_s
    res = s.run(job())
    assert res.succeeded and res.result and "pid" in res.result
    assert s.starts == MAX_CONSECUTIVE_FAILURES + 1
    s.engine.close()


def test_catalog_name_with_other_properties_restarts_the_driver(stand_in: StandIn) -> None:
    a = stand_in.run(job(props={"uri": "jdbc:a"}))
    same = stand_in.run(job(table="ns.other", props={"uri": "jdbc:a"}))
    other_catalog = stand_in.run(job(catalog="second", props={"uri": "jdbc:b"}))
    assert a.result and same.result and other_catalog.result
    assert a.result["pid"] == same.result["pid"] == other_catalog.result["pid"]
    b = stand_in.run(job(props={"uri": "jdbc:b"}))
    assert b.succeeded and b.result and b.result["pid"] != a.result["pid"]
    assert stand_in.starts == 2


def test_resolved_secrets_reach_the_driver_through_the_pipe_never_the_disk(
        stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "SECRET-warm-spec-9d41"
    monkeypatch.setenv("TMS_SECRET_REST", secret)
    j = job(behave="scan")
    j = JobSpec(j.kind, j.app, {**j.spec, "catalog_secrets": {"token": "env:TMS_SECRET_REST"},
                                "scan_root": str(stand_in.tmp_path)})
    res = stand_in.run(j)
    assert res.succeeded, res.error
    # the driver had the value while it ran, and no file under the engine's and the jobs'
    # directories held it at that moment (the driver's log included)
    assert res.result == {"pid": res.result["pid"], "table": "ns.t", "found": [],
                          "resolved": True}
    on_disk = [p for p in stand_in.tmp_path.rglob("*")
               if p.is_file() and secret.encode() in p.read_bytes()]
    assert on_disk == []


def test_missing_table_is_mapped_like_spark_submit(stand_in: StandIn) -> None:
    res = stand_in.run(job(behave="missing"))
    assert not res.succeeded and not res.retryable and res.exit_code == 1
    assert res.error == "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table cannot be found."
    assert res.handle and stand_in.engine.driver is not None  # the driver stays up


def test_close_ends_the_driver_and_its_group(stand_in: StandIn) -> None:
    assert stand_in.run(job()).succeeded
    driver = stand_in.engine.driver
    assert driver is not None and driver.pid is not None
    stand_in.engine.close()
    assert stand_in.engine.driver is None and group_members(driver.pid) == []
    assert driver.proc is not None and driver.proc.returncode == 0  # it saw EOF and exited


def test_router_close_stops_the_warm_driver_through_engine_close(stand_in: StandIn) -> None:
    router = EngineRouter(QueueProfile(ENGINE_WARM, SparkSettings()), {},
                          {ENGINE_WARM: lambda s: stand_in.engine,
                           ENGINE_COLD: lambda s: pytest.fail("no cold engine is needed")})
    engine = router.engine_for(make_table())
    assert engine is stand_in.engine and stand_in.run(job()).succeeded
    driver = stand_in.engine.driver
    assert driver is not None and driver.pid is not None and group_members(driver.pid)
    router.close()
    assert stand_in.engine.driver is None and group_members(driver.pid) == []
    assert driver.proc is not None and driver.proc.returncode == 0  # EOF, then a clean exit
    assert stand_in.fallback.closes == 1  # the warm engine closes its fallback too
    stand_in.engine.close()  # idempotent: nothing left to stop
    assert stand_in.fallback.closes == 2 and stand_in.starts == 1


def test_progress_of_this_request_reaches_the_callback(stand_in: StandIn) -> None:
    seen: list[dict[str, Any]] = []
    res = stand_in.run(job(behave="progress"), on_progress=seen.append)
    assert res.succeeded
    assert [(p["stages"][0]["id"], p["stages"][0]["tasks"]) for p in seen] == [(1, 4)]

    def failing(progress: dict[str, Any]) -> None:
        raise ConnectionError("database unreachable")

    assert stand_in.run(job(behave="progress"), on_progress=failing).succeeded
    assert stand_in.starts == 1  # a failing callback neither fails the job nor the driver


def test_a_job_stopped_before_it_runs_leaves_the_driver_alone(stand_in: StandIn) -> None:
    assert stand_in.run(job()).succeeded
    stop = threading.Event()
    stop.set()
    res = stand_in.run(job(), stop)
    assert res.stopped and stand_in.engine.driver is not None and stand_in.starts == 1
