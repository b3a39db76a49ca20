"""PostgreSQL alone under the commit intake: ``commits_notify`` called in a loop, no gRPC.

Part of ``bench/api_bench.py`` (phase ``sql``): the intake's statement on one pooled
connection, ``batch`` new commits per call, from the bench process itself. What it reaches is
the ceiling of the batch phase on this machine; its PostgreSQL CPU per commit is what the
database costs. ``index_variants`` then drops the events table's secondary indexes one after
the other (at the end of a run: the bench's database only) so each one's cost shows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg

from bench.common.cpu import CpuProbe, CpuSample
from bench.common.stats import percentile
from tms.domain import CommitEvent
from tms.storage.postgres import PostgresStore
from tms.storage.queries import q

# Secondary indexes of tms_commit_events (migrations), dropped cumulatively in this order.
# DDL here, not in a named query: it is the bench's own experiment on its scratch database.
INDEX_VARIANTS = (
    ("-age index", "DROP INDEX IF EXISTS tms_commit_events_age"),
    ("-age -latest", "DROP INDEX IF EXISTS tms_commit_events_latest"),
)
EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING) "
# WAL written by the cluster so far (bytes): read before and after the measured window, the
# phase's WAL per commit (the bench's database is the only one written meanwhile)
WAL_POSITION = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint"


@dataclass
class SqlResult:
    calls: int
    commits: int
    seconds: float
    p50_ms: float
    p99_ms: float
    cpu: CpuSample
    wal_bytes: int = 0  # written by the cluster during the measured window


def _batches(table_ids: tuple[str, ...], batch: int, run_id: str) -> Iterator[list[CommitEvent]]:
    seq = 0
    while True:
        yield [CommitEvent(table_ids[(seq * batch + k) % len(table_ids)], f"{run_id}-{seq}-{k}",
                           None, 1, 4096, "append", "") for k in range(batch)]
        seq += 1


def measure(dsn: str, table_ids: tuple[str, ...], batch: int, warmup_s: float, seconds: float,
            postgres: Callable[[], list[int]], run_id: str,
            bench_pid: Callable[[], list[int]]) -> SqlResult:
    """``commits_notify`` of ``batch`` new commits per call for ``seconds`` after a warm-up."""
    store = PostgresStore(dsn, min_size=1, max_size=1)
    probe = CpuProbe({"postgres": postgres, "clients": bench_pid})
    batches = _batches(table_ids, batch, run_id)
    lat: list[float] = []
    commits = 0
    wal_start = 0
    try:
        start = time.monotonic()
        measuring = False
        while (now := time.monotonic()) < start + warmup_s + seconds:
            if not measuring and now >= start + warmup_s:
                wal_start = _wal_position(dsn)
                probe.begin()
                measuring = True
            events = next(batches)
            t0 = time.monotonic()
            out = store.commits_notify(events)
            if measuring:
                lat.append(time.monotonic() - t0)
                commits += sum(1 for o in out if o)
        if not measuring:
            wal_start = _wal_position(dsn)
            probe.begin()
        cpu = probe.end()
        wal_bytes = _wal_position(dsn) - wal_start
    finally:
        store.close()
    lat.sort()
    return SqlResult(len(lat), commits, seconds, percentile(lat, 50, empty=0.0) * 1e3,
                     percentile(lat, 99, empty=0.0) * 1e3, cpu, wal_bytes)


def _wal_position(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(WAL_POSITION).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return int(row[0])


def explain(dsn: str, table_ids: tuple[str, ...], batch: int, run_id: str) -> str:
    """EXPLAIN ANALYZE of one batch of new commits through the intake's statement, rolled
    back: where PostgreSQL's time per commit goes (JSON, joins, the insert and its indexes)."""
    events = next(_batches(table_ids, batch, run_id))
    params = {"events": json.dumps(events, separators=(",", ":")), "sent": len(events)}
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(EXPLAIN + q("commits_notify"), params).fetchall()  # type: ignore[arg-type]
        conn.rollback()
    return "\n".join(r[0] for r in rows)


def drop_index(dsn: str, ddl: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(ddl)  # type: ignore[arg-type]
