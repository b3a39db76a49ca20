"""The latency scenario of ``bench/scheduler_bench.py``: Iceberg inspection at object-store
latency, the concurrent scheduler against the sequential inspector in the same run.

Tables: ``--objectstore-tables`` (10,000) real Iceberg tables in a pyiceberg SQL catalog on
the bench's PostgreSQL. A few "shapes" (1, 3, 6 and 12 appends) are written by pyiceberg;
every table gets its own metadata file, a copy of its shape's with its own ``location``, so
locations stay distinct, while manifest lists, manifests and data files are shared per shape
(inspection reads them, never the data). The catalog's FileIO is
:class:`bench.common.slow_io.SlowFileIO`: every metadata read (metadata JSON, manifest list,
manifest) waits ``--read-delay-ms`` (100) first. Catalog calls (one SQL row) are not delayed.

Windows, each over every table due at once, by one in-process scheduler holding all shards:

- ``first look``: nothing seen before (every table loaded and measured);
- ``none changed``: every table due again, nothing committed since;
- ``10% changed``: one table in ten gets a new metadata file (another shape) first;
- ``restarted`` (concurrent only): a new scheduler, locations known but nothing remembered,
  so every table is loaded and measured without the first look's location bookkeeping.

``sequential`` is main's path: the loop deciding one table after another with every table
loaded and measured (:class:`SequentialScheduler`, no reuse), for ``--objectstore-seconds``
per window; ``concurrent`` is tms-scheduler's default (64 decision threads, 64 reads in
flight per catalog, unchanged tables reused) until every table is decided. Both report
tables inspected per minute and the scheduler process's CPU per decision (process_time).
Then the framework's own CPU per decision on ``constant`` tables (no I/O), main's sequential
loop against the concurrent one, alternating.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench.common import BenchError, say
from bench.common.cpu import CpuProbe, CpuSample
from bench.common.procs import CONSTANT_ROOT, create_catalog
from bench.common.slow_io import DELAY_PROPERTY, READS
from tms.domain import CatalogSpec, CatalogType, Decision, TableState

CATALOG = "slow"
NAMESPACE = "lat_ns"
SHAPES_NS = "lat_shapes"
CATALOG_DB = "latency_catalog"
SHAPE_COMMITS = (1, 3, 6, 12)
SHAPE_OF_TENTH = (0, 0, 0, 0, 1, 1, 1, 2, 2, 3)  # table i has shape SHAPE_OF_TENTH[i % 10]
LONG_S = 86_400.0
GOAL_PER_MIN = 10_000.0
GOAL_CONSTANT_CPU_MS = 0.13
SEQUENTIAL_BATCH = 20


@dataclass
class Window:
    scheduler: str
    scenario: str
    tables: int = 0
    decisions: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    reads: int = 0
    spread_batches: int = 0
    reused: int = 0
    cpu: CpuSample = field(default_factory=CpuSample)

    @property
    def per_min(self) -> float:
        return 60.0 * self.decisions / self.wall_s if self.wall_s else math.nan

    def ms_per(self, seconds: float) -> float:
        return 1e3 * seconds / self.decisions if self.decisions else math.nan


@dataclass
class Tables:
    pks: list[int]
    names: list[str]
    warehouse: Path
    shape_json: list[dict[str, Any]]
    cat_dsn: str
    changed_rounds: int = 0


def _sequential_class() -> Any:
    from tms.coordination import NUM_SHARDS
    from tms.scheduler.decide import INSPECT_FAILURE_RETRY_S, ZooKeeperLost, decision_span
    from tms.scheduler.loop import DUE_BATCH_SIZE, Scheduler, log

    class SequentialScheduler(Scheduler):
        """main's decide_batch as it was before decision threads: one table after another.
        ``due_batch`` smaller than main's 100 only so a timed window can end sooner at
        100 ms a read (per-decision figures do not depend on it)."""

        due_batch = DUE_BATCH_SIZE

        def decide_batch(self) -> int:
            shards = self.coordinator.owned_shards()
            if not shards:
                return 0
            batch = self.store.decision_begin_batch(sorted(shards), NUM_SHARDS,
                                                    self.due_batch)
            if not batch:
                return 0
            now = self._now()
            last = self.store.operation_last_succeeded([due.table.pk for due in batch])
            decisions: list[tuple[int, Decision, int | None]] = []
            checks: list[tuple[int, float]] = []
            done = 0
            try:
                for due in batch:
                    table = due.table
                    if table.state is TableState.ACTIVE:
                        try:
                            with decision_span(table, due.traceparent):
                                result = self._evaluate(table, now, last.get(table.pk, {}))
                            # without ``defer`` a table is never left Unsettled
                            assert isinstance(result, tuple)
                            taken, next_s = result
                        except ZooKeeperLost:
                            raise
                        except Exception:
                            log.exception("decision failed", table=table.table_id)
                            taken, next_s = [], INSPECT_FAILURE_RETRY_S
                        decisions += [(table.pk, d, op) for d, op in taken]
                        checks.append((table.pk, next_s))
                    done += 1
            finally:
                if done < len(batch):
                    for due in batch[done:]:
                        if due.had_commits:
                            self.store.commits_mark_dirty(due.table.pk, due.traceparent)
                if decisions or checks:
                    self.store.decision_finish_batch(self.scheduler_id, decisions, checks)
            self.decided.set()
            return len(checks)

    return SequentialScheduler


def _metadata_path(uri: str) -> Path:
    return Path(uri[len("file://"):] if uri.startswith("file://") else uri)


def _write_metadata(tables: Tables, i: int, shape: int, version: int) -> str:
    """Table i's metadata file: its shape's, with the table's own location."""
    name = tables.names[i]
    location = f"{tables.warehouse.as_uri()}/{NAMESPACE}.db/{name}"
    meta = dict(tables.shape_json[shape], location=location)
    path = tables.warehouse / f"{NAMESPACE}.db" / name / "metadata" / \
        f"{version:05d}-shape{shape}.metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta))
    return path.as_uri()


