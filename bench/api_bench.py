"""API benchmark: NotifyCommit on a real tms-api node against a no-op gRPC service and pgbench.

A script, not a test (see bench/README.md). One run starts a throw-away PostgreSQL
(``LocalPostgres``) in a temporary directory, applies the schema, starts the servers, then
measures each phase for ``--seconds`` after a ``--warmup``, ``--rounds`` times alternately:

1. ``noop``    the load generator against a no-op unary gRPC service in its own process (same
               method path and request, same thread-pool size as tms-api, no database);
2. ``notify``  the same generator against one ``python -m tms_services.api`` process calling
               ``NotifyCommit`` with a unique commit id per call, spread over the tables;
3. ``batch``   ``NotifyCommits`` with ``--batch-size`` commits per call;
4. ``pgbench`` single-row INSERT transactions into a scratch table shaped like
               ``tms_commit_events``, with as many clients as the gRPC load;
5. ``sql``     the intake's statement alone (``bench/intake_sql.py``): ``--batch-size`` new
               commits per call on one connection, no gRPC: PostgreSQL's cost per commit.
               ``--sql-index-costs`` measures it again at the end without the events table's
               secondary indexes, one dropped after the other.

With ``--baseline-src DIR`` (another source tree, e.g. a ``git worktree`` of main) a second
tms-api runs that tree's code against the same database, and each round also measures
``notify-base`` and ``batch-base`` on it: before/after in one run, under the same load.

It prints calls/s, p50/p99 latency and CPU per call (server, PostgreSQL, load generator), and
the ratios NotifyCommit / no-op (goal >= 0.70), NotifyCommit / pgbench and batch commits/s
against 50,000. ``--py-spy FILE --py-spy-phase PHASE`` profiles one phase's server.
Everything listens on 127.0.0.1; every process it starts is stopped at the end,
on error, on Ctrl-C and on SIGTERM.

Run from the repository root::

    .venv/bin/python -m bench.api_bench [--seconds 10] [--rounds 3] [--json figures.json]
    .venv/bin/python bench/api_bench.py ...   # the same
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import multiprocessing as mp
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable
from concurrent import futures
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from multiprocessing.queues import Queue as MpQueue
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tms.api.server import MAX_MESSAGE_BYTES, SERVER_THREADS, SERVICE_NAME
from tms.local.ports import free_port
from tms.local.postgres import PG_BIN_DIRS, PG_SUPERUSER, LocalPostgres
from tms.storage.migrate import migrate
from tms.v1 import tms_pb2

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BenchError, guarded, say  # noqa: E402
from bench.common.cpu import CpuProbe, CpuSample, postgres_pids  # noqa: E402
from bench.common.procs import Children, hudi_catalog  # noqa: E402
from bench.common.stats import percentile  # noqa: E402
from bench.intake_sql import INDEX_VARIANTS, drop_index, explain, measure  # noqa: E402

NOTIFY_PATH = f"/{SERVICE_NAME}/NotifyCommit"
BATCH_PATH = f"/{SERVICE_NAME}/NotifyCommits"
DB_NAME = "tms"
CATALOG = "bench"
NAMESPACE = "ns"
GOAL_NOTIFY_VS_NOOP = 0.70
GOAL_BATCH_COMMITS_S = 50_000.0
SERVER_START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
CLIENT_JOIN_SLACK_S = 60.0
SCRATCH_TABLE = "bench_scratch_commits"
DISTURBED_PCT = 10
_SERVER_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.so_reuseport", 0)]
_CLIENT_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.use_local_subchannel_pool", 1)]


# --------------------------------------------------------------------------------------------
# the no-op server (runs in its own process: ``api_bench.py --serve-noop 127.0.0.1:PORT``)
# --------------------------------------------------------------------------------------------
def serve_noop(listen: str) -> None:
    """A unary service at the NotifyCommit path that parses the request and answers at once."""

    def notify(request: tms_pb2.NotifyCommitRequest,
               context: grpc.ServicerContext) -> tms_pb2.NotifyCommitResponse:
        return tms_pb2.NotifyCommitResponse(duplicate=False)

    handler = grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "NotifyCommit": grpc.unary_unary_rpc_method_handler(
            notify, request_deserializer=tms_pb2.NotifyCommitRequest.FromString,
            response_serializer=tms_pb2.NotifyCommitResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS),
                         options=_SERVER_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    if server.add_insecure_port(listen) == 0:
        raise SystemExit(f"cannot listen on {listen}")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    stop.wait()
    server.stop(0).wait()


# --------------------------------------------------------------------------------------------
# the load generator: N processes x T threads (or T asyncio tasks), closed loop
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadSpec:
    target: str
    tables: tuple[str, ...]
    batch: int  # 0: one NotifyCommit per call; else NotifyCommits with this many commits
    procs: int
    threads: int
    warmup_s: float
    seconds: float
    client: str  # "threads" or "aio"
    run_id: str  # makes every commit id of the run unique


@dataclass
class WorkerResult:
    calls: int = 0
    commits: int = 0
    duplicates: int = 0
    entry_errors: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: array = field(default_factory=lambda: array("d"))
    failure: str = ""


_EPOCH = datetime(1970, 1, 1)
_INSTANT_SPAN_MS = (datetime(9999, 1, 1) - _EPOCH) // timedelta(milliseconds=1)


def hudi_instant(key: str) -> str:
    """A Hudi instant time (yyyyMMddHHmmssSSS) standing for the unique ``key``: the bench's
    tables are Hudi tables, whose commit ids the API checks (a 48-bit hash of the key, so
    two keys of a run meet with a chance of about n^2 / 2^49)."""
    ms = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=6).digest(), "big")
    at = _EPOCH + timedelta(milliseconds=ms % _INSTANT_SPAN_MS)
    return at.strftime("%Y%m%d%H%M%S") + f"{at.microsecond // 1000:03d}"


def _commit(table: str, commit_id: str) -> tms_pb2.NotifyCommitRequest:
    return tms_pb2.NotifyCommitRequest(
        table=table, commit_id=commit_id,
        stats=tms_pb2.CommitStats(files_added=1, bytes_added=4096, operation="append"))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_COMMIT_ID_TAG = b"\x12"  # NotifyCommitRequest.commit_id: field 2, length-delimited
_COMMITS_TAG = b"\x0a"  # NotifyCommitsRequest.commits: field 1, length-delimited


def batch_wire(tables: list[str], commit_ids: list[str]) -> bytes:
    """A NotifyCommitsRequest of ``_commit(table, id)`` entries in its wire form, built from
    bytes: a writer elsewhere builds its batches on its own machine, and here the load
    generator shares the 2 cores with the server (building 500 messages cost it about 4 us of
    CPU per commit, half of the API's own). Each entry is the table's fixed part (table and
    stats) followed by its commit id; a parser merges the fields (tested against protobuf)."""
    out = []
    for table, cid in zip(tables, commit_ids, strict=True):
        head = _HEADS.get(table) or _HEADS.setdefault(
            table, _commit(table, "").SerializeToString())
        raw = cid.encode()
        body = b"".join((head, _COMMIT_ID_TAG, _varint(len(raw)), raw))
        out.append(b"".join((_COMMITS_TAG, _varint(len(body)), body)))
    return b"".join(out)


_HEADS: dict[str, bytes] = {}
_RESULT_NEW = tms_pb2.NotifyCommitsResponse(
    results=[tms_pb2.NotifyCommitsResponse.Result()]).SerializeToString()


class _Requests:
    """Request factory of one generator thread: unique commit ids, tables round-robin."""

    def __init__(self, spec: LoadSpec, worker: int, thread: int) -> None:
        self._spec = spec
        self._prefix = f"{spec.run_id}-{worker}-{thread}"
        self._offset = worker * spec.threads + thread
        self._seq = 0

    def next(self) -> Any:
        spec, n = self._spec, len(self._spec.tables)
        seq = self._seq
        self._seq += 1
        if not spec.batch:
            return _commit(spec.tables[(self._offset + seq) % n],
                           hudi_instant(f"{self._prefix}-{seq}"))
        base = self._offset + seq * spec.batch
        return batch_wire([spec.tables[(base + k) % n] for k in range(spec.batch)],
                          [hudi_instant(f"{self._prefix}-{seq}-{k}")
                           for k in range(spec.batch)])


def _identity(raw: bytes) -> bytes:
    return raw


def _path_and_types(spec: LoadSpec) -> tuple[str, Callable[[Any], bytes], Callable[[bytes], Any]]:
    if spec.batch:  # requests built as bytes; replies read as bytes (see _account)
        return BATCH_PATH, _identity, _identity
    return (NOTIFY_PATH, tms_pb2.NotifyCommitRequest.SerializeToString,
            tms_pb2.NotifyCommitResponse.FromString)


def _account(res: WorkerResult, spec: LoadSpec, reply: Any, latency: float) -> None:
    res.calls += 1
    res.latencies.append(latency)
    if spec.batch:
        if reply == _RESULT_NEW * spec.batch:  # every entry new, none failed
            res.commits += spec.batch
            return
        for r in tms_pb2.NotifyCommitsResponse.FromString(reply).results:
            if r.HasField("error"):
                res.entry_errors += 1
            else:
                res.commits += 1
                res.duplicates += int(r.duplicate)
    else:
        res.commits += 1
        res.duplicates += int(reply.duplicate)


def _run_threads(spec: LoadSpec, worker: int, ready: MpQueue[int], go: MpEvent,
                 t0: Synchronized[float]) -> WorkerResult:
    path, ser, de = _path_and_types(spec)
    res = WorkerResult()
    lock = threading.Lock()
    with grpc.insecure_channel(spec.target, options=_CLIENT_OPTIONS) as channel:
        grpc.channel_ready_future(channel).result(timeout=SERVER_START_TIMEOUT_S)
        call = channel.unary_unary(path, request_serializer=ser, response_deserializer=de)
        ready.put(worker)
        if not go.wait(SERVER_START_TIMEOUT_S):
            raise BenchError("no start signal")
        start = t0.value + spec.warmup_s
        end = start + spec.seconds

        def loop(thread: int) -> None:
            mine = WorkerResult()
            requests = _Requests(spec, worker, thread)
            while (now := time.monotonic()) < end:
                req = requests.next()
                try:
                    reply = call(req, timeout=CALL_TIMEOUT_S)
                except grpc.RpcError as e:
                    mine.errors[e.code().name] += 1  # type: ignore[attr-defined]
                    if time.monotonic() < end:
                        time.sleep(0.01)  # do not spin on a failing server
                    continue
                done = time.monotonic()
                if start <= done <= end:
                    _account(mine, spec, reply, done - now)
            with lock:
                _merge(res, mine)

        threads = [threading.Thread(target=loop, args=(i,), daemon=True)
                   for i in range(spec.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(spec.warmup_s + spec.seconds + CALL_TIMEOUT_S + 5)
    return res


async def _run_aio(spec: LoadSpec, worker: int, ready: MpQueue[int], go: MpEvent,
                   t0: Synchronized[float]) -> WorkerResult:
    path, ser, de = _path_and_types(spec)
    res = WorkerResult()
    async with grpc.aio.insecure_channel(spec.target, options=_CLIENT_OPTIONS) as channel:
        await asyncio.wait_for(channel.channel_ready(), SERVER_START_TIMEOUT_S)
        call = channel.unary_unary(path, request_serializer=ser, response_deserializer=de)
        ready.put(worker)
        loop = asyncio.get_running_loop()
        if not await loop.run_in_executor(None, go.wait, SERVER_START_TIMEOUT_S):
            raise BenchError("no start signal")
        start = t0.value + spec.warmup_s
        end = start + spec.seconds

        async def one(task: int) -> None:
            requests = _Requests(spec, worker, task)
            while (now := time.monotonic()) < end:
                req = requests.next()
                try:
                    reply = await call(req, timeout=CALL_TIMEOUT_S)
                except grpc.RpcError as e:
                    res.errors[e.code().name] += 1  # type: ignore[attr-defined]
                    await asyncio.sleep(0.01)
                    continue
                done = time.monotonic()
                if start <= done <= end:
                    _account(res, spec, reply, done - now)

        await asyncio.gather(*(one(i) for i in range(spec.threads)))
    return res


def _merge(into: WorkerResult, other: WorkerResult) -> None:
    into.calls += other.calls
    into.commits += other.commits
    into.duplicates += other.duplicates
    into.entry_errors += other.entry_errors
    into.errors.update(other.errors)
    into.latencies.extend(other.latencies)
    if other.failure and not into.failure:
        into.failure = other.failure


def _client_main(spec: LoadSpec, worker: int, ready: MpQueue[int], go: MpEvent,
                 t0: Synchronized[float], results: MpQueue[WorkerResult]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    try:
        if spec.client == "aio":
            res = asyncio.run(_run_aio(spec, worker, ready, go, t0))
        else:
            res = _run_threads(spec, worker, ready, go, t0)
    except Exception as e:
        res = WorkerResult(failure=f"{type(e).__name__}: {e}")
        ready.put(worker)
    results.put(res)


@dataclass
class PhaseResult:
    name: str
    status: str = "ok"
    calls_s: float = 0.0
    commits_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    calls: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    entry_errors: int = 0
    concurrency: int = 0
    batch_size: int = 0
    seconds: float = 0.0
    cpu_ms_per_call: dict[str, float] = field(default_factory=dict)
    machine_busy_pct: float = 0.0
    machine_steal_pct: float = 0.0
    other_load_pct: float = 0.0
    wal_bytes_per_commit: float = 0.0  # the sql phase: WAL PostgreSQL wrote per commit


def _apply_cpu(phase: PhaseResult, sample: CpuSample, calls: float) -> None:
    phase.cpu_ms_per_call = sample.per_call_ms(calls)
    phase.machine_busy_pct = sample.busy_pct
    phase.machine_steal_pct = sample.steal_pct
    phase.other_load_pct = sample.other_pct


def run_load(name: str, spec: LoadSpec, children: Children,
             groups: dict[str, Callable[[], list[int]]],
             on_start: Callable[[], None] | None = None) -> PhaseResult:
    """Run ``spec`` in ``spec.procs`` processes; figures cover the window after the warm-up."""
    ctx = mp.get_context("spawn")
    ready: MpQueue[int] = ctx.Queue()
    results: MpQueue[WorkerResult] = ctx.Queue()
    go = ctx.Event()
    t0: Synchronized[float] = ctx.Value("d", 0.0)  # type: ignore[assignment]
    workers = []
    for w in range(spec.procs):
        p = ctx.Process(target=_client_main, args=(spec, w, ready, go, t0, results),
                        name=f"bench-client-{w}", daemon=True)
        p.start()
        children.workers.append(p)
        workers.append(p)
    probe = CpuProbe({**groups, "clients": lambda: [w.pid for w in workers if w.pid]})
    for _ in range(spec.procs):
        try:
            ready.get(timeout=SERVER_START_TIMEOUT_S)
        except queue.Empty:
            raise BenchError(f"{name}: load generators not ready after "
                             f"{SERVER_START_TIMEOUT_S:.0f} s") from None
    t0.value = time.monotonic()
    go.set()
    if on_start is not None:
        on_start()
    time.sleep(max(0.0, t0.value + spec.warmup_s - time.monotonic()))
    probe.begin()
    time.sleep(max(0.0, t0.value + spec.warmup_s + spec.seconds - time.monotonic()))
    cpu = probe.end()
    total = WorkerResult()
    deadline = time.monotonic() + spec.warmup_s + spec.seconds + CLIENT_JOIN_SLACK_S
    for _ in range(spec.procs):
        try:
            _merge(total, results.get(timeout=max(1.0, deadline - time.monotonic())))
        except queue.Empty:
            raise BenchError(f"{name}: load generators did not finish") from None
    children.stop_workers()
    if total.failure:
        raise BenchError(f"{name}: load generator failed: {total.failure}")
    lat = sorted(total.latencies)
    phase = PhaseResult(
        name=name, calls_s=total.calls / spec.seconds, commits_s=total.commits / spec.seconds,
        p50_ms=percentile(lat, 50, empty=0.0) * 1e3, p99_ms=percentile(lat, 99, empty=0.0) * 1e3,
        calls=total.calls, errors=dict(total.errors), duplicates=total.duplicates,
        entry_errors=total.entry_errors, concurrency=spec.procs * spec.threads,
        batch_size=spec.batch, seconds=spec.seconds,
    )
    _apply_cpu(phase, cpu, phase.calls)
    return phase


# --------------------------------------------------------------------------------------------
# servers
# --------------------------------------------------------------------------------------------
def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _wait_serving(target: str, proc: subprocess.Popen[bytes], log: Path,
                  probe: Callable[[grpc.Channel], bool]) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    with grpc.insecure_channel(target) as channel:
        while True:
            if proc.poll() is not None:
                raise BenchError(f"server {target} exited with {proc.returncode}:\n{_tail(log)}")
            try:
                if probe(channel):
                    return
            except grpc.RpcError:
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"server {target} not serving after "
                                 f"{SERVER_START_TIMEOUT_S:.0f} s:\n{_tail(log)}")
            time.sleep(0.1)


def start_noop(children: Children, workdir: Path) -> tuple[str, subprocess.Popen[bytes]]:
    target = f"127.0.0.1:{free_port()}"
    log_path = workdir / "noop.log"
    with log_path.open("wb") as log:
        proc = children.popen([sys.executable, str(Path(__file__).resolve()),
                               "--serve-noop", target], log)

    def probe(channel: grpc.Channel) -> bool:
        call = channel.unary_unary(NOTIFY_PATH,
                                   request_serializer=tms_pb2.NotifyCommitRequest.SerializeToString,
                                   response_deserializer=tms_pb2.NotifyCommitResponse.FromString)
        call(_commit("tables/x", "probe"), timeout=1.0)
        return True

    _wait_serving(target, proc, log_path, probe)
    return target, proc


def start_api(children: Children, workdir: Path, dsn: str, src: Path | None = None,
              name: str = "api") -> tuple[str, subprocess.Popen[bytes]]:
    """tms-api of this tree, or of the source tree ``src`` (its libs and services first on
    the import path)."""
    target = f"127.0.0.1:{free_port()}"
    log_path = workdir / f"{name}.log"
    env = dict(os.environ, TMS_DATABASE_URL=dsn)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(src / d) for d in ("libs", "services", "."))
    with log_path.open("wb") as log:
        proc = children.popen([sys.executable, "-m", "tms_services.api", "--listen", target],
                              log, env=env)

    def probe(channel: grpc.Channel) -> bool:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=1.0)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    _wait_serving(target, proc, log_path, probe)
    return target, proc


def register_tables(target: str, count: int, dsn: str, root: Path) -> tuple[str, ...]:
    """``count`` tables in a file-system catalog (only NotifyCommit is measured: what the
    tables hold does not matter)."""
    ids = [f"bench_{i:04d}" for i in range(count)]
    catalog = hudi_catalog(dsn, root, ids, CATALOG)
    names = []
    with grpc.insecure_channel(target) as channel:
        register = channel.unary_unary(
            f"/{SERVICE_NAME}/RegisterTable",
            request_serializer=tms_pb2.RegisterTableRequest.SerializeToString,
            response_deserializer=tms_pb2.Table.FromString)
        for table_id in ids:
            table = register(tms_pb2.RegisterTableRequest(
                table_id=table_id,
                table=tms_pb2.Table(format="hudi", catalog=catalog,
                                    base_path=str(root / table_id))),
                timeout=CALL_TIMEOUT_S)
            names.append(table.name)
    return tuple(names)


def probe_batch(target: str, table: str, run_id: str) -> str:
    """'ok', or the status code name when NotifyCommits cannot be called (e.g. UNIMPLEMENTED)."""
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(BATCH_PATH,
                                   request_serializer=tms_pb2.NotifyCommitsRequest.SerializeToString,
                                   response_deserializer=tms_pb2.NotifyCommitsResponse.FromString)
        try:
            reply = call(tms_pb2.NotifyCommitsRequest(commits=[
                _commit(table, hudi_instant(f"{run_id}-probe-{k}")) for k in range(2)]),
                timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as e:
            return str(e.code().name)  # type: ignore[attr-defined]
    if len(reply.results) != 2 or any(r.HasField("error") for r in reply.results):
        return f"unexpected reply: {reply}"
    return "ok"


# --------------------------------------------------------------------------------------------
# pgbench
# --------------------------------------------------------------------------------------------
def _pgbench_bin() -> str:
    for d in PG_BIN_DIRS:
        if (Path(d) / "pgbench").exists():
            return str(Path(d) / "pgbench")
    found = shutil.which("pgbench")
    if not found:
        raise BenchError("pgbench not found (Debian package postgresql-client / postgresql)")
    return found


PGBENCH_SCRIPT = f"""\\set t random(1, 100)
INSERT INTO {SCRATCH_TABLE} (table_pk, commit_id, files_added, bytes_added, operation_type)
VALUES (:t, gen_random_uuid()::text, 1, 4096, 'append');
"""
PGBENCH_RAMP_S = 0.5
_TPS_RE = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


def run_pgbench(pg: LocalPostgres, clients: int, warmup_s: float, seconds: float,
                pgdir: Path) -> PhaseResult:
    """Single-row INSERT transactions (prepared statements) into a copy of the events table."""
    with psycopg.connect(pg.dsn(DB_NAME), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {SCRATCH_TABLE}")
        conn.execute(f"""CREATE TABLE {SCRATCH_TABLE} (
            table_pk bigint NOT NULL, commit_id text NOT NULL, commit_time timestamptz,
            received_at timestamptz NOT NULL DEFAULT now(), files_added bigint,
            bytes_added bigint, operation_type text NOT NULL DEFAULT '',
            PRIMARY KEY (table_pk, commit_id))""")
    pgdir.mkdir()
    jobs = min(clients, os.cpu_count() or 1)
    script = pgdir / "insert.sql"
    script.write_text(PGBENCH_SCRIPT)
    secs = max(1, math.ceil(seconds))
    base = [_pgbench_bin(), "-n", "-h", "127.0.0.1", "-p", str(pg.port), "-U", PG_SUPERUSER,
            "-c", str(clients), "-j", str(jobs), "-M", "prepared",
            "-f", str(script)]
    if warmup_s > 0:
        _run_checked([*base, "-T", str(max(1, math.ceil(warmup_s))), DB_NAME], pgdir,
                     warmup_s + CLIENT_JOIN_SLACK_S)
    argv = [*base, "-T", str(secs), "-l", "--log-prefix", str(pgdir / "tx"), DB_NAME]
    out_path = pgdir / "pgbench.out"
    with out_path.open("wb") as out_f:
        proc = subprocess.Popen(argv, cwd=pgdir, stdout=out_f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        probe = CpuProbe({"postgres": postgres_pids(pg.data_dir), "clients": lambda: [proc.pid]})
        # CPU over the middle of the run: after the connections, before pgbench exits.
        begin_at, end_at = time.monotonic() + PGBENCH_RAMP_S, time.monotonic() + secs - 0.3
        time.sleep(PGBENCH_RAMP_S)
        probe.begin()
        time.sleep(max(0.0, end_at - time.monotonic()))
        cpu = probe.end()
        window_s = time.monotonic() - begin_at
        proc.wait(secs + CLIENT_JOIN_SLACK_S)
    finally:
        Children.stop_popen(proc)
    out = out_path.read_text(errors="replace")
    if proc.returncode != 0:
        raise BenchError(f"pgbench failed ({proc.returncode}):\n{out[-3000:]}")
    m = _TPS_RE.search(out)
    if not m:
        raise BenchError(f"no tps in pgbench output:\n{out}")
    lat: list[float] = []
    for log in pgdir.glob("tx.*"):
        for line in log.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:
                lat.append(int(parts[2]) / 1e6)  # per-transaction latency in microseconds
    lat.sort()
    tps = float(m.group(1))
    phase = PhaseResult(name="pgbench INSERT", calls_s=tps, commits_s=tps,
                        p50_ms=percentile(lat, 50, empty=0.0) * 1e3,
                        p99_ms=percentile(lat, 99, empty=0.0) * 1e3,
                        calls=len(lat), concurrency=clients, seconds=float(secs))
    _apply_cpu(phase, cpu, tps * window_s)
    return phase


def _run_checked(argv: list[str], cwd: Path, timeout_s: float) -> str:
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                         start_new_session=True)
    if res.returncode != 0:
        raise BenchError(f"{Path(argv[0]).name} failed ({res.returncode}):\n"
                         f"{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return res.stdout


# --------------------------------------------------------------------------------------------
# profiling (optional): py-spy on the API process during the NotifyCommit window
# --------------------------------------------------------------------------------------------
def _py_spy_starter(children: Children, pid: int, out: Path, warmup_s: float, seconds: float,
                    workdir: Path) -> Callable[[], None]:
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        raise BenchError("--py-spy needs py-spy (pip install py-spy into the venv)")
    fmt = {".svg": "flamegraph", ".json": "speedscope"}.get(out.suffix, "raw")

    def start() -> None:
        def later() -> None:
            time.sleep(warmup_s)
            with (workdir / "py-spy.log").open("wb") as log:
                children.popen([exe, "record", "--pid", str(pid), "--duration",
                                str(max(1, int(seconds))), "--rate", "200", "--format", fmt,
                                "--nonblocking", "--gil", "-o", str(out)], log)

        threading.Thread(target=later, daemon=True).start()

    return start


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def _ratio(a: PhaseResult | None, b: PhaseResult | None, attr: str = "calls_s") -> float | None:
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        return None
    den = getattr(b, attr)
    return getattr(a, attr) / den if den else None


def _label(p: PhaseResult) -> str:
    return p.name + (f" x{p.batch_size}" if p.batch_size else "")


def render(phases: list[PhaseResult], ratios: dict[str, float | None], *,
           median: bool = False) -> str:
    head = "median round" if median else "phase"
    lines = [f"{head:<28}{'conc':>6}{'calls/s':>11}{'commits/s':>12}{'p50 ms':>9}"
             f"{'p99 ms':>9}  errors"]
    for p in phases:
        if p.status != "ok":
            lines.append(f"{_label(p):<28}{p.concurrency:>6}  {p.status}")
            continue
        errs = ", ".join(f"{k}={v}" for k, v in sorted(p.errors.items())) or "0"
        if p.entry_errors:
            errs += f", entries={p.entry_errors}"
        if p.duplicates:
            errs += f", duplicates={p.duplicates}"
        lines.append(f"{_label(p):<28}{p.concurrency:>6}{p.calls_s:>11.1f}{p.commits_s:>12.1f}"
                     f"{p.p50_ms:>9.2f}{p.p99_ms:>9.2f}  {errs}")
    lines += ["", f"{'CPU ms per call':<28}{'server':>9}{'postgres':>10}{'clients':>9}"
                  f"{'machine busy %':>16}{'steal %':>9}{'other load %':>14}"]
    disturbed = []
    for p in phases:
        if p.status != "ok":
            continue
        cells = "".join(f"{p.cpu_ms_per_call[g]:>{w}.3f}" if g in p.cpu_ms_per_call
                        else f"{'-':>{w}}" for g, w in (("server", 9), ("postgres", 10),
                                                        ("clients", 9)))
        lines.append(f"{_label(p):<28}{cells}{p.machine_busy_pct:>16.0f}"
                     f"{p.machine_steal_pct:>9.0f}{p.other_load_pct:>14.0f}")
        if p.other_load_pct + p.machine_steal_pct > DISTURBED_PCT:
            disturbed.append(_label(p))
    lines += [f"{_label(p) + ': WAL bytes per commit':<44}{p.wal_bytes_per_commit:>8.0f}"
              for p in phases if p.status == "ok" and p.wal_bytes_per_commit]
    lines.append("")

    def fmt(key: str, label: str, goal: float | None) -> str:
        value = ratios.get(key)
        if value is None:
            return f"{label:<36}n/a"
        verdict = "" if goal is None else ("  ok" if value >= goal else "  BELOW GOAL")
        goal_s = "" if goal is None else f"  (goal >= {goal:.2f})"
        return f"{label:<36}{value:>6.2f}{goal_s}{verdict}"

    lines.append(fmt("notify_vs_noop", "NotifyCommit / no-op", GOAL_NOTIFY_VS_NOOP))
    lines.append(fmt("notify_vs_pgbench", "NotifyCommit / pgbench", None))
    lines.append(fmt("batch_vs_goal", f"batch commits/s / {GOAL_BATCH_COMMITS_S:,.0f}", 1.0))
    if ratios.get("notify_vs_base") is not None or ratios.get("batch_vs_base") is not None:
        lines.append(fmt("base_notify_vs_noop", "baseline NotifyCommit / no-op", None))
        lines.append(fmt("notify_vs_base", "NotifyCommit / baseline", None))
        lines.append(fmt("batch_vs_base", "batch commits/s / baseline", None))
    if disturbed:
        lines += ["", f"WARNING: other processes or the hypervisor took over {DISTURBED_PCT}% "
                      f"of the CPUs during: {', '.join(disturbed)}; those figures are low. "
                      "Re-run on a quiet machine or with --rounds."]
    return "\n".join(lines)


def render_rounds(rounds: list[dict[str, PhaseResult]],
                  ratios: list[dict[str, float | None]]) -> str:
    keys = [k for k in PHASES if any(k in r for r in rounds)]
    lines = [f"{'round':<7}" + "".join(f"{k + ' /s':>15}" for k in keys)
             + f"{'notify/noop':>13}{'other load %':>14}"]
    for i, (r, rat) in enumerate(zip(rounds, ratios, strict=True)):
        cells = "".join(f"{r[k].commits_s:>15.1f}" if k in r and r[k].status == "ok"
                        else f"{'-':>15}" for k in keys)
        nv = rat.get("notify_vs_noop")
        other = max((ph.other_load_pct + ph.machine_steal_pct for ph in r.values()),
                    default=0.0)
        lines.append(f"{i + 1:<7}{cells}{(f'{nv:.2f}' if nv is not None else '-'):>13}"
                     f"{other:>14.0f}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--seconds", type=float, default=10.0, help="measured time per phase")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up per phase, not measured")
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat all phases, alternating; report the median round")
    p.add_argument("--procs", type=int, default=1, help="load-generator processes")
    p.add_argument("--threads", type=int, default=SERVER_THREADS,
                   help="concurrent calls per load-generator process (asyncio tasks with "
                        "--client aio, threads with --client threads); default: the API "
                        "server's thread count")
    p.add_argument("--client", choices=("aio", "threads"), default="aio",
                   help="grpc.aio tasks (least client CPU per call) or blocking stubs in threads")
    p.add_argument("--tables", type=int, default=100, help="iceberg tables to register")
    p.add_argument("--batch-size", type=int, default=500, help="commits per NotifyCommits")
    p.add_argument("--batch-threads", type=int, default=2,
                   help="concurrent NotifyCommits calls per load-generator process")
    p.add_argument("--sql-index-costs", action="store_true",
                   help="after the rounds, the sql phase again without each secondary index "
                        "of tms_commit_events (cumulative)")
    p.add_argument("--sql-explain", action="store_true",
                   help="at the end, EXPLAIN ANALYZE of one commits_notify batch (rolled back)")
    p.add_argument("--only", default="noop,notify,pgbench,batch,sql",
                   help="comma-separated phases to run")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument("--py-spy", type=Path,
                   help="profile the API process during one phase's window (round 1) with "
                        "py-spy (.svg flamegraph, .json speedscope, else raw collapsed stacks)")
    p.add_argument("--py-spy-phase", default="notify",
                   choices=("notify", "batch", "notify-base", "batch-base"),
                   help="the phase --py-spy profiles")
    p.add_argument("--baseline-src", type=Path,
                   help="also measure notify and batch on a tms-api running this source tree "
                        "(e.g. a git worktree of main), in the same run")
    p.add_argument("--serve-noop", metavar="HOST:PORT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if (args.seconds <= 0 or args.warmup < 0 or args.procs < 1 or args.threads < 1
            or args.rounds < 1 or args.batch_threads < 1):
        p.error("need --seconds > 0, --warmup >= 0 and --procs, --threads, --rounds, "
                "--batch-threads >= 1")
    if not 1 <= args.batch_size <= 1000:
        p.error("--batch-size must be 1-1000")
    if args.tables < 1:
        p.error("--tables must be >= 1")
    if args.baseline_src is not None:
        args.baseline_src = args.baseline_src.resolve()
        if not (args.baseline_src / "libs" / "tms").is_dir():
            p.error(f"--baseline-src {args.baseline_src}: no libs/tms there")
    if args.py_spy_phase.endswith("-base") and args.baseline_src is None:
        p.error("--py-spy-phase *-base needs --baseline-src")
    args.only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = args.only - {"noop", "notify", "pgbench", "batch", "sql"}
    if unknown:
        p.error(f"unknown phases: {', '.join(sorted(unknown))}")
    return args


PHASES = ("noop", "notify-base", "notify", "batch-base", "batch", "sql", "pgbench")  # a round


def _round(args: argparse.Namespace, r: int, env: dict[str, Any], children: Children,
           workdir: Path) -> dict[str, PhaseResult]:
    """One round: each selected phase once, the servers already running."""
    out: dict[str, PhaseResult] = {}
    conc = args.procs * args.threads
    tag = f"round {r + 1}/{args.rounds}: " if args.rounds > 1 else ""

    def spec(target: str, tables: tuple[str, ...], batch: int, threads: int,
             server: str = "") -> LoadSpec:
        # commit ids unique per round and server: the baseline writes new commits too
        return LoadSpec(target=target, tables=tables, batch=batch, procs=args.procs,
                        threads=threads, warmup_s=args.warmup, seconds=args.seconds,
                        client=args.client, run_id=f"{env['run_id']}-{r}{server}")

    if "noop" in args.only:
        say(f"{tag}no-op gRPC, {conc} concurrent calls")
        noop_pid = env["noop"].pid
        out["noop"] = run_load("no-op unary gRPC", spec(
            env["noop_target"], ("tables/noop",), 0, args.threads), children,
            {"server": lambda: [noop_pid]})
    apis = [("", "api")] + ([("-base", "base")] if "base_target" in env else [])

    def profiled(phase: str, server: str) -> Callable[[], None] | None:
        if not args.py_spy or r != 0 or args.py_spy_phase != phase:
            return None
        return _py_spy_starter(children, env[server].pid, args.py_spy, args.warmup,
                               args.seconds, workdir)

    for suffix, server in apis if "notify" in args.only else ():
        say(f"{tag}NotifyCommit{suffix}, {conc} concurrent calls")
        out[f"notify{suffix}"] = run_load(f"NotifyCommit{suffix}", spec(
            env[f"{server}_target"], env["tables"], 0, args.threads, suffix), children,
            env[f"{server}_groups"], profiled(f"notify{suffix}", server))
    for suffix, server in apis if "batch" in args.only else ():
        bconc = args.procs * args.batch_threads
        status = probe_batch(env[f"{server}_target"], env["tables"][0],
                             f"{env['run_id']}-{r}{suffix}")
        if status == "ok":
            say(f"{tag}NotifyCommits{suffix} x{args.batch_size}, {bconc} concurrent calls")
            out[f"batch{suffix}"] = run_load(f"NotifyCommits{suffix}", spec(
                env[f"{server}_target"], env["tables"], args.batch_size, args.batch_threads,
                suffix),
                children, env[f"{server}_groups"], profiled(f"batch{suffix}", server))
        else:
            say(f"{tag}NotifyCommits{suffix} not measurable: {status}")
            out[f"batch{suffix}"] = PhaseResult(name=f"NotifyCommits{suffix}", status=status,
                                                concurrency=bconc, batch_size=args.batch_size)
    if "sql" in args.only:
        say(f"{tag}commits_notify alone, x{args.batch_size}, one connection")
        out["sql"] = run_sql("commits_notify alone", args, env,
                             f"{env['run_id']}-{r}-sql")
    if "pgbench" in args.only:
        say(f"{tag}pgbench, {conc} clients")
        out["pgbench"] = run_pgbench(env["pg"], conc, args.warmup, args.seconds,
                                     workdir / f"pgbench-{r}")
    return out


def run_sql(name: str, args: argparse.Namespace, env: dict[str, Any], run_id: str
            ) -> PhaseResult:
    pg: LocalPostgres = env["pg"]
    res = measure(env["dsn"], tuple(t.removeprefix("tables/") for t in env["tables"]),
                  args.batch_size, args.warmup, args.seconds, postgres_pids(pg.data_dir),
                  run_id, lambda: [os.getpid()])
    lat_p50, lat_p99 = res.p50_ms, res.p99_ms
    phase = PhaseResult(name=name, calls_s=res.calls / res.seconds,
                        commits_s=res.commits / res.seconds, p50_ms=lat_p50, p99_ms=lat_p99,
                        calls=res.calls, concurrency=1, batch_size=args.batch_size,
                        seconds=res.seconds,
                        wal_bytes_per_commit=res.wal_bytes / res.commits if res.commits else 0.0)
    _apply_cpu(phase, res.cpu, res.calls)
    return phase


def _ratios(phases: dict[str, PhaseResult]) -> dict[str, float | None]:
    batch = phases.get("batch")
    return {
        "notify_vs_noop": _ratio(phases.get("notify"), phases.get("noop")),
        "notify_vs_pgbench": _ratio(phases.get("notify"), phases.get("pgbench")),
        "batch_vs_goal": (batch.commits_s / GOAL_BATCH_COMMITS_S
                          if batch is not None and batch.status == "ok" else None),
        "base_notify_vs_noop": _ratio(phases.get("notify-base"), phases.get("noop")),
        "notify_vs_base": _ratio(phases.get("notify"), phases.get("notify-base")),
        "batch_vs_base": _ratio(phases.get("batch"), phases.get("batch-base"), "commits_s"),
    }


def _median_round(rounds: list[dict[str, PhaseResult]], key: str) -> PhaseResult | None:
    """The round with the median calls/s (the lower one of an even count)."""
    got = sorted((r[key] for r in rounds if key in r), key=lambda ph: ph.calls_s)
    return got[(len(got) - 1) // 2] if got else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="tms-bench-"))
    tmp.chmod(0o755)  # the server runs as the postgres user when we are root
    pg: LocalPostgres | None = None
    env: dict[str, Any] = {"run_id": f"r{int(time.time())}"}
    rounds: list[dict[str, PhaseResult]] = []
    index_costs: list[PhaseResult] = []
    try:
        if "noop" in args.only:
            say("starting the no-op gRPC server")
            env["noop_target"], env["noop"] = start_noop(children, tmp)
        if args.only & {"notify", "pgbench", "batch", "sql"}:
            say("starting PostgreSQL")
            pg = LocalPostgres(tmp / "pg").start()
            env["pg"] = pg
            dsn = pg.create_database(DB_NAME)
            migrate(dsn)
            env["dsn"] = dsn
        if args.only & {"notify", "batch", "sql"}:
            assert pg is not None
            say("starting tms-api")
            env["api_target"], api = start_api(children, tmp, dsn)
            env["api"] = api
            say(f"registering {args.tables} tables")
            env["tables"] = register_tables(env["api_target"], args.tables, dsn,
                                            tmp / "tables")
            env["api_groups"] = {"server": lambda: [api.pid],
                                 "postgres": postgres_pids(pg.data_dir)}
            if args.baseline_src is not None:
                say(f"starting the baseline tms-api from {args.baseline_src}")
                env["base_target"], base = start_api(children, tmp, dsn, args.baseline_src,
                                                     "base")
                env["base"] = base
                env["base_groups"] = {"server": lambda: [base.pid],
                                      "postgres": postgres_pids(pg.data_dir)}
        for r in range(args.rounds):
            rounds.append(_round(args, r, env, children, tmp))
        if args.sql_index_costs and "sql" in args.only:
            for label, ddl in INDEX_VARIANTS:
                drop_index(env["dsn"], ddl)
                say(f"commits_notify alone, {label}")
                index_costs.append(run_sql(f"sql {label}", args, env,
                                           f"{env['run_id']}-{label[:12]}"))
        if args.sql_explain and "sql" in args.only:
            print(explain(env["dsn"], tuple(t.removeprefix("tables/") for t in env["tables"]),
                          args.batch_size, f"{env['run_id']}-explain"))
            for server in ("api", "base"):
                if server in env and env[server].poll() is not None:
                    raise BenchError(f"tms-api ({server}) exited with "
                                     f"{env[server].returncode}:\n{_tail(tmp / f'{server}.log')}")
    finally:
        children.stop_all()
        if pg is not None:
            pg.stop("immediate")
        shutil.rmtree(tmp, ignore_errors=True)

    phases = {k: ph for k in PHASES if (ph := _median_round(rounds, k)) is not None}
    per_round = [_ratios(r) for r in rounds]
    ratios: dict[str, float | None] = {}
    for key in per_round[0] if per_round else ():
        values = [v for r in per_round if (v := r[key]) is not None]
        ratios[key] = statistics.median(values) if values else None
    if args.rounds > 1:
        print(render_rounds(rounds, per_round))
    print(render([phases[k] for k in ("noop", "notify-base", "notify", "pgbench", "batch-base",
                                      "batch", "sql") if k in phases] + index_costs,
                 ratios, median=args.rounds > 1))
    return {
        "config": {"seconds": args.seconds, "warmup_s": args.warmup, "rounds": args.rounds,
                   "procs": args.procs, "threads": args.threads, "client": args.client,
                   "tables": args.tables, "batch_size": args.batch_size,
                   "batch_threads": args.batch_threads, "server_threads": SERVER_THREADS,
                   "baseline_src": str(args.baseline_src or ""),
                   "cpus": os.cpu_count()},
        "phases": {k: asdict(v) for k, v in phases.items()},
        "ratios": ratios,
        "rounds": [{k: asdict(v) for k, v in r.items()} for r in rounds],
        "sql_index_costs": [asdict(v) for v in index_costs],
        "round_ratios": per_round,
        "goals": {"notify_vs_noop": GOAL_NOTIFY_VS_NOOP, "batch_commits_s": GOAL_BATCH_COMMITS_S},
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_noop:
        serve_noop(args.serve_noop)
        return 0
    figures, status = guarded(lambda: run(args))
    if figures is None:
        return status
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
