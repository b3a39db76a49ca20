"""A catalog's connection as pyiceberg and the Spark job get it: credentials from secret
references, never inside the job's URL, and nothing secret in a repr."""

from __future__ import annotations

from datetime import UTC, datetime

from tms.catalogs import access, job_properties, pyiceberg_properties
from tms.domain import Catalog, CatalogSpec, CatalogType, DiscoveryStatus

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ENV = {"TMS_SECRET_PG": "p@ss/w:rd"}


def _catalog(kind: CatalogType, uri: str, secrets: dict[str, str]) -> Catalog:
    return Catalog(1, CatalogSpec("lake", kind, {"uri": uri}, secrets), DiscoveryStatus(),
                   NOW, NOW)


def test_sql_password_reference_reaches_pyiceberg_quoted_and_the_job_apart() -> None:
    cat = access(_catalog(CatalogType.SQL, "postgresql+psycopg://tms@127.0.0.1:5432/db",
                          {"jdbc.password": "env:TMS_SECRET_PG"}), ENV)
    assert pyiceberg_properties(cat)["uri"] == (
        "postgresql+psycopg://tms:p%40ss%2Fw%3Ard@127.0.0.1:5432/db")
    job = job_properties(cat)
    assert job["uri"] == "postgresql+psycopg://127.0.0.1:5432/db"
    assert (job["jdbc.user"], job["jdbc.password"]) == ("tms", "p@ss/w:rd")
    assert "p@ss" not in repr(cat)


def test_jdbc_uri_becomes_a_sqlalchemy_url_keeping_ipv6_host_port_and_query() -> None:
    cat = access(_catalog(CatalogType.JDBC, "jdbc:postgresql://[::1]:5432/db?ssl=true",
                          {"jdbc.password": "env:TMS_SECRET_PG"}), ENV)
    assert job_properties(cat)["uri"] == "postgresql+psycopg://[::1]:5432/db?ssl=true"
    assert pyiceberg_properties(cat)["uri"].endswith("@[::1]:5432/db?ssl=true")


def test_a_uri_given_whole_as_a_secret_is_split_for_the_job() -> None:
    cat = access(_catalog(CatalogType.SQL, "", {"uri": "env:TMS_SECRET_URI"}),
                 {"TMS_SECRET_URI": "postgresql+psycopg://u:p%40x@h/db"})
    job = job_properties(cat)
    assert job["uri"] == "postgresql+psycopg://h/db"
    assert (job["jdbc.user"], job["jdbc.password"]) == ("u", "p@x")


S3 = {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1",
      "s3.path-style-access": "true"}
S3_REFS = {"s3.access-key-id": "env:TMS_SECRET_S3_KEY",
           "s3.secret-access-key": "env:TMS_SECRET_S3_SECRET"}
S3_ENV = {"TMS_SECRET_S3_KEY": "AKIA-TEST", "TMS_SECRET_S3_SECRET": "s3-secret-value",
          "TMS_SECRET_TOKEN": "rest-token-value", "TMS_SECRET_GLUE_KEY": "glue-key",
          "TMS_SECRET_GLUE_SECRET": "glue-secret"}


def _typed(kind: CatalogType, props: dict[str, str], secrets: dict[str, str]) -> Catalog:
    return Catalog(1, CatalogSpec("lake", kind, props, {**secrets, **S3_REFS},
                                  storage_options=dict(S3)), DiscoveryStatus(), NOW, NOW)


def test_each_type_opens_with_pyicebergs_own_property_names() -> None:
    rest = access(_typed(CatalogType.REST, {"uri": "https://cat/api", "warehouse": "wh"},
                         {"token": "env:TMS_SECRET_TOKEN"}), S3_ENV)
    hive = access(_typed(CatalogType.HIVE, {"uri": "thrift://hms:9083", "warehouse": "s3://b/w",
                                            "hive.hive2-compatible": "true"}, {}), S3_ENV)
    glue = access(_typed(CatalogType.GLUE, {"glue.region": "eu-west-1",
                                            "glue.endpoint": "http://127.0.0.1:5000"},
                         {"glue.access-key-id": "env:TMS_SECRET_GLUE_KEY",
                          "glue.secret-access-key": "env:TMS_SECRET_GLUE_SECRET"}), S3_ENV)
    s3 = {**S3, "s3.access-key-id": "AKIA-TEST", "s3.secret-access-key": "s3-secret-value"}
    assert pyiceberg_properties(rest) == {"type": "rest", "uri": "https://cat/api",
                                          "warehouse": "wh", "token": "rest-token-value", **s3}
    assert pyiceberg_properties(hive) == {"type": "hive", "uri": "thrift://hms:9083",
                                          "warehouse": "s3://b/w",
                                          "hive.hive2-compatible": "true", **s3}
    assert pyiceberg_properties(glue) == {"type": "glue", "glue.region": "eu-west-1",
                                          "glue.endpoint": "http://127.0.0.1:5000",
                                          "glue.access-key-id": "glue-key",
                                          "glue.secret-access-key": "glue-secret", **s3}
    for cat in (rest, hive, glue):  # storage secrets are storage options, hidden in repr
        assert cat.storage_options == s3
        assert "s3-secret-value" not in repr(cat) and "rest-token-value" not in repr(cat)


def test_a_hadoop_catalog_has_no_pyiceberg_catalog() -> None:
    import pytest

    from tms.catalogs import CatalogUnsupported

    cat = access(_typed(CatalogType.HADOOP, {"warehouse": "s3://b/w"}, {}), S3_ENV)
    with pytest.raises(CatalogUnsupported):
        pyiceberg_properties(cat)
    assert cat.storage_options["s3.secret-access-key"] == "s3-secret-value"
