"""Spark compaction of an Iceberg table on S3 (a moto server on loopback) in a SQL catalog,
through the whole TMS path of the executor: the catalog resource with its S3 storage options
and its keys as secret references, resolved (``catalogs.access``), the job built by the Iceberg
plugin, the jar preflight, and the real spark-submit engine running ``iceberg_maintenance.py``
with S3A from the provisioned ``hadoop-aws`` / AWS SDK bundle.

And a job whose S3A jar is left out of the configured jars: refused before any JVM starts,
non-retryable, naming hadoop-aws; run anyway, the job's own failure says the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.servers.moto import MotoServer, moto_server
from tests.unit.fakes import make_catalog, make_op, make_table
from tms import catalogs
from tms.domain import CatalogType, JobSpec
from tms.engines.spark_submit import SparkSubmitEngine
from tms.formats.iceberg import IcebergFormat
from tms.local import iceberg_data
from tms.spark.jar_check import engine_refusal
from tms.spark.provision import AWS_SDK_BUNDLE, HADOOP_AWS
from tms.spark.settings import SparkSettings

pytestmark = pytest.mark.integration

COMMITS = 12
ROWS_PER_COMMIT = 40
KEY_ENV, SECRET_ENV = "TMS_SECRET_IT_S3_KEY", "TMS_SECRET_IT_S3_SECRET"


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


def _settings(tms_home: Path) -> SparkSettings:
    settings = SparkSettings.from_env(tms_home)
    names = {Path(j).name for j in settings.jars}
    if not {HADOOP_AWS.name, AWS_SDK_BUNDLE.name} <= names and not settings.packages:
        pytest.fail(f"S3A jars not provisioned in {tms_home}/jars; run scripts/setup")
    return settings


def _s3_catalog(pg: Any, moto: MotoServer) -> tuple[catalogs.CatalogAccess, str]:
    """A SQL catalog whose warehouse is a fresh bucket on moto, keys by reference."""
    bucket = f"tms-it-{uuid.uuid4().hex[:10]}"
    warehouse = f"{moto.create_bucket(bucket)}/wh"
    uri = pg.dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    catalog = make_catalog(
        "s3cat", type=CatalogType.SQL, properties={"uri": uri, "warehouse": warehouse},
        storage_options={"s3.endpoint": moto.endpoint, "s3.region": moto.region,
                         "s3.path-style-access": "true"},
        secrets={"s3.access-key-id": f"env:{KEY_ENV}",
                 "s3.secret-access-key": f"env:{SECRET_ENV}"},
        allowed_locations=(f"s3://{bucket}",))
    environ = {KEY_ENV: moto.access_key, SECRET_ENV: moto.secret_key}
    return catalogs.access(catalog, environ=environ), bucket


def _checksum(table: Any) -> tuple[int, str]:
    """Rows and a digest of every row, in id order: the data, not its files."""
    rows = sorted(table.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    digest = hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode())
    return len(rows), digest.hexdigest()


def _compaction_job(access: catalogs.CatalogAccess, namespace: str) -> JobSpec:
    table = make_table(format="iceberg", catalog=access.catalog_id, namespace=namespace,
                       table_name="events")
    op = make_op(params={"min-input-files": "2", "target-file-size-bytes": str(64 << 20)})
    return IcebergFormat().build_job(table, access, op)


def _run(engine: SparkSubmitEngine, job: JobSpec, workdir: Path) -> Any:
    return engine.run(job, workdir, threading.Event(), lambda handle: None)


def test_compaction_on_s3_in_a_sql_catalog(pg: Any, moto: MotoServer, tms_home: Path,
                                          tmp_path: Path) -> None:
    access, bucket = _s3_catalog(pg, moto)
    pyiceberg = iceberg_data.load_catalog(access.catalog_id,
                                          catalogs.pyiceberg_properties(access))
    namespace = f"it_{uuid.uuid4().hex[:8]}"
    table = iceberg_data.create_table(pyiceberg, namespace, "events")
    iceberg_data.append_batches(table, COMMITS, ROWS_PER_COMMIT)
    before = iceberg_data.stats(table)
    assert before["data_files"] == COMMITS
    rows_before, digest_before = _checksum(table)

    job = _compaction_job(access, namespace)
    assert job.spec["location"].startswith(f"s3://{bucket}/wh/")
    engine = SparkSubmitEngine(_settings(tms_home))
    assert engine_refusal(job, engine) is None
    argv = engine.argv(job, tmp_path / "spec.json", tmp_path / "result.json")
    assert moto.secret_key not in " ".join(argv)  # keys travel in the 0600 spec file only
    res = _run(engine, job, tmp_path / "work")

    assert res.succeeded, f"{res.error}\n{res.log_tail[-4000:]}"
    assert res.result["rewritten_data_files_count"] == COMMITS
    after = iceberg_data.stats(table)
    assert after["data_files"] < before["data_files"]
    assert after["data_files"] == res.result["added_data_files_count"]
    assert _checksum(table) == (rows_before, digest_before) == (COMMITS * ROWS_PER_COMMIT,
                                                                digest_before)
    assert moto.count_objects(bucket, "wh/") > 0


def test_missing_s3a_jar_fails_at_once_naming_it(pg: Any, moto: MotoServer, tms_home: Path,
                                                 tmp_path: Path) -> None:
    access, _ = _s3_catalog(pg, moto)
    pyiceberg = iceberg_data.load_catalog(access.catalog_id,
                                          catalogs.pyiceberg_properties(access))
    namespace = f"it_{uuid.uuid4().hex[:8]}"
    iceberg_data.append_batches(iceberg_data.create_table(pyiceberg, namespace, "events"), 2)
    job = _compaction_job(access, namespace)
    full = _settings(tms_home)
    without = replace(full, jars=tuple(j for j in full.jars
                                       if Path(j).name != HADOOP_AWS.name), packages=())
    engine = SparkSubmitEngine(without)

    refused = engine_refusal(job, engine)  # what the executor does before spark-submit
    assert refused is not None and refused.startswith("missing jar: ")
    assert "hadoop-aws" in refused and "org.apache.hadoop.fs.s3a.S3AFileSystem" in refused
    assert "org.apache.hadoop:hadoop-aws:3.3.4" in refused
    assert refused.count(" needs ") == 1  # the SDK bundle is still there

    # Run anyway (an engine without the preflight): the job's own error names the jar too
    res = _run(engine, job, tmp_path / "work")
    assert not res.succeeded and res.retryable is False, res.error
    assert res.error.startswith("missing jar or class (S3 storage (S3A) needs "
                                "org.apache.hadoop.fs.s3a.S3AFileSystem from hadoop-aws"), \
        res.error
    assert os.environ.get(SECRET_ENV) is None  # the test's keys never reached the environment
