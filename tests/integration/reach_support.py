"""The reach matrix's cells on the scheduler side: one TMS catalog per catalog type and
storage, backed by a real server on loopback (PostgreSQL for sql, the REST catalog server, the
Hive Metastore, moto's Glue, Iceberg's HadoopCatalog layout written through a REST server
backed by it), tables written by pyiceberg through that real catalog.

Secrets always travel by reference (``env:TMS_SECRET_*``): the test puts the values in the
environment the API and the scheduler resolve them from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.servers.hive_metastore import HiveMetastore, hive_metastore
from tests.servers.java_build import S3A_JARS, JavaUnavailable, s3a_jars
from tests.servers.moto import MotoServer, moto_server
from tests.servers.rest_catalog import JdbcBackend, RestCatalog, rest_catalog
from tms.local.iceberg_data import SCHEMA, batch

BUCKET = "reach"
REST_TOKEN = "reach-rest-token-0123456789"
S3_KEY_ENV = "TMS_SECRET_REACH_S3_KEY"
S3_SECRET_ENV = "TMS_SECRET_REACH_S3_SECRET"
REST_TOKEN_ENV = "TMS_SECRET_REACH_REST_TOKEN"
GLUE_KEY_ENV = "TMS_SECRET_REACH_GLUE_KEY"
GLUE_SECRET_ENV = "TMS_SECRET_REACH_GLUE_SECRET"
COMMITS = 3  # appends per table: 3 snapshots, 3 data files
ROWS_PER_COMMIT = 5
CATALOG_TYPES = ("sql", "rest", "hive", "glue", "hadoop")
STORAGES = ("local", "s3")


@dataclass
class Servers:
    """Every server the matrix needs, started once per module; ``None`` where the S3A jars
    are missing (the cells over S3 that need them are skipped, saying so)."""

    root: Path
    moto: MotoServer
    pg_dsn: str
    hms: HiveMetastore | None = None
    rest: RestCatalog | None = None  # JdbcCatalog backend, S3A when the jars are there
    rest_hadoop: dict[str, RestCatalog] = field(default_factory=dict)  # storage -> server
    start_s: dict[str, float] = field(default_factory=dict)
    why_not: dict[str, str] = field(default_factory=dict)

    def environ(self) -> dict[str, str]:
        return {S3_KEY_ENV: self.moto.access_key, S3_SECRET_ENV: self.moto.secret_key,
                REST_TOKEN_ENV: REST_TOKEN, GLUE_KEY_ENV: self.moto.access_key,
                GLUE_SECRET_ENV: self.moto.secret_key}

    def warehouse(self, ctype: str, storage: str) -> str:
        if storage == "s3":
            return f"s3://{BUCKET}/{ctype}"
        path = Path(os.path.realpath(self.root)) / "lake" / ctype
        path.mkdir(parents=True, exist_ok=True)
        return str(path)


def start_servers(stack: ExitStack, root: Path, pg_dsn: str, jars_dir: Path) -> Servers:
    moto = stack.enter_context(moto_server(root / "moto"))
    moto.create_bucket(BUCKET)
    servers = Servers(root, moto, pg_dsn)
    s3 = moto if s3a_jars(jars_dir) else None
    if s3 is None:
        servers.why_not["s3a"] = f"the S3A jars ({', '.join(S3A_JARS)}) are not in {jars_dir}"
    try:
        servers.hms = stack.enter_context(hive_metastore(root / "hms", s3, jars_dir))
        servers.start_s["hive"] = servers.hms.start_s
        pg_url, pg_user = _jdbc(pg_dsn)
        servers.rest = stack.enter_context(rest_catalog(
            root / "rest", jars_dir, token=REST_TOKEN, jdbc=JdbcBackend(pg_url, pg_user), s3=s3))
        servers.start_s["rest"] = servers.rest.start_s
        for storage in STORAGES if s3 is not None else ("local",):
            server = stack.enter_context(rest_catalog(
                root / f"rest-hadoop-{storage}", jars_dir, servers.warehouse("hadoop", storage),
                hadoop=True, s3=s3))
            servers.rest_hadoop[storage] = server
            servers.start_s[f"rest-hadoop-{storage}"] = server.start_s
    except JavaUnavailable as e:
        servers.why_not["java"] = str(e)
    return servers


def _jdbc(dsn: str) -> tuple[str, str]:
    """A libpq URL (postgresql://user@host:port/db) as a JDBC URL and its user."""
    rest = dsn.split("://", 1)[1]
    user, _, hostpart = rest.rpartition("@")
    return f"jdbc:postgresql://{hostpart}", user or "postgres"


S3_STORAGE = {"s3.region": "us-east-1", "s3.path-style-access": "true"}
S3_SECRETS = {"s3.access-key-id": f"env:{S3_KEY_ENV}",
              "s3.secret-access-key": f"env:{S3_SECRET_ENV}"}


@dataclass
class Cell:
    """One catalog type on one storage: the TMS catalog to create and the pyiceberg
    catalog (with resolved secrets) that writes its tables."""

    ctype: str
    storage: str
    warehouse: str
    properties: dict[str, str]
    secrets: dict[str, str]
    storage_options: dict[str, str]
    writer: Any  # a pyiceberg catalog
    explicit_location: bool = True  # False: the catalog picks (HadoopCatalog)

    def table_location(self, namespace: str, name: str) -> str:
        return f"{self.warehouse}/{namespace}/{name}"

    def write(self, namespace: str, name: str, commits: int = COMMITS) -> Any:
        """Create ``namespace.name`` and append ``commits`` batches; the pyiceberg table."""
        self.writer.create_namespace_if_not_exists(namespace)
        kw = {"location": self.table_location(namespace, name)} if self.explicit_location else {}
        table = self.writer.create_table(f"{namespace}.{name}", schema=SCHEMA, **kw)
        for i in range(commits):
            table.append(batch(i * ROWS_PER_COMMIT, ROWS_PER_COMMIT))
        return self.writer.load_table(f"{namespace}.{name}")


def _resolved(refs: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    return {k: environ[v.removeprefix("env:")] for k, v in refs.items()}


def make_cell(servers: Servers, ctype: str, storage: str, pg_dsn: str) -> Cell:
    """The cell, or a pytest skip naming what is missing for it."""
    from pyiceberg.catalog import load_catalog

    needs_s3a = storage == "s3" and ctype in ("rest", "hive", "hadoop")
    if needs_s3a and "s3a" in servers.why_not:
        pytest.skip(f"{ctype} over S3 needs S3A in the catalog server: {servers.why_not['s3a']}")
    if ctype in ("rest", "hive", "hadoop") and "java" in servers.why_not:
        pytest.skip(servers.why_not["java"])
    env = servers.environ()
    wh = servers.warehouse(ctype, storage)
    storage_options = dict(S3_STORAGE, **{"s3.endpoint": servers.moto.endpoint}) \
        if storage == "s3" else {}
    secrets = dict(S3_SECRETS) if storage == "s3" else {}
    props: dict[str, str]
    explicit = True
    if ctype == "sql":
        props = {"uri": pg_dsn.replace("postgresql://", "postgresql+psycopg://", 1),
                 "warehouse": wh}
    elif ctype == "rest":
        assert servers.rest is not None
        props = {"uri": servers.rest.uri}
        secrets["token"] = f"env:{REST_TOKEN_ENV}"
    elif ctype == "hive":
        assert servers.hms is not None
        # Hive 2.3 knows no 'timestamp with local time zone': pyiceberg maps timestamptz to
        # plain timestamp in its Hive 2 mode
        props = {"uri": servers.hms.uri, "warehouse": wh, "hive.hive2-compatible": "true"}
    elif ctype == "glue":
        props = {"glue.region": servers.moto.region, "glue.endpoint": servers.moto.endpoint,
                 "warehouse": wh}
        secrets.update({"glue.access-key-id": f"env:{GLUE_KEY_ENV}",
                        "glue.secret-access-key": f"env:{GLUE_SECRET_ENV}"})
    else:  # hadoop: written through a REST server backed by Iceberg's HadoopCatalog
        props = {"warehouse": wh}
        explicit = False
    writer_props = {**props, **storage_options, **_resolved(secrets, env)}
    if ctype == "hadoop":
        server = servers.rest_hadoop[storage]
        writer_props = {**server.pyiceberg_properties(), **storage_options,
                        **_resolved(S3_SECRETS if storage == "s3" else {}, env)}
    else:
        writer_props["type"] = ctype
    # the sql catalog's name is a column of its tables: the writer's is the TMS catalog id
    writer = load_catalog(f"{ctype}_{storage}", **writer_props)
    return Cell(ctype, storage, wh, props, secrets, storage_options, writer, explicit)


CellFactory = Callable[[str, str], Cell]


def iter_cells() -> Iterator[tuple[str, str]]:
    for ctype in CATALOG_TYPES:
        for storage in STORAGES:
            yield ctype, storage