def make_tables(dsn: str, pg: Any, tmp: Path, count: int, delay_ms: float) -> Tables:
    from tms.local.iceberg_data import (
        append_batches,
        create_table,
        load_catalog,
        sql_catalog_properties,
    )

    cat_dsn = pg.create_database(CATALOG_DB)
    warehouse = tmp / "latency-warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    props = sql_catalog_properties(cat_dsn, warehouse.as_uri())
    fast = load_catalog(CATALOG, props)  # the writer's view: no delay
    shapes = []
    for k, commits in enumerate(SHAPE_COMMITS):
        tbl = create_table(fast, SHAPES_NS, f"shape_{k}")
        append_batches(tbl, commits)
        tbl = fast.load_table(f"{SHAPES_NS}.shape_{k}")
        shapes.append(json.loads(_metadata_path(tbl.metadata_location).read_text()))
    names = [f"t{i:05d}" for i in range(count)]
    tables = Tables([], names, warehouse, shapes, cat_dsn)
    rows = [(CATALOG, NAMESPACE, n, _write_metadata(tables, i, SHAPE_OF_TENTH[i % 10], 0))
            for i, n in enumerate(names)]
    with psycopg.connect(cat_dsn, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                        "table_name, metadata_location) VALUES (%s, %s, %s, %s)", rows)
    create_catalog(dsn, CatalogSpec(CATALOG, CatalogType.SQL, properties={
        **{k: v for k, v in props.items() if k != "type"},
        "py-io-impl": "bench.common.slow_io.SlowFileIO", DELAY_PROPERTY: str(delay_ms)},
        allowed_locations=(str(warehouse),)))
    with psycopg.connect(dsn, autocommit=True) as conn:
        got = conn.execute(
            "INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, "
            "next_check_at) SELECT 'lat-' || n, 'iceberg', %s, %s, n, now() + "
            "make_interval(secs => %s) FROM unnest(%s::text[]) n RETURNING id",
            (CATALOG, NAMESPACE, LONG_S, names)).fetchall()
    tables.pks = sorted(int(r[0]) for r in got)
    return tables


