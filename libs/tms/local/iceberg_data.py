"""A non-Spark Iceberg writer for the demo and the tests: pyiceberg on a SQL catalog in
PostgreSQL, the same catalog Spark's JdbcCatalog reads (the catalog name must match)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa


def sql_catalog_properties(pg_dsn: str, warehouse: str) -> dict[str, str]:
    """pyiceberg SqlCatalog properties for a libpq-style DSN (postgresql://user@host:port/db)."""
    uri = pg_dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    return {"type": "sql", "uri": uri, "warehouse": warehouse}


def load_catalog(name: str, props: dict[str, str]) -> Any:
    from pyiceberg.catalog import load_catalog as _load

    return _load(name, **props)


SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("kind", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
])


def create_table(catalog: Any, namespace: str, name: str) -> Any:
    catalog.create_namespace_if_not_exists(namespace)
    return catalog.create_table(f"{namespace}.{name}", schema=SCHEMA)


def batch(start: int, rows: int) -> pa.Table:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    ids = list(range(start, start + rows))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "kind": [("click", "view", "buy")[i % 3] for i in ids],
        "amount": [float(i % 97) for i in ids],
        "ts": [base + timedelta(seconds=i) for i in ids],
    }, schema=SCHEMA)


def append_batches(table: Any, commits: int, rows_per_commit: int = 50) -> list[int]:
    """``commits`` appends of one small file each; returns the new snapshot ids in order."""
    snapshot_ids = []
    for c in range(commits):
        table.append(batch(c * rows_per_commit, rows_per_commit))
        snapshot_ids.append(table.current_snapshot().snapshot_id)
    return snapshot_ids


def stats(table: Any) -> dict[str, int]:
    """Data files, snapshots and rows of the table's current state (fresh from the catalog)."""
    table = table.refresh()
    snap = table.current_snapshot()
    summary = snap.summary.additional_properties if snap and snap.summary else {}
    return {
        "data_files": int(summary.get("total-data-files", 0)),
        "records": int(summary.get("total-records", 0)),
        "snapshots": len(table.metadata.snapshots),
        "rows_scanned": table.scan().to_arrow().num_rows,
    }
