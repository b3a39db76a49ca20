"""Scheduler benchmark: commit -> QUEUED latency with real scheduler processes, pull-mode
decisions per minute, framework CPU per decision and ZooKeeper requests per decision.

A script, not a test (see bench/README.md). One run starts a throw-away PostgreSQL and
ZooKeeper (``tms.local.stack.LocalStack``, loopback only) in a temporary directory and measures:

1. ``latency``  ``--tables`` "constant" tables (the test plugin in tests/plugins, whose
                inspection costs nothing) inserted with SQL, ``--schedulers`` tms-scheduler
                processes with a long pull interval settle the initial decisions; then
                ``--sample`` tables get files=20 (needs compaction) and one NotifyCommit each
                through tms-api at ``--rate`` per second. Latency is the operation's
                ``created_at`` minus the commit event's ``received_at`` (both PostgreSQL's
                clock); goal p99 <= 1 s.
2. ``pull``     one in-process ``Scheduler`` making whole passes (a batch of the due tables of the
                shards it holds) for ``--seconds``, every table due again at once:
                (a) on ``--iceberg-tables`` small Iceberg tables (pyiceberg SqlCatalog on the same
                PostgreSQL, the real inspector); (b) on ``--pull-tables`` constant tables: the
                framework's own cost, CPU per decision from ``time.process_time()`` (goal
                <= 1 ms).
3. ``zk``       ZooKeeper requests per decision, counted client-side on the in-process
                Coordinator's KazooClient (every request goes through ``KazooClient._call``;
                session pings do not and are not counted).
4. ``objectstore`` ``--objectstore-tables`` Iceberg tables behind a FileIO that adds
                ``--read-delay-ms`` to every metadata read: tables inspected per minute and CPU
                per decision, first look / 10% changed / none changed, the concurrent
                scheduler against main's sequential inspector; then CPU per decision on
                constant tables, both loops (``bench/scheduler_objectstore.py``).
                ``--only-objectstore`` runs only this one.

Every process it starts is stopped at the end, on error, on Ctrl-C and on SIGTERM; the
temporary directory is removed.

Run from the repository root::

    .venv/bin/python -m bench.scheduler_bench [--tables 10000] [--schedulers 3] [--seconds 20]
"""

from __future__ import annotations

import argparse
import collections
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    REPO,
    BenchError,
    guarded,
    install_plugin_path,
    say,
)
from bench.common.cpu import CLK_TCK, CpuProbe, loadavg, postgres_pids  # noqa: E402
from bench.common.cpu import CpuSample as CpuWindow  # noqa: E402
from bench.common.procs import constant_catalog, create_catalog  # noqa: E402
from bench.common.stats import percentile  # noqa: E402
from bench.scheduler_objectstore import (  # noqa: E402
    Window,
    phase_objectstore,
    render_objectstore,
)
from tms.domain import CatalogSpec, CatalogType  # noqa: E402
from tms.scheduler.concurrency import CATALOG_READS_IN_FLIGHT, DECISION_THREADS  # noqa: E402

GOAL_LATENCY_P99_MS = 1000.0
GOAL_CPU_MS_PER_DECISION = 1.0
LONG_PULL_S = 3600.0
CATALOG = "bench"
NAMESPACE = "bench_ns"
CATALOG_DB = "iceberg_catalog"
FILES_KEY = "constant.files"  # the test plugin's file count, a table policy key
DISTURBED_PCT = 10.0


def _quiet_logs(level: int = logging.WARNING) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))
    logging.getLogger("kazoo").setLevel(logging.WARNING)


