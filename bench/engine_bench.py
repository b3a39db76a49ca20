"""Engine benchmark: small-table compactions per minute through the warm engine (one long-lived
PySpark driver) and through cold spark-submit (a JVM per operation), side by side in one run.

A script, not a test (see bench/README.md). It starts a throw-away PostgreSQL
(``tms.local.postgres.LocalPostgres``, 127.0.0.1 only) in a temporary directory, writes two
identical sets of ``--tables`` small Iceberg tables with pyiceberg into a JDBC catalog there
(``--commits`` appends of ``--rows`` rows each: one small file per commit), and compacts every
table once: one set through ``WarmSparkEngine``, the other through ``SparkSubmitEngine``, called
directly, one operation at a time, alternating cold and warm so that whatever else the machine
does weighs on both alike. An engine's operations per minute are its operations over their
summed time. The warm driver's start and its first operation (on an extra table) are timed
separately: an executor pays them once, not per operation. Every table is checked afterwards
(one data file, every row still there).

Every process it starts is stopped at the end, on error, on Ctrl-C and on SIGTERM; the temporary
directory is removed. Run from the repository root::

    .venv/bin/python -m bench.engine_bench [--tables 6] [--commits 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import TMS_HOME, BenchError, guarded, say  # noqa: E402
from bench.common.cpu import CLK_TCK, machine_ticks, postgres_pids, proc_cpu_s  # noqa: E402
from bench.common.procs import scratch_dir  # noqa: E402
from bench.common.stats import median  # noqa: E402

GOAL_RATIO = 5.0
CATALOG = "bench_engines"
CATALOG_DB = "iceberg_catalog"
DISTURBED_PCT = 10.0


@dataclass
class Phase:
    """One engine's operations; every figure is summed over its operations only."""

    engine: str
    op_s: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0  # engine processes (drivers, JVMs, Python workers) and this process
    postgres_cpu_s: float = 0.0
    ticks: int = 0  # machine jiffies (all CPUs) during its operations
    busy_ticks: int = 0
    other_ticks: float = 0.0  # busy jiffies not used by the benchmark's processes

    @property
    def per_min(self) -> float:
        return 60.0 * len(self.op_s) / self.wall_s if self.wall_s else math.nan

    @property
    def busy_pct(self) -> float:
        return 100.0 * self.busy_ticks / self.ticks if self.ticks else math.nan

    @property
    def other_pct(self) -> float:
        return 100.0 * self.other_ticks / self.ticks if self.ticks else math.nan


class CpuMeter:
    """CPU of this process and every child it reaped (cold spark-submit JVMs and their Python
    jobs), live processes returned by ``live`` (the warm driver's group), and PostgreSQL."""

    def __init__(self, live: Callable[[], list[int]], postgres: Callable[[], list[int]]) -> None:
        self.live, self.postgres = live, postgres

    def _sample(self) -> tuple[float, dict[int, float], dict[int, float], tuple[int, int, int]]:
        t = os.times()
        return (t.user + t.system + t.children_user + t.children_system,
                {p: proc_cpu_s(p) for p in self.live()},
                {p: proc_cpu_s(p) for p in self.postgres()}, machine_ticks())

    @contextmanager
    def measure(self, phase: Phase) -> Iterator[None]:
        """Add what happens inside the block to ``phase``."""
        own0, live0, pg0, m0 = self._sample()
        t0 = time.monotonic()
        yield
        phase.wall_s += time.monotonic() - t0
        own1, live1, pg1, m1 = self._sample()
        cpu = own1 - own0 + sum(v - live0.get(p, 0.0) for p, v in live1.items())
        pg_cpu = sum(v - pg0.get(p, 0.0) for p, v in pg1.items())
        total, busy, _ = (b - a for a, b in zip(m0, m1, strict=True))
        phase.cpu_s += cpu
        phase.postgres_cpu_s += pg_cpu
        phase.ticks += total
        phase.busy_ticks += busy
        phase.other_ticks += max(0.0, busy - (cpu + pg_cpu) * CLK_TCK)


