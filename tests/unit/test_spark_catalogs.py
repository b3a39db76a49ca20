"""The job's Spark conf for every catalog type and for S3 storage, exactly; and what a table
owner or a malformed catalog cannot get into it."""

from __future__ import annotations

import pytest

from tms.catalogs import CatalogAccess, job_properties
from tms.domain import CatalogType
from tms.jobs import iceberg_maintenance as im
from tms.jobs import job_spec
from tms.jobs.spark_catalogs import CatalogConfError, catalog_conf
from tms.policy.common import validate_policy

P = "spark.sql.catalog.c"
BASE = {P: "org.apache.iceberg.spark.SparkCatalog",
        f"{P}.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO"}
S3 = {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1",
      "s3.path-style-access": "true", "s3.access-key-id": "AKID",
      "s3.secret-access-key": "SECRET"}
S3A = {f"{P}.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
       f"{P}.hadoop.fs.s3a.endpoint.region": "eu-west-1",
       f"{P}.hadoop.fs.s3a.path.style.access": "true",
       f"{P}.hadoop.fs.s3a.access.key": "AKID",
       f"{P}.hadoop.fs.s3a.secret.key": "SECRET",
       f"{P}.hadoop.fs.s3a.connection.ssl.enabled": "false"}
S3_AS_CATALOG_PROPS = {f"{P}.{k}": v for k, v in S3.items()}


def test_sql_catalog_becomes_iceberg_jdbc() -> None:
    props = {"type": "sql", "uri": "postgresql+psycopg://tms@db:5432/ice?sslmode=require",
             "warehouse": "s3://lake/wh", "jdbc.password": "pw", **S3}
    assert catalog_conf("c", props) == {
        **BASE, f"{P}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        f"{P}.uri": "jdbc:postgresql://db:5432/ice?sslmode=require",
        f"{P}.jdbc.user": "tms", f"{P}.jdbc.password": "pw",
        f"{P}.warehouse": "s3://lake/wh", **S3_AS_CATALOG_PROPS, **S3A}


def test_rest_catalog_passes_its_properties() -> None:
    props = {"type": "rest", "uri": "https://rest.example/api", "warehouse": "wh1",
             "prefix": "p1", "credential": "id:secret", "token": "tok"}
    assert catalog_conf("c", props) == {
        **BASE, f"{P}.type": "rest", f"{P}.uri": "https://rest.example/api",
        f"{P}.warehouse": "wh1", f"{P}.prefix": "p1", f"{P}.credential": "id:secret",
        f"{P}.token": "tok"}


def test_hive_catalog() -> None:
    props = {"type": "hive", "uri": "thrift://hms:9083", "warehouse": "s3a://lake/wh"}
    assert catalog_conf("c", props) == {
        **BASE, f"{P}.type": "hive", f"{P}.uri": "thrift://hms:9083",
        f"{P}.warehouse": "s3a://lake/wh"}


def test_hadoop_catalog() -> None:
    assert catalog_conf("c", {"type": "hadoop", "warehouse": "hdfs://nn:8020/wh"}) == {
        **BASE, f"{P}.type": "hadoop", f"{P}.warehouse": "hdfs://nn:8020/wh"}


def test_glue_catalog_uses_iceberg_glue_catalog_impl() -> None:
    props = {"type": "glue", "glue.region": "us-east-1", "glue.endpoint": "http://127.0.0.1:5000",
             "glue.id": "123456789012", "warehouse": "s3://lake/wh"}
    assert catalog_conf("c", props) == {
        **BASE, f"{P}.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
        f"{P}.client.region": "us-east-1", f"{P}.glue.endpoint": "http://127.0.0.1:5000",
        f"{P}.glue.id": "123456789012", f"{P}.warehouse": "s3://lake/wh"}


def test_glue_static_keys_are_refused_not_dropped() -> None:
    with pytest.raises(CatalogConfError, match="glue.secret-access-key"):
        catalog_conf("c", {"type": "glue", "glue.secret-access-key": "x"})


