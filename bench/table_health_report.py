"""What the partitioned table-health bench prints (and writes with ``--json``): the goals
against the measured figures, the mid-stream layout, the operations and the failures seen."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.table_health_metrics import FilesVsIdeal

GOAL_SCAN_RATIO = 3.0
GOAL_FILES_VS_IDEAL = 1.2
GOAL_WRITE_AMPLIFICATION = 2.0
GOAL_CHANGED_NOTHING = 0
MAX_MESSAGE_CHARS = 400


def shape(message: str) -> str:
    """A message with its paths and long numbers (snapshot ids) blanked, so that the same
    failure groups under one line."""
    return re.sub(r"\d{6,}", "<n>", re.sub(r"[\w.:-]*/[\w.:-]*/\S*", "<path>", message))


def layout_line(label: str, fvi: FilesVsIdeal) -> str:
    return (f"{label:34}{fvi.files:>7,} data files / {fvi.ideal:>4,} ideal = {fvi.ratio:6.2f} "
            f"(worst partition {fvi.worst:5.2f}), {fvi.delete_files:,} delete files")


def geo_mean(ratios: list[float]) -> float:
    return math.exp(statistics.mean(math.log(r) for r in ratios)) if ratios else math.nan


def report(fig: dict[str, Any], json_path: Path | None) -> None:
    """``fig``: every figure the driver measured (see ``table_health_partitioned.run``)."""
    if json_path:  # first: the figures survive a bug in the printing below
        json_path.write_text(json.dumps(fig, indent=2, default=str))
    s = fig["stream"]
    print(f"\npartitioned stream: {s['commits']} commits ({s['appends']} appends, {s['late']} "
          f"late, {s['deletes']} merge-on-read deletes) x {s['rows']} rows into "
          f"{s['partitions']} partitions; writes {s['write_s']:.0f} s, then "
          f"{s['settle_s']:.0f} s settling; run {s['wall_s']:.0f} s")
    print("\nlayout during the stream (maintained | plain):")
    for point in fig["checkpoints"]:
        for label in ("maintained", "plain"):
            print(layout_line(f"  after {point['commit']:>5} commits, {label}",
                              FilesVsIdeal(**point[label])))
    print("\nTMS operations: succeeded / changed nothing / failed / other states / failed "
          "attempts")
    for action, c in sorted(fig["operations"]["by_action"].items()):
        print(f"  {action:26}{c['succeeded']:>5}{c['changed_nothing']:>6}{c['failed']:>6}"
              f"{c['other']:>6}{c.get('failed_attempts', 0):>6}   result from "
              f"{'/'.join(c['sources']) or '-'}; {' '.join(c['states'])}")
    errors = fig["operations"]["errors"]
    for msg, n in Counter(shape(m)[:MAX_MESSAGE_CHARS] for m in errors).most_common(10):
        print(f"  {n:>3} x {msg}")
    print(f"\nwriter commits that lost a race and were retried: {len(fig['writer_failures'])}")
    for (table, msg), n in Counter((t, shape(m)[:MAX_MESSAGE_CHARS])
                                   for t, m in fig["writer_failures"]).most_common(10):
        print(f"  {n:>5} x {table}: {msg}")
    print("\nfinal layout:")
    for label in ("maintained", "plain"):
        print(layout_line(f"  {label}", FilesVsIdeal(**fig["final"][label])))
    print(f"\n{'query (median s)':60}{'plain':>9}{'maint.':>9}{'speed-up':>10}")
    ratios = []
    for q, t in fig["scans"].items():
        r = t["plain"] / t["maintained"]
        ratios.append(r)
        print(f"{q[:58]:60}{t['plain']:>9.3f}{t['maintained']:>9.3f}{r:>9.2f}x")
    mid = fig["checkpoints"][len(fig["checkpoints"]) // 2] if fig["checkpoints"] else None
    wa = fig["write_amplification"]
    ops = fig["operations"]
    final = FilesVsIdeal(**fig["final"]["maintained"])
    rows = fig["rows"]
    print(f"\nscan speed-up, geometric mean          {geo_mean(ratios):7.2f}x  "
          f"(goal >= {GOAL_SCAN_RATIO:.1f}x)")
    if mid:
        m = FilesVsIdeal(**mid["maintained"])
        print(f"files / ideal per partition, mid-stream {m.ratio:6.2f}   (after "
              f"{mid['commit']} commits; worst partition {m.worst:.2f})")
    print(f"files / ideal per partition, final      {final.ratio:6.2f}   "
          f"(goal <= {GOAL_FILES_VS_IDEAL:.1f}; worst partition {final.worst:.2f})")
    print(f"write amplification                     {wa['value']:6.2f}   "
          f"(goal <= {GOAL_WRITE_AMPLIFICATION:.1f}; {wa['rewritten_bytes']:,} B rewritten / "
          f"{wa['writer_bytes']:,} B written; from {wa['source']})")
    if "with_delete_files" in wa:
        led = wa["snapshot_summaries"]
        print(f"  the same with delete-file bytes       {wa['with_delete_files']:6.2f}   "
              f"(goal <= {GOAL_WRITE_AMPLIFICATION:.1f}; {led['rewritten_bytes']:,} B removed "
              f"by maintenance snapshots / {led['writer_bytes']:,} B written)")
    print(f"operations that changed nothing         {ops['changed_nothing']:6d}   "
          f"(goal {GOAL_CHANGED_NOTHING}; of {ops['finished']} finished, "
          f"{ops['unknown']} whose result does not say)")
    same = ops["by_action"].get("rewrite_position_deletes", {}).get("same_count")
    if same is not None:
        print(f"  position-delete rewrites writing as many delete files as they read: {same}")
    print(f"rows equal                              {rows['equal']!s:>6}   "
          f"({rows['maintained'][0]:,} vs {rows['plain'][0]:,} rows; checksum "
          f"{'equal' if rows['maintained'][1] == rows['plain'][1] else 'DIFFERENT'})")


def fvi_dict(fvi: FilesVsIdeal) -> dict[str, Any]:
    return asdict(fvi)
