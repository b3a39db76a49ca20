"""The Iceberg maintenance job under a real spark-submit, against a real PostgreSQL JDBC catalog.

pyiceberg writes the table (as TMS's own inspection code would see it) and Spark compacts it
through the same catalog rows, which is the data path production uses end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.spark.provision import ICEBERG_RUNTIME_JAR
from tms.spark.settings import SparkSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TMS_HOME = Path(os.environ.get("TMS_HOME", REPO / ".tms"))
CATALOG_NAME = "tms_it"
APPENDS = 20
ROWS_PER_APPEND = 50
SPARK_SUBMIT_TIMEOUT_S = 300
SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def _catalog_properties(pg: Any, warehouse: Path) -> dict[str, str]:
    # pyiceberg's SqlCatalog takes a SQLAlchemy URL; the job maps it onto Iceberg's JdbcCatalog.
    uri = pg.dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    return {"type": "sql", "uri": uri, "warehouse": warehouse.as_uri()}


def _run_job(tmp_path: Path, spec: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    settings = SparkSettings.from_env(TMS_HOME)
    assert any(Path(j).name == ICEBERG_RUNTIME_JAR for j in settings.jars) or settings.packages, (
        f"Iceberg runtime not provisioned in {TMS_HOME}/jars; run scripts/setup"
    )
    spec_file, result_file = tmp_path / "spec.json", tmp_path / "result.json"
    spec_file.write_text(json.dumps(spec))
    argv = settings.submit_argv(
        str(ICEBERG_MAINTENANCE_APP), ["--spec", str(spec_file), "--result", str(result_file)]
    )
    proc = subprocess.run(argv, env=settings.submit_env(os.environ), capture_output=True,
                          text=True, timeout=SPARK_SUBMIT_TIMEOUT_S)
    assert result_file.exists(), f"no result file; spark-submit stderr:\n{proc.stderr[-4000:]}"
    return proc.returncode, json.loads(result_file.read_text()), proc.stderr


def _data_files(catalog: SqlCatalog, identifier: str) -> int:
    snapshot = catalog.load_table(identifier).current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return int(snapshot.summary["total-data-files"] or 0)


def test_compaction_rewrites_small_files(pg: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    props = _catalog_properties(pg, warehouse)
    catalog = SqlCatalog(CATALOG_NAME, **props)
    namespace = f"it_{uuid.uuid4().hex[:8]}"
    identifier = f"{namespace}.events"
    catalog.create_namespace(namespace)
    table = catalog.create_table(identifier, schema=SCHEMA)
    for batch in range(APPENDS):
        ids = range(batch * ROWS_PER_APPEND, (batch + 1) * ROWS_PER_APPEND)
        table.append(pa.table({"id": list(ids), "payload": [f"row-{i}" for i in ids]},
                              schema=SCHEMA))
    assert _data_files(catalog, identifier) == APPENDS

    rc, result, stderr = _run_job(tmp_path, {
        "catalog_name": CATALOG_NAME,
        "catalog_properties": props,
        "table": identifier,
        "action": "compaction",
        "options": {"min-input-files": "2", "target-file-size-bytes": str(64 * 1024 * 1024)},
        "allowed_locations": [str(warehouse)],
    })

    assert rc == 0, f"{result}\n{stderr[-4000:]}"
    assert result["ok"] is True and result["action"] == "compaction"
    assert result["spark_app_id"]
    assert result["result"]["rewritten_data_files_count"] == APPENDS
    assert 1 <= result["result"]["added_data_files_count"] <= 2
    assert result["result"]["failed_data_files_count"] == 0
    reloaded = catalog.load_table(identifier)
    assert _data_files(catalog, identifier) == result["result"]["added_data_files_count"]
    assert reloaded.scan().to_arrow().num_rows == APPENDS * ROWS_PER_APPEND


def test_missing_table_reports_failure(pg: Any, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    props = _catalog_properties(pg, warehouse)
    SqlCatalog(CATALOG_NAME, **props).create_namespace("present")
    missing = "present.no_such_table"

    rc, result, stderr = _run_job(tmp_path, {
        "catalog_name": CATALOG_NAME,
        "catalog_properties": props,
        "table": missing,
        "action": "compaction",
        "options": {},
        "allowed_locations": [str(warehouse)],
    })

    assert rc == 1, stderr[-4000:]
    assert result["ok"] is False
    assert result["error_type"]
    assert "no_such_table" in result["error"]
    assert len(result["error"]) <= 4000
