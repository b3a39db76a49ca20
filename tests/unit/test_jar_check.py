"""The jar table, the preflight over fake jars, and missing-class errors naming the jar."""

from __future__ import annotations

import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.unit.fakes import FakeEngine, FakeFormat, FakeStore, make_op, make_table
from tms import failures as errors
from tms.domain import JobSpec, OperationState
from tms.engines.spark_submit import result_from_payload
from tms.executor.loop import Executor
from tms.spark import jar_check, jars
from tms.spark.jar_check import engine_refusal, missing, needs_of, refusal
from tms.spark.settings import SparkSettings


def fake_jar(path: Path, *classes: str) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name in classes:
            zf.writestr(name.replace(".", "/") + ".class", b"\xca\xfe")
    return str(path)


def iceberg_jar(tmp_path: Path) -> str:
    return fake_jar(tmp_path / "runtime.jar", "org.apache.iceberg.spark.SparkCatalog",
                    "org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper")


def spec(kind: str, location: str = "/lake/t", **props: str) -> dict[str, object]:
    return {"catalog_properties": {"type": kind, **props}, "location": location}


def keys(spec_: dict[str, object]) -> list[str]:
    return [n.key for n in needs_of(spec_)]


def test_needs_per_catalog_type_and_storage() -> None:
    base = ["iceberg", "iceberg-jackson"]
    assert keys(spec("sql", uri="postgresql+psycopg://h/db")) == [*base, "jdbc"]
    assert keys(spec("jdbc", uri="jdbc:postgresql://h/db")) == [*base, "jdbc"]
    assert keys(spec("rest")) == [*base, "rest"]
    assert keys(spec("hive")) == [*base, "hive"]
    assert keys(spec("glue")) == [*base, "glue"]
    assert keys(spec("hadoop", "hdfs://nn/wh/t")) == base
    assert keys(spec("rest", "s3://b/wh/t")) == [*base, "rest", "s3a", "aws-sdk-v1"]
    assert keys(spec("hive", "/lake/t", warehouse="s3a://b/wh")) == [
        *base, "hive", "s3a", "aws-sdk-v1"]
    assert needs_of({"args": ["--base-path", "s3://b/t"]}) == []  # not an Iceberg spec


def test_every_need_names_jar_class_and_coordinates() -> None:
    for need in jars.NEEDS.values():
        text = need.describe()
        assert need.class_name in text and need.jar in text
        assert all(c in text for c in need.coordinates) and need.coordinates
        assert all(c.count(":") == 2 for c in need.coordinates)


