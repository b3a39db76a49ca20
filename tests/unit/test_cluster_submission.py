"""YARN and Kubernetes submissions, exactly: full command lines, the private properties, the
submission ids, status and kill commands and how their outputs read; and the cluster-mode run
end to end against stand-in spark-submit and yarn commands (no cluster manager runs here)."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tms.domain import JobReport, JobSpec
from tms.engines import cluster_run
from tms.engines.spark_submit import SparkSubmitEngine
from tms.engines.submission import (
    PROPERTIES_FILE_NAME,
    SubmissionError,
    build,
    inline_secrets,
)
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.spark import cluster
from tms.spark.cluster import DriverState, Manager
from tms.spark.job_package import job_zip
from tms.spark.settings import SparkSettings, spark_submit_path

K8S = "k8s://https://10.0.0.1:6443"
SUBMIT = spark_submit_path()
APP = str(ICEBERG_MAINTENANCE_APP)
PY_FILES = str(job_zip())  # one zip: the job's package
TOKEN = "t" * 43
SPEC = {"catalog_name": "lake", "catalog_properties": {"type": "rest", "uri": "http://r"},
        "catalog_secrets": {"token": "env:TMS_SECRET_REST", "s3.secret-access-key": "file:s3"},
        "table": "ns.t", "action": "compaction"}
S3_IMPL = "spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem"  # no fence jar
ENV = {"PATH": "/bin", "TMS_SECRET_REST": "rest-token-value", "TMS_SECRET_OTHER": "other"}


def _job(spec: dict[str, Any] | None = None, reported: dict[str, Any] | None = None
         ) -> JobSpec:
    report = JobReport("tms-api.tms:50051", "tables/t/operations/7", 2, TOKEN,
                       fetch=lambda: reported)
    return JobSpec("pyspark", APP, dict(spec or SPEC), report=report)


def _spec_arg(argv: list[str]) -> dict[str, Any]:
    return json.loads(base64.b64decode(argv[argv.index("--spec-b64") + 1]))  # type: ignore[no-any-return]


def _k8s(**kw: Any) -> SparkSettings:
    return SparkSettings(master=K8S, deploy_mode="cluster", k8s_namespace="lake-jobs",
                         k8s_image="registry.example/tms:1.2", k8s_service_account="tms-spark",
                         k8s_secret="tms-catalog-secrets", **kw)


def test_kubernetes_cluster_mode_command_line_exactly(tmp_path: Path) -> None:
    driver_tpl, exec_tpl = tmp_path / "driver.yaml", tmp_path / "executor.yaml"
    driver_tpl.write_text("{}")
    exec_tpl.write_text("{}")
    settings = _k8s(k8s_driver_template=str(driver_tpl), k8s_executor_template=str(exec_tpl),
                    min_executors=1, max_executors=4, executor_cores=2)
    work = tmp_path / "op-7-attempt-2"
    sub = build(settings, _job(), work, ENV)
    assert sub.pod_name is not None
    assert sub.pod_name.startswith("tms-op-7-attempt-2-") and sub.pod_name.endswith("-driver")
    assert len(sub.pod_name) <= 63
    spec_b64 = sub.argv[sub.argv.index("--spec-b64") + 1]
    assert sub.argv == [
        SUBMIT, "--master", K8S, "--deploy-mode", "cluster", "--driver-memory", "1g",
        "--properties-file", str(work / PROPERTIES_FILE_NAME), "--executor-cores", "2",
        "--py-files", ",".join("local://" + f for f in PY_FILES.split(",")),
        "--conf", "spark.executor.memory=1g",
        "--conf", S3_IMPL,
        "--conf", "spark.dynamicAllocation.enabled=true",
        "--conf", "spark.dynamicAllocation.shuffleTracking.enabled=true",
        "--conf", "spark.dynamicAllocation.minExecutors=1",
        "--conf", "spark.dynamicAllocation.maxExecutors=4",
        "--conf", "spark.kubernetes.namespace=lake-jobs",
        "--conf", "spark.kubernetes.container.image=registry.example/tms:1.2",
        "--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=tms-spark",
        "--conf", f"spark.kubernetes.driver.podTemplateFile={driver_tpl}",
        "--conf", f"spark.kubernetes.executor.podTemplateFile={exec_tpl}",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf", "spark.kubernetes.driver.secrets.tms-catalog-secrets=/var/run/secrets/tms",
        "--conf", "spark.kubernetes.driverEnv.TMS_SECRET_DIR=/var/run/secrets/tms",
        "--conf", "spark.tms.attempt=op-7-attempt-2",
        "--conf", f"spark.kubernetes.driver.pod.name={sub.pod_name}",
        "--conf", "spark.kubernetes.driver.secretKeyRef.TMS_SECRET_REST="
                  "tms-catalog-secrets:TMS_SECRET_REST",
        "local://" + APP, "--spec-b64", spec_b64]
    assert _spec_arg(sub.argv) == {**SPEC, "report": {
        "target": "tms-api.tms:50051", "operation": "tables/t/operations/7", "attempt": 2}}
    # the token and no secret value: only in the private properties
    assert sub.properties == {"spark.kubernetes.driverEnv.TMS_JOB_TOKEN": TOKEN}
    assert not any(TOKEN in a or "rest-token-value" in a for a in sub.argv)
    assert not any(k.startswith("TMS_SECRET_") for k in sub.env)
    sid = cluster.submission_id(Manager.KUBERNETES, "lake-jobs", sub.pod_name, "")
    assert sid == f"lake-jobs:{sub.pod_name}"
    assert cluster.status_argv(Manager.KUBERNETES, SUBMIT, K8S, sid) == [
        SUBMIT, "--master", K8S, "--status", sid]
    assert cluster.kill_argv(Manager.KUBERNETES, SUBMIT, K8S, sid) == [
        SUBMIT, "--master", K8S, "--kill", sid]


def test_kubernetes_client_mode_runs_the_driver_in_the_executor(tmp_path: Path) -> None:
    settings = SparkSettings(master=K8S, k8s_image="registry.example/tms:1.2",
                             num_executors=3)
    sub = build(settings, _job(), tmp_path / "op-7-attempt-2", ENV)
    assert sub.argv[:-2] == [
        SUBMIT, "--master", K8S, "--deploy-mode", "client", "--driver-memory", "1g",
        "--num-executors", "3", "--py-files", PY_FILES,
        "--conf", "spark.executor.memory=1g",
        "--conf", S3_IMPL,
        "--conf", "spark.kubernetes.namespace=default",
        "--conf", "spark.kubernetes.container.image=registry.example/tms:1.2",
        "--conf", "spark.tms.attempt=op-7-attempt-2", APP]
    # the driver is the executor's child: referenced secrets and the token in its env only
    assert sub.env["TMS_SECRET_REST"] == "rest-token-value" and sub.env["TMS_JOB_TOKEN"] == TOKEN
    assert "TMS_SECRET_OTHER" not in sub.env and sub.properties == {}


def test_yarn_cluster_mode_command_line_exactly(tmp_path: Path) -> None:
    settings = SparkSettings(master="yarn", deploy_mode="cluster", yarn_queue="maintenance",
                             num_executors=2, executor_memory="2g", max_executors=8)
    spec = {**SPEC, "catalog_secrets": {"token": "env:TMS_SECRET_REST"}}
    work = tmp_path / "op-7-attempt-2"
    sub = build(settings, _job(spec), work, ENV)
    assert sub.argv == [
        SUBMIT, "--master", "yarn", "--deploy-mode", "cluster", "--driver-memory", "1g",
        "--properties-file", str(work / PROPERTIES_FILE_NAME), "--queue", "maintenance",
        "--num-executors", "2", "--py-files", PY_FILES,
        "--conf", "spark.executor.memory=2g", "--conf", S3_IMPL,
        "--conf", "spark.dynamicAllocation.enabled=true",
        "--conf", "spark.dynamicAllocation.shuffleTracking.enabled=true",
        "--conf", "spark.dynamicAllocation.maxExecutors=8",
        "--conf", "spark.yarn.submit.waitAppCompletion=false",
        "--conf", "spark.tms.attempt=op-7-attempt-2",
        APP, "--spec-b64", sub.argv[-1]]
    assert sub.pod_name is None
    assert sub.properties == {"spark.yarn.appMasterEnv.TMS_JOB_TOKEN": TOKEN,
                              "spark.yarn.appMasterEnv.TMS_SECRET_REST": "rest-token-value"}
    out = "INFO Client: Submitted application application_1700000000000_0042\n"
    sid = cluster.submission_id(Manager.YARN, "default", None, out)
    assert sid == "application_1700000000000_0042"
    assert cluster.status_argv(Manager.YARN, SUBMIT, "yarn", sid, "/opt/hadoop/bin/yarn") == [
        "/opt/hadoop/bin/yarn", "application", "-status", sid]
    assert cluster.kill_argv(Manager.YARN, SUBMIT, "yarn", sid) == [
        "yarn", "application", "-kill", sid]
    with pytest.raises(SubmissionError, match="file: secret references cannot reach"):
        build(settings, _job(), work, ENV)  # SPEC has a file: reference


def test_standalone_client_mode_caps_the_share(tmp_path: Path) -> None:
    settings = SparkSettings(master="spark://10.0.0.2:7077", cores_max=2, min_executors=0,
                             max_executors=2)
    sub = build(settings, _job(), tmp_path / "op-1-attempt-1", ENV)
    at = sub.argv.index("--conf")
    assert sub.argv[at:-3] == [
        "--conf", "spark.executor.memory=1g",
        "--conf", S3_IMPL, "--conf", "spark.cores.max=2",
        "--conf", "spark.dynamicAllocation.enabled=true",
        "--conf", "spark.dynamicAllocation.shuffleTracking.enabled=true",
        "--conf", "spark.dynamicAllocation.minExecutors=0",
        "--conf", "spark.dynamicAllocation.maxExecutors=2",
        "--conf", "spark.tms.attempt=op-1-attempt-1"]


@pytest.mark.parametrize(("kw", "message"), [
    (dict(master="spark://h:7077", deploy_mode="cluster"),
     "Python applications on standalone clusters in client mode only"),
    (dict(master="local[2]", deploy_mode="cluster"), "local master"),
    (dict(master=K8S), "TMS_SPARK_K8S_IMAGE: required"),
    (dict(master=K8S, k8s_image="i:1", k8s_namespace="Bad_NS"), "TMS_SPARK_K8S_NAMESPACE"),
    (dict(master=K8S, k8s_image="i:1 --conf x"), "TMS_SPARK_K8S_IMAGE"),
    (dict(master=K8S, k8s_image="i:1", k8s_driver_template="/no/such.yaml"),
     "TMS_SPARK_K8S_DRIVER_TEMPLATE"),
    (dict(master=K8S, k8s_image="i:1", k8s_secret_dir="/a/../etc"), "TMS_SPARK_K8S_SECRET_DIR"),
    (dict(master="yarn", cores_max=2), "TMS_SPARK_CORES_MAX: applies to standalone"),
    (dict(master="yarn", k8s_image="i:1"), "TMS_SPARK_K8S_IMAGE: applies to Kubernetes"),
    (dict(master="spark://h:7077", yarn_queue="q"), "TMS_SPARK_YARN_QUEUE: applies to YARN"),
    (dict(master="yarn", yarn_queue="q;rm"), "TMS_SPARK_YARN_QUEUE"),
    (dict(master="yarn", min_executors=3, max_executors=2), "TMS_SPARK_MIN_EXECUTORS"),
    (dict(min_executors=1), "TMS_SPARK_MIN_EXECUTORS: applies to cluster"),
    (dict(master="k8s://not a url"), "TMS_SPARK_MASTER"),
])
def test_settings_refuse_what_cannot_work(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparkSettings(**kw)


def test_cluster_settings_come_from_the_environment(tmp_path: Path) -> None:
    env = {"TMS_SPARK_MASTER": K8S, "TMS_SPARK_DEPLOY_MODE": "cluster",
           "TMS_SPARK_K8S_IMAGE": "reg/tms:1", "TMS_SPARK_K8S_NAMESPACE": "jobs",
           "TMS_SPARK_K8S_SERVICE_ACCOUNT": "tms-spark", "TMS_SPARK_K8S_SECRET": "tms",
           "TMS_SPARK_K8S_SECRET_DIR": "/etc/tms-secrets", "TMS_SPARK_MAX_EXECUTORS": "3",
           "TMS_SPARK_JARS": str(tmp_path / "x.jar")}
    (tmp_path / "x.jar").write_bytes(b"")
    s = SparkSettings.from_env(tmp_path, env)
    assert (s.k8s_image, s.k8s_namespace, s.k8s_service_account, s.k8s_secret,
            s.k8s_secret_dir, s.max_executors) == (
        "reg/tms:1", "jobs", "tms-spark", "tms", "/etc/tms-secrets", 3)
    with pytest.raises(ValueError, match="TMS_SPARK_MAX_EXECUTORS"):
        SparkSettings.from_env(tmp_path, {**env, "TMS_SPARK_MAX_EXECUTORS": "-1"})


def test_cluster_mode_needs_the_api_and_the_driver_secret(tmp_path: Path) -> None:
    no_report = JobSpec("pyspark", APP, dict(SPEC))
    with pytest.raises(SubmissionError, match="--api-target"):
        build(_k8s(), no_report, tmp_path, ENV)
    no_secret = SparkSettings(master=K8S, deploy_mode="cluster", k8s_image="i:1")
    with pytest.raises(SubmissionError, match="TMS_SPARK_K8S_SECRET"):
        build(no_secret, _job(), tmp_path, ENV)
    # without references, nothing to mount
    bare = build(no_secret, _job({**SPEC, "catalog_secrets": {}}), tmp_path / "op-1", ENV)
    assert not any("secretKeyRef" in a for a in bare.argv)


def test_the_warm_engine_inlines_values_for_its_local_driver(tmp_path: Path) -> None:
    (tmp_path / "s3").write_text("s3-secret\n")
    spec = inline_secrets(SPEC, {**ENV, "TMS_SECRET_DIR": str(tmp_path)})
    assert "catalog_secrets" not in spec
    assert spec["catalog_properties"] == {"type": "rest", "uri": "http://r",
                                          "token": "rest-token-value",
                                          "s3.secret-access-key": "s3-secret"}


@pytest.mark.parametrize(("manager", "output", "state"), [
    (Manager.KUBERNETES, "Application status (driver): \n\t pod name: p\n\t phase: Pending\n",
     DriverState.RUNNING),
    (Manager.KUBERNETES, "Application status (driver): \n\t phase: Running\n\t container "
                         "status:\n", DriverState.RUNNING),
    (Manager.KUBERNETES, "\t phase: Succeeded\n", DriverState.SUCCEEDED),
    (Manager.KUBERNETES, "\t phase: Failed\n", DriverState.FAILED),
    (Manager.KUBERNETES, "Application not found.", DriverState.GONE),
    (Manager.KUBERNETES, "Exception in thread main: connection refused", DriverState.UNKNOWN),
    (Manager.YARN, "Application Report : \n\tState : RUNNING\n\tFinal-State : UNDEFINED\n",
     DriverState.RUNNING),
    (Manager.YARN, "\tState : ACCEPTED\n\tFinal-State : UNDEFINED\n", DriverState.RUNNING),
    (Manager.YARN, "\tState : FINISHED\n\tFinal-State : SUCCEEDED\n", DriverState.SUCCEEDED),
    (Manager.YARN, "\tState : FINISHED\n\tFinal-State : FAILED\n", DriverState.FAILED),
    (Manager.YARN, "\tState : KILLED\n\tFinal-State : KILLED\n", DriverState.KILLED),
    (Manager.YARN, "ApplicationNotFoundException: Application with id 'x' doesn't exist in RM",
     DriverState.GONE),
    (Manager.YARN, "", DriverState.UNKNOWN),
])
def test_status_outputs_read(manager: Manager, output: str, state: DriverState) -> None:
    assert cluster.parse_status(manager, output) is state


def test_properties_are_escaped_for_java() -> None:
    text = cluster.properties_text("spark.a=1\n", [
        ("spark.yarn.appMasterEnv.TMS_SECRET_X", " p=w:d#\\\nnext\té€😀"),
        ("k y=", "v")])
    assert text == ("spark.a=1\n"
                    "spark.yarn.appMasterEnv.TMS_SECRET_X=\\ p=w:d#\\\\\\nnext\\t"
                    "\\u00e9\\u20ac\\ud83d\\ude00\n"
                    "k\\ y\\==v\n")


# --- the cluster-mode run against stand-in commands -----------------------------------------

FAKE = """\
import os, sys, pathlib
root = pathlib.Path(os.environ["FAKE_ROOT"])
args = sys.argv[1:]
with (root / "calls").open("a") as f:
    f.write(" ".join(a for a in args if not a.startswith("--spec")) + "\\n")