# --------------------------------------------------------------------------------------------
# CPU accounting from /proc
# --------------------------------------------------------------------------------------------
def _threads_cpu_s() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by thread name."""
    out: dict[str, float] = collections.defaultdict(float)
    for t in threading.enumerate():
        try:
            stat = Path(f"/proc/self/task/{t.native_id}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        out[re.sub(r"\d+", "N", t.name)] += (int(rest[11]) + int(rest[12])) / CLK_TCK
    return dict(out)


class CallerCpu:
    """Calling-thread CPU (``time.thread_time``) spent in the store's and the coordinator's
    calls made by a decision: instance attributes wrap the bound methods."""

    STORE_CALLS = ("decision_begin_batch", "operation_last_succeeded", "operation_active_actions",
                   "operation_enqueue", "table_set_locations",
                   "commits_mark_dirty", "decision_finish_batch")

    def __init__(self, store: Any) -> None:
        self.cpu_s: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()
        for name in self.STORE_CALLS:
            setattr(store, name, self._timed(f"postgres {name}", getattr(store, name)))

    def _timed(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any, **kw: Any) -> Any:
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                self.cpu_s[key] += time.thread_time() - t0
                self.calls[key] += 1
        return call

    def reset(self) -> None:
        self.cpu_s.clear()
        self.calls.clear()


# --------------------------------------------------------------------------------------------
# ZooKeeper request counting
# --------------------------------------------------------------------------------------------
class ZkCounter:
    """Counts every request the client sends: all KazooClient operations (create, delete,
    get_children, exists, ...) queue their request through ``KazooClient._call``."""

    def __init__(self, client: Any) -> None:
        self.by_type: collections.Counter[str] = collections.Counter()
        inner = client._call

        def counting(request: Any, async_object: Any) -> Any:
            self.by_type[type(request).__name__] += 1
            return inner(request, async_object)

        client._call = counting

    def reset(self) -> None:
        self.by_type.clear()

    @property
    def total(self) -> int:
        return sum(self.by_type.values())


# --------------------------------------------------------------------------------------------
# setup helpers
# --------------------------------------------------------------------------------------------
def insert_constant_tables(dsn: str, count: int, files: int, settled: int) -> list[int]:
    """Registration is not measured: one INSERT ... SELECT, rows as RegisterTable makes them.
    All but the first ``count - settled`` rows are inserted already decided (a decision row
    and a next check an hour ahead), as if the schedulers had taken their first decision."""
    catalog = constant_catalog(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "INSERT INTO tms_tables (table_id, format, catalog, table_name, policy, "
            "next_check_at) "
            "SELECT 'c' || lpad(g::text, 7, '0'), 'constant', %s, 'c' || lpad(g::text, 7, '0'), "
            "%s, CASE WHEN g <= %s THEN now() ELSE now() + make_interval(secs => %s) END "
            "FROM generate_series(1, %s) g RETURNING id, next_check_at > now()",
            (catalog, Jsonb({FILES_KEY: str(files)}), count - settled, LONG_PULL_S,
             count)).fetchall()
        decided = [int(r[0]) for r in rows if r[1]]
        conn.execute(
            "INSERT INTO tms_decisions (table_pk, action, should_run, reason, metrics, "
            "scheduler_id) SELECT pk, 'compaction', false, %s, %s, 'bench-setup' "
            "FROM unnest(%s::bigint[]) pk",
            (f"{files} files (threshold 10)", Jsonb({"files": files}), decided))
    return sorted(int(r[0]) for r in rows)


def settle_state(dsn: str) -> tuple[int, int, int]:
    """(due tables, dirty marks, decisions taken by schedulers)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM tms_tables WHERE state = 'ACTIVE' "
            "        AND next_check_at <= now()), "
            "(SELECT count(*) FROM tms_dirty_tables), "
            "(SELECT count(*) FROM tms_decisions WHERE scheduler_id <> 'bench-setup')"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _table_ids(dsn: str, pks: Sequence[int]) -> dict[int, str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT id, table_id FROM tms_tables WHERE id = ANY(%s)",
                            (list(pks),)).fetchall()
    return {int(r[0]): str(r[1]) for r in rows}


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
@dataclass
class LatencyResult:
    sent: int = 0
    queued: int = 0
    db_ms: list[float] = field(default_factory=list)  # created_at - received_at
    client_ms: list[float] = field(default_factory=list)  # created_at - client send time
    rpc_ms: list[float] = field(default_factory=list)  # NotifyCommit call latency
    settle_decisions: int = 0
    settle_s: float = 0.0
    settled: bool = True
    scheduler_cpu_ms_per_decision: float = math.nan
    cpu: CpuWindow = field(default_factory=CpuWindow)
    settle_cpu: CpuWindow = field(default_factory=CpuWindow)


