"""spark-submit command lines: built without a shell, validated before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tms.domain import JobSpec
from tms.engines.spark_submit import SparkSubmitEngine
from tms.spark.settings import SparkSettings


def settings(**env: str) -> SparkSettings:
    return SparkSettings.from_env(Path("/nonexistent-home"), env)


def test_packages_for_users_with_maven() -> None:
    argv = settings(TMS_SPARK_PACKAGES="org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2",
                    TMS_SPARK_MASTER="yarn", TMS_SPARK_DEPLOY_MODE="cluster").submit_argv(
        "job.py", ["--spec", "s.json"])
    i = argv.index("--packages")
    assert argv[i + 1] == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
    assert argv[argv.index("--master") + 1] == "yarn"
    assert "spark.driver.bindAddress=127.0.0.1" not in argv  # only for local masters
    assert argv[-3:] == ["job.py", "--spec", "s.json"]


def test_local_defaults_and_user_conf_override() -> None:
    argv = settings(TMS_SPARK_CONF="spark.sql.shuffle.partitions=8,spark.x=y").submit_argv(
        "a.py", [])
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert "spark.sql.shuffle.partitions=8" in confs and "spark.x=y" in confs
    assert "spark.driver.host=127.0.0.1" in confs
    assert argv[argv.index("--master") + 1] == "local[2]"


@pytest.mark.parametrize("env,var", [
    ({"TMS_SPARK_MASTER": "local[2] --jars evil.jar"}, "TMS_SPARK_MASTER"),
    ({"TMS_SPARK_PACKAGES": "not-a-coordinate"}, "TMS_SPARK_PACKAGES"),
    ({"TMS_SPARK_DRIVER_MEMORY": "lots"}, "TMS_SPARK_DRIVER_MEMORY"),
    ({"TMS_SPARK_CONF": "novalue"}, "TMS_SPARK_CONF"),
    ({"TMS_SPARK_CONF": "bad key=1"}, "TMS_SPARK_CONF"),
    ({"TMS_SPARK_JARS": "/no/such.jar"}, "TMS_SPARK_JARS"),
    ({"TMS_SPARK_DEPLOY_MODE": "cluster"}, "TMS_SPARK_DEPLOY_MODE"),
])
def test_bad_settings_name_their_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ValueError, match=var):
        settings(**env)


def test_table_names_never_reach_the_command_line(tmp_path: Path) -> None:
    """The spec is one base64 argument: a hostile table name is data inside it."""
    import base64
    import json

    engine = SparkSubmitEngine(settings())
    job = JobSpec("pyspark", "job.py", {"table": "ns.t --conf spark.evil=1"})
    argv = engine.argv(job, tmp_path)
    assert not any("evil" in a for a in argv)
    spec = argv[argv.index("--spec-b64") + 1]
    assert json.loads(base64.b64decode(spec))["table"] == "ns.t --conf spark.evil=1"
    assert argv[-2:] == ["--result", str(tmp_path / "result.json")]  # no API: a file


def test_engine_refuses_jobs_it_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="TMS_HUDI_UTILITIES_JAR"):
        SparkSubmitEngine(settings(), jvm_jar="").argv(JobSpec("jvm", "Main"), tmp_path)
    with pytest.raises(ValueError, match="'wasm'"):
        SparkSubmitEngine(settings()).argv(JobSpec("wasm", "x"), tmp_path)


def test_hudi_compaction_command_line_exactly(tmp_path: Path) -> None:
    """Hudi cannot run here (no Hudi jars on these machines): its command line is tested."""
    from dataclasses import replace

    from tests.unit.fakes import make_access, make_op, make_table
    from tms.formats.hudi.plugin import HudiFormat

    jar = str(tmp_path / "hudi-utilities-bundle_2.12-1.0.2.jar")  # a missing jar is refused
    Path(jar).write_bytes(b"")
    table = replace(make_table(), format="hudi", table_name="trips",
                    base_path="/lake/trips")
    op = make_op(action="compaction",
                 params={"mode": "execute", "instant": "20260101000000000"})
    job = HudiFormat().build_job(table, make_access("/lake"), op)
    argv = SparkSubmitEngine(settings(), jvm_jar=jar).argv(job, tmp_path)
    at = argv.index("--class")
    assert argv[at:] == ["--class", "org.apache.hudi.utilities.HoodieCompactor", jar,
                         "--base-path", "/lake/trips", "--table-name", "trips",
                         "--mode", "execute", "--instant-time", "20260101000000000",
                         # no writer configuration: its own clean afterwards is off
                         "--hoodie-conf", "hoodie.clean.automatic=false",
                         "--spark-memory", "1g"]
    assert argv[argv.index("--master") + 1] == "local[2]"
