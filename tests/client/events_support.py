"""Catalog commit events as a Lakekeeper-style catalog emits them, and an HTTP poster."""

from __future__ import annotations

import http.client
import json
import socket
from datetime import UTC, datetime
from typing import Any

from tms_client import Commit

BASE_SNAPSHOT_TIME_MS = 1_790_000_000_000
HTTP_TIMEOUT_S = 30.0


def snapshot(snapshot_id: int, files: int = 2, size: int = 2048,
             operation: str = "append") -> dict[str, Any]:
    return {"snapshot-id": snapshot_id, "sequence-number": snapshot_id,
            "timestamp-ms": BASE_SNAPSHOT_TIME_MS + snapshot_id,
            "manifest-list": f"s3://lake/metadata/snap-{snapshot_id}.avro", "schema-id": 0,
            "summary": {"operation": operation, "added-data-files": str(files),
                        "added-files-size": str(size), "added-records": "10"}}


def update_table(namespace: list[str], name: str, snapshots: list[dict[str, Any]],
                 event_id: str) -> dict[str, Any]:
    """An ``updateTable`` CloudEvent: data is the Iceberg REST CommitTableRequest."""
    updates: list[dict[str, Any]] = [{"action": "add-snapshot", "snapshot": s}
                                     for s in snapshots]
    if snapshots:
        updates.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                        "snapshot-id": snapshots[-1]["snapshot-id"]})
    return {
        "specversion": "1.0", "id": event_id, "source": "uri:iceberg-catalog-service:test",
        "type": "updateTable", "datacontenttype": "application/json",
        "namespace": "\x1f".join(namespace), "name": name, "tabular-type": "table",
        "warehouse-id": "wh-1", "num-events": 1, "sequence-number": 0,
        "data": {"identifier": {"namespace": namespace, "name": name},
                 "requirements": [{"type": "assert-table-uuid", "uuid": "u-1"}],
                 "updates": updates},
    }


def commit_of(table_id: str, snap: dict[str, Any]) -> Commit:
    """The commit a writer would notify itself for this snapshot."""
    summary = snap["summary"]
    return Commit(table_id, str(snap["snapshot-id"]),
                  datetime.fromtimestamp(snap["timestamp-ms"] / 1000, UTC),
                  int(summary["added-data-files"]), int(summary["added-files-size"]),
                  summary["operation"])


def post(port: int, body: bytes | str | Any, content_type: str = "",
         headers: dict[str, str] | None = None, path: str = "/") -> tuple[int, dict[str, Any]]:
    if not isinstance(body, bytes | str):
        body = json.dumps(body)
    data = body.encode() if isinstance(body, str) else body
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT_S)
    try:
        all_headers = dict(headers or {})
        if content_type:
            all_headers["Content-Type"] = content_type
        conn.request("POST", path, body=data, headers=all_headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def raw_request(port: int, head: str) -> int:
    """Send only a request head (no body) and return the status code."""
    with socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT_S) as s:
        s.sendall(head.encode())
        status_line = s.makefile("rb").readline().decode()
    return int(status_line.split()[1])