@dataclass
class PullResult:
    name: str
    tables: int = 0
    calls: int = 0
    decisions: int = 0
    wall_s: float = 0.0
    process_cpu_s: float = 0.0
    thread_cpu_s: float = 0.0
    call_ms: list[float] = field(default_factory=list)
    zk: collections.Counter[str] = field(default_factory=collections.Counter)
    caller_cpu_s: dict[str, float] = field(default_factory=dict)
    thread_cpu_s_by_name: dict[str, float] = field(default_factory=dict)
    cpu: CpuWindow = field(default_factory=CpuWindow)
    ops_queued: int = 0

    @property
    def per_min(self) -> float:
        return 60.0 * self.decisions / self.wall_s if self.wall_s else math.nan

    def ms_per(self, seconds: float) -> float:
        return 1e3 * seconds / self.decisions if self.decisions else math.nan


# --------------------------------------------------------------------------------------------
# phase 1: commit -> QUEUED with real scheduler processes
# --------------------------------------------------------------------------------------------
def phase_latency(args: argparse.Namespace, stack: Any, pks: list[int],
                  groups: dict[str, Callable[[], list[int]]]) -> tuple[LatencyResult, list[int]]:
    import grpc

    from tms.v1 import tms_pb2, tms_pb2_grpc

    res = LatencyResult()
    dsn = stack.database_url
    say(f"starting {args.schedulers} tms-scheduler processes "
         f"(pull interval {LONG_PULL_S:.0f} s, poll interval {args.poll_interval_s} s)")
    probe = CpuProbe(groups)
    probe.begin()
    t0 = time.monotonic()
    for i in range(args.schedulers):
        stack.start_scheduler(i)
    deadline = t0 + args.settle_timeout_s
    last_report = t0
    while True:
        due, dirty, decided = settle_state(dsn)
        if due == 0 and dirty == 0:
            break
        for svc in stack.services:
            if not svc.alive:
                raise BenchError(f"{svc.name} exited; see its log")
        if time.monotonic() > deadline:
            res.settled = False
            say(f"initial decisions not settled after {args.settle_timeout_s:.0f} s "
                 f"({decided} decided, {due} due); pushing the rest {LONG_PULL_S:.0f} s ahead")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("UPDATE tms_tables SET next_check_at = now() + "
                             "make_interval(secs => %s)", (LONG_PULL_S,))
                conn.execute("DELETE FROM tms_dirty_tables")
            break
        if time.monotonic() - last_report > 15:
            last_report = time.monotonic()
            say(f"  settling: {decided} decided, {due} due")
        time.sleep(0.5)
    res.settle_s = time.monotonic() - t0
    res.settle_cpu = probe.end()
    res.settle_decisions = settle_state(dsn)[2]
    say(f"settled: {res.settle_decisions} initial decisions in {res.settle_s:.1f} s")
    time.sleep(1.0)  # let the schedulers finish any decision still in flight

    step = max(1, len(pks) // args.sample)
    sample = pks[::step][:args.sample]
    ids = _table_ids(dsn, sample)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_tables SET policy = %s WHERE id = ANY(%s)",
                     (Jsonb({FILES_KEY: "20"}), sample))
    say(f"sending {len(sample)} NotifyCommit at {args.rate:g}/s")
    sent_at: dict[str, float] = {}
    probe.begin()
    with grpc.insecure_channel(stack.api_address) as channel:
        stub = tms_pb2_grpc.TableManagementServiceStub(channel)
        start = time.monotonic()
        for i, pk in enumerate(sample):
            delay = start + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            table_id = ids[pk]
            sent_at[table_id] = time.time()
            c0 = time.perf_counter()
            stub.NotifyCommit(tms_pb2.NotifyCommitRequest(
                table=f"tables/{table_id}", commit_id=str(i + 1)), timeout=10)
            res.rpc_ms.append(1e3 * (time.perf_counter() - c0))
    res.sent = len(sample)
    deadline = time.monotonic() + args.queue_timeout_s
    rows: list[tuple[Any, ...]] = []
    while time.monotonic() < deadline:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT t.table_id, extract(epoch FROM e.received_at), "
                "extract(epoch FROM o.created_at) FROM tms_tables t "
                "JOIN tms_commit_events e ON e.table_pk = t.id AND e.commit_id LIKE 'bench-%%' "
                "JOIN tms_operations o ON o.table_pk = t.id WHERE t.id = ANY(%s)",
                (sample,)).fetchall()
        if len(rows) >= len(sample):
            break
        time.sleep(0.2)
    res.cpu = probe.end()
    res.queued = len(rows)
    for table_id, received, created in rows:
        res.db_ms.append(1e3 * (float(created) - float(received)))
        res.client_ms.append(1e3 * (float(created) - sent_at[table_id]))
    if res.queued:  # the window's decisions: one per commit, each queueing an operation
        res.scheduler_cpu_ms_per_decision = 1e3 * res.cpu.cpu_s.get("schedulers", 0.0) / res.queued
    return res, sample


