"""Execution benchmark: the same compaction by hand (one spark-submit) and through TMS.

A script, not a test (see bench/README.md). It starts a throw-away PostgreSQL, ZooKeeper, tms-api
and one tms-executor (``tms.local.stack.LocalStack``, loopback only, default executor settings)
in a temporary directory, writes ``--rounds`` x 2 identical Iceberg tables of ``--files`` small
files each (pyiceberg, JDBC catalog in that PostgreSQL), then per round, alternating which goes
first:

* by hand: the job spec the Iceberg plugin builds, run with one ``spark-submit`` exactly as an
  operator would, timed from start to exit;
* through TMS: ``TriggerOperation`` over gRPC, timed until ``GetOperation`` (polled every
  ``POLL_S``) says SUCCEEDED: claim, lease, heartbeat, spark-submit, result and bookkeeping.

Both must leave the table at one data file with its rows. It prints each run and the median
ratio TMS / hand (goal <= 1.10). With ``--warm`` it also runs ``bench.engine_bench`` (warm driver
vs cold spark-submit on small tables) in the same run and prints its figures.

    .venv/bin/python -m bench.execution_bench [--rounds 3] [--files 60] [--warm]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import TMS_HOME, sigterm_as_interrupt  # noqa: E402
from bench.common.procs import iceberg_catalog, local_stack, scratch_dir, stub_for  # noqa: E402
from bench.common.stats import median  # noqa: E402
from tms.jobs import ICEBERG_MAINTENANCE_APP  # noqa: E402
from tms.local import iceberg_data  # noqa: E402
from tms.spark.settings import SparkSettings  # noqa: E402
from tms.v1 import tms_pb2, tms_pb2_grpc  # noqa: E402

CATALOG = "bench"
NAMESPACE = "bench"
ROWS_PER_FILE = 20
POLL_S = 0.05
RUN_TIMEOUT_S = 600.0
GOAL_RATIO = 1.10


def by_hand(settings: SparkSettings, props: dict[str, str], table: str, work: Path) -> float:
    """One spark-submit of the maintenance job, as an operator would run it."""
    work.mkdir(parents=True, exist_ok=True)
    spec = {"catalog_name": CATALOG, "catalog_properties": props,
            "table": f"{NAMESPACE}.{table}", "action": "compaction", "options": {},
            "allowed_locations": [props["warehouse"]]}
    (work / "spec.json").write_text(json.dumps(spec))
    argv = settings.submit_argv(str(ICEBERG_MAINTENANCE_APP), [
        "--spec", str(work / "spec.json"), "--result", str(work / "result.json")])
    start = time.monotonic()
    with (work / "driver.log").open("wb") as log:
        proc = subprocess.run(argv, env=settings.submit_env(os.environ), cwd=work,
                              stdout=log, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
    elapsed = time.monotonic() - start
    result = json.loads((work / "result.json").read_text())
    if proc.returncode != 0 or not result.get("ok"):
        tail = (work / "driver.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"hand run failed: {result.get('error')}\n{tail}")
    return elapsed


def through_tms(stub: tms_pb2_grpc.TableManagementServiceStub, table_id: str
                ) -> tuple[float, float, float]:
    """(end to end, queued until claimed, claimed until finished) in seconds."""
    start = time.monotonic()
    op = stub.TriggerOperation(tms_pb2.TriggerOperationRequest(
        parent=f"tables/{table_id}", action="compaction"), timeout=10)
    while True:
        got = stub.GetOperation(tms_pb2.GetOperationRequest(name=op.name), timeout=10)
        if got.state == tms_pb2.Operation.SUCCEEDED:
            total = time.monotonic() - start
            created, started = got.create_time.ToDatetime(), got.start_time.ToDatetime()
            ended = got.end_time.ToDatetime()
            return (total, (started - created).total_seconds(),
                    (ended - started).total_seconds())
        if got.state in (tms_pb2.Operation.FAILED, tms_pb2.Operation.CANCELLED):
            raise RuntimeError(f"TMS run ended {tms_pb2.Operation.State.Name(got.state)}: "
                               f"{got.error}")
        if time.monotonic() - start > RUN_TIMEOUT_S:
            raise TimeoutError("TMS run did not finish")
        time.sleep(POLL_S)


def check_compacted(catalog: Any, table: str, rows: int) -> None:
    stats = iceberg_data.stats(catalog.load_table(f"{NAMESPACE}.{table}"))
    if stats["data_files"] != 1 or stats["rows_scanned"] != rows:
        raise RuntimeError(f"{table} not compacted as expected: {stats}")


def run(rounds: int, files: int, state_dir: Path) -> list[tuple[float, float]]:
    with local_stack(state_dir) as stack:
        stack.start_servers()
        stack.start_api()
        stack.start_executor(0)
        catalog, props = iceberg_catalog(stack, CATALOG)
        stub = stub_for(stack)
        settings = SparkSettings.from_env(TMS_HOME)
        rows = files * ROWS_PER_FILE
        pairs = []
        for r in range(rounds):
            names = (f"hand_{r}", f"tms_{r}")
            for name in names:
                t = iceberg_data.create_table(catalog, NAMESPACE, name)
                iceberg_data.append_batches(t, files, rows_per_commit=ROWS_PER_FILE)
            stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=names[1], table=tms_pb2.Table(
                format="iceberg", catalog=CATALOG, namespace=NAMESPACE, table_name=names[1])),
                timeout=10)
            order = ("hand", "tms") if r % 2 == 0 else ("tms", "hand")
            times: dict[str, float] = {}
            for which in order:
                if which == "hand":
                    times[which] = by_hand(settings, props, names[0], state_dir / f"hand-{r}")
                else:
                    times[which], queued_s, running_s = through_tms(stub, names[1])
            for name in names:
                check_compacted(catalog, name, rows)
            print(f"round {r + 1}: by hand {times['hand']:6.2f} s   through TMS "
                  f"{times['tms']:6.2f} s (queued {queued_s:.2f}, running {running_s:.2f})   "
                  f"ratio {times['tms'] / times['hand']:.3f}", flush=True)
            pairs.append((times["hand"], times["tms"]))
        return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=60, help="small files per table")
    parser.add_argument("--warm", action="store_true",
                        help="also run bench.engine_bench (warm vs cold) in this run")
    args = parser.parse_args(argv)
    with sigterm_as_interrupt(), scratch_dir("tms-exec-bench-") as tmp:
        pairs = run(args.rounds, args.files, tmp)
    hand = median(h for h, _ in pairs)
    tms = median(t for _, t in pairs)
    ratio = median(t / h for h, t in pairs)
    print(f"\ncompaction of {args.files} small files, median of {len(pairs)} rounds")
    print(f"  by hand (one spark-submit)   {hand:6.2f} s")
    print(f"  through TMS (trigger->done)  {tms:6.2f} s   (+{tms - hand:.2f} s)")
    print(f"  TMS / hand                   {ratio:6.3f}   (goal <= {GOAL_RATIO:.2f})")
    if args.warm:
        from bench import engine_bench

        print("\nwarm driver vs cold spark-submit (bench.engine_bench)", flush=True)
        return int(engine_bench.main([]) or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
