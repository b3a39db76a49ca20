"""Partition-aware plans for Iceberg compaction and clustering: which partitions a rewrite
touches, what it costs in bytes rewritten and what it buys in files removed and delete files
applied.

Like Amoro's minor/major split, a partition is worth a rewrite only where it merges something
(at least two small files) or where its deletes cost readers enough: they hide at least
``compaction.delete-ratio`` of its rows (equality deletes counted one row per key), or readers
must open ``compaction.min-small-files`` delete files or more for it. Applying every equality
delete at once would rewrite a partition under an upsert stream every few minutes. Position
delete files are counted only when the position-delete rewrite is off: otherwise that rewrite
merges them (reading delete files only) for a fraction of the bytes of rewriting the data,
and Spark's file-scoped deletes (Iceberg's default) leave one per data file a DELETE touches,
so a DELETE into a partition of many small files would call for a rewrite of all of them. A merge
rewrites only the files below ``compaction.min-file-ratio`` x target (files near the target stay
as they are); applying deletes rewrites the files they touch. Partitions are taken largest
benefit first (files removed plus delete files applied, per GiB rewritten) until
``compaction.max-bytes-per-run``; the rest wait for the next run.

Write amplification: merges are size-tiered (``tiers``): the smaller files of a
partition are merged without rewriting the larger ones, so a byte is rewritten about
log_fanout(target / written size) times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.formats.iceberg import output_sizing
from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.stats import PartitionKey, PartitionStats
from tms.formats.iceberg.tiers import (
    MIN_MERGE_FILES,
    TIER_FANOUT,
    Selection,
    selection,
)
from tms.jobs import partition_filter
from tms.jobs.partition_filter import FieldInfo, PartitionRef

GIB = 1 << 30
MIB = 1 << 20
TIB = 1 << 40
MIN_COST_BYTES = MIB  # a rewrite costs at least this much (file opens, a commit)
SHOWN_IN_REASON = 3
SHOWN_IN_METRICS = 5


@dataclass(frozen=True)
class Limits:
    target_bytes: int
    min_file_ratio: float
    delete_ratio: float
    max_bytes: int
    min_small_files: int = 12  # the policy's threshold (see READERS_FACTOR)
    merges_position_deletes: bool = False  # the position-delete rewrite is on
    tier_fanout: float = TIER_FANOUT  # a merge's output is at least this x its largest input

    @property
    def fanout(self) -> float:
        """The tier fanout in force: a tier fills by ``min-small-files`` files at the latest."""
        return min(self.tier_fanout, self.min_small_files)


@dataclass(frozen=True)
class Candidate:
    key: PartitionKey
    stats: PartitionStats
    merge: bool  # holds >= 2 small files
    deletes: bool  # its deletes call for applying them
    cost_bytes: int
    files_removed: int
    deletes_applied: int
    selection: Selection | None = None  # the files a merge rewrites

    @property
    def benefit(self) -> float:
        """Files removed plus delete files applied, per GiB rewritten."""
        return (self.files_removed + self.deletes_applied) * GIB / max(self.cost_bytes,
                                                                        MIN_COST_BYTES)


@dataclass(frozen=True)
class Plan:
    chosen: tuple[Candidate, ...]
    eligible: int  # partitions worth a rewrite (chosen or waiting)
    partitions: int  # partitions of the table
    specs: Mapping[int, Sequence[FieldInfo]]
    partitioned: bool
    min_file_bytes: int | None = None  # the merges' size threshold (None: the rewrite size)

    @property
    def cost_bytes(self) -> int:
        return sum(c.cost_bytes for c in self.chosen)

    @property
    def waiting(self) -> int:
        return self.eligible - len(self.chosen)

    @property
    def deletes(self) -> bool:
        return any(c.deletes for c in self.chosen)

    @property
    def benefit(self) -> float | None:
        if not self.chosen:
            return None
        gain = sum(c.files_removed + c.deletes_applied for c in self.chosen)
        return round(gain * GIB / max(self.cost_bytes, MIN_COST_BYTES), 3)

    def refs(self) -> list[PartitionRef]:
        return [PartitionRef(c.key[0], tuple(_json_scalar(v) for v in c.key[1]))
                for c in self.chosen]

    def restriction(self) -> tuple[str | None, str]:
        """(the ``partitions`` parameter, how the job will select them): None for an
        unpartitioned table (the whole table is the one partition)."""
        if not self.partitioned or not self.chosen:
            return None, "the whole table"
        refs = self.refs()
        try:
            exact = partition_filter.build_where(refs, self.specs) is not None
        except partition_filter.PartitionFilterError:
            exact = False
        how = "a filter on those partitions" if exact else \
            "the whole table (a partition transform no filter can select)"
        return partition_filter.encode_partitions(refs), how

    def shown(self) -> list[dict[str, Any]]:
        """The top partitions for the decision's metrics."""
        return [{"partition": name(c.key, self.specs), "small_files": c.stats.small_files,
                 "delete_files": c.stats.delete_files, "rewrite_bytes": c.cost_bytes,
                 "benefit": round(c.benefit, 1)} for c in self.chosen[:SHOWN_IN_METRICS]]

    def names(self) -> str:
        shown = [f"{name(c.key, self.specs)} ({_what(c)})" for c in self.chosen[:SHOWN_IN_REASON]]
        more = len(self.chosen) - SHOWN_IN_REASON
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _json_scalar(v: Any) -> partition_filter.Scalar:
    return v if v is None or isinstance(v, bool | int | str) else str(v)


