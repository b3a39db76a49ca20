"""CPU accounting from /proc: per-process CPU seconds, a process's children, machine-wide busy
/ steal ticks, and a probe that measures named process groups over a window (to report CPU per
call and flag runs disturbed by other load)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PERCENT = 100.0
MS_PER_S = 1e3

PidSource = Callable[[], list[int]]


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    rest = stat[stat.rindex(")") + 2:].split()  # fields from 3 (state) on
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


def _processes() -> Iterator[tuple[int, str, int]]:
    """(pid, state, parent pid) of every process in /proc that is still there."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            rest = stat[stat.rindex(")") + 2:].split()  # fields from 3 (state) on
            yield int(d.name), rest[0], int(rest[1])


def children_of(ppid: int) -> list[int]:
    return [pid for pid, _, parent in _processes() if parent == ppid]


def machine_ticks() -> tuple[int, int, int]:
    """(total, busy, steal) jiffies of all CPUs; busy excludes idle, iowait and steal."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle, iowait = values[3], values[4]
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])
    return total, total - idle - iowait - steal, steal


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def postgres_pids(data_dir: Path) -> PidSource:
    """The postmaster of the cluster in ``data_dir`` and its children (backends, workers)."""

    def pids() -> list[int]:
        try:
            postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        return [postmaster, *children_of(postmaster)]

    return pids


@dataclass
class CpuSample:
    """CPU seconds of named process groups over a window, and the machine's share of busy,
    stolen (hypervisor) and other (busy, but not by any of our groups) time."""

    cpu_s: dict[str, float] = field(default_factory=dict)
    busy_pct: float = 0.0
    steal_pct: float = 0.0
    other_pct: float = 0.0
    loadavg: str = ""

    def per_call_ms(self, calls: float) -> dict[str, float]:
        return {g: MS_PER_S * s / calls for g, s in self.cpu_s.items()} if calls > 0 else {}


class CpuProbe:
    """CPU of named process groups between :meth:`begin` and :meth:`end`; groups are
    re-resolved at each sample, and processes that appeared in between count whole."""

    def __init__(self, groups: dict[str, PidSource]) -> None:
        self._groups = groups
        self._start: dict[str, dict[int, float]] = {}
        self._machine: tuple[int, int, int] = (0, 0, 0)

    def _sample(self) -> dict[str, dict[int, float]]:
        return {g: {pid: proc_cpu_s(pid) for pid in pids()} for g, pids in self._groups.items()}

    def begin(self) -> None:
        self._start, self._machine = self._sample(), machine_ticks()

    def end(self) -> CpuSample:
        now, machine = self._sample(), machine_ticks()
        cpu = {g: sum(v - self._start.get(g, {}).get(pid, 0.0) for pid, v in pids.items())
               for g, pids in now.items()}
        total, busy, steal = (m - s for m, s in zip(machine, self._machine, strict=True))
        if total <= 0:
            return CpuSample(cpu, loadavg=loadavg())
        other = max(0.0, busy / CLK_TCK - sum(cpu.values()))
        return CpuSample(cpu, PERCENT * busy / total, PERCENT * steal / total,
                         PERCENT * other * CLK_TCK / total, loadavg())


def descendants(roots: list[int]) -> list[int]:
    """Every live process below ``roots`` (children, their children, ...), from /proc: a
    process group misses those that made groups of their own (PySpark's worker daemon)."""
    parent = {pid: ppid for pid, state, ppid in _processes() if state != "Z"}
    below: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        below.setdefault(ppid, []).append(pid)
    out, todo = [], list(roots)
    while todo:
        for child in below.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), so that a process a
    child left behind (a cold Spark JVM's Python worker daemon, which the JVM signals but does
    not wait for) is reaped here and its CPU counted with this process's children."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(known: set[int], wait_s: float = 5.0, step_s: float = 0.05) -> int:
    """Reap the children of this process that are not in ``known`` (orphans reparented here),
    waiting up to ``wait_s`` for them to exit; returns how many were reaped."""
    import time

    reaped, deadline = 0, time.monotonic() + wait_s
    while True:
        new = [p for p in children_of(os.getpid()) if p not in known]
        for pid in new:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            reaped += done == pid
        if not new or time.monotonic() > deadline:
            return reaped
        time.sleep(step_s)
