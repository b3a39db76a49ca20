"""Where a warm compaction's time goes: one in-process session set up like the warm driver's,
the same compaction run on fresh copies of one pyiceberg table, each phase of the job timed
(wall and the JVM's CPU): the table check, the manifest merge (``manifest_prep``), the codec
choice, the ``rewrite_data_files`` call, the read-backs.

A script, not a test (see bench/README.md). It starts a throw-away PostgreSQL, writes one
table of ``--files`` pyiceberg commits (``bench/compaction_data.py``) and runs ``--rounds``
rounds; in each round every ``--options`` variant (JSON objects of job options, e.g.
``{"manifests-first": "false"}``) compacts its own copy, in turn. The first round includes
the JIT's warm-up (no warm-up is run here)::

    .venv/bin/python -m bench.rewrite_phases --files 400 --rows 180000 --rounds 3 \\
        --options '{}' --options '{"manifests-first": "false"}'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import compaction_data as data  # noqa: E402
from bench import compaction_methods as cm  # noqa: E402
from bench.common import TMS_HOME  # noqa: E402
from bench.common.cpu import loadavg  # noqa: E402
from bench.common.procs import scratch_dir  # noqa: E402

CATALOG = "bench_compaction"
MIB = 1024 * 1024
PHASES = (("table_guard", "check_table"), ("read_guard", "check_current_files"),
          ("manifest_prep", "consolidate"),
          ("manifest_prep", "sizes"), ("manifest_prep", "merge_in_driver"),
          ("write_format", "plan"), ("write_format", "written_codec"), ("outcome", "measure"),
          ("arrow_rewrite", "attempt"), ("outcome", "current_snapshot"))


def jvm_cpu_s(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def java_child() -> int:
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            if parent == me and (entry / "comm").read_text().strip() == "java":
                return int(entry.name)
        except (OSError, ValueError):
            continue
    raise RuntimeError("no JVM child found")


class Timings:
    """(wall s, JVM CPU s) per phase of the current run."""

    def __init__(self, pid: int) -> None:
        self.pid, self.seen = pid, {}  # type: ignore[var-annotated]

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0, c0 = time.monotonic(), jvm_cpu_s(self.pid)
            try:
                return fn(*args, **kwargs)
            finally:
                self.seen[name] = (time.monotonic() - t0, jvm_cpu_s(self.pid) - c0)
        return timed


class TimedSession:
    """The session, with each SQL statement's wall and CPU recorded by its first words."""

    def __init__(self, spark: Any, timings: Timings) -> None:
        self._spark, self._timings = spark, timings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)

    def sql(self, text: str) -> Any:
        head = text.split("(", 1)[0]
        label = "sql " + (head.rsplit(".", 1)[-1] if head.startswith("CALL")
                          else head.split()[0])
        return self._timings.wrap(label, self._spark.sql)(text)


def run(args: argparse.Namespace) -> None:
    from tms.engines.warm import driver_launch
    from tms.jobs import iceberg_maintenance as im
    from tms.jobs import warm_driver
    from tms.local.iceberg_data import load_catalog, sql_catalog_properties
    from tms.local.postgres import LocalPostgres
    from tms.spark.settings import SparkSettings

    with scratch_dir("tms-rewrite-phases-", keep=False) as tmp:
        pg = LocalPostgres(tmp / "pg")
        pg.start()
        try:
            warehouse = tmp / "warehouse"
            warehouse.mkdir()
            props = sql_catalog_properties(pg.create_database("iceberg_catalog"),
                                           warehouse.as_uri())
            catalog = load_catalog(CATALOG, props)
            catalog.create_namespace_if_not_exists("runs")
            base = data.write_table(catalog, "base.t", args.files, args.rows // args.files)
            snap = data.snapshot_of(base)
            settings = SparkSettings.from_env(args.home.resolve())
            settings = replace(settings, conf={**settings.conf, **dict(args.conf)})
            _, env = driver_launch(settings)
            os.environ.update({k: v for k, v in env.items()
                               if k.startswith("PYSPARK") or k in ("SPARK_HOME", "JAVA_HOME")})
            spark = im.session_builder("tms-rewrite-phases").getOrCreate()
            timings = Timings(java_child())
            for module, name in PHASES:
                mod = getattr(im, module)
                setattr(mod, name, timings.wrap(name, getattr(mod, name)))
            env_ = cm.Env(catalog, CATALOG, props, warehouse, args.target_mb * MIB, 2,
                          lambda: [])
            registered: dict[str, Any] = {}
            n = 0
            for rnd in range(args.rounds):
                for options in args.options:
                    n += 1
                    copy = f"runs.c{n}"
                    catalog.register_table(copy, base.metadata_location)
                    spec = cm.tms_job(env_, copy).spec
                    spec["options"].update(options)
                    parsed = im.parse_spec(spec)
                    warm_driver.register_catalog(spark, parsed, registered)
                    timings.seen.clear()
                    t0, c0 = time.monotonic(), jvm_cpu_s(timings.pid)
                    result = im.run_in_session(TimedSession(spark, timings), parsed)
                    wall, cpu = time.monotonic() - t0, jvm_cpu_s(timings.pid) - c0
                    out = data.snapshot_of(catalog.load_table(copy))
                    print(f"round {rnd + 1} {json.dumps(options)}: wall {wall:.2f} s, "
                          f"cpu {cpu:.2f} s, manifests first "
                          f"{result['result'].get('manifests_first')}, load {loadavg()}",
                          flush=True)
                    for label, (w, c) in timings.seen.items():
                        print(f"    {label:<40} {w:7.2f} s  cpu {c:7.2f} s", flush=True)
                    res = result["result"]
                    for label, w in (res.get("arrow_phases_s") or {}).items():
                        print(f"      arrow {label:<34} {w:7.2f} s", flush=True)
                    if "arrow_task_cpu_s" in res:
                        print(f"      arrow tasks' own CPU {res['arrow_task_cpu_s']:.2f} s",
                              flush=True)
                    data.remove_outputs(out, snap)
                    catalog.drop_table(copy)
            spark.stop()
        finally:
            pg.stop("immediate")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--files", type=int, default=400, help="pyiceberg commits (files)")
    p.add_argument("--rows", type=int, default=180_000, help="rows in all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--target-mb", type=int, default=128)
    p.add_argument("--options", action="append", type=json.loads,
                   help="a JSON object of job options; one variant per flag (default: {})")
    p.add_argument("--conf", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                   metavar="K=V", help="Spark conf of the session")
    p.add_argument("--home", type=Path, default=TMS_HOME)
    args = p.parse_args(argv)
    args.options = args.options or [{}]
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