def _what(c: Candidate) -> str:
    parts = []
    if c.merge:
        parts.append(f"{c.stats.small_files} small files")
    if c.deletes:
        parts.append(f"{c.stats.delete_files} delete files")
    return ", ".join(parts)


def specs_of(raw: Mapping[Any, Sequence[Sequence[str]]]) -> dict[int, list[FieldInfo]]:
    """The ``_specs`` metric (``stats.spec_fields``) as FieldInfo rows."""
    return {int(k): [FieldInfo(*row) for row in rows] for k, rows in raw.items()}


def _display(f: FieldInfo, v: Any) -> str:
    if v is None or not isinstance(v, int) or isinstance(v, bool):
        return "null" if v is None else str(v)
    try:
        if f.transform == "day" or (f.transform == "identity" and f.type == "date"):
            return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=v)).date().isoformat()
        if f.transform == "month":
            return f"{1970 + v // 12:04d}-{v % 12 + 1:02d}"
        if f.transform == "year":
            return f"{1970 + v:04d}"
        if f.transform == "hour":
            return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(hours=v)).strftime(
                "%Y-%m-%d-%H")
    except OverflowError:
        pass
    return str(v)


def name(key: PartitionKey, specs: Mapping[int, Sequence[FieldInfo]]) -> str:
    """A partition as people write it: ``ts_day=2026-01-02/kind=a``."""
    fields = specs.get(key[0], [])
    if not key[1]:
        return "(unpartitioned)"
    if len(fields) != len(key[1]):
        return f"spec {key[0]} {list(key[1])}"
    out = []
    for f, v in zip(fields, key[1], strict=True):
        label = f.column if f.transform == "identity" else \
            f"{f.column}_{f.transform.split('[')[0]}"
        out.append(f"{label}={_display(f, v)}")
    return "/".join(out)


def opened_deletes(st: PartitionStats, lim: Limits) -> int:
    """The delete files readers open for the partition that only a data rewrite removes."""
    return st.equality_delete_files if lim.merges_position_deletes else st.delete_files


