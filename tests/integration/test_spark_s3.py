"""Spark compaction of an Iceberg table on S3 (a moto server on loopback) in a SQL catalog,
through the whole TMS path of the executor: the catalog resource with its S3 storage options
and its keys as secret references, resolved (``catalogs.access``), the job built by the Iceberg
plugin, the jar preflight, and the real spark-submit engine running ``iceberg_maintenance.py``
with S3A from the provisioned ``hadoop-aws`` / AWS SDK bundle.

And a job whose S3A jar is left out of the configured jars: refused before any JVM starts,
non-retryable, naming hadoop-aws; run anyway, the job's own failure says the same.

And Iceberg's Hadoop catalog (no pyiceberg counterpart: Spark writes the table) on the same S3.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.moto import MotoServer, moto_server
from tests.unit.fakes import make_catalog, make_op, make_table
from tms import catalogs
from tms.domain import CatalogType, JobSpec
from tms.engines.spark_submit import SparkSubmitEngine
from tms.formats.iceberg.plugin import IcebergFormat
from tms.jobs import arrow_s3
from tms.local import iceberg_data
from tms.spark.jar_check import engine_refusal
from tms.spark.job_package import job_zip
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


@pytest.fixture
def s3_keys(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys' values in the executor's environment: the spec carries references only and
    the client-mode driver resolves them from the variables it is given."""
    monkeypatch.setenv(KEY_ENV, moto.access_key)
    monkeypatch.setenv(SECRET_ENV, moto.secret_key)


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
                                          tmp_path: Path, s3_keys: None) -> None:
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
    (tmp_path / "argv").mkdir()
    argv = engine.argv(job, tmp_path / "argv")
    assert moto.secret_key not in " ".join(argv)  # the inline spec holds references only
    assert moto.access_key not in " ".join(argv)
    res = _run(engine, job, tmp_path / "work")

    assert res.succeeded, f"{res.error}\n{res.log_tail[-4000:]}"
    assert res.result["rewritten_data_files_count"] == COMMITS
    # pyarrow in the Spark tasks, on S3 with the catalog's endpoint and referenced keys
    assert res.result["data_path"] == "arrow", res.result.get("arrow_refused")
    after = iceberg_data.stats(table)
    assert after["data_files"] < before["data_files"]
    assert after["data_files"] == res.result["added_data_files_count"]
    assert _checksum(table) == (rows_before, digest_before) == (COMMITS * ROWS_PER_COMMIT,
                                                                digest_before)
    assert moto.count_objects(bucket, "wh/") > 0


def test_another_buckets_file_in_the_table_refuses_the_compaction(
        pg: Any, moto: MotoServer, tms_home: Path, tmp_path: Path, s3_keys: None) -> None:
    """A table owner adds another tenant's object (another bucket, outside the catalog's
    allowed locations) to their table: compacting it would copy its rows into the owner's
    table. Refused before any task reads it; nothing written, nothing committed."""
    access, bucket = _s3_catalog(pg, moto)
    pyiceberg = iceberg_data.load_catalog(access.catalog_id,
                                          catalogs.pyiceberg_properties(access))
    namespace = f"it_{uuid.uuid4().hex[:8]}"
    table = iceberg_data.create_table(pyiceberg, namespace, "events")
    iceberg_data.append_batches(table, 3, ROWS_PER_COMMIT)
    other = f"tms-other-{uuid.uuid4().hex[:10]}"
    moto.create_bucket(other)
    fs = arrow_s3.options({"s3.endpoint": moto.endpoint, "s3.region": moto.region,
                           "s3.path-style-access": "true", "s3.access-key-id": moto.access_key,
                           "s3.secret-access-key": moto.secret_key}).filesystem()
    plain = iceberg_data.batch(10_000, 25)  # no field ids: add_files takes it
    plain = plain.cast(pa.schema([f.remove_metadata() for f in plain.schema]))
    with fs.open_output_stream(f"{other}/secret/rows.parquet") as out:
        pq.write_table(plain, out)
    table.add_files([f"s3://{other}/secret/rows.parquet"])
    table = table.refresh()
    snapshot = table.current_snapshot().snapshot_id
    objects = moto.count_objects(bucket, "wh/")

    res = _run(SparkSubmitEngine(_settings(tms_home)), _compaction_job(access, namespace),
               tmp_path / "work")

    assert not res.succeeded
    assert "outside the allowed locations" in f"{res.error}", res.error
    assert table.refresh().current_snapshot().snapshot_id == snapshot
    assert moto.count_objects(bucket, "wh/") == objects  # no data file written
    assert moto.count_objects(other) == 1


