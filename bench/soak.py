"""Soak: the whole service under a mixed load for a bounded time, then the fault suite's
invariant checks; exit status 1 on any violation.

A script, not a test (see bench/README.md). One run starts a throw-away PostgreSQL and
ZooKeeper, one tms-api, two tms-schedulers and two tms-executors (``tms.local.stack``, loopback
only, in a temporary directory) and, for ``--minutes``:

* writer threads notify commits (NotifyCommit, plus one writer sending NotifyCommits batches)
  over ``--constant-tables`` tables of the "constant" test plugin (tests/plugins: free
  inspection; every ``--needy-every``-th table needs compaction; their queue has no executor,
  so each must end with exactly one QUEUED operation however often it is decided);
* one writer per ``--iceberg-tables`` real Iceberg table appends a small file every
  ``--append-interval-s`` with pyiceberg and notifies the snapshot; the executors compact the
  tables with Spark while the appends go on.

Then the writers stop, running operations get ``--drain-s`` to end, and the checks run: every
acknowledged commit stored once, every commit mark decided, no operation stuck or doubled, no
two attempts on a table overlapping, every Iceberg table reads back exactly the rows appended.

Figures: notifications acknowledged per second, decisions per minute (the schedulers'
``tms_scheduler_decisions`` counters on their /metrics), operations finished per minute and
attempts started per minute (PostgreSQL). ``--report PATH`` writes them with the checks as JSON
and Markdown, the same format as the fault suite's report.

Run from the repository root::

    .venv/bin/python -m bench.soak [--minutes 3] [--report soak.json]
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

if __package__ in (None, ""):  # run as a file: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import install_plugin_path, say, sigterm_as_interrupt  # noqa: E402
from bench.common.procs import iceberg_catalog, local_stack, scratch_dir, stub_for  # noqa: E402
from bench.faults.invariants import check_acks, check_iceberg_rows, check_operations  # noqa: E402
from bench.faults.load import Ledger, Notifier, SteadyWriters  # noqa: E402
from bench.faults.report import FaultRecord, FaultReport  # noqa: E402
from bench.faults.scenario import CONSTANT_QUEUE, all_decided, constant_tables  # noqa: E402

DEFAULT_MINUTES = 3.0
SCHEDULERS = 2
EXECUTORS = 2
ICEBERG_QUEUE = "default"
ICEBERG_CATALOG = "tms_soak"
ICEBERG_NAMESPACE = "soak"
ICEBERG_ROWS_PER_APPEND = 5
ICEBERG_POLICY = {"compaction.min-interval-s": "30"}  # several compactions per table per run
APPEND_RETRIES = 5  # an append that loses a commit race with a compaction is tried again
APPEND_RETRY_WAIT_S = 0.2
BATCH_SIZE = 100
METRICS_TIMEOUT_S = 5.0
DECISIONS_METRIC = "tms_scheduler_decisions_total"
DECIDE_TIMEOUT_S = 120.0  # every commit mark decided after the writers stop
SETTLE_TIMEOUT_S = 60.0  # expired leases reaped
POLL_S = 1.0
PROGRESS_EVERY_S = 30.0
EXECUTOR_ARGS = ["--lease-s", "15", "--heartbeat-s", "5", "--poll-interval-s", "0.5",
                 "--queues", ICEBERG_QUEUE]
SCHEDULER_ARGS = ["--poll-interval-s", "0.2", "--shard-settle-s", "1"]

log = logging.getLogger("tms.soak")


def _decisions(ports: list[int]) -> float:
    """The schedulers' decision counters, summed over every label."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=METRICS_TIMEOUT_S) as r:
            for family in text_string_to_metric_families(r.read().decode()):
                total += sum(s.value for s in family.samples if s.name == DECISIONS_METRIC)
    return total


@dataclass
class BatchWriter:
    """One writer sending NotifyCommits of ``size`` commits every ``interval_s``."""

    notifier: Notifier
    tables: list[str]
    size: int
    interval_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    sent: int = 0
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        n = 0
        while not self.stop.wait(self.interval_s):
            keys = [(self.tables[(n + i) % len(self.tables)], f"batch-{n + i}")
                    for i in range(self.size)]
            n += self.size
            self.sent += self.notifier.notify_batch(keys)

    def start(self) -> BatchWriter:
        self._thread = threading.Thread(target=self._run, daemon=True, name="batch-writer")
        self._thread.start()
        return self

    def finish(self, timeout_s: float) -> bool:
        self.stop.set()
        assert self._thread is not None
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


