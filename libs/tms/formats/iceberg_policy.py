"""Iceberg trigger policies: one function per action, each turning metrics read from table
metadata (see IcebergFormat.inspect) into a Decision whose reason names the numbers it used.

Defaults follow Iceberg's own table-property defaults where Iceberg has one (snapshot age 5
days, keep 1 snapshot, orphan age 3 days, manifest merge at 100) and Amoro's self-optimizing
defaults for compaction (target 128 MiB, a file below target/8 is a fragment, 12 fragments
trigger a minor optimization). Clustering and orphan-file removal are off unless a table asks:
the first needs a sort order only its owner knows, the second deletes files and deserves an
explicit yes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.domain import Decision, Operation
from tms.policy import PolicyKey

MIB = 1024 * 1024
DAY_S = 86_400
_COLUMNS = r"[A-Za-z_][A-Za-z0-9_]*(\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*"
_SORT = (r"[A-Za-z_][A-Za-z0-9_]*(\s+(ASC|DESC))?(\s+NULLS\s+(FIRST|LAST))?"
         r"(\s*,\s*[A-Za-z_][A-Za-z0-9_]*(\s+(ASC|DESC))?(\s+NULLS\s+(FIRST|LAST))?)*")

K = {p.key: p for p in (
    PolicyKey("compaction.enabled", bool, True),
    PolicyKey("compaction.target-file-size-bytes", int, 128 * MIB, 1),
    PolicyKey("compaction.small-file-bytes", int, 16 * MIB, 1),
    PolicyKey("compaction.min-small-files", int, 12, 2),
    PolicyKey("compaction.min-interval-s", int, 60, 0),
    # a table whose writers went quiet this long is tidied even below min-small-files (0: off)
    PolicyKey("compaction.quiet-s", int, 3600, 0),
    PolicyKey("clustering.enabled", bool, False),
    PolicyKey("clustering.sort-order", str, "", pattern=_SORT,
              what="columns with optional ASC/DESC and NULLS FIRST/LAST"),
    PolicyKey("clustering.zorder-columns", str, "", pattern=_COLUMNS,
              what="comma-separated column names"),
    PolicyKey("clustering.min-new-snapshots", int, 10, 1),
    PolicyKey("clustering.min-interval-s", int, DAY_S, 0),
    PolicyKey("expire-snapshots.enabled", bool, True),
    PolicyKey("expire-snapshots.max-age-s", int, 5 * DAY_S, 0),
    PolicyKey("expire-snapshots.retain-last", int, 1, 1),
    PolicyKey("expire-snapshots.min-interval-s", int, 3600, 0),
    PolicyKey("orphan-files.enabled", bool, False),
    PolicyKey("orphan-files.older-than-s", int, 3 * DAY_S, DAY_S),
    PolicyKey("orphan-files.interval-s", int, DAY_S, 0),
    PolicyKey("manifests.enabled", bool, True),
    PolicyKey("manifests.max-count", int, 100, 2),
    PolicyKey("manifests.min-interval-s", int, 3600, 0),
    PolicyKey("position-deletes.enabled", bool, True),
    PolicyKey("position-deletes.max-files", int, 20, 1),
    PolicyKey("position-deletes.min-interval-s", int, 600, 0),
)}

QUIET_MIN_SMALL_FILES = 2  # a quiet table is worth a rewrite from two small files on
Rule = Callable[[Mapping[str, str], Mapping[str, Any], Operation | None, datetime],
                Decision]


def public(m: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics worth storing with a decision: "_" keys are bulky inputs (e.g. every
    snapshot's time) that would bloat each stored decision."""
    return {k: v for k, v in m.items() if not k.startswith("_")}


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _too_soon(action: str, key: str, pol: Mapping[str, str], last: Operation | None,
              now: datetime, seen: dict[str, Any], because: str) -> Decision | None:
    interval = K[key].as_int(pol)
    if last is not None and last.outcome.finished_at is not None:
        age = (now - last.outcome.finished_at).total_seconds()
        if age < interval:
            return Decision(action, False, f"{because}, but the last run finished {age:.0f} s "
                                           f"ago (minimum interval {interval} s)", seen)
    return None


def compaction(pol: Mapping[str, str], m: Mapping[str, Any], last: Operation | None,
               now: datetime) -> Decision:
    a, seen = "compaction", public(m)
    min_small, limit = K["compaction.min-small-files"].as_int(pol), m["small_file_bytes"]
    if not K["compaction.enabled"].as_bool(pol):
        return Decision(a, False, "compaction is disabled by policy", seen)
    small = m["small_files"]
    quiet_s, last_ms = K["compaction.quiet-s"].as_int(pol), m.get("last_commit_ms")
    idle_s = now.timestamp() - last_ms / 1000 if last_ms is not None else None
    if (small is not None and QUIET_MIN_SMALL_FILES <= small < min_small and quiet_s
            and idle_s is not None and idle_s >= quiet_s):
        because = f"{small} small data files and no commit for {idle_s:.0f} s"
        return _too_soon(a, "compaction.min-interval-s", pol, last, now, seen,
                         because) or Decision(
            a, True, f"{because} (quiet after {quiet_s} s: tidied below the threshold of "
                     f"{min_small})", seen,
            {"target-file-size-bytes": str(K["compaction.target-file-size-bytes"].as_int(pol))})
    if small is None or small < min_small:
        count = m["data_files"] if small is None else small
        return Decision(a, False, f"{count} small data files (< {limit} bytes); "
                                  f"compaction starts at {min_small}", seen)
    because = f"{small} small data files"
    return _too_soon(a, "compaction.min-interval-s", pol, last, now, seen, because) or Decision(
        a, True, f"{small} of {m['data_files']} data files are smaller than {limit} bytes "
                 f"(threshold {min_small} small files)", seen,
        {"target-file-size-bytes": str(K["compaction.target-file-size-bytes"].as_int(pol))})