def test_missing_s3a_jar_fails_at_once_naming_it(pg: Any, moto: MotoServer, tms_home: Path,
                                                 tmp_path: Path, s3_keys: None) -> None:
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


# Runs SQL in a session built exactly as the job builds it (from a spec file, so the keys stay
# off the command line) and writes the last statement's rows as JSON.
SQL_SCRIPT = """
import json, sys
from tms.jobs import iceberg_maintenance as im
spec = im.parse_spec(json.loads(open(sys.argv[1]).read()))
spark = im.build_session(spec)
rows = [spark.sql(q).collect() for q in sys.argv[3:]][-1]
open(sys.argv[2], "w").write(json.dumps([list(r) for r in rows], default=str))
spark.stop()
"""


def _spark_sql(settings: SparkSettings, tmp_path: Path, spec: dict[str, Any],
               *statements: str) -> Any:
    script, spec_file, out = tmp_path / "sql.py", tmp_path / "sql-spec.json", tmp_path / "o.json"
    script.write_text(SQL_SCRIPT)
    spec_file.write_text(json.dumps(spec))
    spec_file.chmod(0o600)
    shipped = [str(job_zip())]  # the job's package, as the engine ships it
    argv = settings.submit_argv(str(script), [str(spec_file), str(out), *statements],
                                py_files=shipped)
    proc = subprocess.run(argv, env=settings.submit_env(os.environ, (KEY_ENV, SECRET_ENV)),
                          capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


def test_hadoop_catalog_compaction_on_s3(moto: MotoServer, tms_home: Path,
                                         tmp_path: Path, s3_keys: None) -> None:
    bucket = f"tms-it-{uuid.uuid4().hex[:10]}"
    moto.create_bucket(bucket)
    catalog = make_catalog(
        "hcat", type=CatalogType.HADOOP, properties={"warehouse": f"s3://{bucket}/wh"},
        storage_options={"s3.endpoint": moto.endpoint, "s3.region": moto.region,
                         "s3.path-style-access": "true"},
        secrets={"s3.access-key-id": f"env:{KEY_ENV}",
                 "s3.secret-access-key": f"env:{SECRET_ENV}"},
        allowed_locations=(f"s3://{bucket}",))
    access = catalogs.access(catalog, environ={KEY_ENV: moto.access_key,
                                               SECRET_ENV: moto.secret_key})
    table = make_table(format="iceberg", catalog="hcat", namespace="ns", table_name="t",
                       location=f"s3://{bucket}/wh/ns/t")
    job = IcebergFormat().build_job(table, access, make_op(params={"min-input-files": "2"}))
    settings = _settings(tms_home)
    inserts = [f"INSERT INTO hcat.ns.t VALUES ({i}, 'r{i}'), ({i + 100}, 'x')" for i in range(6)]
    check = ("SELECT (SELECT count(*) FROM hcat.ns.t), (SELECT sum(id) FROM hcat.ns.t), "
             "(SELECT count(*) FROM hcat.ns.t.files)")
    before = _spark_sql(settings, tmp_path, job.spec, "CREATE NAMESPACE hcat.ns",
                        "CREATE TABLE hcat.ns.t (id bigint, s string) USING iceberg",
                        *inserts, check)
    assert before[0][:2] == [12, 630] and before[0][2] >= 6  # one file or more per insert

    res = _run(SparkSubmitEngine(settings), job, tmp_path / "work")

    assert res.succeeded, f"{res.error}\n{res.log_tail[-4000:]}"
    assert res.result["rewritten_data_files_count"] == before[0][2]
    assert res.result["data_path"] == "arrow", res.result.get("arrow_refused")
    assert _spark_sql(settings, tmp_path, job.spec, check) == [[12, 630, 1]]