state = root / "state"
if "-kill" in args or "--kill" in args:
    state.write_text("KILLED")
elif "-status" in args or "--status" in args:
    n = int((root / "polls").read_text() or 0) if (root / "polls").exists() else 0
    (root / "polls").write_text(str(n + 1))
    now = state.read_text()
    if now == "RUNNING" and n >= int(os.environ.get("FAKE_POLLS_TO_END", "1000000")):
        now = "FINISHED"
    if "yarn" in sys.argv[0]:
        final = {"FINISHED": "SUCCEEDED", "KILLED": "KILLED"}.get(now, "UNDEFINED")
        print(f"\\tState : {now}\\n\\tFinal-State : {final}")
    else:
        phase = {"RUNNING": "Running", "FINISHED": "Succeeded", "KILLED": "Failed"}[now]
        print(f"Application status (driver):\\n\\t phase: {phase}")
else:
    props = args[args.index("--properties-file") + 1]
    mode = oct(os.stat(props).st_mode & 0o777)
    (root / "props").write_text(mode + "\\n" + pathlib.Path(props).read_text())
    state.write_text("RUNNING")
    print("INFO Client: Submitted application application_1700000000000_0042")
"""


def _fake(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{FAKE}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fake"
    root.mkdir()
    monkeypatch.setenv("FAKE_ROOT", str(root))
    monkeypatch.setattr("tms.spark.settings.spark_submit_path",
                        lambda: _fake(tmp_path, "spark-submit"))
    monkeypatch.setenv("TMS_YARN_CLI", _fake(tmp_path, "yarn"))
    monkeypatch.setenv("TMS_SECRET_REST", "rest-token-value")
    monkeypatch.setattr(cluster_run, "STATUS_POLL_S", 0.01)
    return root


def test_a_cluster_driver_is_followed_by_id_and_its_reported_result_read(
        fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_POLLS_TO_END", "2")
    handles: list[str] = []
    work = tmp_path / "op-7-attempt-2"
    reported = {"ok": True, "result": {"rewritten_data_files_count": 3},
                "spark_app_id": "spark-0123"}
    res = SparkSubmitEngine(_k8s()).run(_job({**SPEC, "catalog_secrets": {}}, reported), work,
                                        threading.Event(), handles.append)
    assert res.succeeded and res.result == {"rewritten_data_files_count": 3}, res.error
    assert len(handles) == 1 and handles[0].startswith("lake-jobs:tms-op-7-attempt-2-")
    mode, props = (fakes / "props").read_text().split("\n", 1)
    assert mode == "0o600" and f"spark.kubernetes.driverEnv.TMS_JOB_TOKEN={TOKEN}" in props
    assert not (work / PROPERTIES_FILE_NAME).exists()  # deleted once submitted
    calls = (fakes / "calls").read_text().splitlines()
    assert calls[1:] == [f"--master {K8S} --status {handles[0]}"] * 3
    assert "--kill" not in " ".join(calls)


def test_without_a_report_the_drivers_end_is_classified(fakes: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_POLLS_TO_END", "0")
    spec = {**SPEC, "catalog_secrets": {"token": "env:TMS_SECRET_REST"}}
    yarn = SparkSettings(master="yarn", deploy_mode="cluster")
    res = SparkSubmitEngine(yarn).run(_job(spec, None), tmp_path / "op-1-attempt-1",
                                      threading.Event(), lambda h: None)
    assert not res.succeeded and res.retryable
    assert "application_1700000000000_0042 ended SUCCEEDED without reporting" in (res.error or "")
    props = (fakes / "props").read_text()
    assert "spark.yarn.appMasterEnv.TMS_SECRET_REST=rest-token-value" in props


def test_stop_kills_the_driver_by_its_id(fakes: Path, tmp_path: Path) -> None:
    stop = threading.Event()
    res = SparkSubmitEngine(SparkSettings(master="yarn", deploy_mode="cluster")).run(
        _job({**SPEC, "catalog_secrets": {}}), tmp_path / "op-1-attempt-1", stop,
        lambda h: stop.set())  # cancel as soon as the driver is known
    assert res.stopped and res.handle == "application_1700000000000_0042"
    calls = (fakes / "calls").read_text().splitlines()
    assert "application -kill application_1700000000000_0042" in calls
    assert calls[-1] == "application -status application_1700000000000_0042"  # seen ended
    assert os.environ["FAKE_ROOT"] == str(fakes)


def test_an_executor_with_a_cluster_mode_queue_needs_the_api_target(tmp_path: Path) -> None:
    from tms.engines.profiles import EngineRouter, QueueProfile
    from tms_services.executor import api_endpoint

    cold = QueueProfile("spark-submit", SparkSettings())
    router = EngineRouter(cold, {"big": QueueProfile("spark-submit", _k8s())},
                          {"spark-submit": lambda s: SparkSubmitEngine(s)})
    with pytest.raises(ValueError, match="--api-target"):
        api_endpoint("", None, None, router)
    assert api_endpoint("tms-api:50051", None, None, router) is not None
    plain = EngineRouter(cold, {}, {"spark-submit": lambda s: SparkSubmitEngine(s)})
    assert api_endpoint("", None, None, plain) is None  # client mode: a local result file


def test_kubernetes_jars_are_the_images_own(tmp_path: Path) -> None:
    jar = tmp_path / "iceberg.jar"
    jar.write_bytes(b"")
    sub = build(_k8s(jars=(str(jar), "s3a://b/extra.jar")), _job({**SPEC, "catalog_secrets": {}}),
                tmp_path / "op-1", ENV)
    assert sub.argv[sub.argv.index("--jars") + 1] == f"local://{jar},s3a://b/extra.jar"


def test_the_pods_entry_point_commands_exactly() -> None:
    from tms.spark.k8s_entrypoint import EXECUTOR_BACKEND, command, spark_home

    assert command(["driver", "--properties-file", "/opt/spark/conf/spark.properties",
                    "--class", "org.apache.spark.deploy.PythonRunner", "local:///app.py"],
                   {"SPARK_DRIVER_BIND_ADDRESS": "10.1.2.3"}) == [
        SUBMIT, "--conf", "spark.driver.bindAddress=10.1.2.3",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.1.2.3", "--deploy-mode", "client",
        "--properties-file", "/opt/spark/conf/spark.properties",
        "--class", "org.apache.spark.deploy.PythonRunner", "local:///app.py"]
    env = {"JAVA_HOME": "/usr/lib/jvm/java-17", "SPARK_EXECUTOR_MEMORY": "1024m",
           "SPARK_JAVA_OPT_10": "-Dz=3", "SPARK_JAVA_OPT_2": "-Dy=2", "SPARK_JAVA_OPT_0": "-Dx=1",
           "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@d:7078", "SPARK_EXECUTOR_ID": "4",
           "SPARK_EXECUTOR_CORES": "1", "SPARK_APPLICATION_ID": "spark-abc",
           "SPARK_EXECUTOR_POD_IP": "10.1.2.4", "SPARK_RESOURCE_PROFILE_ID": "0",
           "SPARK_EXECUTOR_POD_NAME": "tms-op-1-exec-4"}
    assert command(["executor"], env) == [
        "/usr/lib/jvm/java-17/bin/java", "-Dx=1", "-Dy=2", "-Dz=3", "-Xms1024m", "-Xmx1024m",
        "-cp", f"{spark_home()}/jars/*", EXECUTOR_BACKEND,
        "--driver-url", "spark://CoarseGrainedScheduler@d:7078", "--executor-id", "4",
        "--cores", "1", "--app-id", "spark-abc", "--hostname", "10.1.2.4",
        "--resourceProfileId", "0", "--podName", "tms-op-1-exec-4"]
    with pytest.raises(ValueError, match="driver"):
        command(["sh", "-c", "id"], env)


def test_a_warm_driver_never_takes_a_whole_standalone_cluster(tmp_path: Path) -> None:
    from tms.engines.warm import WARM_DEFAULT_CORES_MAX, WarmSparkEngine, driver_launch

    standalone = SparkSettings(master="spark://10.0.0.2:7077")
    warm = WarmSparkEngine.from_settings(standalone, tmp_path)
    assert warm.settings.cores_max == WARM_DEFAULT_CORES_MAX
    assert f"spark.cores.max={WARM_DEFAULT_CORES_MAX}" in driver_launch(warm.settings)[1][
        "PYSPARK_SUBMIT_ARGS"]
    own = WarmSparkEngine.from_settings(replace_settings(standalone, cores_max=1), tmp_path)
    assert own.settings.cores_max == 1  # the queue's own share is kept
    local = WarmSparkEngine.from_settings(SparkSettings(), tmp_path)
    assert local.settings.cores_max is None


def replace_settings(settings: SparkSettings, **kw: Any) -> SparkSettings:
    from dataclasses import replace

    return replace(settings, **kw)
