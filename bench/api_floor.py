"""What NotifyCommit / no-op can reach on this machine at best: the intake without its parts.

A script, not a test (see bench/README.md). ``bench/api_bench.py`` compares NotifyCommit on a
real tms-api with a no-op gRPC service (goal >= 0.70). This script asks how much of the gap
each part of the intake makes, by serving NotifyCommit with the **real** tms-api server
(``ApiServer``: the same gRPC server, decode guard, RPC wrapper, authorization, validation,
metrics and commit batcher) with parts taken away, one server process per variant, measured
by api_bench's load generator in alternating rounds:

``noop``       api_bench's no-op service (the ratios' base);
``handler``    tms-api's handler stack, answering right after validation (no hand-off, no write);
``handoff``    the handler stack and the commit batcher, whose store answers after
               ``--store-ms`` without a database (a sleep that releases the interpreter lock,
               as a statement's round trip does): the group commit's hand-off with no SQL;
``notify``     the real tms-api on a throw-away PostgreSQL (api_bench's ``notify`` phase).

So ``handoff`` / ``noop`` is a ceiling for any design that acknowledges a commit only after
another thread has written it, before one byte of SQL. ``--variants`` may add the grpc.aio
variants of ``bench/api_floor_aio.py`` (``aio-noop``, ``aio-write``): the same intake on
asyncio, where a call waits on a future instead of a thread. Everything listens on 127.0.0.1; every
process it starts is stopped at the end.

Run from the repository root::

    .venv/bin/python -m bench.api_floor [--rounds 3] [--seconds 6] [--store-ms 0.5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc

if __package__ in (None, ""):  # run as a file: make the bench package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import api_bench as ab  # noqa: E402
from bench.api_floor_aio import AIO_VARIANTS  # noqa: E402
from bench.api_floor_aio import serve as serve_aio  # noqa: E402
from bench.common import say  # noqa: E402
from bench.common.cpu import postgres_pids  # noqa: E402
from bench.common.procs import Children  # noqa: E402
from tms.local.postgres import LocalPostgres  # noqa: E402
from tms.storage.migrate import migrate  # noqa: E402
from tms.v1 import tms_pb2  # noqa: E402

VARIANTS = ("noop", "handler", "handoff", "notify")
DEFAULT_STORE_MS = 0.5


class _NoDatabase:
    """A store with just what the NotifyCommit path and the health watch call: every table
    known, every commit new, after ``delay_s`` without holding the interpreter lock."""

    def __init__(self, delay_s: float) -> None:
        self._delay_s = delay_s

    def check(self, timeout_s: float) -> None:
        return None

    def commits_notify(self, events: Sequence[Any]) -> list[bool | None]:
        time.sleep(self._delay_s)
        return [True] * len(events)

    def close(self) -> None:
        return None


class _Inline:
    """In place of the commit batcher: answers at once (the ``handler`` variant)."""

    def notify(self, event: Any, timeout_s: float | None = None) -> bool | None:
        return True

    def close(self) -> None:
        return None


def serve(listen: str, variant: str, store_ms: float, dsn: str) -> None:
    """One variant's server (its own process), until SIGTERM."""
    if variant in AIO_VARIANTS:
        serve_aio(listen, variant, dsn)
        return
    from tms.api.auth import Authenticator
    from tms.api.server import ApiServer
    from tms_services.common import stop_event_on_signals

    store: Any = _NoDatabase(store_ms / 1e3)
    server = ApiServer(store, {}, listen, reflection_enabled=False,
                       auth=Authenticator.disabled())
    if variant == "handler":
        server.servicer.batcher.close()
        server.servicer.batcher = _Inline()  # type: ignore[assignment]
    stop = stop_event_on_signals()
    server.start()
    stop.wait()
    server.stop(0)


def _start_variant(children: Children, workdir: Path, variant: str, store_ms: float,
                   dsn: str = "") -> tuple[str, Any]:
    target = f"127.0.0.1:{ab.free_port()}"
    log_path = workdir / f"{variant}.log"
    with log_path.open("wb") as log:
        proc = children.popen([sys.executable, str(Path(__file__).resolve()), "--serve",
                               target, "--variant", variant, "--store-ms", str(store_ms),
                               "--dsn", dsn], log)

    def probe(channel: grpc.Channel) -> bool:
        call = channel.unary_unary(
            ab.NOTIFY_PATH, request_serializer=tms_pb2.NotifyCommitRequest.SerializeToString,
            response_deserializer=tms_pb2.NotifyCommitResponse.FromString)
        call(ab._commit("tables/bench_0000", "probe"), timeout=1.0)
        return True

    ab._wait_serving(target, proc, log_path, probe)
    return target, proc