# --------------------------------------------------------------------------------------------
# phase 2: pull decisions by one in-process Scheduler
# --------------------------------------------------------------------------------------------
def _close_window(res: PullResult, start: tuple[float, float, float],
                  threads0: dict[str, float], counter: ZkCounter, caller: CallerCpu,
                  probe: CpuProbe) -> PullResult:
    """Wall, process and thread CPU, per-thread CPU, ZooKeeper requests and the store calls'
    CPU since ``start`` (perf_counter, process_time, thread_time)."""
    w0, p0, t0 = start
    res.wall_s = time.perf_counter() - w0
    res.process_cpu_s = time.process_time() - p0
    res.thread_cpu_s = time.thread_time() - t0
    res.cpu = probe.end()
    threads1 = _threads_cpu_s()
    res.thread_cpu_s_by_name = {k: v - threads0.get(k, 0.0) for k, v in threads1.items()}
    res.zk = collections.Counter(counter.by_type)
    res.caller_cpu_s = dict(caller.cpu_s)
    return res


def pull_loop_shards(name: str, scheduler: Any, pks: list[int], seconds: float,
                     counter: ZkCounter, caller: CallerCpu, probe: CpuProbe) -> PullResult:
    """Whole passes (``decide_batch``: a batch of due tables of the shards held), every table
    due again at once (pull interval 0)."""
    res = PullResult(name=name, tables=len(pks))
    deadline = time.monotonic() + 60
    while scheduler.coordinator.owned_shards() is None:
        if time.monotonic() > deadline:
            raise BenchError("the in-process scheduler never got its shards")
        time.sleep(0.1)
    scheduler.decide_batch()  # warm-up: connections, plugin caches
    counter.reset()
    caller.reset()
    threads0 = _threads_cpu_s()
    probe.begin()
    w0, p0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
    end = w0 + seconds
    while True:
        c0 = time.perf_counter()
        if c0 >= end:
            break
        took = scheduler.decide_batch()
        if took:
            res.call_ms += [1e3 * (time.perf_counter() - c0) / took] * took
        res.decisions += took
        res.calls += 1
    return _close_window(res, (w0, p0, t0), threads0, counter, caller, probe)


def make_iceberg_tables(dsn: str, pg: Any, tmp: Path, count: int, commits: int) -> list[int]:
    from tms.local.iceberg_data import (
        append_batches,
        create_table,
        load_catalog,
        sql_catalog_properties,
    )

    cat_dsn = pg.create_database(CATALOG_DB)
    warehouse = tmp / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = sql_catalog_properties(cat_dsn, f"file://{warehouse}")
    catalog = load_catalog(CATALOG, props)
    create_catalog(dsn, CatalogSpec(CATALOG, CatalogType.SQL,
                                    properties={k: v for k, v in props.items() if k != "type"},
                                    allowed_locations=(str(warehouse),)))
    names = [f"ice_{i:03d}" for i in range(count)]
    for name in names:
        append_batches(create_table(catalog, NAMESPACE, name), commits)
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(  # locations are read and checked at the first decision
            "INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name) "
            "SELECT 'ice-' || n, 'iceberg', %s, %s, n "
            "FROM unnest(%s::text[]) n RETURNING id",
            (CATALOG, NAMESPACE, names)).fetchall()
    return sorted(int(r[0]) for r in rows)