@dataclass
class IcebergWriter:
    """Appends a small file to one Iceberg table every ``interval_s`` and notifies it."""

    table: Any
    table_id: str
    notifier: Notifier
    interval_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    rows: int = 0  # rows of every append that committed
    appends: int = 0
    conflicts: int = 0  # appends that lost a commit race and were tried again
    errors: list[str] = field(default_factory=list)
    _thread: threading.Thread | None = None

    def _append(self, start: int) -> int | None:
        from pyiceberg.exceptions import CommitFailedException

        from tms.local import iceberg_data

        for _ in range(APPEND_RETRIES):
            try:
                self.table = self.table.refresh()
                self.table.append(iceberg_data.batch(start, ICEBERG_ROWS_PER_APPEND))
                return int(self.table.current_snapshot().snapshot_id)
            except CommitFailedException:
                self.conflicts += 1
                time.sleep(APPEND_RETRY_WAIT_S)
        return None

    def _run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                snap = self._append(self.rows)
            except Exception as e:  # recorded and reported: the soak must end either way
                self.errors.append(f"{type(e).__name__}: {e}"[:300])
                continue
            if snap is None:
                self.errors.append("append lost its commit race every time")
                continue
            self.rows += ICEBERG_ROWS_PER_APPEND
            self.appends += 1
            self.notifier.notify(self.table_id, str(snap))

    def start(self) -> IcebergWriter:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"iceberg-{self.table_id}")
        self._thread.start()
        return self

    def finish(self, timeout_s: float) -> bool:
        self.stop.set()
        assert self._thread is not None
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def _running(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM tms_operations WHERE state = 'RUNNING'"
                           ).fetchone()
    return int(row[0]) if row else 0


def _wait(probe: Any, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    while not probe():
        if time.monotonic() - t0 > timeout_s:
            return None
        time.sleep(POLL_S)
    return time.monotonic() - t0


def _finished_per_state(dsn: str, since: float) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT state::text, count(*) FROM tms_operations WHERE finished_at >= "
            "now() - make_interval(secs => %s) GROUP BY 1", (time.monotonic() - since,)
        ).fetchall()
    return {s: int(n) for s, n in rows}


def _attempts_since(dsn: str, since: float) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM tms_attempts WHERE started_at >= "
                           "now() - make_interval(secs => %s)",
                           (time.monotonic() - since,)).fetchone()
    return int(row[0]) if row else 0