def make_tables(catalog: Any, namespace: str, count: int, commits: int, rows: int) -> list[str]:
    from tms.local.iceberg_data import append_batches, create_table

    names = []
    for i in range(count):
        append_batches(create_table(catalog, namespace, f"t{i}"), commits, rows)
        names.append(f"{namespace}.t{i}")
    return names


def check_compacted(catalog: Any, identifier: str, rows: int) -> None:
    from tms.local.iceberg_data import stats

    s = stats(catalog.load_table(identifier))
    if s["data_files"] != 1 or s["rows_scanned"] != rows:
        raise BenchError(f"{identifier}: {s['data_files']} data files and {s['rows_scanned']} "
                         f"rows after compaction (expected 1 and {rows})")


def compact(engine: Any, props: dict[str, str], identifier: str, workdir: Path) -> float:
    from tms.domain import JobSpec
    from tms.jobs import ICEBERG_MAINTENANCE_APP

    job = JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), {
        "catalog_name": CATALOG, "catalog_properties": props, "table": identifier,
        "action": "compaction", "options": {"min-input-files": "2"},
        "allowed_locations": [props["warehouse"]]})
    t0 = time.monotonic()
    res = engine.run(job, workdir, threading.Event(), lambda handle: None)
    if not res.succeeded:
        raise BenchError(f"{engine.name} failed on {identifier}: {res.error}\n"
                         f"{res.log_tail[-2000:]}")
    return time.monotonic() - t0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tms.spark.settings import SparkSettings

    settings = SparkSettings.from_env(args.home.resolve())
    with scratch_dir("tms-engine-bench-") as tmp:
        return _run(args, settings, tmp)


def _run(args: argparse.Namespace, settings: Any, tmp: Path) -> dict[str, Any]:
    from tms.engines.spark_submit import SparkSubmitEngine
    from tms.engines.warm import WarmSparkEngine
    from tms.engines.warm_process import group_members
    from tms.local.iceberg_data import load_catalog, sql_catalog_properties
    from tms.local.postgres import LocalPostgres

    pg = LocalPostgres(tmp / "pg")
    warm: WarmSparkEngine | None = None
    try:
        say("starting PostgreSQL")
        pg.start()
        props = sql_catalog_properties(pg.create_database(CATALOG_DB), (tmp / "warehouse").as_uri())
        catalog = load_catalog(CATALOG, props)
        say(f"writing 2 x {args.tables} + 1 tables, {args.commits} commits of {args.rows} rows")
        warm_tables = make_tables(catalog, "warm", args.tables, args.commits, args.rows)
        cold_tables = make_tables(catalog, "cold", args.tables, args.commits, args.rows)
        (first_table,) = make_tables(catalog, "first", 1, args.commits, args.rows)

        cold = SparkSubmitEngine(settings)
        warm = WarmSparkEngine(settings, cold, tmp / "warm")

        def warm_group() -> list[int]:
            driver = warm.driver if warm else None
            return group_members(driver.pid) if driver and driver.pid else []

        meter = CpuMeter(warm_group, postgres_pids(pg.data_dir))
        say("warm driver: start and first operation")
        t0 = time.monotonic()
        first_s = compact(warm, props, first_table, tmp / "ops" / "first")
        start_s = time.monotonic() - t0
        first_pid = warm.driver.pid if warm.driver else None
        if first_pid is None:
            raise BenchError(f"the warm driver is not up after its first operation; see "
                             f"{warm.log_path}")
        phases = {"warm": Phase("warm-spark"), "cold": Phase("spark-submit")}
        say(f"{args.tables} compactions per engine, alternating cold and warm")
        for i in range(args.tables):
            # Alternating spreads whatever else the machine does over both engines alike.
            for key, engine, ident in (("cold", cold, cold_tables[i]),
                                       ("warm", warm, warm_tables[i])):
                with meter.measure(phases[key]):
                    op_s = compact(engine, props, ident, tmp / "ops" / f"{key}{i}")
                phases[key].op_s.append(op_s)
            say(f"  {i + 1}/{args.tables}: cold {phases['cold'].op_s[-1]:.1f} s, "
                 f"warm {phases['warm'].op_s[-1]:.2f} s")
        if (warm.driver.pid if warm.driver else None) != first_pid:
            raise BenchError("the warm driver was replaced during the run (it died, and the "
                             "fallback ran some operations cold)")
        for ident in [first_table, *warm_tables, *cold_tables]:
            check_compacted(catalog, ident, args.commits * args.rows)
        say(f"all {2 * args.tables + 1} tables compacted, rows intact; one warm driver "
             f"(pid {first_pid}) ran every warm operation")
        return {"tables": args.tables, "commits": args.commits, "rows": args.rows,
                "warm_start_and_first_op_s": start_s, "warm_first_op_s": first_s,
                "phases": {k: {**asdict(p), "per_min": p.per_min, "busy_pct": p.busy_pct,
                               "other_pct": p.other_pct} for k, p in phases.items()}}
    finally:
        if warm is not None:
            warm.close()
        pg.stop("immediate")