@contextmanager
def _py_spy(out: Path | None, seconds: float, procs: list[subprocess.Popen[bytes]],
            tmp: Path) -> Iterator[None]:
    if out is None:
        yield
        return
    spy = REPO / ".venv" / "bin" / "py-spy"
    argv = [str(spy if spy.exists() else "py-spy"), "record", "--pid", str(os.getpid()),
            "--duration", str(max(1, int(seconds))), "--nonblocking", "--format", "raw",
            "--output", str(out)]
    with (tmp / "py-spy.log").open("ab") as log:
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
    procs.append(p)
    time.sleep(1.0)  # attach before the measured loop starts
    try:
        yield
    finally:
        try:
            p.wait(seconds + 30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def phase_pull(args: argparse.Namespace, stack: Any, constant_pks: list[int], tmp: Path,
               groups: dict[str, Callable[[], list[int]]],
               procs: list[subprocess.Popen[bytes]]) -> list[PullResult]:
    from tms.coordination import Coordinator
    from tms.formats.registry import load_formats
    from tms.scheduler.loop import Scheduler
    from tms.storage.postgres import PostgresStore

    dsn = stack.database_url
    formats = load_formats()
    if "constant" not in formats:
        raise BenchError(f"the constant test plugin is not installed (found {sorted(formats)})")
    store = PostgresStore(dsn)
    coordinator = Coordinator(stack.zookeeper.hosts, "bench-in-process", shard_settle_s=0.5)
    out: list[PullResult] = []
    try:
        coordinator.start()
        counter = ZkCounter(coordinator.client)
        caller = CallerCpu(store)
        # pull interval 0: every pass finds the tables due again, the normal pull path
        scheduler = Scheduler(store, coordinator, formats, "bench-in-process",
                              pull_interval_s=0.0)
        probe = CpuProbe(groups)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE tms_tables SET next_check_at = now() WHERE id = ANY(%s)",
                         (constant_pks,))
        say(f"pull (b): batched passes over {len(constant_pks)} constant tables for "
            f"{args.seconds:g} s")
        with _py_spy(args.py_spy, args.seconds, procs, tmp):
            out.append(pull_loop_shards("constant shards", scheduler, constant_pks,
                                        args.seconds, counter, caller, probe))
        with psycopg.connect(dsn, autocommit=True) as conn:  # out of the Iceberg pass's way
            conn.execute("UPDATE tms_tables SET next_check_at = now() + interval '1 day' "
                         "WHERE id = ANY(%s)", (constant_pks,))
        if args.iceberg_tables > 0:
            say(f"pull (a): creating {args.iceberg_tables} Iceberg tables "
                 f"({args.iceberg_commits} commits each)")
            ice = make_iceberg_tables(dsn, stack.postgres, tmp, args.iceberg_tables,
                                      args.iceberg_commits)
            say(f"pull (a): shards: passes over {len(ice)} Iceberg tables for "
                 f"{args.seconds:g} s")
            r = pull_loop_shards("iceberg", scheduler, ice, args.seconds, counter, caller,
                                 probe)
            with psycopg.connect(dsn, autocommit=True) as conn:
                n = conn.execute("SELECT count(*) FROM tms_operations WHERE table_pk = ANY(%s)",
                                 (ice,)).fetchone()
            r.ops_queued = int(n[0]) if n else 0
            out.append(r)
    finally:
        _quiet_logs(logging.ERROR)  # stopping the session on purpose: no "session lost"
        coordinator.stop()
        store.close()
    return out


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def _row(label: str, value: float, unit: str, goal: str = "", ratio: float | None = None,
         ok: bool | None = None) -> str:
    r = "" if ratio is None else f"{ratio:>7.2f}"
    verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
    return f"{label:<54}{value:>11.2f} {unit:<9}{goal:>10}{r:>9}{verdict}"


