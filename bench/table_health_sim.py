"""An offline replay of the partitioned table-health stream through the Iceberg rules: no
Spark, no service, seconds instead of half an hour. It estimates what a rule or threshold
change does to write amplification and files per partition before the real bench
(``bench/table_health.py --scenario partitioned``) measures it.

Model (coarse, on purpose): every append writes one file of 500 rows (a fixed overhead plus
bytes per row, so a merge's output is smaller than its input, as with Parquet); the scheduler
decides every ``--decide-every`` commits and an operation's effect is immediate. A DELETE
hides 2 % of one partition's rows and, like Spark's file-scoped deletes (Iceberg's default
granularity), leaves one delete file per data file of the partition (Spark folds a data file's
earlier deletes into the new one: still one). A compaction of a partition rewrites the files
it selects into one (their deleted rows dropped); the delete files of the files it
merged stay, dangling, unless it applies deletes (then they go). The replay plans with the
scheduler's own code: a partition's statistics come from inspection's ``manifest_stats`` (over
fake manifest entries of its files) and the rules are ``iceberg_policy.RULES``; a compaction
rewrites what the job would select with the decision's parameters (files below
``min-file-size-bytes``, which size-tiered merges lower, and with ``delete-file-threshold`` 1
every file a delete names). A position-delete rewrite of
a partition writes one delete file per data file named and drops dangling ones. Write
amplification is given for data bytes and with delete-file bytes (rewritten or removed by
maintenance; written by the DELETEs), both over all bytes writers wrote. After the stream the
table is quiet and the rules run until they plan nothing.

    .venv/bin/python -m bench.table_health_sim [--decide-every 10] [--plan-granularity partition]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.table_health_partitioned import POLICY_PARTITIONED
from bench.table_health_stream import plan
from tms.formats.iceberg import stats as iceberg_stats
from tms.formats.iceberg.policy import RULES, K
from tms.formats.iceberg.stats import PartitionKey, PartitionStats

ROWS = 500
FILE_OVERHEAD_BYTES = 1800  # a small Parquet file's footer and headers: merges shed it
ROW_BYTES = 8.3  # compressed bytes per row of the bench's schema (500 rows: about 5.9 KB)
DELETED_SHARE = 0.02
DELETE_OVERHEAD_BYTES = 1800  # a position delete file of a few positions (the bench: ~1.84 KB)
POSITION_BYTES = 4
QUIET_S = 3600
# the granularity the planner is told (the table's is file): "partition" replays the rule
# before issue 15's delete tiering (a partition's delete files rewritten from two on)
GRANULARITY = ["file"]
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass
class Part:
    """A partition: its data files and, per data file, the position delete files naming it
    (file granularity, what Spark's DELETE writes); ``dangling``: delete files naming data
    files a merge removed (they stay until a rewrite drops them)."""

    files: list[DataFile] = field(default_factory=list)
    dangling: list[int] = field(default_factory=list)  # sizes

    def stats(self, small: int, rewrite: int) -> PartitionStats:
        """The partition's statistics as inspection computes them (``manifest_stats`` over
        its live files), so the replay plans with the scheduler's own code."""
        entries = [_Entry(_File(f.size, f.rows, 0)) for f in self.files]
        entries += [_Entry(_File(d, f.deleted, 1)) for f in self.files for d in f.deletes]
        entries += [_Entry(_File(d, 1, 1)) for d in self.dangling]
        got = iceberg_stats.manifest_stats(entries, 0, iceberg_stats.Limits(small, rewrite))
        st = got.get((0, ()), PartitionStats())
        st.max_sequence = 1
        # the rows deletes name: per data file, not per delete file (a file's later delete
        # file carries its earlier positions too)
        st.deleted_rows = sum(f.deleted for f in self.files)
        return st

    def delete_bytes(self) -> int:
        return sum(sum(f.deletes) for f in self.files) + sum(self.dangling)


@dataclass(frozen=True)
class _File:
    """What ``manifest_stats`` reads of a manifest entry's file."""

    file_size_in_bytes: int
    record_count: int
    content: int
    partition: tuple[()] = ()
    spec_id: int = 0