def change_tenth(tables: Tables) -> int:
    """One table in ten gets a new metadata file (the next shape): a commit."""
    tables.changed_rounds += 1
    version = tables.changed_rounds
    rows = []
    for i in range(version % 10, len(tables.names), 10):
        shape = (SHAPE_OF_TENTH[i % 10] + version) % len(SHAPE_COMMITS)
        rows.append((_write_metadata(tables, i, shape, version), tables.names[i]))
    with psycopg.connect(tables.cat_dsn, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany("UPDATE iceberg_tables SET previous_metadata_location = "
                        "metadata_location, metadata_location = %s WHERE catalog_name = %s "
                        "AND table_name = %s", [(m, CATALOG, n) for m, n in rows])
    return len(rows)


def _set_due(dsn: str, pks: list[int], due: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE tms_tables SET next_check_at = now() + make_interval(secs => %s) "
                     "WHERE id = ANY(%s)", (0.0 if due else LONG_S, pks))


def run_window(label: str, scenario: str, scheduler: Any, dsn: str, pks: list[int],
               max_s: float, probe: CpuProbe, reused: Callable[[], int]) -> Window:
    """Every table of ``pks`` due; passes until all are decided or ``max_s`` is up."""
    _set_due(dsn, pks, True)
    res = Window(label, scenario, tables=len(pks))
    reads0, spread0, reused0 = READS.count, scheduler.runner.spread_batches, reused()
    probe.begin()
    w0, c0 = time.perf_counter(), time.process_time()
    while res.decisions < len(pks) and time.perf_counter() - w0 < max_s:
        took = scheduler.decide_batch()
        if not took:
            break
        res.decisions += took
    res.wall_s = time.perf_counter() - w0
    res.cpu_s = time.process_time() - c0
    res.cpu = probe.end()
    res.reads = READS.count - reads0
    res.spread_batches = scheduler.runner.spread_batches - spread0
    res.reused = reused() - reused0
    _set_due(dsn, pks, False)  # what is left waits: out of the next window's way
    return res


def constant_windows(dsn: str, store: Any, coordinator: Any, formats: dict[str, Any],
                     pks: list[int], seconds: float, rounds: int) -> list[Window]:
    """CPU per decision on constant tables (inspection costs nothing): main's sequential loop
    and the concurrent one (which stays in the calling thread), alternating."""
    from tms.scheduler.concurrency import DECISION_THREADS
    from tms.scheduler.loop import Scheduler

    seq = _sequential_class()(store, coordinator, formats, "bench-seq", pull_interval_s=0.0)
    con = Scheduler(store, coordinator, formats, "bench-con", pull_interval_s=0.0,
                    decision_threads=DECISION_THREADS)
    out: list[Window] = []
    with psycopg.connect(dsn, autocommit=True) as conn:  # located, as after a first decision
        conn.execute("UPDATE tms_tables SET location = %s || '/default/' || table_name "
                     "WHERE id = ANY(%s)", (CONSTANT_ROOT, pks))
    _set_due(dsn, pks, True)
    for s in (seq, con):
        s.decide_batch()  # warm-up
    for _ in range(rounds):
        for label, s in (("sequential (main)", seq), ("concurrent", con)):
            res = Window(label, "constant", tables=len(pks))
            w0, c0 = time.perf_counter(), time.process_time()
            while time.perf_counter() - w0 < seconds:
                took = s.decide_batch()
                res.decisions += took
                if not took:  # shards being divided again (a ZooKeeper hiccup): wait
                    time.sleep(0.05)
            res.wall_s = time.perf_counter() - w0
            res.cpu_s = time.process_time() - c0
            res.spread_batches = s.runner.spread_batches
            out.append(res)
    _set_due(dsn, pks, False)
    con.runner.close()
    return out


def phase_objectstore(args: Any, stack: Any, tmp: Path, constant_pks: list[int],
                      groups: dict[str, Callable[[], list[int]]]
                      ) -> tuple[list[Window], list[Window]]:
    from tms.coordination import Coordinator
    from tms.formats.iceberg.plugin import IcebergFormat
    from tms.formats.registry import load_formats
    from tms.scheduler.loop import Scheduler
    from tms.storage.postgres import PostgresStore

    dsn = stack.database_url
    say(f"objectstore: writing {args.objectstore_tables} Iceberg tables "
        f"({len(SHAPE_COMMITS)} shapes, a metadata file each), {args.read_delay_ms:g} ms "
        "per metadata read")
    t0 = time.monotonic()
    tables = make_tables(dsn, stack.postgres, tmp, args.objectstore_tables, args.read_delay_ms)
    say(f"objectstore: tables ready in {time.monotonic() - t0:.1f} s")
    store = PostgresStore(dsn)
    coordinator = Coordinator(stack.zookeeper.hosts, "bench-objectstore", shard_settle_s=0.5)
    windows: list[Window] = []
    constants: list[Window] = []
    probe = CpuProbe(groups)
    try:
        coordinator.start()
        deadline = time.monotonic() + 60
        while coordinator.owned_shards() is None:
            if time.monotonic() > deadline:
                raise BenchError("the in-process scheduler never got its shards")
            time.sleep(0.1)
        base = load_formats()
        seq_fmt = IcebergFormat(unchanged_entries=0)  # main's path: load and measure always
        seq = _sequential_class()(store, coordinator, {**base, "iceberg": seq_fmt},
                                  "bench-sequential", pull_interval_s=LONG_S)
        seq.due_batch = SEQUENTIAL_BATCH
        con_fmt = IcebergFormat()
        con = Scheduler(store, coordinator, {**base, "iceberg": con_fmt}, "bench-concurrent",
                        pull_interval_s=LONG_S, decision_threads=args.decision_threads,
                        catalog_reads_in_flight=args.catalog_reads_in_flight)
        pks = tables.pks

        def reused(fmt: IcebergFormat) -> Callable[[], int]:
            return lambda: fmt.unchanged.hits

        for scenario in ("first look", "none changed", "10% changed"):
            if scenario == "10% changed":
                n = change_tenth(tables)
                say(f"objectstore: {n} tables got a new metadata file")
            say(f"objectstore: {scenario}: sequential for {args.objectstore_seconds:g} s")
            windows.append(run_window("sequential (main)", scenario, seq, dsn, pks,
                                      args.objectstore_seconds, probe, reused(seq_fmt)))
            say(f"objectstore: {scenario}: concurrent ({args.decision_threads} threads, "
                f"{args.catalog_reads_in_flight} reads in flight) over all tables")
            windows.append(run_window("concurrent", scenario, con, dsn, pks,
                                      args.objectstore_max_s, probe, reused(con_fmt)))
            say(f"  {windows[-1].decisions} decisions in {windows[-1].wall_s:.1f} s")
        con.runner.close()
        # a restarted scheduler: locations known, nothing remembered (reuse is in memory)
        say("objectstore: after a restart: concurrent over all tables")
        fresh = Scheduler(store, coordinator, {**base, "iceberg": IcebergFormat()},
                          "bench-restarted", pull_interval_s=LONG_S,
                          decision_threads=args.decision_threads,
                          catalog_reads_in_flight=args.catalog_reads_in_flight)
        windows.append(run_window("concurrent", "restarted", fresh, dsn, pks,
                                  args.objectstore_max_s, probe, lambda: 0))
        say(f"  {windows[-1].decisions} decisions in {windows[-1].wall_s:.1f} s")
        fresh.runner.close()
        if constant_pks:
            say(f"objectstore: constant tables, CPU per decision, {args.constant_rounds} "
                "rounds")
            constants = constant_windows(dsn, store, coordinator, base, constant_pks,
                                         args.constant_seconds, args.constant_rounds)
    finally:
        import logging

        import structlog

        # stopping the session on purpose: no "session lost"
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
        coordinator.stop()
        store.close()
    return windows, constants


def render_objectstore(args: Any, windows: list[Window], constants: list[Window],
                       note: Callable[[CpuSample], str]) -> list[str]:
    lines = ["", f"objectstore latency scenario: {args.objectstore_tables} Iceberg tables, "
             f"{args.read_delay_ms:g} ms per metadata read, 1 scheduler",
             f"{'scheduler':<19}{'scenario':<14}{'decided':>8}{'s':>7}{'tables/min':>12}"
             f"{'CPU ms/dec':>11}{'reads/dec':>10}{'reused':>8}{'PG ms/dec':>10}{'goal':>8}"]
    by: dict[tuple[str, str], Window] = {}
    for w in windows:
        by[(w.scheduler, w.scenario)] = w
        goal = ""
        if w.scheduler == "concurrent":
            goal = "ok" if w.per_min >= GOAL_PER_MIN else "MISSED"
        lines.append(
            f"{w.scheduler:<19}{w.scenario:<14}{w.decisions:>8}{w.wall_s:>7.1f}"
            f"{w.per_min:>12.0f}{w.ms_per(w.cpu_s):>11.3f}"
            f"{w.reads / w.decisions if w.decisions else math.nan:>10.2f}{w.reused:>8}"
            f"{w.ms_per(w.cpu.cpu_s.get('postgres', math.nan)):>10.3f}{goal:>8}")
    for scenario in ("first look", "none changed", "10% changed", "restarted"):
        s, c = by.get(("sequential (main)", "first look" if scenario == "restarted"
                       else scenario)), by.get(("concurrent", scenario))
        if s and c and s.per_min:
            lines.append(f"  {scenario}: concurrent / sequential tables per minute "
                         f"{c.per_min / s.per_min:.1f}x; goal >= {GOAL_PER_MIN:,.0f}/min")
    for w in windows:
        lines.append(f"  - {w.scheduler}, {w.scenario}: {note(w.cpu)}; batches on threads "
                     f"{w.spread_batches}")
    if constants:
        lines.append(f"constant tables ({len(constants) // 2} rounds of "
                     f"{args.constant_seconds:g} s each, alternating):")
        for label in ("sequential (main)", "concurrent"):
            ws = [w for w in constants if w.scheduler == label]
            per = sorted(w.ms_per(w.cpu_s) for w in ws)
            med = per[len(per) // 2] if per else math.nan
            verdict = "ok" if med <= GOAL_CONSTANT_CPU_MS else "MISSED"
            lines.append(f"  {label:<19} CPU ms per decision median {med:.3f} (rounds "
                         + ", ".join(f"{p:.3f}" for p in per)
                         + f"); goal <= {GOAL_CONSTANT_CPU_MS} {verdict}; "
                         f"{sum(w.decisions for w in ws)} decisions, batches on threads "
                         f"{max((w.spread_batches for w in ws), default=0)}")
    return lines
