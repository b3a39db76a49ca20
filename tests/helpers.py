"""Small helpers shared by the integration and end-to-end tests, among them the one way tests
make a catalog and a table in it (tables are registered by catalog + identifier, and the
catalog must really hold them)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from bench.common.procs import constant_catalog, stub_for
from bench.common.procs import iceberg_catalog as _iceberg_catalog
from tms.domain import Catalog, CatalogSpec, CatalogType
from tms.local import iceberg_data
from tms.local.postgres import LocalPostgres
from tms.local.stack import LocalStack
from tms.storage.roles import CatalogStore
from tms.v1 import tms_pb2

T = TypeVar("T")
# A PySpark app that runs the SQL statements given as arguments (the catalog comes in as Spark
# conf): tests write what pyiceberg cannot (position deletes, table properties) through it.
SPARK_SQL_SCRIPT = """\
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
try:
    for statement in sys.argv[1:]:
        spark.sql(statement).collect()
finally:
    spark.stop()
"""
WAIT_TIMEOUT_S = 240.0
WAIT_STEP_S = 0.1


def wait_for(probe: Callable[[], T | None], what: str, timeout_s: float = WAIT_TIMEOUT_S,
             step_s: float = WAIT_STEP_S) -> T:
    """Poll ``probe`` until it returns something truthy; fail the test naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(step_s)


def iceberg_catalog(stack: LocalStack, name: str = "tms_e2e", warehouse: Path | None = None
                    ) -> tuple[Any, dict[str, str]]:
    """A SQL Iceberg catalog on the stack's PostgreSQL, created in TMS too (the benchmarks'
    helper): tables made in it can be registered as ``catalog=name``."""
    return _iceberg_catalog(stack, name, warehouse)


def store_catalog(store: CatalogStore, catalog_id: str = "c",
                  type: CatalogType = CatalogType.SQL, **fields: Any) -> Catalog:
    """A catalog row for storage tests that never open it (created once, then reused)."""
    found = store.catalog_get(catalog_id)
    if found is not None:
        return found
    created = store.catalog_create(CatalogSpec(catalog_id, type, **fields))
    assert created is not None
    return created


@dataclass
class SqlCatalog:
    """A real pyiceberg SQL catalog in a PostgreSQL database, known to TMS as
    ``catalogs/{catalog_id}`` with its warehouse as the allowed location."""

    catalog_id: str
    properties: dict[str, str]
    warehouse: Path
    spec: CatalogSpec
    _pyiceberg: Any = field(default=None, repr=False)

    @property
    def pyiceberg(self) -> Any:
        if self._pyiceberg is None:
            self._pyiceberg = iceberg_data.load_catalog(self.catalog_id, self.properties)
        return self._pyiceberg

    def table(self, namespace: str = "ns", name: str = "events") -> Any:
        """The pyiceberg table ``namespace.name``, created (empty) when missing."""
        cat = self.pyiceberg
        ident = f"{namespace}.{name}"
        if cat.table_exists(ident):
            return cat.load_table(ident)
        return iceberg_data.create_table(cat, namespace, name)

    def pb(self, namespace: str = "ns", name: str = "events", create: bool = True,
           **over: Any) -> tms_pb2.Table:
        """A RegisterTable body for ``namespace.name`` of this catalog (the table created
        first unless ``create`` is false)."""
        if create:
            self.table(namespace, name)
        fields: dict[str, Any] = dict(format="iceberg", catalog=self.catalog_id,
                                      namespace=namespace, table_name=name)
        fields.update(over)
        return tms_pb2.Table(**fields)


def sql_catalog(store: CatalogStore, dsn: str, warehouse: Path, catalog_id: str = "cat",
                **spec_fields: Any) -> SqlCatalog:
    """Create (in TMS, through the store) a SQL catalog whose Iceberg tables live in the
    PostgreSQL database ``dsn`` and under ``warehouse``."""
    warehouse.mkdir(parents=True, exist_ok=True)
    props = iceberg_data.sql_catalog_properties(dsn, warehouse.as_uri())
    spec = CatalogSpec(catalog_id, CatalogType.SQL,
                       properties={k: v for k, v in props.items() if k != "type"},
                       allowed_locations=(str(warehouse),))
    spec = replace(spec, **spec_fields)
    if store.catalog_get(catalog_id) is None:
        assert store.catalog_create(spec) is not None
    return SqlCatalog(catalog_id, props, warehouse, spec)


__all__ = ["SqlCatalog", "constant_catalog", "iceberg_catalog", "sql_catalog", "store_catalog",
           "stub_for", "wait_for"]


@contextmanager
def own_postgres(prefix: str) -> Iterator[LocalPostgres]:
    """A PostgreSQL server of its own, stopped and removed afterwards. Not under pytest's tmp
    dir: that one is private to us, and the server may run as the postgres system user,
    which must be able to reach its directory."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    server = LocalPostgres(root / "pg").start()
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
