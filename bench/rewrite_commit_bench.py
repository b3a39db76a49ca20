"""Rewrite-commit benchmark: the compaction of a table written by many tiny commits, with its
small manifests merged first (``manifests-first``, the default) and without, in one run.

A script, not a test (see bench/README.md). It starts a throw-away PostgreSQL (127.0.0.1 only)
in a temporary directory, writes one table of ``--commits`` pyiceberg appends of ``--rows`` rows
(one file and one manifest per commit), registers ``2 x --rounds + 1`` copies of it (the same
metadata file: each copy commits on its own, none deletes a file), and compacts the copies
through one warm driver (``WarmSparkEngine``): the first copy to warm the driver up, then
alternately with and without the manifest merge, the order switching every round. For each run
it counts the manifests written (inotify on the metadata directory: those merged away and
deleted before the commit ends included) and times the operation; every copy's rows and a
checksum of them are checked afterwards. Run from the repository root::

    .venv/bin/python -m bench.rewrite_commit_bench [--commits 400] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import TMS_HOME, BenchError, guarded, say  # noqa: E402
from bench.common.inotify import FileCreations  # noqa: E402
from bench.common.procs import scratch_dir  # noqa: E402
from bench.common.stats import median  # noqa: E402

CATALOG, CATALOG_DB, NAMESPACE = "bench_commits", "iceberg_catalog", "bench"
MODES = {"merged first": "true", "as written": "false"}


def checksum(table: Any) -> tuple[int, str]:
    rows = table.refresh().scan().to_arrow().sort_by("id").to_pylist()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


def compact(engine: Any, props: dict[str, str], name: str, first: str, workdir: Path
            ) -> tuple[float, dict[str, Any]]:
    from tms.domain import JobSpec
    from tms.jobs import ICEBERG_MAINTENANCE_APP

    job = JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), {
        "catalog_name": CATALOG, "catalog_properties": props, "table": f"{NAMESPACE}.{name}",
        "action": "compaction", "options": {"min-input-files": "2", "manifests-first": first},
        "allowed_locations": [props["warehouse"]]})
    t0 = time.monotonic()
    res = engine.run(job, workdir, threading.Event(), lambda handle: None)
    took = time.monotonic() - t0
    if not res.succeeded or res.result is None:
        raise BenchError(f"compaction of {name} failed: {res.error}\n{res.log_tail[-2000:]}")
    return took, res.result


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tms.engines.warm import WarmSparkEngine
    from tms.local.iceberg_data import (
        append_batches,
        create_table,
        load_catalog,
        sql_catalog_properties,
    )
    from tms.local.postgres import LocalPostgres
    from tms.spark.settings import SparkSettings

    settings = SparkSettings.from_env(args.home.resolve())
    with scratch_dir("tms-commit-bench-") as tmp:
        pg = LocalPostgres(tmp / "pg")
        warm: WarmSparkEngine | None = None
        try:
            pg.start()
            props = sql_catalog_properties(pg.create_database(CATALOG_DB),
                                           (tmp / "warehouse").as_uri())
            catalog = load_catalog(CATALOG, props)
            say(f"writing one table of {args.commits} commits of {args.rows} rows")
            base = create_table(catalog, NAMESPACE, "base")
            append_batches(base, args.commits, args.rows)
            base = base.refresh()
            expect = checksum(base)
            names = [f"copy{i}" for i in range(2 * args.rounds + 1)]
            for name in names:
                catalog.register_table(f"{NAMESPACE}.{name}", base.metadata_location)
            metadata = Path(base.location().removeprefix("file://")) / "metadata"
            warm = WarmSparkEngine(settings, None, tmp / "warm")
            say("warm driver: start and a first compaction")
            first_s, _ = compact(warm, props, names[0], "true", tmp / "ops" / "first")
            runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
            with FileCreations(metadata) as watch:
                for r in range(args.rounds):
                    order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
                    for k, mode in enumerate(order):
                        name = names[1 + 2 * r + k]
                        watch.reset()
                        load = os.getloadavg()[0]
                        took, result = compact(warm, props, name, MODES[mode],
                                               tmp / "ops" / name)
                        runs[mode].append({"s": took, "manifests": len(watch.manifests()),
                                           "load": load, "table": name,
                                           "outcome": result.get("outcome")})
                        say(f"  round {r + 1} {mode}: {took:.2f} s, "
                            f"{runs[mode][-1]['manifests']} manifests written (load {load:.1f})")
            for name in names:
                got = checksum(catalog.load_table(f"{NAMESPACE}.{name}"))
                if got != expect:
                    raise BenchError(f"{name}: rows or checksum changed: {got} != {expect}")
            return {"commits": args.commits, "rows": args.rows, "first_s": first_s,
                    "runs": runs, "rows_checked": expect[0]}
        finally:
            if warm is not None:
                warm.close()
            pg.stop("immediate")


def render(result: dict[str, Any]) -> str:
    lines = [f"compaction of {result['commits']} tiny commits ({result['rows_checked']} rows, "
             f"rows and checksum unchanged in every copy); warm driver's first: "
             f"{result['first_s']:.1f} s", "",
             f"{'manifests':<14}{'wall s (median)':>16}{'manifests written':>19}"
             f"{'load avg':>10}"]
    med = {}
    for mode, runs in result["runs"].items():
        med[mode] = median([r["s"] for r in runs])
        written = sorted({r["manifests"] for r in runs})
        load = median([r["load"] for r in runs])
        lines.append(f"{mode:<14}{med[mode]:>16.2f}{str(written):>19}{load:>10.1f}")
    lines.append(f"\nratio merged first / as written: "
                 f"{med['merged first'] / med['as written']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=400)
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--home", type=Path, default=TMS_HOME)
    args = p.parse_args(argv)
    if args.commits < 2 or args.rows < 1 or args.rounds < 1:
        p.error("need --commits >= 2, --rows >= 1, --rounds >= 1")
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    result, status = guarded(lambda: run(args))
    if result is None:
        return status
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
