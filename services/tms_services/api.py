"""tms-api: the stateless gRPC front door."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from tms import locations
from tms.api.allowlist import RegistrationAllowlist
from tms.api.auth import Authenticator
from tms.api.report_intake import ReportIntake
from tms.api.report_server import ReportServer
from tms.api.server import ApiServer, TlsConfig
from tms.formats.registry import load_formats
from tms.observability.logs import configure_logging
from tms.observability.metrics import parse_listen
from tms.storage.postgres import PostgresStore
from tms_services.common import (
    base_parser,
    check_database,
    exit_if_unreachable,
    require,
    start_metrics,
    stop_event_on_signals,
)

DEFAULT_LISTEN = "127.0.0.1:50051"
MAX_WORKERS = 64
SUPERVISE_POLL_S = 0.5
# After SIGTERM, a worker gets this long to drain and exit before it is killed: a worker that
# cannot stop must not keep the pod (and its port) alive for ever.
WORKER_STOP_GRACE_S = 30.0
EXIT_WORKER_KILLED = 2
API_POOL_SIZE = 20
# A caller waits at most this for a pooled connection: during a database outage the API answers
# UNAVAILABLE quickly, so writers retry (or give up) within their own deadlines.
API_POOL_TIMEOUT_S = 2.0


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _csv(raw: str | None) -> list[str]:
    return [x.strip() for x in (raw or "").split(",") if x.strip()]


def _location_problem(prefix: str) -> str | None:
    try:
        locations.parse(prefix)
    except locations.LocationError as e:
        return str(e)
    return None


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = base_parser("TMS API server")
    parser.add_argument("--listen", default=os.environ.get("TMS_API_LISTEN", DEFAULT_LISTEN))
    parser.add_argument("--no-reflection", action="store_true",
                        help="switch server reflection off")
    parser.add_argument("--tokens-file", default=_env("TMS_TOKENS_FILE"),
                        help="JSON bearer tokens with roles; unset = no authentication")
    parser.add_argument("--tls-cert", default=_env("TMS_TLS_CERT"))
    parser.add_argument("--tls-key", default=_env("TMS_TLS_KEY"))
    parser.add_argument("--tls-client-ca", default=_env("TMS_TLS_CLIENT_CA"),
                        help="require client certificates signed by this CA (mutual TLS)")
    parser.add_argument("--workers", type=int,
                        default=int(os.environ.get("TMS_API_WORKERS", "1")),
                        help="server processes sharing the port (SO_REUSEPORT): one Python "
                             "process is bound by its interpreter lock, a node has cores")
    parser.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--report-listen", default=_env("TMS_REPORT_LISTEN"),
                        help="host:port of the report intake (HTTP POST /v1/reports) for "
                             "engines' Iceberg metrics reporter; unset = off (docs/reads.md)")
    parser.add_argument("--allowed-locations", default=_env("TMS_ALLOWED_LOCATIONS"),
                        help="comma-separated location prefixes: the outer bound of every "
                             "catalog's allowed locations and every table's real location")
    args = parser.parse_args(argv)
    require(args, parser, "database_url")
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.tls_client_ca and not args.tls_cert:
        parser.error("--tls-client-ca needs --tls-cert and --tls-key")
    if not 1 <= args.workers <= MAX_WORKERS:
        parser.error(f"--workers must be between 1 and {MAX_WORKERS}")
    if args.report_listen:
        try:
            parse_listen(args.report_listen)
        except ValueError:
            parser.error(f"--report-listen: expected host:port, got {args.report_listen!r}")
    return args, parser


def supervise(argv: list[str], workers: int, metrics: str = "") -> int:
    """Run ``workers`` copies of this server on one port; stop them all on SIGTERM/SIGINT;
    if one dies, stop the others and exit with its code so the orchestrator restarts the pod."""
    cmd = [sys.executable, "-m", "tms_services.api", *argv, "--workers", "1", "--reuse-port"]
    stop = stop_event_on_signals()  # before the workers exist: a SIGTERM now still stops them
    procs = []
    for i in range(workers):  # worker i serves /metrics on the given port + i
        extra = []
        if metrics:
            host, port = parse_listen(metrics)
            extra = ["--metrics-listen", f"{host}:{port + i if port else 0}"]
        procs.append(subprocess.Popen([*cmd, *extra]))
    code = 0
    while not stop.is_set():
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            code = dead[0].returncode or 1
            break
        stop.wait(SUPERVISE_POLL_S)
    return stop_workers(procs, WORKER_STOP_GRACE_S) or code


def stop_workers(procs: Sequence[subprocess.Popen[Any]], grace_s: float) -> int:
    """SIGTERM every live worker, wait ``grace_s`` in all, then SIGKILL what is left.
    Returns EXIT_WORKER_KILLED when a worker had to be killed, else 0."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    code = 0
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"tms-api: worker {p.pid} did not stop within {grace_s:g} s of SIGTERM; "
                  "killing it", file=sys.stderr, flush=True)
            p.kill()
            p.wait()
            code = EXIT_WORKER_KILLED
    return code


@exit_if_unreachable("tms-api")
def main(argv: list[str] | None = None) -> None:
    args, parser = parse_args(argv)
    if args.workers > 1:
        raw = list(sys.argv[1:] if argv is None else argv)
        raw = [a for i, a in enumerate(raw) if a != "--workers" and not a.startswith(
            "--workers=") and (i == 0 or raw[i - 1] != "--workers")]
        sys.exit(supervise(raw, args.workers, args.metrics_listen))
    check_database(args.database_url)
    configure_logging("tms-api")
    start_metrics("tms-api", parser, args.metrics_listen)
    log = structlog.get_logger("tms.api")
    try:
        auth = (Authenticator.from_file(Path(args.tokens_file)) if args.tokens_file
                else Authenticator.disabled())
    except ValueError as e:
        parser.error(str(e))
    if not auth.enabled:
        log.warning("authentication is OFF: every caller is admin; set --tokens-file")
    tls = (TlsConfig(Path(args.tls_cert), Path(args.tls_key),
                     Path(args.tls_client_ca) if args.tls_client_ca else None)
           if args.tls_cert else None)
    allowlist = RegistrationAllowlist(tuple(_csv(args.allowed_locations)))
    for prefix in allowlist.locations:
        problem = _location_problem(prefix)
        if problem:
            parser.error(f"--allowed-locations: {problem}")
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url, max_size=API_POOL_SIZE,
                          timeout_s=API_POOL_TIMEOUT_S)
    server = ApiServer(store, load_formats(), args.listen,
                       reflection_enabled=not args.no_reflection, auth=auth,
                       allowlist=allowlist, tls=tls, reuse_port=args.reuse_port)
    server.start()
    reports = None
    if args.report_listen:
        host, port = parse_listen(args.report_listen)
        reports = ReportServer(ReportIntake(store), auth, host, port,
                               tls_cert=args.tls_cert, tls_key=args.tls_key,
                               reuse_port=args.reuse_port)
        reports.start()
    # What start-up built (modules, protobuf descriptors, the pool) lives as long as the
    # process: out of the collector's generations, a full collection no longer walks it.
    gc.freeze()
    stop.wait()
    if reports is not None:
        reports.stop()
    server.stop()
    store.close()


if __name__ == "__main__":
    main()
