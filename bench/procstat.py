"""CPU accounting from /proc, shared by the benchmarks: per-process CPU seconds, a process's
children, and machine-wide busy / steal ticks (to flag runs disturbed by other load)."""

from __future__ import annotations

import os
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    rest = stat[stat.rindex(")") + 2:].split()  # fields from 3 (state) on
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


def children_of(ppid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == ppid:
                out.append(int(d.name))
    return out


def machine_ticks() -> tuple[int, int, int]:
    """(total, busy, steal) jiffies of all CPUs; busy excludes idle, iowait and steal."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle, iowait = values[3], values[4]
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])
    return total, total - idle - iowait - steal, steal