def _check_constant_tables(rec: FaultRecord, dsn: str, needy: set[str]) -> None:
    """The constant queue has no executor: one operation per needy table, none elsewhere."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT t.table_id, count(o.id) FROM tms_tables t LEFT JOIN tms_operations o "
            "ON o.table_pk = t.id WHERE t.queue = %s GROUP BY 1", (CONSTANT_QUEUE,)).fetchall()
    counts: dict[str, int] = {str(t): int(n) for t, n in rows}
    wrong = {t: n for t, n in counts.items() if n != (1 if t in needy else 0)}
    rec.counts["constant_tables_with_operations"] = sum(1 for n in counts.values() if n > 0)
    rec.check("constant tables: exactly one operation per table that needs one", not wrong,
              f"{len(wrong)} tables off: {sorted(wrong.items())[:5]}" if wrong else
              f"{len(needy)} of {len(counts)} tables have their one operation")


def run(args: argparse.Namespace, report: FaultReport) -> None:
    with scratch_dir("tms-soak-", keep=args.keep) as tmp, local_stack(tmp / "stack") as stack:
        _run(args, report, stack, tmp)


def _run(args: argparse.Namespace, report: FaultReport, stack: Any, tmp: Path) -> None:
    from tms.local import iceberg_data
    from tms.local.ports import free_port
    from tms.v1 import tms_pb2

    install_plugin_path()
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    notifier: Notifier | None = None
    try:
        say(f"starting PostgreSQL, ZooKeeper, tms-api, {SCHEDULERS} schedulers, "
             f"{EXECUTORS} executors in {tmp}")
        stack.start_servers()
        stack.start_api()
        metrics_ports = [free_port() for _ in range(SCHEDULERS)]
        for i, port in enumerate(metrics_ports):
            stack._service(f"scheduler-{i}", "tms_services.scheduler",  # noqa: SLF001
                           ["--id", f"scheduler-{i}", *SCHEDULER_ARGS,
                            "--metrics-listen", f"127.0.0.1:{port}"])
        for i in range(EXECUTORS):
            stack._service(f"executor-{i}", "tms_services.executor",  # noqa: SLF001
                           ["--id", f"executor-{i}", "--workdir", str(stack.workdir(i)),
                            *EXECUTOR_ARGS])
        stub = stub_for(stack)
        names, needy = constant_tables(stub, stack.database_url, "soak", args.constant_tables,
                                       args.needy_every)
        catalog, _ = iceberg_catalog(stack, ICEBERG_CATALOG)
        ledger = Ledger()
        notifier = Notifier([stack.api_address], ledger)
        iceberg: list[IcebergWriter] = []
        for i in range(args.iceberg_tables):
            table_id = f"soak-iceberg-{i}"
            table = iceberg_data.create_table(catalog, ICEBERG_NAMESPACE, f"t{i}")
            stub.RegisterTable(tms_pb2.RegisterTableRequest(table_id=table_id, table=tms_pb2.Table(
                format="iceberg", catalog=ICEBERG_CATALOG, namespace=ICEBERG_NAMESPACE,
                table_name=f"t{i}", queue=ICEBERG_QUEUE,
                priority=100, policy=ICEBERG_POLICY)), timeout=10)
            iceberg.append(IcebergWriter(table, table_id, notifier, args.append_interval_s))
        with report.fault("soak", (
                f"{args.minutes:g} min: {args.writers} writers at {args.rate:g} commits/s in "
                f"all plus NotifyCommits of {BATCH_SIZE} every {args.batch_interval_s:g} s "
                f"over {len(names)} constant tables ({len(needy)} need compaction, their "
                f"queue unserved); {len(iceberg)} Iceberg tables appended every "
                f"{args.append_interval_s:g} s and compacted by {EXECUTORS} executors; "
                f"{SCHEDULERS} schedulers.")) as rec:
            decisions0 = _decisions(metrics_ports)
            t0 = time.monotonic()
            steady = SteadyWriters(notifier, names, "soak", args.writers, args.rate).start()
            batch = BatchWriter(notifier, names, BATCH_SIZE, args.batch_interval_s).start()
            for w in iceberg:
                w.start()
            end = t0 + args.minutes * 60
            next_progress = t0 + PROGRESS_EVERY_S
            while time.monotonic() < end:
                time.sleep(min(POLL_S, max(0.0, end - time.monotonic())))
                if time.monotonic() >= next_progress:
                    next_progress += PROGRESS_EVERY_S
                    say(f"{time.monotonic() - t0:5.0f} s: {len(ledger.acked)} acks, "
                         f"finished {_finished_per_state(stack.database_url, t0)}, "
                         f"running {_running(stack.database_url)}")
                dead = [s.name for s in stack.services if not s.alive]
                if dead:
                    break
            load_s = time.monotonic() - t0
            rec.check("writers drained", steady.finish(args.drain_s)
                      and batch.finish(args.drain_s)
                      and all(w.finish(args.drain_s) for w in iceberg))
            decisions = _decisions(metrics_ports) - decisions0
            finished = _finished_per_state(stack.database_url, t0)
            attempts = _attempts_since(stack.database_url, t0)
            rec.counts.update(
                load_s=round(load_s, 1),
                acks_per_s=round(len(ledger.acked) / load_s, 1),
                decisions_per_min=round(decisions / load_s * 60, 1),
                operations_finished_per_min=round(sum(finished.values()) / load_s * 60, 2),
                operations_finished=finished,
                attempts_started_per_min=round(attempts / load_s * 60, 2),
                iceberg_appends=sum(w.appends for w in iceberg),
                iceberg_append_conflicts=sum(w.conflicts for w in iceberg))
            errors = [e for w in iceberg for e in w.errors]
            rec.check("every Iceberg append committed", not errors, "; ".join(errors[:3]))
            drained_s = _wait(lambda: _running(stack.database_url) == 0, args.drain_s)
            rec.counts["running_drained_after_s"] = (None if drained_s is None
                                                     else round(drained_s, 1))
            # what the load queued and the drain let finish, over load + drain time
            total = _finished_per_state(stack.database_url, t0)
            rec.counts.update(operations_finished_with_drain=total,
                              operations_finished_per_min_with_drain=round(
                                  sum(total.values()) / (time.monotonic() - t0) * 60, 2))
            decided_s = _wait(lambda: all_decided(stack.database_url), DECIDE_TIMEOUT_S)
            rec.check("every commit mark decided after the writers stopped",
                      decided_s is not None,
                      f"in {decided_s:.1f} s" if decided_s is not None else
                      f"not within {DECIDE_TIMEOUT_S:g} s")
            check_acks(rec, stack.database_url, ledger)
            check_operations(rec, stack.database_url, settle_s=SETTLE_TIMEOUT_S)
            _check_constant_tables(rec, stack.database_url, needy)
            after = {w.table_id: iceberg_data.stats(w.table)["rows_scanned"] for w in iceberg}
            check_iceberg_rows(rec, {w.table_id: w.rows for w in iceberg}, after)
            dead = [s.name for s in stack.services if not s.alive]
            rec.check("every TMS process ran to the end", not dead,
                      f"dead: {dead}" if dead else f"{len(stack.services)} processes")
    except KeyboardInterrupt:
        say("interrupted; stopping everything")
        raise
    finally:
        if notifier is not None:
            notifier.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                   help="how long the load runs (default %(default)s)")
    p.add_argument("--writers", type=int, default=4, help="NotifyCommit writer threads")
    p.add_argument("--rate", type=float, default=200.0,
                   help="NotifyCommit calls per second of all writers together (0: no limit)")
    p.add_argument("--batch-interval-s", type=float, default=1.0,
                   help=f"one NotifyCommits of {BATCH_SIZE} commits this often")
    p.add_argument("--constant-tables", type=int, default=300)
    p.add_argument("--needy-every", type=int, default=10,
                   help="every Nth constant table needs compaction")
    p.add_argument("--iceberg-tables", type=int, default=3)
    p.add_argument("--append-interval-s", type=float, default=2.0,
                   help="each Iceberg writer appends one small file this often")
    p.add_argument("--drain-s", type=float, default=240.0,
                   help="after the load: how long running operations may take to end")
    p.add_argument("--report", type=Path, default=None,
                   help="write the figures and checks as JSON here (and Markdown beside it)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.writers < 1 or args.constant_tables < 1:
        p.error("--minutes, --writers and --constant-tables must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    report = FaultReport("soak")
    with sigterm_as_interrupt():
        try:
            run(args, report)
        except KeyboardInterrupt:
            return 130
        except Exception:
            log.exception("the soak could not run to the end")
            if not report.records:
                return 2
    for line in report.summary_lines():
        print(line)
    rec = report.records[0]
    c = rec.counts
    print(f"throughput: {c.get('acks_per_s')} notifications/s acknowledged, "
          f"{c.get('decisions_per_min')} decisions/min, "
          f"{c.get('operations_finished_per_min')} operations finished/min "
          f"{c.get('operations_finished')}, {c.get('attempts_started_per_min')} attempts/min; "
          f"with the drain: {c.get('operations_finished_per_min_with_drain')} operations "
          f"finished/min {c.get('operations_finished_with_drain')}")
    for ch in rec.checks:
        print(f"  [{'ok' if ch.passed else 'VIOLATION'}] {ch.name}: {ch.detail}")
    if args.report is not None:
        json_path, md_path = report.write(args.report)
        print(f"report: {json_path} and {md_path}")
    return 0 if rec.passed else (2 if rec.error else 1)


if __name__ == "__main__":
    sys.exit(main())
