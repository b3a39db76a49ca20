"""What a maintenance job did, in one shape for every action: the ``outcome`` block of its
result.

The procedures' result columns differ per action (``rewritten_data_files_count`` here,
``deleted_data_files_count`` there) and say nothing of the snapshot they left; the scheduler
needs one answer to "did the last run change anything, and at which snapshot?" so that it
does not queue the same no-op again until a writer commits (``changed_nothing`` with
``snapshot_after`` equal to the table's current snapshot). So the job reads the current
snapshot before and after the procedure and folds the procedure's columns and the new
snapshots' summaries into:

``data_files_rewritten``, ``data_files_added``, ``data_files_removed``,
``data_bytes_rewritten``, ``data_bytes_added``, ``data_bytes_removed``,
``delete_files_removed``, ``partitions_touched`` (None when unknown), ``snapshot_before``,
``snapshot_after`` (snapshot ids as strings: JSON numbers lose precision past 2**53),
``snapshots_added`` and ``changed_nothing``.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# How far back the parent chain is walked from the snapshot after to the one before (a
# partial-progress rewrite commits once per file group).
MAX_SNAPSHOTS_WALKED = 1000
DATA_REWRITES = ("compaction", "clustering")
MANIFEST_REWRITE_KEY = "manifests-replaced"  # in the summary of a manifest rewrite only

COUNTS = ("data_files_rewritten", "data_files_added", "data_files_removed",
          "data_bytes_rewritten", "data_bytes_added", "data_bytes_removed",
          "delete_files_removed")


def _int(value: Any) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def _summed(summaries: Sequence[Mapping[str, str]], *keys: str) -> int:
    return sum(_int(s.get(k)) for s in summaries for k in keys)


def build(action: str, result: Mapping[str, Any], before: str | None, after: str | None,
          summaries: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """The outcome of ``action`` from its procedure's ``result`` columns, the current snapshot
    ``before`` and ``after`` it ran, and the summaries of the snapshots it added (newest
    first; empty when it committed nothing)."""
    r = result
    out: dict[str, Any] = dict.fromkeys(COUNTS, 0)
    out.update(
        data_files_added=_summed(summaries, "added-data-files"),
        data_files_removed=_summed(summaries, "deleted-data-files"),
        data_bytes_added=_summed(summaries, "added-files-size"),
        data_bytes_removed=_summed(summaries, "removed-files-size"),
        delete_files_removed=_summed(summaries, "removed-position-delete-files",
                                     "removed-equality-delete-files", "removed-dvs"),
    )
    if action in DATA_REWRITES:
        out["data_files_rewritten"] = _int(r.get("rewritten_data_files_count"))
        out["data_files_added"] = max(out["data_files_added"],
                                      _int(r.get("added_data_files_count")))
        out["data_bytes_rewritten"] = _int(r.get("rewritten_bytes_count"))
        out["delete_files_removed"] = max(out["delete_files_removed"],
                                          _int(r.get("removed_delete_files_count")))
    elif action == "rewrite_position_deletes":
        out["delete_files_removed"] = max(out["delete_files_removed"],
                                          _int(r.get("rewritten_delete_files_count")))
    elif action == "expire_snapshots":  # files deleted, no new snapshot
        out["data_files_removed"] = _int(r.get("deleted_data_files_count"))
        out["delete_files_removed"] = (_int(r.get("deleted_position_delete_files_count"))
                                       + _int(r.get("deleted_equality_delete_files_count")))
    # one snapshot that changed partitions (a manifest rewrite before it changes no file)
    changed = [s for s in summaries
               if "changed-partition-count" in s and MANIFEST_REWRITE_KEY not in s]
    out["partitions_touched"] = (_int(changed[0]["changed-partition-count"])
                                 if len(changed) == 1 else None)
    other = {  # what the outcome's counts do not cover: manifests, snapshots, orphans
        "rewrite_manifests": _int(r.get("rewritten_manifests_count")),
        "expire_snapshots": _int(r.get("deleted_manifest_files_count"))
        + _int(r.get("deleted_manifest_lists_count")),
        "remove_orphan_files": 0 if r.get("dry_run") else
        _int(r.get("orphan_file_location_count")) - _int(r.get("orphan_files_not_deleted_count")),
    }.get(action, 0)
    out.update(snapshot_before=before, snapshot_after=after, snapshots_added=len(summaries))
    out["changed_nothing"] = (before == after and not summaries and other == 0
                              and not any(out[k] for k in COUNTS))
    return out


def current_snapshot(handle: Any) -> str | None:
    """The id of the Iceberg table's current snapshot (a Py4J ``Table``), as a string."""
    snap = handle.currentSnapshot()
    return None if snap is None else str(snap.snapshotId())


def added_summaries(handle: Any, before: str | None, after: str | None
                    ) -> list[dict[str, str]]:
    """The summaries of the snapshots from ``after`` back to (not including) ``before``,
    newest first; empty when nothing was committed."""
    out: list[dict[str, str]] = []
    current = int(after) if after is not None else None
    while current is not None and str(current) != before and len(out) < MAX_SNAPSHOTS_WALKED:
        snap = handle.snapshot(current)
        if snap is None:
            break
        summary = snap.summary()
        out.append({str(k): str(v) for k, v in summary.items()} if summary else {})
        parent = snap.parentId()
        current = int(parent) if parent is not None else None
    return out


def measure(handle: Any, action: str, result: Mapping[str, Any], before: str | None
            ) -> dict[str, Any]:
    """The outcome, reading the table again (``refresh``) after the procedure ran."""
    handle.refresh()
    after = current_snapshot(handle)
    return build(action, result, before, after, added_summaries(handle, before, after))
