"""A Hive Metastore (Thrift) on 127.0.0.1, from pyspark's own Hive 2.3 jars, with an embedded
Derby database in a temporary directory.

Hive 2.3's ``HiveMetaStore`` main binds every interface (it has no bind-host setting), so the
server is started through ``java/LoopbackMetastore.java``: Hive's own handler
(``HMSHandler`` over the ObjectStore) behind a Thrift socket bound to loopback. The schema is
created at start (``datanucleus.schema.autoCreateAll``, no schema verification, and Hive's
transaction tables, which the commit lock needs).

S3: pyiceberg writes the metadata files itself, but the metastore checks (and creates) a new
database's and table's directory through Hadoop's FileSystem, so an ``s3://`` location needs
S3A (hadoop-aws + the AWS SDK bundle) on the server's classpath and ``fs.s3a.*`` settings;
without them ``create_table`` fails with ClassNotFoundException S3AFileSystem. Give ``s3`` (a
moto server) and a jars directory holding the pair.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

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

HMS_START_TIMEOUT_S = 120.0
HMS_SOURCE = "LoopbackMetastore.java"
HMS_MAIN = "LoopbackMetastore"
HMS_HEAP = "-Xmx512m"


@dataclass(frozen=True)
class HiveMetastore:
    """A running metastore: ``uri`` is thrift://127.0.0.1:PORT."""

    uri: str
    warehouse: str  # the metastore's default warehouse (a local file: URI)
    log_path: Path
    start_s: float  # seconds from launch until a pyiceberg call answered
    s3: MotoServer | None = field(default=None)

    def pyiceberg_properties(self, warehouse: str | None = None) -> dict[str, str]:
        """What ``load_catalog(name, **props)`` takes to reach this metastore (and its S3)."""
        props = {"type": "hive", "uri": self.uri, "warehouse": warehouse or self.warehouse}
        if self.s3 is not None:
            props.update({"s3.endpoint": self.s3.endpoint, "s3.region": self.s3.region,
                          "s3.access-key-id": self.s3.access_key,
                          "s3.secret-access-key": self.s3.secret_key,
                          "s3.path-style-access": "true"})
        return props


def _site(root: Path, warehouse: Path, s3: MotoServer | None) -> str:
    props = {
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": warehouse.as_uri(),
    }
    if s3 is not None:
        props.update({
            "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "fs.s3a.endpoint": s3.endpoint, "fs.s3a.endpoint.region": s3.region,
            "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": s3.access_key, "fs.s3a.secret.key": s3.secret_key,
        })
    body = "".join(f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def _answers(uri: str) -> bool:
    from pyiceberg.catalog.hive import HiveCatalog

    return ("default",) in HiveCatalog("probe", uri=uri).list_namespaces()


@contextmanager
def hive_metastore(root: Path, s3: MotoServer | None = None,
                   jars_dir: Path | None = None) -> Iterator[HiveMetastore]:
    """Start a metastore under ``root`` (Derby database, warehouse, conf, log); stop it on
    exit. With ``s3``, the S3A jars must be in ``jars_dir`` (JavaUnavailable otherwise)."""
    root.mkdir(parents=True, exist_ok=True)
    conf, warehouse = root / "conf", root / "warehouse"
    conf.mkdir(exist_ok=True)
    warehouse.mkdir(exist_ok=True)
    extra = s3a_jars(jars_dir) if jars_dir is not None else []
    if s3 is not None and not extra:
        raise JavaUnavailable(f"a metastore over S3 needs the S3A jars in {jars_dir}")
    site = conf / "hive-site.xml"
    site.write_text(_site(root, warehouse, s3))
    site.chmod(0o600)  # holds the test's S3 keys
    classes = compile_sources([HMS_SOURCE], [pyspark_classpath()])
    port = free_port()
    uri = f"thrift://127.0.0.1:{port}"
    log_path = root / "metastore.log"
    started = time.monotonic()
    with java_process(HMS_MAIN, [str(port)],
                      [str(conf), str(classes), pyspark_classpath(), *map(str, extra)],
                      log_path, [HMS_HEAP, f"-Dderby.stream.error.file={root / 'derby.log'}"],
                      cwd=root) as proc:
        wait_until(lambda: _answers(uri), proc, log_path, "hive metastore", HMS_START_TIMEOUT_S,
                   port)
        yield HiveMetastore(uri, warehouse.as_uri(), log_path, time.monotonic() - started, s3)
