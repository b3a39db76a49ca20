"""Notify TMS after a PySpark DataFrame write to an Iceberg table.

Spark does not hand the new snapshot id back to the writer, so it is read from the table's
``snapshots`` metadata table right after the write. If another writer committed in between,
the notification names their snapshot instead: harmless, since notifications only tell the
scheduler to look, and each snapshot id is recorded once.

    spark-submit ... libs/tms_client/examples/spark_write.py --api 127.0.0.1:50051 \
        --table lake.demo.events --table-id demo.events
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC
from typing import Any

from tms_client import CommitNotifier, TmsClient

FLUSH_TIMEOUT_S = 5.0
LATEST_SNAPSHOT_SQL = ("SELECT snapshot_id, committed_at, operation, summary "
                       "FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1")


def latest_snapshot_commit(spark: Any, table: str) -> dict[str, Any] | None:
    """notify() arguments for the newest snapshot of a catalog-qualified Iceberg table."""
    rows = spark.sql(LATEST_SNAPSHOT_SQL.format(table=table)).collect()
    if not rows:
        return None
    row = rows[0]
    summary = row["summary"] or {}

    def count(key: str) -> int | None:
        value = summary.get(key)
        return int(value) if value is not None and str(value).isdigit() else None

    return {
        "commit_id": str(row["snapshot_id"]),
        # PySpark returns timestamps as naive local times; astimezone() reads them as such
        "commit_time": row["committed_at"].astimezone(UTC),
        "files_added": count("added-data-files"),
        "bytes_added": count("added-files-size"),
        "operation": row["operation"] or "",
    }


def write_and_notify(df: Any, table: str, notifier: CommitNotifier, table_id: str) -> None:
    df.writeTo(table).append()
    commit = latest_snapshot_commit(df.sparkSession, table)
    if commit is not None:
        notifier.notify(table_id, **commit)


def main() -> None:
    from pyspark.sql import SparkSession

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--api", required=True)
    p.add_argument("--table", required=True, help="catalog.namespace.name as Spark knows it")
    p.add_argument("--table-id", required=True, help="the TMS table id")
    args = p.parse_args()
    spark = SparkSession.builder.getOrCreate()
    df = spark.createDataFrame([(1, "click")], "id bigint, kind string")
    with TmsClient(args.api, token=os.environ.get("TMS_TOKEN")) as client:
        notifier = CommitNotifier(client)
        write_and_notify(df, args.table, notifier, args.table_id)
        notifier.close(FLUSH_TIMEOUT_S)
    print(f"notifier: {notifier.stats()}")


if __name__ == "__main__":
    main()
