"""The partitioned streaming scenario of ``bench/table_health.py`` (``--scenario partitioned``).

Two copies of a table partitioned into ``--partitions`` partitions get the same ``--commits``
small commits (``bench/table_health_stream.py``: appends to the current partition, late data
into old ones, merge-on-read DELETEs); ``maintained`` is registered with TMS (the real
service: api, scheduler, executor with the warm Spark engine), ``plain`` is left alone. After
the stream the bench waits up to ``--settle-s`` for TMS to go idle with the table tidy, then
reports (``bench/table_health_report.py``) scan speed-up, data files / ideal per partition
(mid-stream and final), write amplification, operations that changed nothing, rows and checksum.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.common import say
from bench.common.procs import iceberg_catalog, local_stack, stub_for
from bench.table_health import CATALOG, NAMESPACE, POLICY, QUERIES, TARGET_FILE_BYTES, scan_times
from bench.table_health_metrics import (
    FilesVsIdeal,
    SnapshotLedger,
    files_vs_ideal,
    write_amplification,
)
from bench.table_health_observe import (
    active,
    append,
    list_operations,
    observe,
    partition_files,
    summarize_operations,
)
from bench.table_health_report import fvi_dict, layout_line, report
from bench.table_health_stream import Failures, SparkSql, checksum, create_table, delete_rows, plan
from bench.table_health_stream import batch as make_batch
from tms.v1 import tms_pb2

LABELS = ("plain", "maintained")
POLICY_PARTITIONED = {**POLICY, "position-deletes.max-files": "10",
                      "position-deletes.min-interval-s": "30"}
QUERIES_PARTITIONED = (*QUERIES, "SELECT count(*), max(ts) FROM {table} WHERE part = 3")
CHECKPOINTS = (0.25, 0.5, 0.75)
POLL_S = 2.0


def qualified(label: str) -> str:
    return f"{CATALOG}.{NAMESPACE}.{label}"


def layout(tables: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {label: fvi_dict(files_vs_ideal(partition_files(tables[label]), TARGET_FILE_BYTES))
            for label in LABELS}


def settle(stub: Any, tables: dict[str, Any], ledger: SnapshotLedger, bound_s: float) -> float:
    """Wait until TMS has nothing queued or running and the table is at its ideal layout,
    at most ``bound_s``; the snapshots committed meanwhile are counted as they appear."""
    start = time.monotonic()
    while time.monotonic() - start < bound_s:
        tables["maintained"] = tables["maintained"].refresh()
        observe(ledger, tables["maintained"])
        fvi = files_vs_ideal(partition_files(tables["maintained"]), TARGET_FILE_BYTES)
        if active(list_operations(stub)) == 0 and fvi.files <= fvi.ideal:
            return time.monotonic() - start
        time.sleep(POLL_S)
    say(f"TMS did not reach the ideal layout within {bound_s:.0f} s; reporting as it is")
    return time.monotonic() - start


def stream(args: argparse.Namespace, stub: Any, tables: dict[str, Any], sql: SparkSql,
           ledgers: dict[str, SnapshotLedger], failures: Failures) -> list[dict[str, Any]]:
    """Write the whole stream to both tables; the layouts at the checkpoints."""
    steps = plan(args.commits, args.partitions, args.late_every, args.delete_every)
    marks = {max(1, int(args.commits * f)) for f in CHECKPOINTS}
    points = []
    for i, step in enumerate(steps):
        for label in LABELS:
            failures.current = label
            if step.kind == "delete":
                delete_rows(sql, qualified(label), step, label, failures)
                tables[label] = tables[label].refresh()
            else:
                tables[label] = append(tables[label], make_batch(i, step.part, args.rows),
                                       label, failures)
            observe(ledgers[label], tables[label])
        snap = tables["maintained"].current_snapshot()
        op = "delete" if step.kind == "delete" else "append"
        stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
            table="tables/maintained", commit_id=str(snap.snapshot_id),
            stats=tms_pb2.CommitStats(operation=op)), timeout=10)
        if i + 1 in marks:
            point: dict[str, Any] = {"commit": i + 1, **layout(tables)}
            points.append(point)
            for label in reversed(LABELS):
                print(layout_line(f"after {i + 1} commits, {label}",
                                  FilesVsIdeal(**point[label])), flush=True)
    return points


def run(args: argparse.Namespace, state_dir: Path) -> None:
    t_run = time.monotonic()
    engines = state_dir / "engines.toml"
    engines.write_text('engine = "warm-spark"\n')
    executor_args = ["--engine-config", str(engines), "--poll-interval-s", "0.5"]
    with local_stack(state_dir / "stack", executor_args=executor_args) as stack:
        stack.start()
        catalog, props = iceberg_catalog(stack, CATALOG, state_dir / "warehouse")
        tables = {n: create_table(catalog, NAMESPACE, n) for n in LABELS}
        stub = stub_for(stack)
        stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id="maintained", table=tms_pb2.Table(
            format="iceberg", catalog=CATALOG, namespace=NAMESPACE, table_name="maintained",
            policy=POLICY_PARTITIONED)), timeout=10)
        say("starting the Spark SQL session for the DELETEs")
        sql = SparkSql(state_dir, CATALOG, props)
        try:
            ledgers = {n: SnapshotLedger() for n in LABELS}
            failures = Failures()
            say(f"writing {args.commits} commits of {args.rows} rows into {args.partitions} "
                "partitions of both tables")
            t0 = time.monotonic()
            with failures.capture_pyiceberg():
                points = stream(args, stub, tables, sql, ledgers, failures)
            write_s = time.monotonic() - t0
            say("writes done; waiting for TMS to go idle")
            settle_s = settle(stub, tables, ledgers["maintained"], args.settle_s)
            ops = summarize_operations(list_operations(stub))
            final = layout(tables)
            sums = {n: checksum(sql, qualified(n)) for n in LABELS}
        finally:
            sql.close()
        say("timing scans with Spark")
        scans = scan_times(state_dir, props, args.repetitions, QUERIES_PARTITIONED)
    kinds = [s.kind for s in plan(args.commits, args.partitions, args.late_every,
                                  args.delete_every)]
    led = ledgers["maintained"]
    from_ops = ops["all_from_outcome"]
    rewritten = ops["rewritten_bytes"] if from_ops else led.rewritten_bytes
    fig = {
        "stream": {"commits": args.commits, "rows": args.rows, "partitions": args.partitions,
                   "appends": kinds.count("append"), "late": kinds.count("late"),
                   "deletes": kinds.count("delete"), "write_s": write_s,
                   "settle_s": settle_s, "wall_s": time.monotonic() - t_run},
        "checkpoints": points, "final": final, "scans": scans, "operations": ops,
        "writer_failures": failures.messages,
        "write_amplification": {
            "value": write_amplification(rewritten, led.writer_bytes),
            "rewritten_bytes": rewritten, "writer_bytes": led.writer_bytes,
            "source": "operations' outcome blocks" if from_ops else "replace snapshots' summaries",
            # every byte maintenance snapshots removed, delete files included (a position-delete
            # rewrite's and a compaction's), over every byte writers added, delete files included
            "with_delete_files": write_amplification(led.rewritten_bytes, led.writer_bytes),
            "snapshot_summaries": vars(led) | {"seen": len(led.seen)},
            "plain_writer_bytes": ledgers["plain"].writer_bytes},
        "rows": {"maintained": sums["maintained"], "plain": sums["plain"],
                 "equal": sums["maintained"] == sums["plain"]},
    }
    report(fig, args.json)