def render(r: dict[str, Any]) -> str:
    warm, cold = r["phases"]["warm"], r["phases"]["cold"]
    lines = [f"engine benchmark: {r['tables']} small tables per engine, {r['commits']} commits "
             f"x {r['rows']} rows each (one file per commit), one compaction per table", "",
             f"{'engine':<14}{'ops':>5}{'wall s':>9}{'s/op p50':>10}{'s/op max':>10}"
             f"{'ops/min':>9}{'CPU s/op':>10}{'busy %':>8}{'other %':>9}"]
    for p in (warm, cold):
        n = len(p["op_s"])
        lines.append(f"{p['engine']:<14}{n:>5}{p['wall_s']:>9.1f}"
                     f"{median(p['op_s']):>10.2f}{max(p['op_s']):>10.2f}"
                     f"{p['per_min']:>9.1f}{p['cpu_s'] / n:>10.2f}{p['busy_pct']:>8.0f}"
                     f"{p['other_pct']:>9.1f}")
    once = r["warm_start_and_first_op_s"]
    with_start = 60.0 * len(warm["op_s"]) / (warm["wall_s"] + once)
    ratio, ratio_start = warm["per_min"] / cold["per_min"], with_start / cold["per_min"]
    cpu_ratio = (cold["cpu_s"] / len(cold["op_s"])) / (warm["cpu_s"] / len(warm["op_s"]))
    lines += ["", f"warm driver start + first operation (once per executor, not above): "
                  f"{once:.1f} s", "",
              f"warm / cold operations per minute          {ratio:6.2f}  "
              f"(goal >= {GOAL_RATIO:.2f}){'' if ratio >= GOAL_RATIO else '  MISSED'}",
              f"same, warm paying its start in this run    {ratio_start:6.2f}",
              f"cold / warm CPU seconds per operation      {cpu_ratio:6.2f}  "
              "(less sensitive to other load)"]
    if max(warm["other_pct"], cold["other_pct"]) > DISTURBED_PCT:
        lines.append(f"DISTURBED: other load above {DISTURBED_PCT:.0f} % of the machine; "
                     "figures are low")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--tables", type=int, default=6, help="small tables per engine")
    p.add_argument("--commits", type=int, default=10, help="appends (small files) per table")
    p.add_argument("--rows", type=int, default=20, help="rows per append")
    p.add_argument("--home", type=Path, default=TMS_HOME,
                   help="TMS home with the Spark jars (env TMS_HOME)")
    p.add_argument("--json", type=Path, help="also write every figure here")
    args = p.parse_args(argv)
    if args.tables < 1 or args.commits < 2 or args.rows < 1:
        p.error("need --tables >= 1, --commits >= 2 (something to compact), --rows >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings
    result, status = guarded(lambda: run(args))
    if result is None:
        return status
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