def candidate(key: PartitionKey, st: PartitionStats, lim: Limits, merge_small: bool,
              tiered: bool = True) -> Candidate | None:
    """The partition's rewrite, or None when it merges nothing and needs no deletes applied."""
    # the job rewrites only files below min-file-size (the rewrite size): with a small-file
    # threshold above it, small files the job would leave alone must not count as a merge
    sel = selection(st, int(lim.min_file_ratio * lim.target_bytes), lim.fanout,
                    lim.min_small_files, tiered) if merge_small and min(
        st.small_files, st.rewrite_files) >= MIN_MERGE_FILES else None
    deletes = st.data_files > 0 and st.delete_files > 0 and (
        st.delete_ratio >= lim.delete_ratio or opened_deletes(st, lim) >= lim.min_small_files)
    if sel is None and not deletes:
        return None
    removed = 0
    if sel is not None:  # the files selected become as few target-size files as fit
        removed = max(0, sel.files - max(1, math.ceil(sel.bytes / lim.target_bytes)))
    # applying deletes rewrites the files they touch: at most the whole partition
    cost = st.bytes if deletes else (sel.bytes if sel else 0)
    return Candidate(key, st, sel is not None, deletes, cost, removed,
                     st.delete_files if deletes else 0, sel)


def plan(rows: Sequence[Mapping[str, Any]], raw_specs: Mapping[Any, Sequence[Sequence[str]]],
         lim: Limits, merge_small: bool, tiered: bool = True) -> Plan:
    """Partitions to rewrite (``select``)."""
    parts = iceberg_stats.decode(rows)
    specs = specs_of(raw_specs)
    cands = [c for k, st in parts.items()
             if (c := candidate(k, st, lim, merge_small, tiered)) is not None]
    return select(cands, specs, any(k[1] for k in parts), lim.max_bytes,
                  sum(1 for p in parts.values() if p.data_files))


def _fits(window: tuple[int, int], c: Candidate) -> tuple[int, int] | None:
    """The thresholds (``min-file-size-bytes``) that select what every chosen merge and ``c``
    want, or None when no one threshold does (``c`` then waits for the next run)."""
    if c.selection is None:
        return window
    lo, hi = max(window[0], c.selection.below), min(window[1], c.selection.room)
    return (lo, hi) if lo <= hi else None


def select(cands: Sequence[Candidate], specs: Mapping[int, Sequence[FieldInfo]],
           partitioned: bool, max_bytes: int, partitions: int) -> Plan:
    """The candidates largest benefit first, within the byte cap (the first one always, else a
    partition larger than the cap would never be rewritten), within what the ``partitions``
    parameter can carry, and whose merges one size threshold selects (size tiers)."""
    cands = sorted(cands, key=lambda c: (-c.benefit, -c.cost_bytes, repr(c.key)))
    chosen: list[Candidate] = []
    total = 0
    window: tuple[int, int] | None = (0, TIB * 1024)
    for c in cands:
        if chosen and total + c.cost_bytes > max_bytes:
            continue
        fits = _fits(window, c) if window else None
        if fits is None:
            continue
        if partitioned:
            if len(chosen) >= partition_filter.MAX_PARTITIONS:
                break
            refs = [*Plan(tuple(chosen), 0, 0, specs, True).refs(),
                    PartitionRef(c.key[0], tuple(_json_scalar(v) for v in c.key[1]))]
            if len(partition_filter.encode_partitions(refs)) > \
                    partition_filter.MAX_PARTITIONS_CHARS:
                continue
        chosen.append(c)
        total += c.cost_bytes
        window = fits
    below = window[0] if window and any(c.selection for c in chosen) else None
    return Plan(tuple(chosen), len(cands), partitions, specs, partitioned, below)


