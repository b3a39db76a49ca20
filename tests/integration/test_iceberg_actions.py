"""Every Iceberg maintenance action of the PySpark job, run by a real spark-submit.

Tables live in a pyiceberg SqlCatalog on a real PostgreSQL (the ``pg`` fixture); the job reaches
the same catalog rows through Iceberg's JdbcCatalog. Each test reads the table back with pyiceberg
afterwards: the action must have changed the table's layout the way it claims, and never its rows.
A cold spark-submit costs 10-15 s, so tables are tiny and each test runs the job once.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from tests.helpers import SPARK_SQL_SCRIPT
from tms.jobs import ICEBERG_MAINTENANCE_APP
from tms.jobs.iceberg_maintenance import ICEBERG_EXTENSIONS, catalog_conf
from tms.local.iceberg_data import append_batches, create_table, sql_catalog_properties
from tms.spark.provision import ICEBERG_RUNTIME_JAR
from tms.spark.settings import SparkSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TMS_HOME = Path(os.environ.get("TMS_HOME", REPO / ".tms"))
CATALOG_NAME = "tms_actions"
ROWS_PER_COMMIT = 50
SPARK_SUBMIT_TIMEOUT_S = 300



class Env:
    """One test's catalog, table and scratch directory."""

    def __init__(self, pg: Any, tmp_path: Path) -> None:
        warehouse = tmp_path / "warehouse"
        warehouse.mkdir()
        self.tmp_path = tmp_path
        self.props = sql_catalog_properties(pg.dsn, warehouse.as_uri())
        self.catalog = SqlCatalog(CATALOG_NAME, **self.props)
        self.namespace = f"it_{uuid.uuid4().hex[:8]}"
        self.identifier = f"{self.namespace}.events"
        self.runs = 0

    def create(self, commits: int) -> Table:
        table = create_table(self.catalog, self.namespace, "events")
        append_batches(table, commits, ROWS_PER_COMMIT)
        return table

    def table(self) -> Table:
        return self.catalog.load_table(self.identifier)

    def summary(self) -> dict[str, str]:
        snapshot = self.table().current_snapshot()
        assert snapshot is not None and snapshot.summary is not None
        return dict(snapshot.summary.additional_properties)

    def rows(self) -> int:
        return int(self.table().scan().to_arrow().num_rows)

    def submit(self, app: str, args: list[str],
               extra_conf: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        settings = SparkSettings.from_env(TMS_HOME)
        provisioned = any(Path(j).name == ICEBERG_RUNTIME_JAR for j in settings.jars)
        assert provisioned or settings.packages, (
            f"Iceberg runtime not provisioned in {TMS_HOME}/jars; run scripts/setup"
        )
        if extra_conf:
            settings = replace(settings, conf={**extra_conf, **settings.conf})
        return subprocess.run(settings.submit_argv(app, args),
                              env=settings.submit_env(os.environ), capture_output=True,
                              text=True, timeout=SPARK_SUBMIT_TIMEOUT_S)

    def run_job(self, action: str, options: dict[str, str]) -> dict[str, Any]:
        """Run the maintenance job once; asserts success and returns the procedure's result."""
        rc, payload, stderr = run_job_file(self.tmp_path, self._next_name(), {
            "catalog_name": CATALOG_NAME,
            "catalog_properties": self.props,
            "table": self.identifier,
            "action": action,
            "options": options,
            "allowed_locations": [self.props["warehouse"]],  # every check on, and passing
        }, self.submit)
        assert rc == 0 and payload["ok"] is True, f"{payload}\n{stderr[-4000:]}"
        assert payload["action"] == action and payload["spark_app_id"]
        result: dict[str, Any] = payload["result"]
        return result

    def run_sql(self, *statements: str) -> None:
        """Run Spark SQL against this catalog (for setups pyiceberg cannot write)."""
        script = self.tmp_path / "run_sql.py"
        script.write_text(SPARK_SQL_SCRIPT)
        conf = {"spark.sql.extensions": ICEBERG_EXTENSIONS,
                **catalog_conf(CATALOG_NAME, self.props)}
        proc = self.submit(str(script), list(statements), conf)
        assert proc.returncode == 0, proc.stderr[-4000:]

    @property
    def spark_table(self) -> str:
        return f"{CATALOG_NAME}.{self.identifier}"

    def _next_name(self) -> str:
        self.runs += 1
        return f"job{self.runs}"


Submit = Callable[[str, list[str]], subprocess.CompletedProcess[str]]


def run_job_file(tmp_path: Path, name: str, spec: dict[str, Any],
                 submit: Submit | None = None) -> tuple[int, dict[str, Any], str]:
    """Write ``spec``, run the job (spark-submit, or the plain venv python when ``submit`` is
    None) and return (exit code, result file, stderr)."""
    spec_file, result_file = tmp_path / f"{name}.spec.json", tmp_path / f"{name}.result.json"
    spec_file.write_text(json.dumps(spec))
    args = ["--spec", str(spec_file), "--result", str(result_file)]
    if submit is None:
        proc = subprocess.run([sys.executable, str(ICEBERG_MAINTENANCE_APP), *args],
                              capture_output=True, text=True, timeout=60)
    else:
        proc = submit(str(ICEBERG_MAINTENANCE_APP), args)
    assert result_file.exists(), f"no result file; stderr:\n{proc.stderr[-4000:]}"
    return proc.returncode, json.loads(result_file.read_text()), proc.stderr


def _local_path(uri: str) -> Path:
    parts = urlsplit(uri)
    assert parts.scheme in ("", "file"), uri
    return Path(unquote(parts.path))


def _data_file_paths(table: Table) -> list[str]:
    files = table.inspect.files().to_pydict()
    return [p for p, c in zip(files["file_path"], files["content"], strict=True) if c == 0]


def _zorder_value(id_: int, amount: float) -> int:
    """Iceberg's Z-order key for (long, double): order-preserving 64-bit images of both values
    (sign bit flipped; a double's bits as sign-magnitude), bits interleaved from the top, first
    column's bit first (``ZOrderByteUtils``)."""
    mask = (1 << 64) - 1
    a = (id_ ^ (1 << 63)) & mask
    bits = struct.unpack(">q", struct.pack(">d", amount))[0]
    b = (bits ^ ((bits >> 63) | -(1 << 63))) & mask
    z = 0
    for i in range(63, -1, -1):
        z = (z << 2) | (((a >> i) & 1) << 1) | ((b >> i) & 1)
    return z


@pytest.fixture
def env(pg: Any, tmp_path: Path) -> Env:
    return Env(pg, tmp_path)


def _snapshot_id(env: Env) -> str:
    snapshot = env.table().current_snapshot()
    assert snapshot is not None
    return str(snapshot.snapshot_id)


def test_compaction_bin_packs_small_files(env: Env) -> None:
    env.create(commits=8)
    assert int(env.summary()["total-data-files"]) == 8
    before = _snapshot_id(env)
    bytes_before = int(env.summary()["total-files-size"])

    result = env.run_job("compaction", {"min-input-files": "2"})

    assert result["rewritten_data_files_count"] == 8
    assert result["added_data_files_count"] == 1
    assert result["failed_data_files_count"] == 0
    assert int(env.summary()["total-data-files"]) == 1
    assert env.rows() == 8 * ROWS_PER_COMMIT
    outcome = result["outcome"]  # what it did, in the shape every action reports
    assert outcome["snapshot_before"] == before
    assert outcome["snapshot_after"] == _snapshot_id(env) != before
    assert outcome["data_files_rewritten"] == outcome["data_files_removed"] == 8
    assert outcome["data_files_added"] == 1 and outcome["snapshots_added"] == 1
    assert outcome["data_bytes_removed"] == bytes_before
    assert outcome["data_bytes_added"] == int(env.summary()["total-files-size"])
    assert outcome["partitions_touched"] == 1 and outcome["delete_files_removed"] == 0
    assert outcome["changed_nothing"] is False

    # again: one file is left, nothing to merge; the run says it changed nothing
    again = env.run_job("compaction", {"min-input-files": "2"})
    assert again["rewritten_data_files_count"] == 0
    noop = again["outcome"]
    assert noop["changed_nothing"] is True and noop["snapshots_added"] == 0
    assert noop["snapshot_before"] == noop["snapshot_after"] == _snapshot_id(env)
    assert noop["data_files_rewritten"] == noop["data_files_added"] == 0


@pytest.mark.parametrize("options, sort_key", [
    # appends hold ascending ids: a rewrite that did not sort would keep them ascending
    ({"sort-order": "kind ASC NULLS FIRST, id DESC NULLS LAST"},
     lambda row: (row["kind"], -row["id"])),
    ({"zorder-columns": "id,amount"}, lambda row: _zorder_value(row["id"], row["amount"])),
], ids=["sort", "zorder"])
def test_clustering_rewrites_files_in_order(env: Env, options: dict[str, str],
                                            sort_key: Any) -> None:
    env.create(commits=4)

    result = env.run_job("clustering", {**options, "rewrite-all": "true",
                                        "target-file-size-bytes": str(64 * 1024 * 1024)})

    assert result["rewritten_data_files_count"] == 4
    assert result["added_data_files_count"] == 1
    table = env.table()
    (data_file,) = _data_file_paths(table)
    rows = pq.read_table(_local_path(data_file)).to_pylist()
    assert len(rows) == env.rows() == 4 * ROWS_PER_COMMIT
    ids = [r["id"] for r in rows]
    assert ids != sorted(ids)  # rewritten, not copied in append order
    keys = [sort_key(r) for r in rows]
    assert keys == sorted(keys)  # stable against ties, unlike comparing whole rows


def test_expire_snapshots_keeps_retain_last(env: Env) -> None:
    table = env.create(commits=6)
    current = table.current_snapshot()
    assert current is not None and len(table.metadata.snapshots) == 6
    older_than = datetime.now(UTC).isoformat()

    result = env.run_job("expire_snapshots", {"older-than": older_than, "retain-last": "2"})

    after = env.table()
    assert len(after.metadata.snapshots) == 2
    assert after.current_snapshot().snapshot_id == current.snapshot_id  # type: ignore[union-attr]
    assert result["deleted_manifest_lists_count"] == 4
    assert result["deleted_data_files_count"] == 0  # appends only: every file is still live
    assert env.rows() == 6 * ROWS_PER_COMMIT
    # no new snapshot and no data file gone, but manifest lists were: it changed something
    outcome = result["outcome"]
    assert outcome["snapshot_before"] == outcome["snapshot_after"] == str(current.snapshot_id)
    assert outcome["snapshots_added"] == 0 and outcome["data_files_removed"] == 0
    assert outcome["changed_nothing"] is False


@pytest.mark.parametrize("dry_run", [False, True], ids=["delete", "dry-run"])
def test_remove_orphan_files(env: Env, dry_run: bool) -> None:
    table = env.create(commits=2)
    data_dir = _local_path(table.location()) / "data"
    orphan = data_dir / f"orphan-{uuid.uuid4().hex}.parquet"
    orphan.write_bytes(b"left behind by a failed write")
    # Only files modified before older_than are candidates, and Iceberg refuses an older_than
    # less than 24 h ago: the orphan must be older still.
    backdated = time.time() - 3 * 24 * 3600
    os.utime(orphan, (backdated, backdated))
    older_than = (datetime.now(UTC) - timedelta(hours=25)).isoformat()

    result = env.run_job("remove_orphan_files",
                         {"older-than": older_than, "dry-run": str(dry_run).lower()})

    assert result["dry_run"] is dry_run
    assert result["orphan_file_location_count"] == 1
    assert result["orphan_file_location_truncated"] is False
    (reported,) = result["orphan_file_location"]
    assert _local_path(reported) == orphan
    assert orphan.exists() is dry_run
    assert len(_data_file_paths(env.table())) == 2
    assert env.rows() == 2 * ROWS_PER_COMMIT


def test_rewrite_manifests_merges_append_manifests(env: Env) -> None:
    table = env.create(commits=10)
    snapshot = table.current_snapshot()
    assert snapshot is not None and len(snapshot.manifests(table.io)) == 10

    result = env.run_job("rewrite_manifests", {"use-caching": "false"})

    outcome = result.pop("outcome")
    fence = result.pop("fence")  # the deletion fence was armed on this table, nothing refused
    assert fence["state"] == "armed" and fence["refused"] == 0, fence
    assert result == {"rewritten_manifests_count": 10, "added_manifests_count": 1}
    # manifests only: no data file changed, but the table did (a new snapshot)
    assert outcome["changed_nothing"] is False and outcome["snapshots_added"] == 1
    assert outcome["data_files_rewritten"] == outcome["data_files_removed"] == 0
    assert outcome["snapshot_after"] == _snapshot_id(env)
    after = env.table()
    snapshot = after.current_snapshot()
    assert snapshot is not None and len(snapshot.manifests(after.io)) == 1
    assert env.rows() == 10 * ROWS_PER_COMMIT


def test_rewrite_position_deletes(env: Env) -> None:
    env.create(commits=3)
    total = 3 * ROWS_PER_COMMIT
    # pyiceberg cannot write position deletes: Spark's merge-on-read DELETE does. With the
    # default file granularity each DELETE would replace the previous deletes of a data file
    # (one delete file per data file: nothing to compact); partition granularity makes each
    # DELETE add one more delete file for the table's single partition.
    env.run_sql(
        f"ALTER TABLE {env.spark_table} SET TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.delete.granularity'='partition')",
        f"DELETE FROM {env.spark_table} WHERE id % 7 = 0",
        f"DELETE FROM {env.spark_table} WHERE id % 11 = 0",
    )
    expected = sum(1 for i in range(total) if i % 7 and i % 11)
    before = env.summary()
    delete_files = int(before["total-delete-files"])
    assert delete_files >= 2 and int(before["total-data-files"]) == 3
    assert env.rows() == expected

    result = env.run_job("rewrite_position_deletes", {"rewrite-all": "true"})

    assert result["rewritten_delete_files_count"] == delete_files
    assert 1 <= result["added_delete_files_count"] < delete_files
    after = env.summary()
    assert int(after["total-delete-files"]) == result["added_delete_files_count"]
    assert int(after["total-position-deletes"]) == total - expected
    assert int(after["total-data-files"]) == 3
    assert env.rows() == expected
    assert result["outcome"]["delete_files_removed"] == delete_files
    assert result["outcome"]["data_files_removed"] == 0
    assert result["outcome"]["changed_nothing"] is False


@pytest.mark.parametrize("action, options, message", [
    ("clustering", {"sort-order": "id; DROP TABLE x"}, "invalid column name"),
    ("clustering", {"sort-order": "id DESCENDING"}, "bad sort term"),
    ("clustering", {"zorder-columns": "a,`b`"}, "invalid column name"),
    ("clustering", {"sort-order": "id", "zorder-columns": "id"}, "one of the options"),
    ("expire_snapshots", {"retain-last": "0"}, "retain-last"),
    ("expire_snapshots", {"older-than": "yesterday'"}, "ISO-8601"),
    ("remove_orphan_files", {"older-than": datetime.now(UTC).isoformat()}, "24 hours"),
    ("remove_orphan_files", {"dry-run": "maybe"}, "dry-run"),
    ("rewrite_manifests", {"use_caching": "true"}, "unknown option"),
    ("vacuum", {}, "known: ["),
])
def test_invalid_spec_fails_before_spark(tmp_path: Path, action: str, options: dict[str, str],
                                         message: str) -> None:
    # The plain interpreter, not spark-submit: validation happens before pyspark is imported.
    rc, payload, stderr = run_job_file(tmp_path, "bad", {
        "catalog_name": CATALOG_NAME,
        "catalog_properties": {"type": "sql", "uri": "postgresql://tms@127.0.0.1:1/none"},
        "table": "ns.events",
        "action": action,
        "options": options,
        "allowed_locations": [str(tmp_path)],
    })

    assert rc == 1
    assert payload["ok"] is False and payload["error_type"] == "SpecError"
    assert message in payload["error"]
    assert "spark_app_id" not in payload
    assert message in stderr
