"""An Iceberg REST catalog on 127.0.0.1: Iceberg's own server-side handlers behind the JDK's
HTTP server (``java/RestCatalogServer.java``: routing and JSON only, every catalog operation is
``org.apache.iceberg.rest.CatalogHandlers``), backed by Iceberg's JdbcCatalog on a PostgreSQL
database or by its in-memory catalog, files through ``HadoopFileIO`` (S3 through S3A when a
moto server and the S3A jars are given).

No ready-made REST catalog server is installable from the registries reachable here (PyPI,
Debian, npm); the Iceberg runtime jar the project provisions carries the server-side code.
Backed by Iceberg's HadoopCatalog, the same server writes real HadoopCatalog tables (version
hint and ``vN.metadata.json`` files) from pyiceberg's commits.

With ``token``, every call must carry ``Authorization: Bearer TOKEN``; with ``credential``
(``id:secret``) too, the OAuth2 client-credentials exchange at ``/v1/oauth/tokens`` hands that
token out, as Iceberg's and pyiceberg's ``credential`` property expects.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.java_build import (
    JavaUnavailable,
    compile_sources,
    java_process,
    pyspark_classpath,
    s3a_jars,
    wait_until,
)
from tests.servers.moto import MotoServer
from tms.local.ports import free_port
from tms.spark.provision import ICEBERG_RUNTIME_JAR, POSTGRES_JDBC_JAR, SHADED_JACKSON_JAR

REST_START_TIMEOUT_S = 90.0
REST_SOURCES = ("RestCatalogServer.java", "org/apache/iceberg/rest/TmsRestMapper.java")
REST_MAIN = "RestCatalogServer"
REST_HEAP = "-Xmx384m"
HADOOP_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"
IN_MEMORY_CATALOG = "org.apache.iceberg.inmemory.InMemoryCatalog"


@dataclass(frozen=True)
class JdbcBackend:
    """The PostgreSQL database the REST server keeps its catalog in (JdbcCatalog)."""

    url: str  # jdbc:postgresql://127.0.0.1:PORT/DB
    user: str
    password: str = ""


@dataclass(frozen=True)
class RestCatalog:
    """A running REST catalog: ``uri`` is http://127.0.0.1:PORT."""

    uri: str
    warehouse: str
    log_path: Path
    start_s: float
    token: str | None = field(default=None, repr=False)
    credential: str | None = field(default=None, repr=False)
    s3: MotoServer | None = None

    def pyiceberg_properties(self) -> dict[str, str]:
        """What ``load_catalog(name, **props)`` takes to reach this catalog (and its S3)."""
        props = {"type": "rest", "uri": self.uri}
        if self.token:
            props["token"] = self.token
        if self.s3 is not None:
            props.update({"s3.endpoint": self.s3.endpoint, "s3.region": self.s3.region,
                          "s3.access-key-id": self.s3.access_key,
                          "s3.secret-access-key": self.s3.secret_key,
                          "s3.path-style-access": "true"})
        return props


def _escape(value: str) -> str:
    """A value for a Java .properties file."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\:").replace(
        "=", "\\=")


def _config(port: int, warehouse: str, token: str | None, credential: str | None,
            jdbc: JdbcBackend | None, hadoop: bool, s3: MotoServer | None) -> str:
    conf = {"server.port": str(port), "catalog.warehouse": warehouse,
            "catalog.io-impl": HADOOP_FILE_IO}
    if token:
        conf["server.token"] = token
    if credential:
        conf["server.credential"] = credential
    if hadoop:  # Iceberg's HadoopCatalog: version-hint.text + vN.metadata.json in the warehouse
        conf["catalog.type"] = "hadoop"
    elif jdbc is None:
        conf["catalog.catalog-impl"] = IN_MEMORY_CATALOG
    else:
        conf.update({"catalog.type": "jdbc", "catalog.uri": jdbc.url,
                     "catalog.jdbc.user": jdbc.user, "catalog.jdbc.password": jdbc.password,
                     "catalog.jdbc.schema-version": "V1"})
    if s3 is not None:
        conf.update({"hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
                     "hadoop.fs.s3a.endpoint": s3.endpoint,
                     "hadoop.fs.s3a.endpoint.region": s3.region,
                     "hadoop.fs.s3a.path.style.access": "true",
                     "hadoop.fs.s3a.connection.ssl.enabled": "false",
                     "hadoop.fs.s3a.access.key": s3.access_key,
                     "hadoop.fs.s3a.secret.key": s3.secret_key})
    return "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in conf.items())


def _answers(uri: str, token: str | None) -> bool:
    request = urllib.request.Request(f"{uri}/v1/config")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=2) as response:
        return bool(response.status == 200)


@contextmanager
def rest_catalog(root: Path, jars_dir: Path, warehouse: str | None = None, *,
                 token: str | None = None, credential: str | None = None,
                 jdbc: JdbcBackend | None = None, hadoop: bool = False,
                 s3: MotoServer | None = None) -> Iterator[RestCatalog]:
    """Start a REST catalog under ``root`` (config, log; the default warehouse
    ``root/warehouse``); stop it on exit. ``jars_dir`` holds the Iceberg runtime and shaded
    Jackson (and the S3A pair when ``s3`` is given). The backend is the JdbcCatalog on
    ``jdbc``, else with ``hadoop`` Iceberg's HadoopCatalog over the warehouse (so tables
    written through this server are real HadoopCatalog tables), else the in-memory catalog."""
    root.mkdir(parents=True, exist_ok=True)
    jars = [jars_dir.resolve() / ICEBERG_RUNTIME_JAR, jars_dir.resolve() / SHADED_JACKSON_JAR]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise JavaUnavailable(f"the REST catalog server needs {', '.join(missing)}")
    extra = s3a_jars(jars_dir) if s3 is not None else []
    if s3 is not None and not extra:
        raise JavaUnavailable(f"a REST catalog over S3 needs the S3A jars in {jars_dir}")
    if jdbc is not None:
        extra.append(POSTGRES_JDBC_JAR)
    if warehouse is None:
        (root / "warehouse").mkdir(exist_ok=True)
        warehouse = (root / "warehouse").as_uri()
    port = free_port()
    config = root / "rest-catalog.properties"
    config.write_text(_config(port, warehouse, token, credential, jdbc, hadoop, s3))
    config.chmod(0o600)  # holds the token and the backend's password
    base = [*map(str, jars), pyspark_classpath()]
    classes = compile_sources(REST_SOURCES, base)
    uri = f"http://127.0.0.1:{port}"
    log_path = root / "rest-catalog.log"
    started = time.monotonic()
    with java_process(REST_MAIN, [str(config)], [str(classes), *base, *map(str, extra)],
                      log_path, [REST_HEAP], cwd=root) as proc:
        wait_until(lambda: _answers(uri, token), proc, log_path, "REST catalog",
                   REST_START_TIMEOUT_S, port)
        yield RestCatalog(uri, warehouse, log_path, time.monotonic() - started, token,
                          credential, s3)