def file_groups(p: Plan, group_bytes: int) -> int:
    """How many file groups Iceberg makes of a plan (one per partition at least, split at
    ``max-file-group-size-bytes``). Partial progress commits each group as it finishes: with
    one group there is nothing to commit early, and Iceberg's commit service then only
    busy-waits beside the rewrite (22-57 % of the warm driver's CPU samples in the compaction
    bench's profile), so it is turned on only for plans of two groups or more."""
    return sum(max(1, -(-c.cost_bytes // group_bytes)) for c in p.chosen)


def rewrite_params(p: Plan, lim: Limits) -> dict[str, str]:
    """``rewrite_data_files`` options of a compaction plan: merge below the rewrite size,
    two files at least per group, groups no larger than the cap, each committed as it
    finishes when there are two or more (``file_groups``); with deletes to apply, every file
    a delete touches and dangling deletes dropped (the starting sequence number must not be
    reused for that). A merge of one group gets the target that leaves no remainder file
    (``output_sizing.even_target``)."""
    rewrite_bytes = int(lim.min_file_ratio * lim.target_bytes)
    # a size-tiered merge leaves the larger files alone: a lower threshold (never higher)
    min_bytes = min(rewrite_bytes, p.min_file_bytes or rewrite_bytes)
    group_bytes = max(MIB, min(lim.max_bytes, TIB))
    params = {
        "target-file-size-bytes": str(lim.target_bytes),
        "min-file-size-bytes": str(min_bytes),
        "min-input-files": str(MIN_MERGE_FILES),
        "max-file-group-size-bytes": str(group_bytes),
    }
    if file_groups(p, group_bytes) > 1:
        params["partial-progress.enabled"] = "true"
    if len(p.chosen) == 1 and p.chosen[0].merge and not p.deletes:
        st, sel = p.chosen[0].stats, p.chosen[0].selection
        size, largest = (sel.bytes, sel.largest) if sel else (st.rewrite_bytes,
                                                               st.rewrite_max_bytes)
        even = output_sizing.even_target(size, largest, lim.target_bytes, min_bytes)
        if even is not None and size <= int(params["max-file-group-size-bytes"]):
            # the files selected stay the same: both thresholds named in bytes
            params["target-file-size-bytes"] = str(even)
            params["max-file-size-bytes"] = str(output_sizing.max_file_bytes(lim.target_bytes))
    if p.deletes:
        params.update({"delete-file-threshold": "1", "remove-dangling-deletes": "true",
                       "use-starting-sequence-number": "false"})
    raw, _ = p.restriction()
    if raw is not None:
        params[partition_filter.PARAM] = raw
    return params


def changed_since(rows: Sequence[Mapping[str, Any]], seqs: Sequence[Sequence[int]],
                  since_ms: float | None) -> list[Mapping[str, Any]]:
    """The partition rows with files newer than the last snapshot at or before ``since_ms``
    (all of them when there is no such time)."""
    if since_ms is None or not any(int(seq) for _, seq in seqs):  # v1: no sequence numbers
        return list(rows)
    before = [int(seq) for ts, seq in seqs if ts <= since_ms]
    if not before:
        return list(rows)
    last = max(before)
    return [r for r in rows if int(r.get("max_sequence", 0)) > last]


def cluster_plan(rows: Sequence[Mapping[str, Any]],
                 raw_specs: Mapping[Any, Sequence[Sequence[str]]], lim: Limits) -> Plan:
    """Clustering rewrites whole partitions (``rows``: those changed since the last one),
    most data files per byte first, within the byte cap."""
    parts = iceberg_stats.decode(rows)
    cands = [Candidate(k, st, False, False, st.bytes,
                       max(0, st.data_files - max(1, math.ceil(st.bytes / lim.target_bytes))), 0)
             for k, st in parts.items() if st.data_files]
    cands.sort(key=lambda c: (-(c.stats.data_files * GIB / max(c.cost_bytes, MIN_COST_BYTES)),
                              repr(c.key)))
    specs = specs_of(raw_specs)
    partitioned = any(k[1] for k in parts)
    chosen: list[Candidate] = []
    for c in cands:
        if chosen and (sum(x.cost_bytes for x in chosen) + c.cost_bytes > lim.max_bytes
                       or len(chosen) >= partition_filter.MAX_PARTITIONS):
            continue
        trial = Plan((*chosen, c), 0, 0, specs, partitioned)
        if partitioned and len(partition_filter.encode_partitions(trial.refs())) > \
                partition_filter.MAX_PARTITIONS_CHARS:
            continue
        chosen.append(c)
    return Plan(tuple(chosen), len(cands), len(cands), specs, partitioned)