def clustering(pol: Mapping[str, str], m: Mapping[str, Any], last: Operation | None,
               now: datetime) -> Decision:
    a, seen = "clustering", public(m)
    sort = K["clustering.sort-order"].as_str(pol)
    zorder = K["clustering.zorder-columns"].as_str(pol)
    if not K["clustering.enabled"].as_bool(pol):
        return Decision(a, False, "clustering is off unless a table enables it", seen)
    if not sort and not zorder:
        return Decision(a, False, "clustering is enabled but neither clustering.sort-order "
                                  "nor clustering.zorder-columns is set", seen)
    since = last.outcome.finished_at if last and last.outcome.finished_at else None
    new = (m["snapshots"] if since is None else
           sum(1 for ts in m["_snapshot_times_ms"] if ts > since.timestamp() * 1000))
    need = K["clustering.min-new-snapshots"].as_int(pol)
    if new < need:
        return Decision(a, False, f"{new} new snapshots since the last clustering; "
                                  f"clustering starts at {need}", seen)
    params = {"zorder-columns": zorder} if zorder else {"sort-order": sort}
    params["target-file-size-bytes"] = str(K["compaction.target-file-size-bytes"].as_int(pol))
    because = f"{new} new snapshots"
    return _too_soon(a, "clustering.min-interval-s", pol, last, now, seen, because) or Decision(
        a, True, f"{new} new snapshots since the last clustering (threshold {need}), "
                 f"{'z-order ' + zorder if zorder else 'sort ' + sort}", seen, params)


def expire_snapshots(pol: Mapping[str, str], m: Mapping[str, Any],
                     last: Operation | None, now: datetime) -> Decision:
    a, seen = "expire_snapshots", public(m)
    if not K["expire-snapshots.enabled"].as_bool(pol):
        return Decision(a, False, "snapshot expiry is disabled by policy", seen)
    max_age = K["expire-snapshots.max-age-s"].as_int(pol)
    keep = K["expire-snapshots.retain-last"].as_int(pol)
    cutoff = now - timedelta(seconds=max_age)
    times = sorted(m["_snapshot_times_ms"], reverse=True)
    expirable = [t for t in times[keep:] if t < cutoff.timestamp() * 1000]
    if not expirable:
        return Decision(a, False, f"{len(times)} snapshots, none both older than {max_age} s "
                                  f"and beyond the {keep} to keep", seen)
    because = f"{len(expirable)} snapshots can expire"
    return _too_soon(a, "expire-snapshots.min-interval-s", pol, last, now, seen, because) or \
        Decision(a, True, f"{len(expirable)} of {len(times)} snapshots are older than "
                          f"{max_age} s beyond the {keep} to keep", seen,
                 {"older-than": _iso(cutoff), "retain-last": str(keep)})


def remove_orphan_files(pol: Mapping[str, str], m: Mapping[str, Any],
                        last: Operation | None, now: datetime) -> Decision:
    a, seen = "remove_orphan_files", public(m)
    if not K["orphan-files.enabled"].as_bool(pol):
        return Decision(a, False, "orphan-file removal is off unless a table enables it", seen)
    older = K["orphan-files.older-than-s"].as_int(pol)
    because = "orphan-file removal is due"
    return _too_soon(a, "orphan-files.interval-s", pol, last, now, seen, because) or Decision(
        a, True, f"orphan-file removal is due (files older than {older} s, every "
                 f"{K['orphan-files.interval-s'].as_int(pol)} s)", seen,
        {"older-than": _iso(now - timedelta(seconds=older))})


def rewrite_manifests(pol: Mapping[str, str], m: Mapping[str, Any],
                      last: Operation | None, now: datetime) -> Decision:
    a, seen = "rewrite_manifests", public(m)
    limit = K["manifests.max-count"].as_int(pol)
    if not K["manifests.enabled"].as_bool(pol):
        return Decision(a, False, "manifest rewrite is disabled by policy", seen)
    if m["manifests"] < limit:
        return Decision(a, False, f"{m['manifests']} manifests; rewrite starts at {limit}", seen)
    because = f"{m['manifests']} manifests"
    return _too_soon(a, "manifests.min-interval-s", pol, last, now, seen, because) or Decision(
        a, True, f"{m['manifests']} manifests in the current snapshot (threshold {limit})", seen)


def rewrite_position_deletes(pol: Mapping[str, str], m: Mapping[str, Any],
                             last: Operation | None, now: datetime) -> Decision:
    a, seen = "rewrite_position_deletes", public(m)
    limit = K["position-deletes.max-files"].as_int(pol)
    if not K["position-deletes.enabled"].as_bool(pol):
        return Decision(a, False, "position-delete rewrite is disabled by policy", seen)
    if m["delete_files"] < limit:
        return Decision(a, False, f"{m['delete_files']} delete files; rewrite starts at "
                                  f"{limit}", seen)
    because = f"{m['delete_files']} delete files"
    return _too_soon(a, "position-deletes.min-interval-s", pol, last, now, seen, because) or \
        Decision(a, True, f"{m['delete_files']} delete files (threshold {limit})", seen)


RULES: dict[str, Rule] = {
    "compaction": compaction, "clustering": clustering, "expire_snapshots": expire_snapshots,
    "remove_orphan_files": remove_orphan_files, "rewrite_manifests": rewrite_manifests,
    "rewrite_position_deletes": rewrite_position_deletes,
}