@dataclass(frozen=True)
class _Entry:
    data_file: _File
    sequence_number: int = 1


@dataclass
class DataFile:
    size: int
    rows: int
    deletes: list[int] = field(default_factory=list)  # sizes of the delete files naming it
    deleted: int = 0  # rows they name


def metrics(parts: dict[int, Part], pol: dict[str, str], idle_s: float) -> dict[str, Any]:
    small = K["compaction.small-file-bytes"].as_int(pol)
    rewrite = int(float(K["compaction.min-file-ratio"].get(pol))
                  * K["compaction.target-file-size-bytes"].as_int(pol))
    stats: dict[PartitionKey, PartitionStats] = {
        (0, (p,)): part.stats(small, rewrite) for p, part in parts.items()}
    pos = sum(s.position_delete_files for s in stats.values())
    return {"small_files": sum(s.small_files for s in stats.values()),
            "data_files": sum(s.data_files for s in stats.values()),
            "mergeable_small_files": sum(s.small_files for s in stats.values()
                                         if s.small_files >= 2),
            "small_file_bytes": small, "partitions": len(stats), "delete_files": pos,
            "position_delete_files": pos, "equality_delete_files": 0, "manifests": 1,
            "snapshots": 1, "_snapshot_times_ms": [0],
            "last_commit_ms": (NOW - timedelta(seconds=idle_s)).timestamp() * 1000,
            "_partitions": iceberg_stats.encode(stats), "delete_granularity": GRANULARITY[0],
            "_specs": {0: [["part", "identity", "int"]]}}


def size_of(rows: int) -> int:
    return int(FILE_OVERHEAD_BYTES + ROW_BYTES * rows)


def delete_size(positions: int) -> int:
    return int(DELETE_OVERHEAD_BYTES + POSITION_BYTES * positions)


def compact(part: Part, below: int, deletes: bool, counts: dict[str, int]) -> int:
    """What the job does with the decision's parameters: rewrite the partition's files below
    ``below`` bytes (``min-file-size-bytes``) and, when deletes are applied
    (``delete-file-threshold`` 1), every file a delete names; their deleted rows are dropped
    either way; the data bytes rewritten. Applying deletes also removes the partition's
    delete files (``remove-dangling-deletes``); a merge leaves the rewritten files' delete
    files dangling."""
    chosen = [f for f in part.files if f.size < below or (deletes and f.deletes)]
    if len(chosen) < 2 and not deletes:
        return 0
    total = sum(f.size for f in chosen)
    rows = sum(f.rows - f.deleted for f in chosen)
    kept = [f for f in part.files if all(f is not c for c in chosen)]
    if deletes:
        counts["delete_bytes_removed"] += part.delete_bytes()
        counts["delete_files_removed"] += sum(len(f.deletes) for f in part.files) + len(
            part.dangling)
        part.dangling = []
    else:
        part.dangling += [d for f in chosen for d in f.deletes]
    part.files = [*kept, DataFile(size_of(rows), rows)]
    return total


def rewrite_deletes(part: Part, counts: dict[str, int]) -> None:
    """Iceberg's position-delete rewrite of one partition at file granularity: one delete
    file per data file its deletes name; dangling deletes dropped. Every delete file of the
    partition is read and replaced."""
    before = sum(len(f.deletes) for f in part.files) + len(part.dangling)
    counts["delete_bytes_removed"] += part.delete_bytes()
    counts["delete_files_removed"] += before
    part.dangling = []
    after = 0
    for f in part.files:
        if f.deletes:
            f.deletes = [delete_size(f.deleted)]
            after += 1
    if after >= before:
        counts["no-op"] += 1


