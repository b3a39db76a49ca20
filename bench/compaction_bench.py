"""Compaction benchmark: TMS (warm engine, cold spark-submit) against the hardware's floor (a
pyarrow read + rewrite, 1 and 2 threads) and two other compactors, on the same tables.

A script, not a test (see bench/README.md). It starts a throw-away PostgreSQL in a temporary
directory, writes two tables there with pyiceberg (SQL catalog), one commit per file:

* ``large``: ``--files`` (400) commits, ``--rows`` (12 M) rows in all, ~23 bytes a row in zstd:
  ~260 MB;
* ``tiny``: ``--tiny-commits`` (400) commits of ``--tiny-rows`` (450) rows: ~4.5 MB whose cost
  is all in the writer's history (400 snapshots and manifests).

Then, ``--repeat`` (3) times, for each table, every method compacts a fresh copy of it (the
base metadata registered under a new name: ``bench/compaction_data.py``), alternating methods
(the order rotates every round) so that other load on the machine weighs on all alike. The
methods are in ``bench/compaction_methods.py``; ``iceberg-compaction`` and ``iceberg-zamboni``
are installed by this script into virtualenvs of their own under ``--venv-cache`` (skipped,
with the reason, when that fails, e.g. offline). After each run the copy's current files are
read back: rows and a checksum of every value must equal the base's (else the exit status is
1), and the output's codec and file count are compared with the input's and the ideal
(``ceil(output bytes / target)``). Everything it starts is stopped at the end, on error, on
Ctrl-C and on SIGTERM; the temporary directory is removed (``--keep`` keeps it).

TMS cold runs with its class-data archive, dumped first by one cold job on a small table of
its own (as an executor's first cold job of a jar set would; its time is printed apart);
``--methods ...,tms-cold-noarchive`` adds the cold job without it, for the before/after.

    .venv/bin/python -m bench.compaction_bench                        # ~10 minutes on 2 cores
    .venv/bin/python -m bench.compaction_bench --files 40 --rows 1000000 --tiny-commits 60 \
        --repeat 1                                                     # quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import compaction_data as data  # noqa: E402
from bench import compaction_methods as cm  # noqa: E402
from bench.common import TMS_HOME, guarded, say  # noqa: E402
from bench.common.cpu import loadavg, postgres_pids  # noqa: E402
from bench.common.procs import Children, scratch_dir  # noqa: E402
from bench.compaction_report import render  # noqa: E402

CATALOG = "bench_compaction"
CATALOG_DB = "iceberg_catalog"
MIB = 1024 * 1024
METHODS = ("pyarrow-1t", "pyarrow-2t", "tms-warm", "tms-cold", "iceberg-compaction",
           "iceberg-zamboni", "tms-cold-noarchive", "tms-warm-spark", "tms-cold-spark")
# asked for: tms-cold-noarchive (before/after of the archive), tms-*-spark (Spark's data path,
# forced with the job spec's data_path, against the arrow path in the same run)
DEFAULT_METHODS = METHODS[:6]
EXTERNAL = ("iceberg-compaction", "iceberg-zamboni")


@dataclass
class Outcome:
    """One run, checked."""

    method: str
    table: str
    round: int
    wall_s: float
    cpu_s: float
    postgres_cpu_s: float
    loadavg: str
    rows: int
    checksum: str
    output_files: int
    output_bytes: int
    ideal_files: int
    codecs: list[str]
    untouched_inputs: int
    manifests: int | None
    smallest_file: int
    ok: bool
    problems: list[str] = field(default_factory=list)
    data_path: str = ""  # a TMS compaction's: arrow or spark (and why not arrow)
    arrow_phases_s: dict[str, float] = field(default_factory=dict)  # the arrow path's phases


@dataclass
class Base:
    name: str
    identifier: str
    metadata_location: str
    snapshot: data.Snapshot
    content: data.Content
    commits: int


def make_base(catalog: Any, name: str, commits: int, rows_per_commit: int,
              properties: dict[str, str] | None = None) -> Base:
    t0 = time.monotonic()
    table = data.write_table(catalog, f"base.{name}", commits, rows_per_commit)
    if properties:  # set after the writes: the files stay as pyiceberg wrote them
        with table.transaction() as tx:
            tx.set_properties(properties)
        table = table.refresh()
    snap = data.snapshot_of(table)
    content = data.content(snap.files)
    say(f"table {name}: {content.files} files, {content.bytes / 1e6:.1f} MB, "
        f"{content.rows:,} rows, {'/'.join(content.codecs)}; written in "
        f"{time.monotonic() - t0:.0f} s")
    return Base(name, f"base.{name}", table.metadata_location, snap, content, commits)


def check(method: str, base: Base, rnd: int, run: cm.Run, env: cm.Env, copy: str | None
          ) -> Outcome:
    """Read back what the method left; the copy's new files are removed afterwards."""
    snap, kept, manifests = None, [], None
    if run.output_dir is not None:
        paths = sorted(str(p) for p in run.output_dir.glob("*.parquet"))
    else:
        assert copy is not None
        snap = data.snapshot_of(env.catalog.load_table(copy))
        kept = sorted(set(snap.files) & set(base.snapshot.files))
        paths = sorted(set(snap.files) - set(base.snapshot.files))
        manifests = snap.manifests
    out = data.content(paths)
    ideal = data.ideal_files(out.bytes, env.target_bytes)
    rows, checksum, untouched = out.rows, out.checksum, len(kept)
    problems = []
    if kept:  # inputs left as they were count as output files, their rows as rows
        old = data.content(kept)
        rows += old.rows
        checksum = f"{(int(out.checksum, 16) + int(old.checksum, 16)) % data.U64:016x}"
    ok = rows == base.content.rows and checksum == base.content.checksum
    if rows != base.content.rows:
        problems.append(f"rows {rows:,} != {base.content.rows:,}")
    if checksum != base.content.checksum:
        problems.append(f"checksum {checksum} != {base.content.checksum}")
    if snap is not None and snap.delete_files:
        problems.append(f"{snap.delete_files} delete files")
    if snap is not None:
        data.remove_outputs(snap, base.snapshot)
    elif run.output_dir is not None:
        data.remove_outputs(data.Snapshot({}, 0, 0, None), base.snapshot, [run.output_dir])
    result = run.info.get("result")
    if not isinstance(result, dict):  # the other compactors report text, or nothing
        result = {}
    path = str(result.get("data_path", ""))
    if run.info.get("task_cpu_added_s"):
        path += f" [CPU: tasks' own {run.info['task_cpu_added_s']:.2f} s added]"
    if run.info.get("orphans_reaped"):
        path += f" [{run.info['orphans_reaped']} orphan(s) reaped]"
    if result.get("arrow_refused"):
        path += f" ({result['arrow_refused']})"
    return Outcome(method, base.name, rnd, run.wall_s, run.cpu_s, run.postgres_cpu_s,
                   loadavg(), rows, checksum, out.files + untouched, out.bytes, ideal,
                   list(out.codecs), untouched, manifests, out.smallest, ok, problems, path,
                   {**(result.get("arrow_phases_s") or {}),
                    **({"task_cpu": result["arrow_task_cpu_s"]}
                       if "arrow_task_cpu_s" in result else {})})


