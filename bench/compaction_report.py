"""The compaction benchmark's table of figures and goals (``bench/compaction_bench.py``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.common.stats import median

BASELINE = "pyarrow-1t"
GOAL_WARM = 1.2  # TMS warm wall time / pyarrow 1 thread
GOAL_COLD = 2.5


def _fmt_ratio(x: float | None) -> str:
    return f"{x:6.2f}" if x is not None else "     -"


def render(r: dict[str, Any]) -> tuple[str, bool]:
    """(the report, whether any run lost or changed data)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for o in r["runs"]:
        runs[(o["table"], o["method"])].append(o)
    lines: list[str] = []
    wrong = any(not o["ok"] for o in r["runs"])
    goals: list[str] = []
    for name, t in r["tables"].items():
        mb = t["bytes"] / 1e6
        lines += ["", f"table {name}: {t['files']} files from {t['commits']} pyiceberg commits, "
                      f"{mb:.1f} MB, {t['rows']:,} rows, codec {'/'.join(t['codecs'])}, "
                      f"{t['manifests']} manifests; target {r['target_bytes'] // 2**20} MiB",
                  f"{'method':<20}{'wall s':>8}{'CPU s':>8}{'MB/s':>8}{'files':>7}"
                  f"{'ideal':>6}{'smallest MB':>12}{'codec':>8}{'rows':>12}{'checksum':>10}"
                  f"{'x wall':>8}{'x CPU':>7}"]
        base = runs.get((name, BASELINE))
        base_wall = median([o["wall_s"] for o in base]) if base else None
        base_cpu = median([o["cpu_s"] for o in base]) if base else None
        for method in r["methods"]:
            os_ = runs.get((name, method))
            if not os_:
                continue
            wall = median([o["wall_s"] for o in os_])
            cpu = median([o["cpu_s"] for o in os_])
            files = sorted({o["output_files"] for o in os_})
            ideal = sorted({o["ideal_files"] for o in os_})
            codecs = sorted({c for o in os_ for c in o["codecs"]})
            ok = all(o["ok"] for o in os_)
            rx = wall / base_wall if base_wall else None
            cx = cpu / base_cpu if base_cpu else None
            lines.append(
                f"{method:<20}{wall:>8.2f}{cpu:>8.2f}{mb / wall:>8.1f}"
                f"{'/'.join(map(str, files)):>7}{'/'.join(map(str, ideal)):>6}"
                f"{min(o['smallest_file'] for o in os_) / 1e6:>12.2f}{'/'.join(codecs):>8}"
                f"{os_[0]['rows']:>12,}{'ok' if ok else 'WRONG':>10}"
                f"{_fmt_ratio(rx):>8}{_fmt_ratio(cx):>7}")
            if method.startswith("tms"):
                if set(codecs) != set(t["codecs"]):
                    goals.append(f"{name}: {method} wrote {'/'.join(codecs)}, the input is "
                                 f"{'/'.join(t['codecs'])}  MISSED")
                if files != ideal:
                    goals.append(f"{name}: {method} wrote {files} files, ideal {ideal}  MISSED")
            if method == "tms-warm" and rx is not None:
                goals.append(f"{name}: TMS warm / pyarrow 1 thread  {rx:.2f}  (goal <= "
                             f"{GOAL_WARM}){'' if rx <= GOAL_WARM else '  MISSED'}")
                zam = runs.get((name, "iceberg-zamboni"))
                if zam:
                    zw = median([o["wall_s"] for o in zam])
                    goals.append(f"{name}: TMS warm / iceberg-zamboni    {wall / zw:.2f}  "
                                 f"(goal < 1){'' if wall < zw else '  MISSED'}")
            spark_path = runs.get((name, f"{method}-spark"))
            if method in ("tms-warm", "tms-cold") and spark_path:
                sw = median([o["wall_s"] for o in spark_path])
                sc = median([o["cpu_s"] for o in spark_path])
                goals.append(f"{name}: {method}, arrow path / Spark's path  wall {wall / sw:.2f}"
                             f"  CPU {cpu / sc:.2f}  (paths: "
                             f"{', '.join(sorted({o.get('data_path', '') for o in os_}))})")
            if method == "tms-cold" and rx is not None:
                goals.append(f"{name}: TMS cold / pyarrow 1 thread  {rx:.2f}  (goal <= "
                             f"{GOAL_COLD}){'' if rx <= GOAL_COLD else '  MISSED'}")
    if r.get("table_properties"):
        lines.append(f"table properties set after the writes: {r['table_properties']}")
    lines += ["", "wall and CPU: medians over rounds; CPU of every process doing the method's "
                  "work (PostgreSQL not counted); x: ratio to pyarrow 1 thread; ideal = "
                  "ceil(output bytes / target)"]
    if r.get("warm_start_and_first_op_s") is not None:
        lines.append(f"warm driver start + first operation (a 12-file table; once per "
                     f"executor, not above): {r['warm_start_and_first_op_s']:.1f} s")
    if r.get("cold_archive_dump_s") is not None:
        lines.append(f"cold engine's first job, dumping its class-data archive (a 12-file "
                     f"table; once per jar set, not above): {r['cold_archive_dump_s']:.1f} s")
    for m, why in r.get("skipped", {}).items():
        lines.append(f"skipped {m}: {why}")
    loads = [o["loadavg"] for o in r["runs"]]
    if loads:
        lines.append(f"load average (1/5/15 min) at the first run's end {loads[0]}, at the "
                     f"last {loads[-1]}")
    lines += ["", *goals]
    if wrong:
        lines += ["", "DATA CHANGED:"] + [
            f"  {o['table']} {o['method']} round {o['round'] + 1}: {'; '.join(o['problems'])}"
            for o in r["runs"] if not o["ok"]]
    return "\n".join(lines), wrong
