"""A bad configuration fails at once: real spark-submit jobs through the executor on the TMS
schema, FAILED on the first of three attempts, with a hint of what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.job_harness import Lake, Runner, spark_settings
from tms.domain import JobSpec, Operation, OperationState
from tms.engines.spark_submit import SparkSubmitEngine
from tms.spark.provision import ICEBERG_RUNTIME_JAR
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration


def _run(db_dsn: str, tmp_path: Path, job: JobSpec,
         engine: SparkSubmitEngine | None = None) -> Operation:
    store = PostgresStore(db_dsn)
    try:
        return Runner(store, tmp_path / "work", engine).run("t", job)
    finally:
        store.close()


def _assert_final(op: Operation, *words: str) -> None:
    assert op.state is OperationState.FAILED, op.outcome.error
    assert op.lease.attempts_used == 1
    error = op.outcome.error or ""
    assert error.startswith("not retryable: "), error
    for word in words:
        assert word in error, error


def test_a_catalog_class_that_does_not_exist(db_dsn: str, tmp_path: Path) -> None:
    lake = Lake(db_dsn, tmp_path / "lake")
    job = lake.job("t")
    job.spec["catalog_properties"] = {"catalog-impl": "com.example.NoSuchCatalog",
                                      "warehouse": lake.allowed.as_uri()}

    _assert_final(_run(db_dsn, tmp_path, job), "missing jar or class", "com.example.NoSuchCatalog")


def test_a_catalog_without_its_warehouse(db_dsn: str, tmp_path: Path) -> None:
    lake = Lake(db_dsn, tmp_path / "lake")
    lake.table("t")
    job = lake.job("t")
    del job.spec["catalog_properties"]["warehouse"]

    _assert_final(_run(db_dsn, tmp_path, job), "bad catalog configuration", "warehouse")


def test_a_main_class_missing_from_its_jar(db_dsn: str, tmp_path: Path) -> None:
    # the job dies before any result is written: the engine classifies the driver log
    settings = spark_settings()
    jar = next(j for j in settings.jars if Path(j).name == ICEBERG_RUNTIME_JAR)
    engine = SparkSubmitEngine(settings, jvm_jar=jar)
    job = JobSpec("jvm", "com.example.NoSuchMain", args=("--base-path", str(tmp_path)))

    _assert_final(_run(db_dsn, tmp_path, job, engine), "missing jar or class",
                  "com.example.NoSuchMain")