def test_explicit_io_impl_session_token_and_operator_hadoop_conf() -> None:
    props = {"type": "hive", "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
             "s3.session-token": "st", "s3.endpoint": "https://minio:9000",
             "fs.s3a.connection.maximum": "200", "fs.s3.impl": "com.example.OtherFs"}
    conf = catalog_conf("c", props)
    assert conf[f"{P}.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf[f"{P}.hadoop.fs.s3a.session.token"] == "st"
    assert conf[f"{P}.hadoop.fs.s3a.aws.credentials.provider"] == \
        "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    assert conf[f"{P}.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    assert conf[f"{P}.hadoop.fs.s3a.connection.maximum"] == "200"
    assert conf[f"{P}.hadoop.fs.s3.impl"] == "com.example.OtherFs"  # the operator's wins
    assert f"{P}.fs.s3a.connection.maximum" not in conf  # Hadoop conf only under hadoop.


def test_session_hadoop_conf_of_the_one_shot_job() -> None:
    assert im.session_hadoop_conf({"type": "hive", "s3.endpoint": "http://h:1"}) == {
        "spark.hadoop.fs.s3a.endpoint": "http://h:1",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"}


def test_pyiceberg_only_properties_stay_out() -> None:
    conf = catalog_conf("c", {"type": "rest", "uri": "http://r", "py-io-impl": "x.Y"})
    assert not any("py-io-impl" in k for k in conf)


@pytest.mark.parametrize("props, words", [
    ({"type": "sql", "uri": "mysql://h/db"}, "postgresql"),
    ({"type": "nessie"}, "unknown catalog type"),
    ({"type": "hive", "s3.path-style-access": "yes"}, "expected true or false"),
])
def test_bad_catalogs_are_refused(props: dict[str, str], words: str) -> None:
    with pytest.raises(CatalogConfError, match=words):
        catalog_conf("c", props)


@pytest.mark.parametrize("key", [
    "uri\nspark.sql.catalog.evil", "a=b", "../x", "a..b", "", " uri", "x" * 201, "ké",
    ".hidden", "spark sql",
])
def test_catalog_property_names_are_strictly_parsed(key: str) -> None:
    with pytest.raises(CatalogConfError, match="invalid catalog property name"):
        catalog_conf("c", {"type": "rest", key: "v"})


@pytest.mark.parametrize("key", ["fs.", "fs..s3a.endpoint", "fs.s3a.endpoint\n"])
def test_storage_option_names_are_strictly_parsed(key: str) -> None:
    with pytest.raises(CatalogConfError):
        catalog_conf("c", {"type": "rest", key: "v"})


def test_a_spec_with_a_hostile_property_never_starts() -> None:
    """The job refuses the spec before Spark (SpecError: not retryable)."""
    spec = im.parse_spec({"catalog_name": "c", "table": "ns.t",
                          "allowed_locations": ["/wh"], "action": "compaction",
                          "catalog_properties": {"type": "rest", "uri\nx": "v"}})
    with pytest.raises(im.SpecError, match="invalid catalog property name"):
        im.catalog_conf(spec.catalog_name, spec.catalog_properties)


@pytest.mark.parametrize("key", [
    "spark.conf.spark.hadoop.fs.s3a.endpoint", "spark.conf.spark.hadoop.fs.s3a.access.key",
    "spark.conf.spark.sql.catalog.c.uri", "spark.conf.spark.sql.catalog.c.io-impl",
    "spark.conf.fs.s3a.endpoint", "spark.conf.spark.jars", "spark.conf.spark.jars.packages",
])
def test_a_table_owner_cannot_set_storage_or_catalog_conf_through_policy(key: str) -> None:
    assert validate_policy({}, {key: "http://evil:1"}), key


@pytest.mark.parametrize("table", ["ns.t;spark.hadoop.fs.s3a.endpoint=x", "ns.`t`", "ns",
                                   "ns.t\n", "ns..t"])
def test_a_table_owner_cannot_inject_through_identifiers(table: str) -> None:
    with pytest.raises(im.SpecError, match="invalid table identifier"):
        job_spec.parse_table(table)


def access(kind: CatalogType, props: dict[str, str], storage: dict[str, str]) -> CatalogAccess:
    return CatalogAccess("c", kind, props, storage)


def test_job_properties_carry_storage_options_and_hadoop_catalogs() -> None:
    storage = {"s3.endpoint": "http://m:1", "fs.s3a.connection.maximum": "9"}
    assert job_properties(access(CatalogType.HADOOP, {"warehouse": "s3://b/wh"}, storage)) == {
        "type": "hadoop", "warehouse": "s3://b/wh", **storage}
    assert job_properties(access(CatalogType.REST, {"uri": "http://r"}, storage)) == {
        "type": "rest", "uri": "http://r", **storage}
    hive = job_properties(access(CatalogType.HIVE, {"uri": "thrift://h:1"}, storage))
    assert catalog_conf("c", hive)[f"{P}.hadoop.fs.s3a.connection.maximum"] == "9"
