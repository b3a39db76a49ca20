"""Notify TMS after a pyiceberg append; the new snapshot's id is the commit id.

    python libs/tms_client/examples/pyiceberg_append.py --api 127.0.0.1:50051 \
        --table demo.events --catalog-uri postgresql+psycopg://tms@127.0.0.1:5432/iceberg \
        --warehouse file:///tmp/warehouse

The notifier never blocks or fails the write: if TMS is down the notification is dropped
(and counted), and the scheduler's pull check finds the commit later.
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from typing import Any

from tms_client import CommitNotifier, TmsClient

MS_PER_S = 1000
FLUSH_TIMEOUT_S = 5.0


def snapshot_commit(snapshot: Any) -> dict[str, Any]:
    """notify() arguments for a pyiceberg Snapshot: id, time and what its summary says."""
    summary = snapshot.summary
    props = summary.additional_properties if summary is not None else {}

    def count(key: str) -> int | None:
        value = props.get(key)
        return int(value) if value is not None and str(value).isdigit() else None

    return {
        "commit_id": str(snapshot.snapshot_id),
        "commit_time": datetime.fromtimestamp(snapshot.timestamp_ms / MS_PER_S, UTC),
        "files_added": count("added-data-files"),
        "bytes_added": count("added-files-size"),
        "operation": str(summary.operation.value) if summary is not None else "",
    }


def append_and_notify(table: Any, rows: Any, notifier: CommitNotifier, table_id: str) -> int:
    """Appends ``rows`` (a pyarrow Table) and tells TMS; returns the new snapshot id.

    pyiceberg refreshes ``table`` from the commit response, so its current snapshot is the
    one this append created.
    """
    table.append(rows)
    snapshot = table.current_snapshot()
    notifier.notify(table_id, **snapshot_commit(snapshot))
    return int(snapshot.snapshot_id)


def main() -> None:
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--api", required=True)
    p.add_argument("--table", required=True, help="namespace.name, also the TMS table id")
    p.add_argument("--catalog-uri", required=True)
    p.add_argument("--warehouse", required=True)
    args = p.parse_args()
    catalog = load_catalog("lake", type="sql", uri=args.catalog_uri, warehouse=args.warehouse)
    table = catalog.load_table(args.table)
    rows = pa.Table.from_pylist([{"id": 1}], schema=table.schema().as_arrow())
    with TmsClient(args.api, token=os.environ.get("TMS_TOKEN")) as client:
        notifier = CommitNotifier(client)
        snapshot_id = append_and_notify(table, rows, notifier, args.table)
        notifier.close(FLUSH_TIMEOUT_S)
    print(f"appended snapshot {snapshot_id}; notifier: {notifier.stats()}")


if __name__ == "__main__":
    main()
