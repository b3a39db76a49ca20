"""How the deletion fence reaches every Spark job: the settings name the fenced file systems and
put the jar on the JVMs' class path when it is provisioned, a Hudi utility gets its roots from
the conf, and the maintenance job arms it around the action and refuses to act without it when
it is required. The fence itself, in a real JVM: tests/security/test_fence.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tms.domain import JobSpec
from tms.engines.hudi_submit import hudi_settings
from tms.jobs import fence
from tms.jobs.table_guard import CheckedTable, LocationRefused
from tms.locations import parse
from tms.spark.provision_fence import (
    FENCE_JAR,
    FENCE_ROOTS_CONF,
    FENCE_S3A_JAR,
    FILTER_FS_CLASS,
    INNER_CONF,
    LOCAL_FS_CLASS,
    REQUIRED_CONF,
    S3A_FS_CLASS,
    S3A_PLAIN_CLASS,
    WRAPPED_FILE_SYSTEMS,
    storage_conf,
)
from tms.spark.settings import SUBMIT_ONLY_OPT, SparkSettings


def _home(tmp_path: Path, *names: str) -> Path:
    jars = tmp_path / "home" / "jars"
    jars.mkdir(parents=True)
    for name in names:
        (jars / name).write_bytes(b"jar")
    return tmp_path / "home"


def test_without_the_jar_only_s3_is_mapped_and_nothing_is_required() -> None:
    assert storage_conf(["/j/iceberg.jar"]) == {"spark.hadoop.fs.s3.impl": S3A_PLAIN_CLASS}


def test_with_the_jar_every_scheme_is_fenced_and_the_jar_is_on_the_class_path() -> None:
    conf = storage_conf(["/j/iceberg.jar", f"/j/{FENCE_JAR}", f"/j/{FENCE_S3A_JAR}"])
    wrapped = {f"spark.hadoop.fs.{s}.impl": FILTER_FS_CLASS for s in WRAPPED_FILE_SYSTEMS}
    wrapped.update({INNER_CONF.format(s): c for s, c in WRAPPED_FILE_SYSTEMS.items()})
    assert {"hdfs", "gs", "abfs", "abfss", "wasbs", "oss"} == set(WRAPPED_FILE_SYSTEMS)
    assert conf == {"spark.hadoop.fs.file.impl": LOCAL_FS_CLASS,
                    "spark.hadoop.fs.s3a.impl": S3A_FS_CLASS,
                    "spark.hadoop.fs.s3.impl": S3A_FS_CLASS,
                    **wrapped,
                    REQUIRED_CONF: "true",
                    "spark.driver.extraClassPath": f"/j/{FENCE_JAR}",
                    "spark.executor.extraClassPath": f"/j/{FENCE_JAR}"}
    # a remote copy cannot go on a JVM's own class path: not fenced, not required
    assert REQUIRED_CONF not in storage_conf([f"hdfs://nn/j/{FENCE_JAR}"])
    # without the S3A jar, S3 stays on the plain S3A (the local file system is fenced)
    assert storage_conf([f"/j/{FENCE_JAR}"])["spark.hadoop.fs.s3a.impl"] == S3A_PLAIN_CLASS


@pytest.mark.parametrize("env", [{}, {"TMS_SPARK_JARS": "/x/a.jar"},
                                 {"TMS_SPARK_PACKAGES": "org.apache.iceberg:x:1"}])
def test_the_provisioned_jar_rides_whichever_way_the_other_jars_come(
        tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path, FENCE_JAR, FENCE_S3A_JAR, "iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    monkeypatch.setattr(SparkSettings, "_check_jar", staticmethod(lambda jar: None))
    settings = SparkSettings.from_env(home, env)
    assert {str(home / "jars" / FENCE_JAR), str(home / "jars" / FENCE_S3A_JAR)} <= set(
        settings.jars)
    assert settings.effective_conf()[REQUIRED_CONF] == "true"


def test_the_operators_class_path_keeps_the_fences(tmp_path: Path) -> None:
    jar = _home(tmp_path, FENCE_JAR) / "jars" / FENCE_JAR
    settings = SparkSettings(jars=(str(jar),),
                             conf={"spark.driver.extraClassPath": "/opt/extra.jar"})
    conf = settings.effective_conf()
    assert conf["spark.driver.extraClassPath"] == f"{jar}:/opt/extra.jar"
    assert conf["spark.executor.extraClassPath"] == str(jar)


def test_a_hudi_utility_carries_the_fence_with_the_base_path_as_its_root(tmp_path: Path
                                                                         ) -> None:
    jar = _home(tmp_path, FENCE_JAR, "iceberg.jar") / "jars"
    settings = SparkSettings(jars=(str(jar / "iceberg.jar"), str(jar / FENCE_JAR)))
    job = JobSpec("jvm", "org.apache.hudi.utilities.HoodieCleaner",
                  {"hudi": {"location": "/lake/hudi/t"}}, args=())
    out = hudi_settings(job, settings, None)
    assert out.jars == (str(jar / FENCE_JAR),)  # the Iceberg runtime stays off
    assert out.conf[FENCE_ROOTS_CONF] == "/lake/hudi/t"
    assert out.effective_conf()["spark.hadoop.fs.file.impl"] == LOCAL_FS_CLASS


# --- the job's arming, on a fake JVM ---------------------------------------------------------

class FakeFence:
    def __init__(self, refuse_during: int = 0) -> None:
        self.roots: list[str] | None = None
        self.count, self.refuse_during = 0, refuse_during

    def arm(self, roots: list[str]) -> None:
        self.roots = list(roots)
        self.count += self.refuse_during  # what the action will provoke

    def disarm(self) -> None:
        self.roots = None

    def refusedCount(self) -> int:  # noqa: N802 (the Java name)
        return self.count


class FakeSpark:
    def __init__(self, required: bool, fs_class: str, jfence: FakeFence) -> None:
        conf = {REQUIRED_CONF: "true" if required else "false"}
        gateway = type("G", (), {"new_array": staticmethod(lambda _t, n: [None] * n),
                                 "jvm": type("J", (), {"java": type("L", (), {"lang": type(
                                     "S", (), {"String": str})})})})
        self.sparkContext = type("SC", (), {
            "getConf": staticmethod(lambda: type("C", (), {
                "get": staticmethod(lambda k, d=None: conf.get(k, d))})),
            "_gateway": gateway,
            "_jvm": type("JVM", (), {"tms": type("T", (), {"fence": type(
                "F", (), {"Fence": jfence})})}),
        })
        self.fs_class = fs_class


@pytest.fixture
def table() -> CheckedTable:
    return CheckedTable(parse("/lake/t"), None)


def _arm(spark: FakeSpark, table: CheckedTable, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(fence, "file_system_class", lambda s, t: s.fs_class)
    return fence.armed(spark, table)


def test_not_required_runs_unfenced_and_says_so(table: CheckedTable,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    jfence = FakeFence()
    with _arm(FakeSpark(False, "x", jfence), table, monkeypatch) as info:
        assert jfence.roots is None
    assert info == {"required": False, "state": "off"}


@pytest.mark.parametrize("fs_class", [LOCAL_FS_CLASS, S3A_FS_CLASS, FILTER_FS_CLASS])
def test_required_arms_the_tables_own_location_for_the_block(
        table: CheckedTable, monkeypatch: pytest.MonkeyPatch, fs_class: str) -> None:
    jfence = FakeFence()
    with _arm(FakeSpark(True, fs_class, jfence), table, monkeypatch) as info:
        assert jfence.roots == ["file:///lake/t"]
    assert jfence.roots is None  # disarmed after
    assert info["state"] == "armed" and info["refused"] == 0


def test_required_but_not_in_place_refuses_before_the_action(
        table: CheckedTable, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = []
    with pytest.raises(LocationRefused, match="not a fenced file system"):
        with _arm(FakeSpark(True, "org.apache.hadoop.fs.LocalFileSystem", FakeFence()),
                  table, monkeypatch):
            ran.append(True)
    with pytest.raises(LocationRefused, match="ViewFileSystem, not a fenced"):  # not wrapped
        with _arm(FakeSpark(True, "org.apache.hadoop.fs.viewfs.ViewFileSystem", FakeFence()),
                  table, monkeypatch):
            ran.append(True)
    assert not ran


def test_a_change_the_fence_refused_fails_the_operation(
        table: CheckedTable, monkeypatch: pytest.MonkeyPatch) -> None:
    jfence = FakeFence(refuse_during=2)
    with pytest.raises(LocationRefused, match="refused 2 change"):
        with _arm(FakeSpark(True, LOCAL_FS_CLASS, jfence), table, monkeypatch):
            pass
    assert jfence.roots is None


def test_an_operators_own_connector_is_the_one_wrapped_not_the_fence_removed(
        tmp_path: Path) -> None:
    """``spark.hadoop.fs.gs.impl`` from the operator names the class the filter wraps; it
    cannot take the filter's place (every gs: job would then be refused as unfenced)."""
    jar = _home(tmp_path, FENCE_JAR) / "jars" / FENCE_JAR
    settings = SparkSettings(jars=(str(jar),), conf={
        "spark.hadoop.fs.gs.impl": "com.example.OwnGcs",
        "spark.hadoop.fs.hdfs.impl": FILTER_FS_CLASS,
        "spark.hadoop.fs.viewfs.impl": "com.example.OwnView"})
    conf = settings.effective_conf()
    assert conf["spark.hadoop.fs.gs.impl"] == FILTER_FS_CLASS
    assert conf[INNER_CONF.format("gs")] == "com.example.OwnGcs"
    assert conf["spark.hadoop.fs.hdfs.impl"] == FILTER_FS_CLASS  # naming the filter: kept
    assert conf[INNER_CONF.format("hdfs")] == WRAPPED_FILE_SYSTEMS["hdfs"]
    assert conf["spark.hadoop.fs.viewfs.impl"] == "com.example.OwnView"  # not wrapped
    # without the fence, the operator's class is used as it is
    plain = SparkSettings(conf={"spark.hadoop.fs.gs.impl": "com.example.OwnGcs"})
    assert plain.effective_conf()["spark.hadoop.fs.gs.impl"] == "com.example.OwnGcs"


def test_only_the_cluster_mode_submitter_is_marked_submit_only() -> None:
    """The mark rides in spark-submit's own JVM options, never in a conf that reaches a
    driver or executor; an operator's own options are kept, a stray mark in client mode is
    dropped (that JVM is the driver)."""
    base = {"SPARK_SUBMIT_OPTS": "-Xss4m " + SUBMIT_ONLY_OPT, "PATH": "/bin"}
    cluster = SparkSettings(master="yarn", deploy_mode="cluster")
    assert cluster.submit_env(base)["SPARK_SUBMIT_OPTS"] == f"-Xss4m {SUBMIT_ONLY_OPT}"
    assert cluster.submit_env({})["SPARK_SUBMIT_OPTS"] == SUBMIT_ONLY_OPT
    client = SparkSettings()
    assert client.submit_env(base)["SPARK_SUBMIT_OPTS"] == "-Xss4m"
    assert "SPARK_SUBMIT_OPTS" not in client.submit_env({"SPARK_SUBMIT_OPTS": SUBMIT_ONLY_OPT})
    assert not any(SUBMIT_ONLY_OPT in v for v in client.effective_conf().values())
    assert not any(SUBMIT_ONLY_OPT in v for v in cluster.effective_conf().values())
