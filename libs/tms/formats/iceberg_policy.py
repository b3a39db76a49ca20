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
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.domain import Decision, Operation
from tms.formats import iceberg_deletes, iceberg_plan, iceberg_tiers
from tms.jobs import table_props, write_format
from tms.policy_types import Kind, PolicyKey, boolean, by_key, choice, decimal, integer, text

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
DAY_S = 86_400
MAX_INTERVAL_S = 30 * DAY_S
MAX_FILE_BYTES = 16 * GIB
MAX_RUN_BYTES = 1024 * 1024 * GIB  # 1 PiB
MAX_COUNT = 1_000_000
FORMAT = ("iceberg",)
# Column names only, separated by ", " (spaces, not tabs or newlines): they reach Spark SQL
_COLUMN = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
COLUMNS = rf"{_COLUMN}( ?, ?{_COLUMN}){{0,31}}"
_TERM = rf"{_COLUMN}( (ASC|DESC))?( NULLS (FIRST|LAST))?"
SORT = rf"{_TERM}( ?, ?{_TERM}){{0,31}}"


def _int(key: str, default: int, minimum: int, maximum: int, unit: str, doc: str
         ) -> PolicyKey:
    return integer(key, default, minimum, maximum, unit, doc, FORMAT)


def _on(key: str, default: bool, doc: str) -> PolicyKey:
    return boolean(key, default, doc, FORMAT)


K = by_key((
    _on("compaction.enabled", True, "bin-pack small data files"),
    _int("compaction.target-file-size-bytes", 128 * MIB, KIB, MAX_FILE_BYTES, "bytes",
         "size of the files compaction and clustering write"),
    _int("compaction.small-file-bytes", 16 * MIB, KIB, MAX_FILE_BYTES, "bytes",
         "a data file below this size counts as small"),
    _int("compaction.min-small-files", 12, 2, MAX_COUNT, "count",
         "small files that trigger a compaction; a partition's smaller files are merged once "
         "they fill a size tier (compaction.tier-fanout, at most this many), or from twice "
         "this many"),
    _int("compaction.min-interval-s", 60, 0, MAX_INTERVAL_S, "s",
         "least time between two compactions"),
    _int("compaction.quiet-s", 3600, 0, MAX_INTERVAL_S, "s",
         "a table without commits this long is compacted from 2 small files (0: off)"),
    decimal("compaction.min-file-ratio", 0.75, 0.05, 1.0,
            "a data file of at least this share of the target size is not rewritten by a "
            "merge (only deletes call for it)", FORMAT),
    PolicyKey("compaction.tier-fanout", Kind.DECIMAL, iceberg_tiers.TIER_FANOUT,
              "size tiers: a merge takes a partition's smaller files only once they add up to "
              "this many times the mean size of the largest power-of-two size class taken (at "
              "most min-small-files); larger files wait, so a byte is rewritten about "
              "log-base-this of (target / written size) times",
              "times", 1.1, 1000.0, formats=FORMAT),
    decimal("compaction.delete-ratio", 0.1, 0.001, 1.0,
            "share of a partition's rows hidden by deletes (equality deletes: one row per "
            "key) that calls for applying them; min-small-files delete files always do "
            "(position delete files only with position-deletes.enabled false: else that "
            "rewrite merges them)", FORMAT),
    _int("compaction.max-bytes-per-run", 10 * GIB, MIB, MAX_RUN_BYTES, "bytes",
         "most bytes one compaction or clustering plans to rewrite (partitions of most "
         "benefit first)"),
    choice("compaction.compression-codec", write_format.CODECS, None,
           "codec of the files compaction, clustering and position-delete rewrites write "
           "(not set: the table's write.parquet.compression-codec, else the codec its data "
           "files are in)", FORMAT),
    integer("compaction.compression-level", None, 0, write_format.MAX_LEVEL, "level",
            "compression level of those files (not set: the table's, else the data files' "
            "writer's default)", FORMAT),
    _on("clustering.enabled", False, "sort or z-order data files (needs a sort order)"),
    text("clustering.sort-order", "", SORT, "columns with optional ASC/DESC and NULLS "
         "FIRST/LAST, comma-separated", "sort order of clustering", FORMAT),
    text("clustering.zorder-columns", "", COLUMNS, "comma-separated column names",
         "columns to z-order by (instead of a sort order)", FORMAT),
    _int("clustering.min-new-snapshots", 10, 1, MAX_COUNT, "count",
         "new snapshots since the last clustering that trigger the next"),
    _int("clustering.min-interval-s", DAY_S, 0, MAX_INTERVAL_S, "s",
         "least time between two clusterings"),
    _on("expire-snapshots.enabled", True, "expire old snapshots"),
    _int("expire-snapshots.max-age-s", 5 * DAY_S, 0, 3650 * DAY_S, "s",
         "snapshots older than this may expire"),
    _int("expire-snapshots.retain-last", 1, 1, 100_000, "count",
         "snapshots always kept, whatever their age"),
    _int("expire-snapshots.min-interval-s", 3600, 0, MAX_INTERVAL_S, "s",
         "least time between two expiries"),
    _on("orphan-files.enabled", False, "delete files no snapshot references"),
    _int("orphan-files.older-than-s", 3 * DAY_S, DAY_S, 365 * DAY_S, "s",
         "only files older than this are orphan candidates"),
    _int("orphan-files.interval-s", DAY_S, 0, MAX_INTERVAL_S, "s",
         "least time between two orphan-file removals"),
    _on("manifests.enabled", True, "rewrite manifests when there are many"),
    _int("manifests.max-count", 100, 2, MAX_COUNT, "count",
         "manifests in the current snapshot that trigger a rewrite"),
    _int("manifests.min-interval-s", 3600, 0, MAX_INTERVAL_S, "s",
         "least time between two manifest rewrites"),
    _on("position-deletes.enabled", True, "compact position delete files"),
    _int("position-deletes.max-files", 20, 1, MAX_COUNT, "count",
         "position delete files that trigger a rewrite, counted in partitions where a rewrite "
         "removes some: two or more delete files with partition granularity, more delete "
         "files than data files with file granularity (Iceberg's default)"),
    _int("position-deletes.min-interval-s", 600, 0, MAX_INTERVAL_S, "s",
         "least time between two position-delete rewrites"),
))

