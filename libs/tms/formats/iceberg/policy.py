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

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.domain import Decision, Operation
from tms.formats.iceberg import deletes as iceberg_deletes
from tms.formats.iceberg import plan as iceberg_plan
from tms.formats.iceberg import tiers as iceberg_tiers
from tms.formats.iceberg.policy_keys import (  # noqa: F401  (K and the helpers re-exported)
    GIB,
    MIB,
    QUIET_MIN_SMALL_FILES,
    SORT,
    K,
    Measured,
    Rule,
    level_problems,
    public,
    write_codec,
    write_params,
)


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
    if m.get("_partitions") is not None:
        quiet = bool(quiet_s) and idle_s is not None and idle_s >= quiet_s
        return _partitioned_compaction(pol, m, last, now, seen, quiet)
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


def _limits(pol: Mapping[str, str]) -> iceberg_plan.Limits:
    return iceberg_plan.Limits(
        K["compaction.target-file-size-bytes"].as_int(pol),
        float(K["compaction.min-file-ratio"].get(pol)),
        float(K["compaction.delete-ratio"].get(pol)),
        K["compaction.max-bytes-per-run"].as_int(pol),
        K["compaction.min-small-files"].as_int(pol),
        K["position-deletes.enabled"].as_bool(pol),
        float(K["compaction.tier-fanout"].get(pol)))


def _partitioned_compaction(pol: Mapping[str, str], m: Mapping[str, Any],
                            last: Operation | None, now: datetime, seen: dict[str, Any],
                            quiet: bool) -> Decision:
    """Compaction planned per partition (``plan``): only where a rewrite merges two
    or more small files or applies deletes that cost readers, largest benefit first."""
    a, lim = "compaction", _limits(pol)
    min_small = K["compaction.min-small-files"].as_int(pol)
    small, mergeable = m["small_files"] or 0, m["mergeable_small_files"] or 0
    merge_due = mergeable >= min_small or (quiet and mergeable >= QUIET_MIN_SMALL_FILES)
    # a quiet table gets no more data: tidy every partition, whatever a merge rewrites again
    p = iceberg_plan.plan(m["_partitions"], m.get("_specs") or {}, lim, merge_due,
                          tiered=not quiet)
    if not p.chosen:
        limit, spread = m["small_file_bytes"], (m.get("partitions") or 0) > 1
        if small and not mergeable and spread:
            why = (f"{small} small data files spread over {m['partitions']} partitions, no "
                   f"partition holding two or more: a rewrite cannot merge a partition's only "
                   f"small file")
        elif mergeable and merge_due:
            why = (f"{mergeable} small data files in partitions holding two or more, but in "
                   f"none do a partition's smaller files add up to {lim.fanout:g} times "
                   f"the largest of them (compaction.tier-fanout) and none holds "
                   f"{iceberg_tiers.READERS_FACTOR * min_small} small files: merging now would "
                   f"mostly rewrite files merged before")
        elif mergeable and spread:
            why = (f"{mergeable} small data files in partitions holding two or more (of {small} "
                   f"small files); compaction starts at {min_small}")
        else:
            why = f"{small} small data files (< {limit} bytes); compaction starts at {min_small}"
        if m.get("delete_files"):
            why += (f"; no partition's deletes hide {lim.delete_ratio:g} of its rows or more "
                    f"(compaction.delete-ratio)")
        return Decision(a, False, why, seen)
    _, how = p.restriction()
    because = f"{p.eligible} partitions to compact"
    merged = sum(c.stats.small_files for c in p.chosen if c.merge)
    applied = sum(c.deletes_applied for c in p.chosen)
    waiting = (f"; {p.waiting} more wait for the next run (cap {lim.max_bytes} bytes, or a "
               f"size tier of their own)" if p.waiting else "")
    rewrite_bytes = int(lim.min_file_ratio * lim.target_bytes)
    tier = (f", files below {p.min_file_bytes} bytes (a size tier: larger files wait)"
            if p.min_file_bytes is not None and p.min_file_bytes < rewrite_bytes else "")
    if p.partitioned:
        reason = (f"compaction of {len(p.chosen)} of {p.partitions} partitions, {p.names()}: "
                  f"{merged} small files to merge, {applied} delete files to apply, "
                  f"{p.cost_bytes} bytes to rewrite through {how}{tier}{waiting}")
    else:
        reason = (f"{small} of {m['data_files']} data files are smaller than "
                  f"{m['small_file_bytes']} bytes (threshold {min_small} small files), "
                  f"{applied} delete files to apply, {p.cost_bytes} bytes to rewrite")
    metrics = {**seen, "plan": p.shown()}
    return _too_soon(a, "compaction.min-interval-s", pol, last, now, metrics, because) or \
        Decision(a, True, reason, metrics, iceberg_plan.rewrite_params(p, lim), p.benefit)