def run_one(env: cm.Env, method: str, base: Base, rnd: int, work: Path) -> Outcome:
    wd = work / f"{method}-{base.name}-{rnd}"
    copy = None
    if method.startswith("pyarrow"):
        run = cm.run_pyarrow(env, int(method[-2]), sorted(base.snapshot.files), wd)
    else:
        copy = f"runs.{method.replace('-', '_')}_{base.name}_{rnd}"
        env.catalog.register_table(copy, base.metadata_location)
        if method.startswith("tms"):
            run = cm.run_tms(env, method, copy, wd)
        else:
            run = cm.run_external(env, method, copy, wd)
    outcome = check(method, base, rnd, run, env, copy)
    if copy is not None:
        env.catalog.drop_table(copy)
    return outcome


def run(args: argparse.Namespace) -> dict[str, Any]:
    with scratch_dir("tms-compaction-bench-", keep=args.keep) as tmp:
        children = Children()
        try:
            return _run(args, tmp, children)
        finally:
            children.stop_all()


def _run(args: argparse.Namespace, tmp: Path, children: Children) -> dict[str, Any]:
    from tms.engines.spark_submit import SparkSubmitEngine
    from tms.engines.warm import WarmSparkEngine
    from tms.local.iceberg_data import load_catalog, sql_catalog_properties
    from tms.local.postgres import LocalPostgres
    from tms.spark.settings import SparkSettings

    methods = [m for m in METHODS if m in args.methods]
    pythons: dict[str, Path | None] = {}
    skipped: dict[str, str] = {}
    for m in (m for m in methods if m in EXTERNAL):
        from bench.compaction_venvs import ensure

        pythons[m], why = ensure(args.venv_cache, m)
        if pythons[m] is None:
            skipped[m] = why
            say(f"skipping {m}: {why}")
    methods = [m for m in methods if m not in skipped]
    settings = SparkSettings.from_env(args.home.resolve())
    from bench.common.cpu import become_subreaper

    if not become_subreaper():  # a cold job's worker daemon is then not counted
        say("could not become a child subreaper: tms-cold's CPU misses its Python workers")
    pg = LocalPostgres(tmp / "pg")
    warm = None
    try:
        say("starting PostgreSQL")
        pg.start()
        warehouse = tmp / "warehouse"
        warehouse.mkdir()
        props = sql_catalog_properties(pg.create_database(CATALOG_DB), warehouse.as_uri())
        catalog = load_catalog(CATALOG, props)
        catalog.create_namespace_if_not_exists("runs")
        say(f"writing the tables ({args.files} + {args.tiny_commits} pyiceberg commits)")
        props_set = dict(args.table_property)
        bases = [make_base(catalog, "large", args.files, max(1, args.rows // args.files),
                           props_set),
                 make_base(catalog, "tiny", args.tiny_commits, args.tiny_rows, props_set)]
        env = cm.Env(catalog, CATALOG, props, warehouse, args.target_mb * MIB, args.threads,
                     postgres_pids(pg.data_dir), pythons=pythons, jfr_dir=args.jfr,
                     tms_options=dict(args.tms_option))
        if args.jfr:
            args.jfr.mkdir(parents=True, exist_ok=True)
        if "iceberg-compaction" in methods:
            cm.start_rest(env, tmp / "rest", children)
        if any(m.startswith("tms") for m in methods):
            env.cold = SparkSubmitEngine(settings, cds_dir=tmp / "cds")
            env.cold_plain = SparkSubmitEngine(settings)
        start_s = first_s = archive_s = None
        if {"tms-cold", "tms-cold-spark"} & set(methods):  # an executor's first cold job
            say("cold engine: a first cold job (on its own small table) dumps the archive")
            data.write_table(catalog, "base.prime", 12, 100)
            archive_s = cm.time_it(lambda: cm.run_tms(env, "tms-cold", "base.prime",
                                                      tmp / "prime"))
        if {"tms-warm", "tms-warm-spark"} & set(methods):
            env.warm = warm = WarmSparkEngine(settings, env.cold, tmp / "warm")
            say("warm driver: start and a first operation (on its own small table)")
            first = data.write_table(catalog, "base.first", 12, 100)
            t0 = time.monotonic()
            first_run = cm.run_tms(env, "tms-warm", "base.first", tmp / "first")
            start_s, first_s = time.monotonic() - t0, first_run.wall_s
            del first
        outcomes: list[Outcome] = []
        for rnd in range(args.repeat):
            order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
            for base in bases:
                for method in order:
                    o = run_one(env, method, base, rnd, tmp / "ops")
                    outcomes.append(o)
                    say(f"round {rnd + 1}/{args.repeat} {base.name:<5} {method:<19} "
                        f"{o.wall_s:7.2f} s  cpu {o.cpu_s:7.2f} s  {o.output_files} files  "
                        f"{'/'.join(o.codecs)}  load {o.loadavg}"
                        + (f"  path {o.data_path}" if o.data_path else "")
                        + (f"  {o.arrow_phases_s}" if o.arrow_phases_s else "")
                        + ("" if o.ok else f"  WRONG: {'; '.join(o.problems)}"))
        return {"args": {k: str(v) for k, v in vars(args).items()},
                "tables": {b.name: {"files": b.content.files, "bytes": b.content.bytes,
                                    "rows": b.content.rows, "checksum": b.content.checksum,
                                    "codecs": list(b.content.codecs), "commits": b.commits,
                                    "manifests": b.snapshot.manifests} for b in bases},
                "methods": methods, "skipped": skipped, "target_bytes": env.target_bytes,
                "table_properties": props_set,
                "warm_start_and_first_op_s": start_s, "warm_first_op_s": first_s,
                "cold_archive_dump_s": archive_s,
                "runs": [asdict(o) for o in outcomes]}
    finally:
        if warm is not None:
            warm.close()
        pg.stop("immediate")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--files", type=int, default=400, help="commits (files) of the large table")
    p.add_argument("--rows", type=int, default=12_000_000, help="rows of the large table")
    p.add_argument("--tiny-commits", type=int, default=400, help="commits of the tiny table")
    p.add_argument("--tiny-rows", type=int, default=450, help="rows per tiny commit")
    p.add_argument("--target-mb", type=int, default=128, help="target file size, MiB")
    p.add_argument("--repeat", type=int, default=3, help="rounds of every method")
    p.add_argument("--threads", type=int, default=2,
                   help="threads the other compactors may use (TMS: its Spark master)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help=f"comma-separated subset of {','.join(METHODS)}")
    p.add_argument("--venv-cache", type=Path, default=TMS_HOME / "bench-venvs",
                   help="where the other compactors' virtualenvs are made and kept")
    p.add_argument("--home", type=Path, default=TMS_HOME,
                   help="TMS home with the Spark jars (env TMS_HOME)")
    p.add_argument("--json", type=Path, help="also write every figure here")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (logs)")
    p.add_argument("--jfr", type=Path, help="record every TMS run's JVM with Java Flight "
                   "Recorder into this directory (summarise with bench/jfr_top.py)")
    p.add_argument("--table-property", action="append", default=[], type=_option,
                   metavar="K=V", help="set a table property on both tables after the writes "
                   "(e.g. write.parquet.compression-codec=zstd, to see TMS write zstd before "
                   "it keeps a table's codec by itself)")
    p.add_argument("--tms-option", action="append", default=[], type=_option, metavar="K=V",
                   help="override one of the options TMS's policy gives the job (to measure "
                        "an option's effect)")
    args = p.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(args.methods) - set(METHODS)
    if unknown:
        p.error(f"unknown methods {sorted(unknown)}")
    if args.files < 2 or args.tiny_commits < 2 or args.rows < args.files or args.repeat < 1:
        p.error("need --files >= 2, --tiny-commits >= 2, --rows >= --files, --repeat >= 1")
    return args


def _option(raw: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {raw!r}")
    return key, value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings
    say(f"load average at start: {loadavg()}")
    result, status = guarded(lambda: run(args))
    if result is None:
        return status
    result["loadavg_end"] = loadavg()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    text, wrong = render(result)
    print(text)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
