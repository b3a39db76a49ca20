"""The cold local driver's JVM options (tms.engines.cold_jvm) and where they apply."""

from __future__ import annotations

from pathlib import Path

from tms.domain import JobSpec
from tms.engines import cold_jvm
from tms.engines.spark_submit import SparkSubmitEngine
from tms.spark.settings import SparkSettings

OPTION = f"{cold_jvm.DRIVER_JAVA_OPTIONS}={' '.join(cold_jvm.COLD_LOCAL_JAVA_OPTIONS)}"


def test_a_local_cold_driver_stops_at_c1() -> None:
    tuned = cold_jvm.tuned(SparkSettings(master="local[2]"))
    assert tuned.conf[cold_jvm.DRIVER_JAVA_OPTIONS] == "-XX:TieredStopAtLevel=1"


def test_the_operators_java_options_win_whole() -> None:
    mine = SparkSettings(conf={cold_jvm.DRIVER_JAVA_OPTIONS: "-Xss4m"})
    assert cold_jvm.tuned(mine) is mine


def test_a_cluster_master_is_left_alone() -> None:
    yarn = SparkSettings(master="yarn", deploy_mode="client")
    assert cold_jvm.tuned(yarn) is yarn


def test_spark_submit_passes_them_and_the_warm_settings_do_not_change(tmp_path: Path) -> None:
    settings = SparkSettings(master="local[2]")
    engine = SparkSubmitEngine(settings)
    job = JobSpec("pyspark", "/app.py", {"catalog_name": "c", "table": "n.t",
                                        "action": "compaction"})
    argv = engine.argv(job, tmp_path)
    assert argv[argv.index(OPTION) - 1] == "--conf"
    assert cold_jvm.DRIVER_JAVA_OPTIONS not in settings.conf  # the warm driver's: C2 kept
    assert not any(a.startswith(cold_jvm.DRIVER_JAVA_OPTIONS) for a in settings.submit_argv(
        "/app.py", []))