def _cluster_partitions(pol: Mapping[str, str], m: Mapping[str, Any], last: Operation | None,
                        params: dict[str, str], seen: dict[str, Any]
                        ) -> tuple[str, dict[str, Any]] | None:
    """Restrict a clustering to the partitions changed since the last one (whole partitions,
    rewrite-all, within the byte cap); None when no partition changed."""
    since = last.outcome.finished_at if last and last.outcome.finished_at else None
    rows = iceberg_plan.changed_since(m["_partitions"], m.get("_snapshot_seqs") or [],
                                      since.timestamp() * 1000 if since else None)
    lim = _limits(pol)
    p = iceberg_plan.cluster_plan(rows, m.get("_specs") or {}, lim)
    if not p.chosen:
        return None
    raw, how = p.restriction()
    params["max-file-group-size-bytes"] = str(max(MIB, min(lim.max_bytes, 1024 * GIB)))
    params["partial-progress.enabled"] = "true"
    if raw is not None and how.startswith("a filter"):
        params["partitions"], params["rewrite-all"] = raw, "true"
    if not p.partitioned:
        return "", seen
    waiting = f", {p.waiting} more later" if p.waiting else ""
    return (f"; {len(p.chosen)} changed partitions ({p.names()}{waiting}), {p.cost_bytes} "
            f"bytes through {how}", {**seen, "plan": p.shown()})


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
    where = ""
    if m.get("_partitions") is not None:
        restricted = _cluster_partitions(pol, m, last, params, seen)
        if restricted is None:
            return Decision(a, False, f"{new} new snapshots since the last clustering, but no "
                                      f"partition has new data files", seen)
        where, seen = restricted
    return _too_soon(a, "clustering.min-interval-s", pol, last, now, seen, because) or Decision(
        a, True, f"{new} new snapshots since the last clustering (threshold {need}), "
                 f"{'z-order ' + zorder if zorder else 'sort ' + sort}{where}", seen, params)


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
    """Planned per partition when inspection read the partitions (``deletes``)."""
    a, seen = "rewrite_position_deletes", public(m)
    limit = K["position-deletes.max-files"].as_int(pol)
    if not K["position-deletes.enabled"].as_bool(pol):
        return Decision(a, False, "position-delete rewrite is disabled by policy", seen)
    if m.get("_partitions") is not None:
        return _partitioned_position_deletes(pol, m, last, now, seen, limit)
    if m["delete_files"] < limit:
        return Decision(a, False, f"{m['delete_files']} delete files; rewrite starts at "
                                  f"{limit}", seen)
    because = f"{m['delete_files']} delete files"
    return _too_soon(a, "position-deletes.min-interval-s", pol, last, now, seen, because) or \
        Decision(a, True, f"{m['delete_files']} delete files (threshold {limit})", seen)


def _partitioned_position_deletes(pol: Mapping[str, str], m: Mapping[str, Any],
                                  last: Operation | None, now: datetime,
                                  seen: dict[str, Any], limit: int) -> Decision:
    a, least = "rewrite_position_deletes", iceberg_deletes.MIN_INPUT_FILES
    grain = m.get("delete_granularity") or iceberg_deletes.DEFAULT_GRANULARITY
    p, mergeable = iceberg_deletes.plan(m["_partitions"], m.get("_specs") or {},
                                        K["compaction.max-bytes-per-run"].as_int(pol), grain)
    total = m.get("position_delete_files") or 0
    how = (f"{grain} granularity: {least} or more delete files" if grain == "partition" else
           f"{grain} granularity: more delete files than data files")
    if not p.chosen or mergeable < limit:
        spread = (f" spread over {m.get('partitions') or 0} partitions"
                  if p.partitioned else "")
        return Decision(a, False, f"{total} position delete files{spread}, {mergeable} in "
                                  f"partitions where a rewrite removes some ({how}); "
                                  f"rewrite starts at {limit}", seen)
    because = f"{mergeable} position delete files to merge"
    waiting = f"; {p.waiting} more wait for the next run" if p.waiting else ""
    where = (f" in {len(p.chosen)} of {p.partitions} partitions, {p.names()}"
             if p.partitioned else "")
    metrics = {**seen, "plan": p.shown()}
    return _too_soon(a, "position-deletes.min-interval-s", pol, last, now, metrics,
                     because) or Decision(
        a, True, f"{mergeable} position delete files to merge{where} (threshold {limit}, "
                 f"{how}){waiting}", metrics,
        iceberg_deletes.params(p), p.benefit)


def _writing(rule: Rule) -> Rule:
    """A rewrite's rule whose operations carry the policy's codec and level, if it names
    them."""
    def decide(pol: Mapping[str, str], m: Mapping[str, Any], last: Operation | None,
               now: datetime) -> Decision:
        d = rule(pol, m, last, now)
        extra = write_params(pol) if d.should_run else {}
        return replace(d, params={**d.params, **extra}) if extra else d
    return decide


RULES: dict[str, Rule] = {
    "compaction": _writing(compaction), "clustering": _writing(clustering),
    "expire_snapshots": expire_snapshots, "remove_orphan_files": remove_orphan_files,
    "rewrite_manifests": rewrite_manifests,
    "rewrite_position_deletes": _writing(rewrite_position_deletes),
}
