"""The history's size at 100,000 tables over a year, measured (docs/health.md).

Starts a throw-away PostgreSQL, migrates it, registers ``--tables`` tables and gives each
the most history it can hold after a year: one point per 5 minutes for its last day, one per
hour for the 30 days before, one per UTC day for the rest of the year (1,319 rows), inserted
with ``generate_series``. Then it measures ``pg_total_relation_size`` of the history table
(heap, primary key, TOAST) after a VACUUM, and scales it to ``--target`` tables.

    python bench/history_size.py [--tables 1000] [--target 100000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import psycopg

from tms.local.postgres import LocalPostgres
from tms.storage.migrate import migrate

RAW_POINTS = 288  # one per 5 minutes for a day
HOURLY_POINTS = 29 * 24
DAILY_POINTS = 365 - 30
ROWS_PER_TABLE = RAW_POINTS + HOURLY_POINTS + DAILY_POINTS

# DDL and bulk rows of the bench's own scratch database, not the service's queries
CATALOG_SQL = "INSERT INTO tms_catalogs (catalog_id, type) VALUES ('c', 'sql')"
TABLES_SQL = """
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name)
SELECT 'table_' || i, 'iceberg', 'c', 'ns', 'table_' || i FROM generate_series(1, %(n)s) i;
"""
HISTORY_SQL = """
INSERT INTO tms_table_history (table_pk, at, data_files, small_files, mean_file_bytes,
                               total_bytes, delete_files, snapshots, manifests, health_score,
                               resolution)
SELECT t.id, p.at, 1000 + (random() * 50000)::int, (random() * 5000)::int,
       (random() * 512 * 1024 * 1024)::bigint, (random() * 1e12)::bigint,
       (random() * 500)::int, (random() * 200)::int, (random() * 300)::int,
       (random() * 100)::int, p.res
FROM tms_tables t
CROSS JOIN (
    SELECT now() - make_interval(mins => 5 * i) AS at, 0 AS res
    FROM generate_series(0, %(raw)s - 1) i
    UNION ALL
    SELECT date_trunc('hour', now() - interval '1 day') - make_interval(hours => i), 1
    FROM generate_series(0, %(hourly)s - 1) i
    UNION ALL
    SELECT date_trunc('day', now() - interval '30 days') - make_interval(days => i), 2
    FROM generate_series(0, %(daily)s - 1) i
) p;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--target", type=int, default=100_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tms-history-size-"))
    root.chmod(0o755)
    server = LocalPostgres(root / "pg").start()
    try:
        dsn = server.create_database("history_size")
        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(CATALOG_SQL)
            conn.execute(TABLES_SQL, {"n": args.tables})
            conn.execute(HISTORY_SQL, {"raw": RAW_POINTS, "hourly": HOURLY_POINTS,
                                       "daily": DAILY_POINTS})
            conn.execute("VACUUM ANALYZE tms_table_history")
            rows, total, heap, index = conn.execute(
                "SELECT count(*), pg_total_relation_size('tms_table_history'),"
                " pg_relation_size('tms_table_history'),"
                " pg_indexes_size('tms_table_history') FROM tms_table_history").fetchone()
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
    scale = args.target / args.tables
    print(f"tables measured      {args.tables:,}")
    print(f"rows per table       {rows // args.tables:,} (raw {RAW_POINTS}, hourly "
          f"{HOURLY_POINTS}, daily {DAILY_POINTS})")
    print(f"rows                 {rows:,}")
    print(f"heap                 {heap / 2**20:,.1f} MiB")
    print(f"primary key          {index / 2**20:,.1f} MiB")
    print(f"total                {total / 2**20:,.1f} MiB ({total / rows:.0f} bytes per row)")
    print(f"at {args.target:,} tables   {total * scale / 2**30:,.1f} GiB "
          f"({rows * scale:,.0f} rows)")


if __name__ == "__main__":
    main()
