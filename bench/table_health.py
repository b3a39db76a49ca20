"""Table-health benchmark: the same 200 small commits to two copies of an Iceberg table, one
maintained by TMS while the writes go on, the other left alone.

A script, not a test (see bench/README.md). It starts the whole service locally
(``tms.local.stack.LocalStack``: PostgreSQL, ZooKeeper, tms-api, one tms-scheduler, one
tms-executor with the warm engine, loopback only) in a temporary directory, then:

1. creates ``plain`` and ``maintained`` (pyiceberg, JDBC catalog in that PostgreSQL) and
   registers ``maintained`` with TMS (policy below: compaction from 10 small files or when the
   writer has been quiet for 10 s, snapshots expired after 60 s keeping 5, manifests rewritten
   from 10);
2. appends ``--commits`` identical batches to both (a commit that loses a race with TMS's
   compaction is refreshed and retried, as any writer would) and sends NotifyCommit for each
   commit of ``maintained``;
3. waits until TMS is idle and has tidied the quiet table;
4. reports data files (against the ideal: total bytes / target file size, rounded up), snapshots,
   manifests and metadata size of both, and times the same Spark queries on both
   (``bench/table_health_scan.py`` under spark-submit, alternating, median of ``--repetitions``).

Goals: maintained scans >= 3x faster (geometric mean of the per-query ratios); maintained data
files <= 1.2 x ideal.

    .venv/bin/python -m bench.table_health [--commits 200] [--rows 2000] [--repetitions 5]
    .venv/bin/python -m bench.table_health --scenario partitioned [--commits 1000] \
        [--partitions 16] [--late-every 10] [--delete-every 50] [--settle-s 300] [--json F]

The partitioned scenario (late data, merge-on-read deletes, per-partition layout, write
amplification, operations that changed nothing) is described in
``bench/table_health_partitioned.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import TMS_HOME, sigterm_as_interrupt  # noqa: E402
from bench.common.procs import iceberg_catalog, local_stack, scratch_dir, stub_for  # noqa: E402
from tms.jobs.iceberg_maintenance import catalog_conf  # noqa: E402
from tms.local import iceberg_data  # noqa: E402
from tms.spark.settings import SparkSettings  # noqa: E402
from tms.v1 import tms_pb2, tms_pb2_grpc  # noqa: E402

SCAN_APP = Path(__file__).resolve().parent / "table_health_scan.py"
CATALOG = "health"
NAMESPACE = "bench"
TARGET_FILE_BYTES = 128 * 1024 * 1024
COMMIT_RETRIES = 10
IDLE_TIMEOUT_S = 300.0
POLL_S = 1.0
GOAL_SCAN_RATIO = 3.0
GOAL_FILES_VS_IDEAL = 1.2
POLICY = {
    "compaction.min-small-files": "10", "compaction.min-interval-s": "0",
    "compaction.quiet-s": "10", "scheduler.pull-interval-s": "5",
    "expire-snapshots.max-age-s": "60", "expire-snapshots.retain-last": "5",
    "expire-snapshots.min-interval-s": "30",
    "manifests.max-count": "10", "manifests.min-interval-s": "30",
}
QUERIES = (
    "SELECT count(*), sum(amount) FROM {table}",
    "SELECT kind, count(*), avg(amount) FROM {table} GROUP BY kind",
    "SELECT * FROM {table} WHERE id = 12345",
)


def append_with_retry(table: Any, batch: Any) -> Any:
    from pyiceberg.exceptions import CommitFailedException

    for _ in range(COMMIT_RETRIES):
        try:
            table.append(batch)
            return table
        except CommitFailedException:  # TMS committed meanwhile: refresh and try again
            table = table.refresh()
    raise RuntimeError("append kept losing commit races")


def table_stats(catalog: Any, name: str) -> dict[str, Any]:
    tbl = catalog.load_table(f"{NAMESPACE}.{name}")
    stats = iceberg_data.stats(tbl)
    snap = tbl.current_snapshot()
    summary = snap.summary.additional_properties if snap and snap.summary else {}
    meta_dir = Path(urlsplit(tbl.metadata_location).path).parent
    stats["manifests"] = len(snap.manifests(tbl.io)) if snap else 0
    stats["total_bytes"] = int(summary.get("total-files-size", 0))
    stats["metadata_bytes"] = sum(p.stat().st_size for p in meta_dir.iterdir() if p.is_file())
    stats["metadata_json_bytes"] = Path(urlsplit(tbl.metadata_location).path).stat().st_size
    stats["ideal_files"] = max(1, math.ceil(stats["total_bytes"] / TARGET_FILE_BYTES))
    return stats


def active_operations(stub: tms_pb2_grpc.TableManagementServiceStub) -> int:
    ops = stub.ListOperations(tms_pb2.ListOperationsRequest(parent="tables/maintained",
                                                            page_size=1000), timeout=10)
    return sum(o.state in (tms_pb2.Operation.QUEUED, tms_pb2.Operation.RUNNING)
               for o in ops.operations)


def wait_until_tidy(stub: Any, catalog: Any) -> float:
    start = time.monotonic()
    while time.monotonic() - start < IDLE_TIMEOUT_S:
        s = table_stats(catalog, "maintained")
        if active_operations(stub) == 0 and s["data_files"] <= s["ideal_files"]:
            return time.monotonic() - start
        time.sleep(POLL_S)
    print("[bench] TMS did not tidy the table within the bound; reporting as it is")
    return time.monotonic() - start


def scan_times(state_dir: Path, props: dict[str, str], repetitions: int,
               queries: tuple[str, ...] = QUERIES) -> dict[str, dict[str, float]]:
    settings = SparkSettings.from_env(TMS_HOME)
    conf = catalog_conf(CATALOG, props)
    spec = {"conf": conf, "repetitions": repetitions, "queries": list(queries),
            "tables": {label: f"{CATALOG}.{NAMESPACE}.{label}"
                       for label in ("plain", "maintained")}}
    spec_path, out_path = state_dir / "scan-spec.json", state_dir / "scan-out.json"
    spec_path.write_text(json.dumps(spec))
    argv = settings.submit_argv(str(SCAN_APP), [str(spec_path), str(out_path)])
    with (state_dir / "scan.log").open("wb") as log:
        proc = subprocess.run(argv, env=settings.submit_env(os.environ), stdout=log,
                              stderr=subprocess.STDOUT, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"scan job failed; see {state_dir / 'scan.log'}")
    return dict(json.loads(out_path.read_text())["median_s"])


def run(args: argparse.Namespace, state_dir: Path) -> None:
    engines = state_dir / "engines.toml"
    engines.write_text('engine = "warm-spark"\n')
    executor_args = ["--engine-config", str(engines), "--poll-interval-s", "0.5"]
    with local_stack(state_dir / "stack", executor_args=executor_args) as stack:
        stack.start()
        catalog, props = iceberg_catalog(stack, CATALOG, state_dir / "warehouse")
        tables = {n: iceberg_data.create_table(catalog, NAMESPACE, n)
                  for n in ("plain", "maintained")}
        stub = stub_for(stack)
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="maintained", table=tms_pb2.Table(
            format="iceberg", catalog=CATALOG, namespace=NAMESPACE, table_name="maintained",
            policy=POLICY)), timeout=10)
        print(f"writing {args.commits} commits of {args.rows} rows to both tables", flush=True)
        t0 = time.monotonic()
        for i in range(args.commits):
            batch = iceberg_data.batch(i * args.rows, args.rows)
            tables["plain"] = append_with_retry(tables["plain"], batch)
            tables["maintained"] = append_with_retry(tables["maintained"], batch)
            snap = tables["maintained"].current_snapshot()
            stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
                table="tables/maintained", commit_id=str(snap.snapshot_id)), timeout=10)
        write_s = time.monotonic() - t0
        during = table_stats(catalog, "maintained")
        print(f"writes done in {write_s:.0f} s; maintained has {during['data_files']} data "
              "files; waiting for TMS to go idle", flush=True)
        settle_s = wait_until_tidy(stub, catalog)
        ops = stub.ListOperations(tms_pb2.ListOperationsRequest(
            parent="tables/maintained", page_size=1000), timeout=10).operations
        stats = {n: table_stats(catalog, n) for n in ("plain", "maintained")}
        print("timing scans with Spark", flush=True)
        scans = scan_times(state_dir, props, args.repetitions)
    report(args, stats, scans, ops, write_s, settle_s, during)


def report(args: argparse.Namespace, stats: dict[str, dict[str, Any]],
           scans: dict[str, dict[str, float]], ops: Any, write_s: float, settle_s: float,
           during: dict[str, Any]) -> None:
    plain, kept = stats["plain"], stats["maintained"]
    print(f"\n{args.commits} commits x {args.rows} rows; writes {write_s:.0f} s, TMS idle "
          f"{settle_s:.0f} s after the last commit")
    by_action: dict[str, int] = {}
    for o in ops:
        if o.state == tms_pb2.Operation.SUCCEEDED:
            by_action[o.action] = by_action.get(o.action, 0) + 1
    print("TMS operations that succeeded: "
          + (", ".join(f"{a} {n}" for a, n in sorted(by_action.items())) or "none"))
    print(f"maintained data files right after the last commit: {during['data_files']}")
    print(f"\n{'':28}{'plain':>14}{'maintained':>14}{'plain / maint.':>16}")
    for key in ("data_files", "snapshots", "manifests", "metadata_bytes",
                "metadata_json_bytes", "total_bytes", "rows_scanned"):
        a, b = plain[key], kept[key]
        print(f"{key:28}{a:>14,}{b:>14,}{(a / b if b else math.nan):>16.2f}")
    print(f"{'ideal data files':28}{plain['ideal_files']:>14,}{kept['ideal_files']:>14,}")
    ratios = []
    print(f"\n{'query (median s)':60}{'plain':>9}{'maint.':>9}{'speed-up':>10}")
    for q, t in scans.items():
        r = t["plain"] / t["maintained"]
        ratios.append(r)
        print(f"{q[:58]:60}{t['plain']:>9.3f}{t['maintained']:>9.3f}{r:>9.2f}x")
    geo = math.exp(statistics.mean(math.log(r) for r in ratios))
    files_ratio = kept["data_files"] / kept["ideal_files"]
    print(f"\nscan speed-up, geometric mean      {geo:6.2f}x   (goal >= {GOAL_SCAN_RATIO:.1f}x)")
    print(f"maintained data files / ideal      {files_ratio:6.2f}    "
          f"(goal <= {GOAL_FILES_VS_IDEAL:.1f})")
    print(f"rows equal                          {plain['rows_scanned'] == kept['rows_scanned']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=("append", "partitioned"), default="append",
                        help="append: the unpartitioned stream above; partitioned: see "
                             "bench/table_health_partitioned.py")
    parser.add_argument("--commits", type=int, help="default 200 (append), 1000 (partitioned)")
    parser.add_argument("--rows", type=int, help="rows per commit; default 2000 (append), "
                        "500 (partitioned)")
    parser.add_argument("--repetitions", type=int, default=5, help="per query and table")
    parser.add_argument("--partitions", type=int, default=16, help="partitioned only")
    parser.add_argument("--late-every", type=int, default=10,
                        help="partitioned: every N-th commit is late data (0: none)")
    parser.add_argument("--delete-every", type=int, default=50,
                        help="partitioned: every M-th commit is a merge-on-read DELETE (0: none)")
    parser.add_argument("--settle-s", type=float, default=IDLE_TIMEOUT_S,
                        help="partitioned: longest wait for TMS to finish after the stream")
    parser.add_argument("--json", type=Path, help="partitioned: write every figure here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs)")
    args = parser.parse_args(argv)
    partitioned = args.scenario == "partitioned"
    args.commits = (1000 if partitioned else 200) if args.commits is None else args.commits
    args.rows = (500 if partitioned else 2000) if args.rows is None else args.rows
    if args.commits < 1 or args.rows < 1 or args.repetitions < 1 or args.partitions < 1:
        parser.error("--commits, --rows, --repetitions and --partitions must be >= 1")
    if args.late_every < 0 or args.delete_every < 0 or args.settle_s < 0:
        parser.error("--late-every, --delete-every and --settle-s must be >= 0")
    with sigterm_as_interrupt(), scratch_dir("tms-health-", keep=args.keep) as tmp:
        if partitioned:
            from bench import table_health_partitioned  # imports this module's constants

            table_health_partitioned.run(args, tmp)
        else:
            run(args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