def render(args: argparse.Namespace, lat: LatencyResult | None,
           pulls: list[PullResult],
           objectstore: tuple[list[Window], list[Window]] | None = None) -> str:
    lines = [f"{'figure':<54}{'value':>11} {'unit':<9}{'goal':>10}{'ratio':>9}"]
    notes: list[str] = []
    if lat is not None:
        db = sorted(lat.db_ms)
        cl = sorted(lat.client_ms)
        rpc = sorted(lat.rpc_ms)
        p99 = percentile(db, 99)
        lines += [
            _row(f"commit -> QUEUED p50 (DB clock), {args.tables} tables",
                 percentile(db, 50), "ms"),
            _row(f"commit -> QUEUED p99 (DB clock), {args.schedulers} schedulers", p99, "ms",
                 f"<= {GOAL_LATENCY_P99_MS:.0f}", p99 / GOAL_LATENCY_P99_MS,
                 p99 <= GOAL_LATENCY_P99_MS),
            _row("commit -> QUEUED max (DB clock)", db[-1] if db else math.nan, "ms"),
            _row("client send -> QUEUED p50 (this host's clock)", percentile(cl, 50), "ms"),
            _row("client send -> QUEUED p99 (this host's clock)", percentile(cl, 99), "ms"),
            _row("NotifyCommit RPC p50", percentile(rpc, 50), "ms"),
            _row("NotifyCommit RPC p99", percentile(rpc, 99), "ms"),
            _row(f"operations queued / commits sent ({lat.queued}/{lat.sent})",
                 lat.queued / lat.sent if lat.sent else math.nan, ""),
            _row("scheduler CPU per decision in window (incl. idle polls)",
                 lat.scheduler_cpu_ms_per_decision, "ms"),
            _row(f"first decisions/min of {lat.settle_decisions} tables, {args.schedulers} procs"
                 + ("" if lat.settled else " (timed out)"),
                 60.0 * lat.settle_decisions / lat.settle_s if lat.settle_s else math.nan,
                 "/min"),
        ]
        notes.append(f"latency window: {_load_note(lat.cpu)}")
        notes.append(f"initial settle: {_load_note(lat.settle_cpu)}")
    for p in pulls:
        calls = sorted(p.call_ms)
        lines.append(_row(f"pull {p.name}: decisions/min, 1 in-process scheduler", p.per_min,
                          "/min"))
        lines.append(_row(f"pull {p.name}: wall ms per decision (mean)",
                          p.ms_per(p.wall_s), "ms"))
        lines[-1] += f"   p50 {percentile(calls, 50):.2f} p99 {percentile(calls, 99):.2f}"
        cpu = p.ms_per(p.process_cpu_s)
        if p.name.startswith("constant"):
            lines.append(_row(f"pull {p.name}: CPU ms per decision (process_time)", cpu, "ms",
                              f"<= {GOAL_CPU_MS_PER_DECISION:.1f}",
                              cpu / GOAL_CPU_MS_PER_DECISION, cpu <= GOAL_CPU_MS_PER_DECISION))
        else:
            lines.append(_row(f"pull {p.name}: CPU ms per decision (process_time)", cpu, "ms"))
        lines.append(_row(f"pull {p.name}:   of it the calling thread", p.ms_per(p.thread_cpu_s),
                          "ms"))
        for g in ("postgres", "zookeeper"):
            if g in p.cpu.cpu_s:
                lines.append(_row(f"pull {p.name}:   server CPU per decision, {g}",
                                  p.ms_per(p.cpu.cpu_s[g]), "ms"))
        zk_total = sum(p.zk.values())
        lines.append(_row(f"pull {p.name}: ZooKeeper requests per decision",
                          zk_total / p.decisions if p.decisions else math.nan, "req"))
        mix = ", ".join(f"{k} {v / p.decisions:.2f}" for k, v in p.zk.most_common()) \
            if p.decisions else ""
        notes.append(f"pull {p.name}: {p.calls} passes, {p.decisions} decisions on "
                     f"{p.tables} tables in {p.wall_s:.1f} s; ZooKeeper requests per "
                     f"decision by type: {mix}"
                     + (f"; operations queued {p.ops_queued}"
                        if not p.name.startswith("constant") else ""))
        notes.append(f"pull {p.name}: {_load_note(p.cpu)}")
        if p.decisions:
            d = p.decisions
            spent = sum(p.caller_cpu_s.values())
            parts = [f"{k} {1e3 * v / d:.3f}" for k, v in
                     sorted(p.caller_cpu_s.items(), key=lambda kv: -kv[1])]
            parts.append(f"rest (plugin, decide itself) {1e3 * (p.thread_cpu_s - spent) / d:.3f}")
            notes.append(f"pull {p.name}: calling-thread CPU ms per decision: "
                         + ", ".join(parts))
            by_thread = ", ".join(f"{k} {1e3 * v / d:.3f}" for k, v in
                                  sorted(p.thread_cpu_s_by_name.items(), key=lambda kv: -kv[1])
                                  if v > 0)
            notes.append(f"pull {p.name}: CPU ms per decision by thread: {by_thread}")
    lines += ["", "ratio = value / goal (goals are upper bounds: <= 1.00 meets the goal)", ""]
    lines += [f"- {n}" for n in notes]
    disturbed = [n for n in notes if "DISTURBED" in n]
    if disturbed:
        lines += ["", f"WARNING: other processes or the hypervisor took over "
                      f"{DISTURBED_PCT:.0f}% of the CPUs in {len(disturbed)} window(s); "
                      "those figures are pessimistic. Re-run on a quiet machine."]
    if objectstore is not None:
        lines += render_objectstore(args, *objectstore, _load_note)
    return "\n".join(lines)


