"""What the partitioned table-health bench reads: files per partition and snapshot summaries
from the tables (pyiceberg), operations and their results from TMS (ListOperations), and the
writer's append that retries a lost commit race and remembers why it lost."""

from __future__ import annotations

from typing import Any

from google.protobuf.json_format import MessageToDict

from bench.table_health_metrics import PartitionFiles, SnapshotLedger, operation_outcome
from bench.table_health_stream import Failures
from tms.v1 import tms_pb2

COMMIT_RETRIES = 10


def partition_files(table: Any) -> dict[str, PartitionFiles]:
    """Data files, bytes and delete files per partition of the current snapshot."""
    table = table.refresh()
    snap = table.current_snapshot()
    acc: dict[str, list[int]] = {}
    for manifest in snap.manifests(table.io) if snap else []:
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            df = entry.data_file
            c = acc.setdefault(repr(df.partition), [0, 0, 0])
            if df.content == 0:
                c[0] += 1
                c[1] += df.file_size_in_bytes
            else:
                c[2] += 1
    return {k: PartitionFiles(*v) for k, v in acc.items()}


def observe(ledger: SnapshotLedger, table: Any) -> None:
    ledger.observe((s.snapshot_id, s.summary.operation.value if s.summary else "",
                    s.summary.additional_properties if s.summary else {})
                   for s in table.metadata.snapshots)


def append(table: Any, data: Any, label: str, failures: Failures) -> Any:
    from pyiceberg.exceptions import CommitFailedException

    for _ in range(COMMIT_RETRIES):
        try:
            table.append(data)
            return table
        except CommitFailedException as exc:  # TMS committed meanwhile: refresh, try again
            failures.add(label, f"append: {exc}")
            table = table.refresh()
    raise RuntimeError(f"append to {label} kept losing commit races")


def list_operations(stub: Any) -> list[Any]:
    """Every operation of ``tables/maintained``, page after page."""
    ops: list[Any] = []
    token = ""
    while True:
        resp = stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent="tables/maintained", page_size=1000, page_token=token), timeout=30)
        ops.extend(resp.operations)
        token = resp.next_page_token
        if not token:
            return ops


def state_name(state: int) -> str:
    try:
        return tms_pb2.Operation.State.Name(state)
    except ValueError:  # a state newer than this checkout's protos
        return str(state)


def summarize_operations(ops: list[Any]) -> dict[str, Any]:
    """Counts per action and state, no-op results, errors, and bytes rewritten as the
    operations' own results report them."""
    by_action: dict[str, dict[str, Any]] = {}
    errors, nothing, unknown, finished, rewritten = [], 0, 0, 0, 0
    listing = []
    for op in ops:
        c = by_action.setdefault(op.action, {"succeeded": 0, "changed_nothing": 0, "failed": 0,
                                             "other": 0, "failed_attempts": 0, "sources": set(),
                                             "states": set()})
        state = state_name(op.state)
        result = MessageToDict(op.result)
        listing.append({"action": op.action, "state": state, "reason": op.reason,
                        "result": result})
        failed_attempts = [a for a in op.attempts if a.error]
        c["failed_attempts"] += len(failed_attempts)
        for a in failed_attempts:  # retried attempts too: races with writers show up here
            errors.append(f"{op.action} ({state} in the end) attempt {a.attempt}: {a.error}")
        if op.error and not failed_attempts:
            errors.append(f"{op.action} {state} attempt {op.attempt}: {op.error}")
        if state == "FAILED":
            c["failed"] += 1
        if state != "SUCCEEDED":
            if state != "FAILED":
                c["other"] += 1
                c["states"].add(state)
            continue
        finished += 1
        c["succeeded"] += 1
        out = operation_outcome(result)
        c["sources"].add(out.source)
        rewritten += out.bytes_rewritten or 0
        if op.action == "rewrite_position_deletes" and "added_delete_files_count" in result:
            # as many delete files written as read (file-scoped deletes, one per data file):
            # the outcome says files changed, readers gain nothing
            same = result["added_delete_files_count"] == result.get(
                "rewritten_delete_files_count")
            c["same_count"] = c.get("same_count", 0) + int(same)
        if out.changed_nothing is None:
            unknown += 1
        elif out.changed_nothing:
            nothing += 1
            c["changed_nothing"] += 1
    for c in by_action.values():
        c["sources"], c["states"] = sorted(c["sources"]), sorted(c["states"])
    return {"by_action": by_action, "errors": errors, "changed_nothing": nothing,
            "unknown": unknown, "finished": finished, "rewritten_bytes": rewritten,
            "list": listing,
            "all_from_outcome": all(c["sources"] == ["outcome"] for c in by_action.values()
                                    if c["succeeded"]) and finished > 0}


def active(ops: list[Any]) -> int:
    return sum(o.state in (tms_pb2.Operation.QUEUED, tms_pb2.Operation.RUNNING) for o in ops)