WRITE_KEYS = (("compaction.compression-codec", write_format.OPTION_CODEC),
              ("compaction.compression-level", write_format.OPTION_LEVEL))
QUIET_MIN_SMALL_FILES = 2  # a quiet table is worth a rewrite from two small files on
Rule = Callable[[Mapping[str, str], Mapping[str, Any], Operation | None, datetime],
                Decision]


class Measured(dict[str, Any]):
    """Metrics whose public part is worked out once for all the rules of one evaluation
    (six rules each took a copy without the "_" keys)."""

    def __init__(self, m: Mapping[str, Any], public: Mapping[str, Any] | None = None) -> None:
        """``public``: that part already worked out (an unchanged table's, kept with its
        metrics); never changed here, the rules take copies."""
        super().__init__(m)
        self.public = public if public is not None else {
            k: v for k, v in m.items() if not k.startswith("_")}


def public(m: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics worth storing with a decision: "_" keys are bulky inputs (e.g. every
    snapshot's time) that would bloat each stored decision. A copy: a rule may add to it."""
    if isinstance(m, Measured):
        return dict(m.public)
    return {k: v for k, v in m.items() if not k.startswith("_")}


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write_params(pol: Mapping[str, str]) -> dict[str, str]:
    """The rewrite's codec and level when the policy names them (else the job keeps the
    table's own: ``tms.jobs.write_format``)."""
    return {param: K[key].text(K[key].get(pol)) for key, param in WRITE_KEYS if key in pol}


def write_codec(pol: Mapping[str, str], props: Mapping[str, str]) -> str:
    """The codec rewrites will write, as far as policy and metadata tell (a metric, shown by
    ExplainTable); the job reads the data files' own when neither names one, and its result
    says which it wrote (``tms.jobs.write_format``)."""
    if pol.get("compaction.compression-codec"):
        return f"{pol['compaction.compression-codec']} (policy compaction.compression-codec)"
    prop = props.get(write_format.DATA_CODEC)
    if prop:
        return f"{prop.lower()} (table property {write_format.DATA_CODEC})"
    return "the data files' own (read from their Parquet footers when a rewrite runs)"


def level_problems(codec: str | None, level: str | None, field: str, codec_key: str
                   ) -> list[tuple[str, str]]:
    """A codec and a level set together (a policy, a trigger's parameters) that its writer
    does not take (gzip 1-9, brotli 0-11): refused when set, not when the rewrite runs (the
    job checks the level against the codec it chose too, for a codec not named here)."""
    bounds = table_props.LEVELS.get((codec or "").lower())
    if bounds is None or level is None or not level.isascii() or not level.isdigit():
        return []  # a malformed level is the schema's to refuse
    if bounds[0] <= int(level) <= bounds[1]:
        return []
    return [(field, f"{level} does not fit {codec_key} {codec}: expected {bounds[0]} to "
                    f"{bounds[1]}")]


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
    """Compaction planned per partition (``iceberg_plan``): only where a rewrite merges two
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
    """Planned per partition when inspection read the partitions (``iceberg_deletes``)."""
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