def _load_note(w: CpuWindow) -> str:
    flag = "  DISTURBED" if w.other_pct + w.steal_pct > DISTURBED_PCT else ""
    groups = ", ".join(f"{g} {s:.1f}" for g, s in sorted(w.cpu_s.items()))
    return (f"machine busy {w.busy_pct:.0f}%, steal {w.steal_pct:.0f}%, other load "
            f"{w.other_pct:.0f}% of {os.cpu_count()} CPUs, loadavg {w.loadavg}; CPU s: "
            f"{groups}{flag}")


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> None:
    from tms.local.stack import LocalStack

    install_plugin_path()
    _quiet_logs()
    tmp = Path(tempfile.mkdtemp(prefix="tms-sched-bench-"))
    tmp.chmod(0o755)  # PostgreSQL runs as the postgres user when we are root
    (tmp / "home").mkdir()
    stack = LocalStack(state_dir=tmp / "stack", tms_home=tmp / "home", executors=0,
                       schedulers=args.schedulers,
                       scheduler_args=["--pull-interval-s", str(LONG_PULL_S),
                                       "--poll-interval-s", str(args.poll_interval_s),
                                       "--shard-settle-s", "0.5"])
    procs: list[subprocess.Popen[bytes]] = []
    lat: LatencyResult | None = None
    pulls: list[PullResult] = []
    objectstore: tuple[list[Window], list[Window]] | None = None
    say(f"loadavg at start: {loadavg()}")
    try:
        say("starting PostgreSQL and ZooKeeper")
        stack.start_servers()
        assert stack.postgres is not None and stack.zookeeper is not None
        pg, zk = stack.postgres, stack.zookeeper

        groups: dict[str, Callable[[], list[int]]] = {
            "postgres": postgres_pids(pg.data_dir),
            "zookeeper": lambda: [zk.proc.pid] if zk.proc else [],
            "schedulers": lambda: [s.proc.pid for s in stack.services
                                   if s.name.startswith("scheduler") and s.proc],
            "api": lambda: [s.proc.pid for s in stack.services if s.name == "api" and s.proc],
            "bench": lambda: [os.getpid()],
        }
        if args.only_objectstore:
            say(f"inserting {args.pull_tables} constant tables (files=3), none due")
            pks = insert_constant_tables(stack.database_url, args.pull_tables, 3,
                                         args.pull_tables)
            objectstore = phase_objectstore(
                args, stack, tmp, pks,
                {k: groups[k] for k in ("postgres", "zookeeper", "bench")})
        else:
            due = min(args.tables, args.initial_decisions)
            say(f"inserting {args.tables} constant tables (files=3), {due} of them due now")
            pks = insert_constant_tables(stack.database_url, args.tables, 3, args.tables - due)
            sample: list[int] = []
            if not args.skip_latency:
                say("starting tms-api")
                stack.start_api()
                lat, sample = phase_latency(args, stack, pks, groups)
                for svc in list(stack.services):  # quiet machine for the in-process phases
                    svc.stop()
            chosen = set(sample)
            constant = [pk for pk in pks if pk not in chosen][:args.pull_tables]
            pulls = phase_pull(args, stack, constant, tmp,
                               {k: groups[k] for k in ("postgres", "zookeeper", "bench")}, procs)
            if not args.skip_objectstore:
                objectstore = phase_objectstore(
                    args, stack, tmp, constant,
                    {k: groups[k] for k in ("postgres", "zookeeper", "bench")})
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        stack.stop()
        if args.py_spy is not None and (tmp / "py-spy.log").exists():
            say("py-spy: " + (tmp / "py-spy.log").read_text()[-300:].strip())
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"loadavg at end: {loadavg()}")
    print(render(args, lat, pulls, objectstore))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--tables", type=int, default=10_000, help="registered constant tables")
    p.add_argument("--schedulers", type=int, default=3, help="tms-scheduler processes")
    p.add_argument("--sample", type=int, default=200,
                   help="tables that get a commit (and need compaction) in the latency phase")
    p.add_argument("--rate", type=float, default=20.0, help="NotifyCommit calls per second")
    p.add_argument("--poll-interval-s", type=float, default=0.5,
                   help="the schedulers' poll interval (tms-scheduler's default: 0.5)")
    p.add_argument("--initial-decisions", type=int, default=1000,
                   help="tables left for the schedulers' first decision (the others are "
                        "inserted already decided, to bound the setup time)")
    p.add_argument("--settle-timeout-s", type=float, default=120.0,
                   help="bound on waiting for the initial decisions of all tables")
    p.add_argument("--queue-timeout-s", type=float, default=30.0,
                   help="bound on waiting for the operations after the last commit")
    p.add_argument("--seconds", type=float, default=20.0, help="measured time per pull loop")
    p.add_argument("--pull-tables", type=int, default=2000,
                   help="constant tables for the in-process pull loop")
    p.add_argument("--iceberg-tables", type=int, default=20, help="0 skips pull (a)")
    p.add_argument("--iceberg-commits", type=int, default=3, help="appends per Iceberg table")
    p.add_argument("--skip-latency", action="store_true", help="only the in-process phases")
    p.add_argument("--py-spy", type=Path,
                   help="record the constant pull loop with py-spy (raw collapsed stacks)")
    o = p.add_argument_group("objectstore latency scenario")
    o.add_argument("--only-objectstore", action="store_true",
                   help="run only the object-store latency scenario")
    o.add_argument("--skip-objectstore", action="store_true")
    o.add_argument("--objectstore-tables", type=int, default=10_000,
                   help="Iceberg tables behind the slow FileIO")
    o.add_argument("--read-delay-ms", type=float, default=100.0,
                   help="added to every metadata read (metadata JSON, manifest list, manifest)")
    o.add_argument("--objectstore-seconds", type=float, default=20.0,
                   help="measured time of each sequential (main's path) window")
    o.add_argument("--objectstore-max-s", type=float, default=900.0,
                   help="bound on each concurrent window (normally ends when all are decided)")
    o.add_argument("--decision-threads", type=int, default=DECISION_THREADS)
    o.add_argument("--catalog-reads-in-flight", type=int, default=CATALOG_READS_IN_FLIGHT)
    o.add_argument("--constant-seconds", type=float, default=5.0,
                   help="each constant-table CPU window")
    o.add_argument("--constant-rounds", type=int, default=3,
                   help="alternating rounds of main's loop and the concurrent one")
    args = p.parse_args(argv)
    if args.objectstore_tables < 1 or args.decision_threads < 1 or \
            args.catalog_reads_in_flight < 1 or args.constant_rounds < 1:
        p.error("need --objectstore-tables, --decision-threads, --catalog-reads-in-flight "
                "and --constant-rounds >= 1")
    if args.tables < 1 or args.schedulers < 1 or args.sample < 1 or args.rate <= 0:
        p.error("need --tables, --schedulers, --sample >= 1 and --rate > 0")
    if args.sample > args.tables:
        p.error("--sample must not exceed --tables")
    if args.seconds <= 0 or args.pull_tables < 1 or args.iceberg_tables < 0:
        p.error("need --seconds > 0, --pull-tables >= 1, --iceberg-tables >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if str(REPO) not in sys.path:  # run as a file: tms itself comes from the venv
        sys.path.insert(0, str(REPO))
    _, status = guarded(lambda: run(args))
    if status:
        return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