def _pids(pid: int) -> Callable[[], list[int]]:
    return lambda: [pid]


def run(args: argparse.Namespace) -> dict[str, list[ab.PhaseResult]]:
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="tms-floor-"))
    tmp.chmod(0o755)  # PostgreSQL runs as the postgres user when we are root
    out: dict[str, list[ab.PhaseResult]] = {v: [] for v in args.variants}
    servers: dict[str, tuple[str, tuple[str, ...], dict[str, Callable[[], list[int]]]]] = {}
    pg: LocalPostgres | None = None
    dsn = ""
    registered: tuple[str, ...] = ()
    try:  # aio-write writes to the tables the notify variant registered: notify starts first
        for v in sorted(args.variants, key=lambda v: v != "notify"):
            say(f"starting {v}")
            if v == "noop":
                target, proc = ab.start_noop(children, tmp)
                tables: tuple[str, ...] = ("tables/noop",)
            elif v == "notify":
                pg = LocalPostgres(tmp / "pg").start()
                dsn = pg.create_database(ab.DB_NAME)
                migrate(dsn)
                target, proc = ab.start_api(children, tmp, dsn)
                tables = registered = ab.register_tables(target, args.tables, dsn,
                                                         tmp / "tables")
            elif v == "aio-write":
                target, proc = _start_variant(children, tmp, v, args.store_ms, dsn)
                tables = registered
            else:
                target, proc = _start_variant(children, tmp, v, args.store_ms)
                tables = tuple(f"tables/bench_{i:04d}" for i in range(args.tables))
            groups: dict[str, Callable[[], list[int]]] = {"server": _pids(proc.pid)}
            if v in ("notify", "aio-write") and pg is not None:
                groups["postgres"] = postgres_pids(pg.data_dir)
            servers[v] = (target, tables, groups)
        for r in range(args.rounds):
            for v in args.variants:
                target, tables, groups = servers[v]
                say(f"round {r + 1}/{args.rounds}: {v}")
                spec = ab.LoadSpec(target=target, tables=tables, batch=0, procs=1,
                                   threads=args.threads, warmup_s=args.warmup,
                                   seconds=args.seconds, client="aio",
                                   run_id=f"floor{int(time.time())}-{r}-{v}")
                out[v].append(ab.run_load(v, spec, children, groups))
    finally:
        children.stop_all()
        if pg is not None:
            pg.stop()
    return out


def render(results: dict[str, list[ab.PhaseResult]]) -> str:
    base = [p.calls_s for p in results.get("noop", [])]
    lines = [f"{'variant':10}{'calls/s':>10}{'/ no-op':>9}{'server ms':>11}{'postgres ms':>13}"
             f"{'clients ms':>12}{'busy %':>8}  per round / no-op"]
    for v, phases in results.items():
        rates = [p.calls_s for p in phases]
        per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(rates, base, strict=False))
        mid = sorted(phases, key=lambda p: p.calls_s)[len(phases) // 2]
        ratio = statistics.median(rates) / statistics.median(base) if base else float("nan")
        cpu = mid.cpu_ms_per_call
        lines.append(f"{v:10}{statistics.median(rates):10,.0f}{ratio:9.2f}"
                     f"{cpu.get('server', 0):11.3f}{cpu.get('postgres', 0):13.3f}"
                     f"{cpu.get('clients', 0):12.3f}{mid.machine_busy_pct:8.0f}  {per_round}")
    lines.append("calls/s: median of rounds; CPU ms per call and busy %: the median round's; "
                 "other load % per phase: "
                 + ", ".join(f"{p.other_load_pct:.0f}" for ps in results.values() for p in ps))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--warmup", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=ab.SERVER_THREADS,
                   help="concurrent calls (asyncio tasks of one load-generator process)")
    p.add_argument("--tables", type=int, default=100)
    p.add_argument("--store-ms", type=float, default=DEFAULT_STORE_MS,
                   help="the handoff variant's store answers after this long")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--dsn", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if set(args.variants) - set(VARIANTS + AIO_VARIANTS) or "noop" not in args.variants:
        p.error(f"--variants: a subset of {','.join(VARIANTS + AIO_VARIANTS)} that "
                "includes noop")
    if "aio-write" in args.variants and "notify" not in args.variants:
        p.error("--variants: aio-write writes to the notify variant's tables; add notify")
    if args.seconds <= 0 or args.rounds < 1 or args.threads < 1 or args.store_ms < 0:
        p.error("need --seconds > 0, --rounds >= 1, --threads >= 1, --store-ms >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        serve(args.serve, args.variant, args.store_ms, args.dsn)
        return 0
    print(render(run(args)))
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "api-floor"
    sys.exit(main())
