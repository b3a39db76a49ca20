"""Real Iceberg tables and a real executor for the job's defenses: pyiceberg SQL catalogs on
the test PostgreSQL, the production spark-submit engine, and an executor on the TMS schema
whose format plugin hands over the exact job spec a test wants (the attacker's)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyiceberg.catalog.sql import SqlCatalog

from tests.helpers import store_catalog
from tms.domain import Decision, JobSpec, Operation, Table, TableSpec
from tms.engines.base import ExecutionEngine
from tms.engines.spark_submit import SparkSubmitEngine
from tms.executor.loop import Executor
from tms.executor.retry import RetryPolicy
from tms.formats.base import TableFormatPlugin
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.local.iceberg_data import append_batches, create_table, sql_catalog_properties
from tms.spark.provision import ICEBERG_RUNTIME_JAR
from tms.spark.settings import SparkSettings
from tms.storage.postgres import PostgresStore
from tms.storage.roles import EnqueueParams

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess

REPO = Path(__file__).resolve().parents[2]
TMS_HOME = Path(os.environ.get("TMS_HOME", REPO / ".tms"))
CATALOG_NAME = "tms_sec"
ROWS_PER_COMMIT = 20
MAX_ATTEMPTS = 3


def spark_settings() -> SparkSettings:
    settings = SparkSettings.from_env(TMS_HOME)
    assert any(Path(j).name == ICEBERG_RUNTIME_JAR for j in settings.jars) or settings.packages, (
        f"Iceberg runtime not provisioned in {TMS_HOME}/jars; run scripts/setup")
    return settings


def cold_engine() -> SparkSubmitEngine:
    return SparkSubmitEngine(spark_settings())


class Lake:
    """A SQL catalog on the test PostgreSQL, its warehouse in ``root/allowed``."""

    def __init__(self, dsn: str, root: Path, password: str | None = None) -> None:
        self.root = root
        self.allowed = root / "allowed"
        self.outside = root / "outside"
        self.allowed.mkdir(parents=True)
        self.outside.mkdir()
        self.props = sql_catalog_properties(dsn, self.allowed.as_uri())
        if password is not None:  # trust auth ignores it: a secret to look for, not to use
            self.props["uri"] = self.props["uri"].replace("@", f":{password}@", 1)
        self.catalog = SqlCatalog(CATALOG_NAME, **self.props)
        self.namespace = f"sec_{uuid.uuid4().hex[:8]}"

    def table(self, name: str, commits: int = 2, location: Path | None = None) -> Any:
        if location is None:
            table = create_table(self.catalog, self.namespace, name)
        else:
            from tms.local.iceberg_data import SCHEMA

            self.catalog.create_namespace_if_not_exists(self.namespace)
            table = self.catalog.create_table(f"{self.namespace}.{name}", schema=SCHEMA,
                                              location=location.as_uri())
        append_batches(table, commits, ROWS_PER_COMMIT)
        return table

    def spec(self, name: str, action: str = "compaction",
             options: Mapping[str, str] | None = None,
             allowed: list[str] | None = None, **props: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "catalog_name": CATALOG_NAME, "catalog_properties": {**self.props, **props},
            "table": f"{self.namespace}.{name}", "action": action,
            "options": dict(options or {"min-input-files": "2"})}
        # required in every spec; by default the lake's warehouse (as a catalog would allow)
        spec["allowed_locations"] = allowed if allowed is not None else [self.props["warehouse"]]
        return spec

    def job(self, *args: Any, **kwargs: Any) -> JobSpec:
        return JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), self.spec(*args, **kwargs))


class GivenJobs(TableFormatPlugin):
    """A format whose jobs are set by the test, per table id."""

    name = "iceberg"
    actions = ("compaction", "remove_orphan_files")

    def __init__(self) -> None:
        self.jobs: dict[str, JobSpec] = {}

    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        raise NotImplementedError

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime) -> list[Decision]:
        raise NotImplementedError

    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        return self.jobs[table.table_id]


class Runner:
    """An executor on a real store: ``run`` queues one operation and runs one attempt."""

    def __init__(self, store: PostgresStore, workdir: Path,
                 engine: ExecutionEngine | None = None, **executor_kw: Any) -> None:
        self.store, self.workdir = store, workdir
        self.format = GivenJobs()
        self.executor = Executor(store, {"iceberg": self.format}, engine or cold_engine(),
                                 "sec-executor", workdir, retry=RetryPolicy(0.0, 0.0),
                                 **executor_kw)

    def run(self, table_id: str, job: JobSpec, action: str = "compaction") -> Operation:
        store_catalog(self.store, CATALOG_NAME)  # the row the executor looks up (never opened)
        view = self.store.table_register(TableSpec(
            table_id=table_id, format="iceberg", catalog=CATALOG_NAME, namespace="ns",
            table_name=table_id))
        assert view is not None
        self.format.jobs[table_id] = job
        op_id = self.store.operation_enqueue(EnqueueParams(view.table, action, "manual", "test",
                                                           MAX_ATTEMPTS, 0))
        assert op_id is not None
        assert self.executor.run_once()
        op = self.store.operation_get(table_id, op_id)
        assert op is not None
        return op
