"""An offline replay of the partitioned table-health stream through the Iceberg rules: no
Spark, no service, seconds instead of half an hour. It estimates what a rule or threshold
change does to write amplification and files per partition before the real bench
(``bench/table_health.py --scenario partitioned``) measures it.

Model (coarse, on purpose): every append writes one file of 500 rows (a fixed overhead plus
bytes per row, so a merge's output is smaller than its input, as with Parquet); the scheduler
decides every ``--decide-every`` commits and an operation's effect is immediate. A DELETE
hides 2 % of one partition's rows and, like Spark's file-scoped deletes (Iceberg's default
granularity), leaves one delete file per data file of the partition. A compaction of a
partition rewrites the files below the rewrite size into one (applying and dropping the
deletes of the files it rewrites); a position-delete rewrite merges a partition's delete files
into one. After the stream the table is quiet and the rules run until they plan nothing.

    .venv/bin/python -m bench.table_health_sim [--decide-every 10]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.table_health_partitioned import POLICY_PARTITIONED
from bench.table_health_stream import plan
from tms.formats import iceberg_stats
from tms.formats.iceberg_policy import RULES, K
from tms.formats.iceberg_stats import PartitionStats

ROWS = 500
FILE_OVERHEAD_BYTES = 1800  # a small Parquet file's footer and headers: merges shed it
ROW_BYTES = 8.3  # compressed bytes per row of the bench's schema (500 rows: about 5.9 KB)
DELETED_SHARE = 0.02
QUIET_S = 3600
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass
class Part:
    files: list[tuple[int, int]] = field(default_factory=list)  # (bytes, rows)
    file_deletes: set[int] = field(default_factory=set)  # files with a file-scoped delete file
    merged_deletes: int = 0  # partition-scoped delete files (a position-delete rewrite's)
    deleted_rows: int = 0

    def stats(self, small: int, rewrite: int) -> PartitionStats:
        st = PartitionStats(max_sequence=1)
        for size, rows in self.files:
            st.data_files += 1
            st.bytes += size
            st.records += rows
            if size < small:
                st.small_files += 1
                st.small_bytes += size
            if size < rewrite:
                st.rewrite_files += 1
                st.rewrite_bytes += size
                st.rewrite_max_bytes = max(st.rewrite_max_bytes, size)
        st.position_delete_files = len(self.file_deletes) + self.merged_deletes
        st.position_delete_bytes = 1000 * st.position_delete_files
        st.deleted_rows = self.deleted_rows
        return st


def metrics(parts: dict[int, Part], pol: dict[str, str], idle_s: float) -> dict[str, Any]:
    small = K["compaction.small-file-bytes"].as_int(pol)
    rewrite = int(float(K["compaction.min-file-ratio"].get(pol))
                  * K["compaction.target-file-size-bytes"].as_int(pol))
    stats = {(0, (p,)): part.stats(small, rewrite) for p, part in parts.items()}
    pos = sum(s.position_delete_files for s in stats.values())
    return {"small_files": sum(s.small_files for s in stats.values()),
            "data_files": sum(s.data_files for s in stats.values()),
            "mergeable_small_files": sum(s.small_files for s in stats.values()
                                         if s.small_files >= 2),
            "small_file_bytes": small, "partitions": len(stats), "delete_files": pos,
            "position_delete_files": pos, "equality_delete_files": 0, "manifests": 1,
            "snapshots": 1, "_snapshot_times_ms": [0],
            "last_commit_ms": (NOW - timedelta(seconds=idle_s)).timestamp() * 1000,
            "_partitions": iceberg_stats.encode(stats),
            "_specs": {0: [["part", "identity", "int"]]}}


def size_of(rows: int) -> int:
    return int(FILE_OVERHEAD_BYTES + ROW_BYTES * rows)


def compact(part: Part, rewrite: int, deletes: bool) -> int:
    """Rewrite the partition's files below ``rewrite`` bytes (all of them when deletes are
    applied); the bytes rewritten."""
    chosen = [i for i, (size, _) in enumerate(part.files) if deletes or size < rewrite]
    if len(chosen) < 2 and not deletes:
        return 0
    total = sum(part.files[i][0] for i in chosen)
    rows = sum(part.files[i][1] for i in chosen)
    share = part.deleted_rows / max(1, sum(r for _, r in part.files))
    kept = [f for i, f in enumerate(part.files) if i not in chosen]
    out_rows = int(rows * (1 - share)) if deletes or part.file_deletes else rows
    part.files = [*kept, (size_of(out_rows), out_rows)]
    if deletes:
        part.file_deletes, part.merged_deletes, part.deleted_rows = set(), 0, 0
    else:
        part.file_deletes = {i for i in part.file_deletes if i not in chosen}
    return total


def decide(parts: dict[int, Part], pol: dict[str, str], idle_s: float,
           counts: dict[str, int]) -> tuple[int, bool]:
    """Run the rules once: (bytes rewritten, whether anything ran)."""
    m = metrics(parts, pol, idle_s)
    rewrite = int(float(K["compaction.min-file-ratio"].get(pol))
                  * K["compaction.target-file-size-bytes"].as_int(pol))
    rewritten, ran = 0, False
    d = RULES["compaction"](pol, m, None, NOW)
    if d.should_run:
        ran = True
        counts["compaction"] += 1
        deletes = d.params.get("delete-file-threshold") == "1"
        for _, values in json.loads(d.params["partitions"]):
            got = compact(parts[values[0]], rewrite, deletes)
            rewritten += got
            counts["bytes_applying_deletes" if deletes else "bytes_merging"] += got
    d = RULES["rewrite_position_deletes"](pol, metrics(parts, pol, idle_s), None, NOW)
    if d.should_run:
        ran = True
        counts["rewrite_position_deletes"] += 1
        for _, values in json.loads(d.params["partitions"]):
            part = parts[values[0]]
            if len(part.file_deletes) + part.merged_deletes >= 2:
                part.file_deletes, part.merged_deletes = set(), 1
            else:
                counts["no-op"] += 1
    return rewritten, ran


def simulate(args: argparse.Namespace, pol: dict[str, str]) -> dict[str, Any]:
    parts: dict[int, Part] = {}
    written = rewritten = 0
    counts = {"compaction": 0, "rewrite_position_deletes": 0, "no-op": 0,
              "bytes_merging": 0, "bytes_applying_deletes": 0}
    most = 0
    for i, step in enumerate(plan(args.commits, args.partitions, 10, 50)):
        part = parts.setdefault(step.part, Part())
        if step.kind == "delete":
            live = sum(r for _, r in part.files)
            part.deleted_rows += int(live * DELETED_SHARE)
            part.file_deletes = set(range(len(part.files)))
        else:
            part.files.append((size_of(ROWS), ROWS))
            written += size_of(ROWS)
        if (i + 1) % args.decide_every == 0:
            rewritten += decide(parts, pol, 0, counts)[0]
        most = max(most, max(len(p.files) for p in parts.values()))
    stream_wa = rewritten / written
    for _ in range(100):  # quiet: tidy up
        got, ran = decide(parts, {**pol, "compaction.quiet-s": "10"}, QUIET_S, counts)
        rewritten += got
        if not ran:
            break
    files = sum(len(p.files) for p in parts.values())
    counts = {k: round(v / written, 2) if k.startswith("bytes") else v
              for k, v in counts.items()}
    return {"write_amplification": round(rewritten / written, 2),
            "during_stream": round(stream_wa, 2), "files_per_partition_final":
            round(files / len(parts), 2), "worst_partition": max(len(p.files)
                                                                 for p in parts.values()),
            "most_files_in_a_partition_mid_stream": most, **counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--decide-every", type=int, default=10)
    ap.add_argument("--policy", default="{}", help="JSON policy overrides")
    args = ap.parse_args()
    pol = {**POLICY_PARTITIONED, **json.loads(args.policy)}
    print(json.dumps(simulate(args, pol)))


if __name__ == "__main__":
    main()