def decide(parts: dict[int, Part], pol: dict[str, str], idle_s: float,
           counts: dict[str, int]) -> tuple[int, bool]:
    """Run the rules once: (data bytes rewritten, whether anything ran)."""
    m = metrics(parts, pol, idle_s)
    rewritten, ran = 0, False
    d = RULES["compaction"](pol, m, None, NOW)
    if d.should_run:
        ran = True
        counts["compaction"] += 1
        deletes = d.params.get("delete-file-threshold") == "1"
        below = int(d.params["min-file-size-bytes"])
        for _, values in json.loads(d.params["partitions"]):
            got = compact(parts[values[0]], below, deletes, counts)
            rewritten += got
            counts["bytes_applying_deletes" if deletes else "bytes_merging"] += got
    d = RULES["rewrite_position_deletes"](pol, metrics(parts, pol, idle_s), None, NOW)
    if d.should_run:
        ran = True
        counts["rewrite_position_deletes"] += 1
        for _, values in json.loads(d.params["partitions"]):
            rewrite_deletes(parts[values[0]], counts)
    return rewritten, ran


def simulate(args: argparse.Namespace, pol: dict[str, str]) -> dict[str, Any]:
    parts: dict[int, Part] = {}
    written = written_deletes = rewritten = 0
    counts = {"compaction": 0, "rewrite_position_deletes": 0, "no-op": 0,
              "bytes_merging": 0, "bytes_applying_deletes": 0, "delete_files_written": 0,
              "delete_files_removed": 0, "delete_bytes_removed": 0}
    most = 0
    marks = {max(1, int(args.commits * f)) for f in (0.25, 0.5, 0.75)}
    checkpoints = []  # data files per partition holding data (the bench's files / ideal)
    for i, step in enumerate(plan(args.commits, args.partitions, 10, 50)):
        part = parts.setdefault(step.part, Part())
        if step.kind == "delete":
            for f in part.files:  # one delete file per data file (file granularity)
                hit = int((f.rows - f.deleted) * DELETED_SHARE)
                f.deleted += hit
                f.deletes.append(delete_size(hit))
                written_deletes += f.deletes[-1]
                counts["delete_files_written"] += 1
        else:
            part.files.append(DataFile(size_of(ROWS), ROWS))
            written += size_of(ROWS)
        if (i + 1) % args.decide_every == 0:
            rewritten += decide(parts, pol, 0, counts)[0]
        most = max(most, max(len(p.files) for p in parts.values()))
        if i + 1 in marks:
            held = [len(p.files) for p in parts.values() if p.files]
            checkpoints.append(round(sum(held) / len(held), 2))
    stream_wa = rewritten / (written + written_deletes)
    for _ in range(100):  # quiet: tidy up
        got, ran = decide(parts, {**pol, "compaction.quiet-s": "10"}, QUIET_S, counts)
        rewritten += got
        if not ran:
            break
    files = sum(len(p.files) for p in parts.values())
    total = written + written_deletes
    wa_all = (rewritten + counts["delete_bytes_removed"]) / total
    shown: dict[str, float] = {k: round(v / total, 2) if k.startswith("bytes") else v
                               for k, v in counts.items()}
    return {"write_amplification_data": round(rewritten / total, 2),
            "write_amplification_with_deletes": round(wa_all, 2),
            "during_stream_data": round(stream_wa, 2), "files_per_partition_final":
            round(files / len(parts), 2), "worst_partition": max(len(p.files)
                                                                 for p in parts.values()),
            "delete_files_left": sum(p.stats(0, 0).position_delete_files
                                     for p in parts.values()),
            "most_files_in_a_partition_mid_stream": most,
            "files_per_partition_at_25_50_75_percent": checkpoints, **shown}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--decide-every", type=int, default=10)
    ap.add_argument("--policy", default="{}", help="JSON policy overrides")
    ap.add_argument("--plan-granularity", default="file", choices=("file", "partition"),
                    help="what the planner believes (the writes are file-scoped): partition "
                         "replays the earlier rule, two delete files per partition suffice")
    args = ap.parse_args()
    GRANULARITY[0] = args.plan_granularity
    pol = {**POLICY_PARTITIONED, **json.loads(args.policy)}
    print(json.dumps(simulate(args, pol)))


if __name__ == "__main__":
    main()
