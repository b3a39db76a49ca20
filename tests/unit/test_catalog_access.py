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