def test_preflight_finds_classes_in_configured_and_spark_jars(tmp_path: Path) -> None:
    s3a = fake_jar(tmp_path / "hadoop-aws.jar", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    sdk = fake_jar(tmp_path / "sdk.jar", "com.amazonaws.services.s3.AmazonS3")
    hive = Path(fake_jar(tmp_path / "hive-metastore.jar",
                         "org.apache.hadoop.hive.metastore.HiveMetaStoreClient"))
    settings = SparkSettings(jars=(iceberg_jar(tmp_path), s3a, sdk))
    assert missing(spec("hive", "s3://b/t"), settings, [hive]) == []
    without = SparkSettings(jars=(iceberg_jar(tmp_path), sdk))
    assert [n.key for n in missing(spec("hive", "s3://b/t"), without, [hive])] == ["s3a"]
    text = refusal(spec("hive", "s3://b/t"), without, [hive])
    assert text is not None and text.startswith("missing jar: S3 storage (S3A) needs "
                                                "org.apache.hadoop.fs.s3a.S3AFileSystem")
    assert "org.apache.hadoop:hadoop-aws:3.3.4" in text
    assert [n.key for n in missing(spec("hive"), without, [])] == ["hive"]


def test_packages_satisfy_needs_transitively(tmp_path: Path) -> None:
    settings = SparkSettings(packages=(
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
        "org.apache.hadoop:hadoop-aws:3.3.4", "org.apache.iceberg:iceberg-aws-bundle:1.10.0"))
    assert missing(spec("glue", "s3://b/t"), settings, []) == []
    assert [n.key for n in missing(spec("sql", uri="postgresql://h/d"), settings, [])] == ["jdbc"]


def test_a_remote_jar_is_not_second_guessed(tmp_path: Path) -> None:
    settings = SparkSettings(jars=("hdfs://nn/jars/all.jar",))
    assert missing(spec("glue", "s3://b/t"), settings, []) == []


def test_listings_are_cached_per_path_and_mtime(tmp_path: Path) -> None:
    jar = tmp_path / "j.jar"
    fake_jar(jar, "org.postgresql.Driver")
    assert jar_check._probes_in(jar) == {"org/postgresql/Driver.class"}
    fake_jar(jar, "org.example.Other")  # replaced: a new mtime (forced) means a new read
    st = jar.stat()
    os.utime(jar, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert jar_check._probes_in(jar) == frozenset()
    (tmp_path / "bad.jar").write_bytes(b"not a zip")
    assert jar_check._probes_in(tmp_path / "bad.jar") == frozenset()
    assert jar_check._probes_in(tmp_path / "absent.jar") == frozenset()


def test_engine_refusal_only_for_spark_engines(tmp_path: Path) -> None:
    job = JobSpec("pyspark", "app.py", spec("glue", "s3://b/t"))

    class SparkEngine:
        settings = SparkSettings(jars=(iceberg_jar(tmp_path),))

    assert "iceberg-aws-bundle" in (engine_refusal(job, SparkEngine()) or "")
    assert engine_refusal(job, object()) is None  # a third-party engine: its business
    assert engine_refusal(JobSpec("jvm", "Main"), SparkEngine()) is None


def test_executor_fails_a_job_with_a_missing_jar_at_once(tmp_path: Path) -> None:
    class NeedsGlue(FakeFormat):
        def build_job(self, table, catalog, operation):  # type: ignore[no-untyped-def]
            return JobSpec("pyspark", "job.py", spec("glue", "s3://b/t"))

    class SparkFakeEngine(FakeEngine):
        settings = SparkSettings(jars=(iceberg_jar(tmp_path),))

    store = FakeStore(tables={1: make_table()}, to_claim=[make_op(attempt=1, max_attempts=3)])
    engine = SparkFakeEngine()
    Executor(store, {"fake": NeedsGlue()}, engine, "e1", tmp_path / "w").run_once()  # type: ignore[arg-type]
    (_, outcome), = store.finished
    assert outcome.state is OperationState.FAILED and not outcome.retryable
    assert "iceberg-aws-bundle" in (outcome.error or "") and engine.jobs == []


@pytest.mark.parametrize("text, jar", [
    ("java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found",
     "hadoop-aws"),
    ("java.lang.NoClassDefFoundError: com/amazonaws/auth/AWSCredentialsProvider\n\tat "
     "org.apache.hadoop.fs.s3a.S3AFileSystem.initialize", "aws-java-sdk-bundle"),
    ('org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3"',
     "hadoop-aws"),
    ("java.lang.NoClassDefFoundError: org/apache/iceberg/shaded/org/apache/hc/client5/http/"
     "ssl/TlsSocketStrategy", "shaded httpclient5"),
    ("Cannot initialize Catalog implementation org.apache.iceberg.aws.glue.GlueCatalog: "
     "Missing org.apache.iceberg.aws.glue.GlueCatalog [java.lang.NoClassDefFoundError: "
     "software/amazon/awssdk/services/glue/model/InvalidInputException]", "iceberg-aws-bundle"),
    ("java.lang.NoClassDefFoundError: org/apache/iceberg/shaded/com/fasterxml/jackson/core/"
     "JsonFactory", "shaded Jackson"),
    ("Cannot find catalog plugin class for catalog 'c': org.apache.iceberg.spark.SparkCatalog",
     "iceberg-spark-runtime"),
    ("java.sql.SQLException: No suitable driver found for jdbc:postgresql://h/db", "postgresql"),
])
def test_missing_class_errors_name_the_jar(text: str, jar: str) -> None:
    kind = errors.classify(text)
    assert not kind.retryable and kind.hint is not None
    assert kind.hint.startswith("missing jar or class (") and jar in kind.hint


def test_an_unknown_missing_class_keeps_the_generic_hint() -> None:
    kind = errors.classify("java.lang.ClassNotFoundException: com.example.Custom")
    assert kind.hint == f"{errors.MISSING_CLASS} ({errors.HINTS[errors.MISSING_CLASS]})"


def test_a_driver_log_without_result_names_the_jar() -> None:
    tail = ("26/01/01 10:00:00 WARN NativeCodeLoader: ClassNotFoundException ignored\n"
            "Traceback (most recent call last):\n  File \"job.py\"\n"
            "py4j.protocol.Py4JJavaError: java.lang.RuntimeException: "
            "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem "
            "not found\n")
    res = result_from_payload(None, tail, 1, None, lambda: "spark-submit exited 1")
    assert res.retryable is False and "hadoop-aws" in (res.error or "")


def test_one_shot_jobs_get_only_the_jars_they_need(tmp_path: Path) -> None:
    runtime = iceberg_jar(tmp_path)
    s3a = fake_jar(tmp_path / "hadoop-aws.jar", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    sdk = fake_jar(tmp_path / "bundle.jar", "com.amazonaws.services.s3.AmazonS3")
    pg = fake_jar(tmp_path / "postgresql.jar", "org.postgresql.Driver")
    own = fake_jar(tmp_path / "operator.jar", "com.example.Listener")  # none of the table's
    configured = (runtime, s3a, sdk, pg, own, "hdfs://nn/jars/remote.jar")
    local_sql = spec("sql", uri="postgresql+psycopg://h/db")
    assert jar_check.jars_for(local_sql, configured) == (
        runtime, pg, own, "hdfs://nn/jars/remote.jar")
    assert jar_check.jars_for(spec("hive", "s3://b/wh/t"), configured) == (
        runtime, s3a, sdk, own, "hdfs://nn/jars/remote.jar")
    # a spec that is not an Iceberg maintenance spec (a Hudi JVM job) keeps every jar
    assert jar_check.jars_for({"args": ["--base-path", "/t"]}, configured) == configured


def _job_spec_of(ctype: str, properties: dict[str, str], secrets: dict[str, str],
                 environ: dict[str, str]) -> dict[str, object]:
    """The catalog part of a job spec as the executor makes it: references, no values."""
    from tms.catalogs import CatalogAccess, access, job_catalog
    from tms.domain import Catalog, CatalogType
    from tms.domain.catalogs import CatalogSpec, DiscoveryStatus

    cat = Catalog(1, CatalogSpec("c", CatalogType(ctype), properties, secrets,
                                 allowed_locations=("/lake",)),
                  DiscoveryStatus(), datetime.now(UTC), datetime.now(UTC))
    resolved: CatalogAccess = access(cat, environ)
    props, refs = job_catalog(resolved)
    return {"catalog_properties": props, "catalog_secrets": refs, "location": "/lake/t"}


@pytest.mark.parametrize("ctype,uri", [("sql", "postgresql+psycopg://u:pw@h/db"),
                                       ("jdbc", "jdbc:postgresql://h/db?user=u")])
@pytest.mark.parametrize("secret_key", ["uri", "jdbc.password"])
def test_jdbc_driver_needed_whatever_is_secret(ctype: str, uri: str, secret_key: str) -> None:
    """The driver follows from the catalog's type: a ``uri`` given whole as a secret is not
    in the spec's properties, and the job needs PostgreSQL's driver all the same."""
    env = {"TMS_SECRET_X": uri if secret_key == "uri" else "pw"}
    props = {"warehouse": "/lake"}
    if secret_key != "uri":
        props["uri"] = uri.replace("u:pw@", "u@")
    job = _job_spec_of(ctype, props, {secret_key: "env:TMS_SECRET_X"}, env)
    assert "uri" not in job["catalog_properties"] or secret_key != "uri"  # type: ignore[operator]
    assert "jdbc" in keys(job)
