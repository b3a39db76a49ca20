"""tms-executor: claims queued operations and runs them on Spark (cold spark-submit or a warm
driver, per queue), retrying failures with backoff."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tms.domain.jobs import ApiEndpoint
from tms.engines.cold_cds import CDS_DIR_NAME
from tms.engines.profiles import ENGINE_COLD, EngineRouter, QueueProfile, load_profiles
from tms.engines.spark_submit import ENV_CDS_DIR
from tms.executor.loop import (
    ATTEMPT_TIMEOUT_S,
    HEARTBEAT_INTERVAL_S,
    LEASE_TIMEOUT_S,
    POLL_INTERVAL_S,
    SHUTDOWN_GRACE_S,
    Executor,
)
from tms.executor.retry import RETRY_BASE_DELAY_S, RETRY_MAX_DELAY_S, RetryPolicy
from tms.formats.registry import load_formats
from tms.liveness import Heartbeat
from tms.observability.logs import configure_logging
from tms.spark.settings import SparkSettings
from tms.storage.postgres import PostgresStore
from tms_services.common import (
    base_parser,
    check_database,
    exit_if_unreachable,
    member_id,
    require,
    start_metrics,
    stop_event_on_signals,
)

ENV_ENGINE_CONFIG = "TMS_ENGINE_CONFIG"
ENV_QUEUES = "TMS_EXECUTOR_QUEUES"
ENV_API_TARGET = "TMS_API_TARGET"
ENV_API_CA_FILE = "TMS_API_CA_FILE"
ENV_API_SERVER_NAME = "TMS_API_SERVER_NAME"
ENV_ATTEMPT_TIMEOUT = "TMS_ATTEMPT_TIMEOUT_S"
MAX_ATTEMPT_TIMEOUT_S = 7 * 24 * 3600.0  # a week: past that a job is not maintenance


def attempt_timeout(raw: str) -> float:
    """``--attempt-timeout-s``: seconds, finite, above 0 and at most a week."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {raw[:40]!r}") from None
    if not 0 < value <= MAX_ATTEMPT_TIMEOUT_S:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(
            f"must be above 0 and at most {MAX_ATTEMPT_TIMEOUT_S:g} s, got {raw[:40]!r}")
    return value


def make_router(settings: SparkSettings, config: Path | None, workdir: Path) -> EngineRouter:
    """Engines per queue from the configuration file (if any) over the environment's Spark
    settings, each built through its ``tms.engines`` entry point; engine files (the warm
    driver's log) go under ``workdir``."""
    queues: dict[str, QueueProfile] = {}
    if config is None:
        default = QueueProfile(ENGINE_COLD, settings)
    else:
        default, queues = load_profiles(config, settings)
    return EngineRouter.from_entry_points(default, queues, workdir)


def api_endpoint(target: str, ca_file: str | None, server_name: str | None,
                 router: EngineRouter) -> ApiEndpoint | None:
    """Where jobs report their results; ValueError when a queue runs its drivers in cluster
    mode (they cannot write a file the executor reads) and no target is given."""
    profiles = [router.default, *router.queues.values()]
    if not target:
        if any(p.settings.deploy_mode == "cluster" for p in profiles):
            raise ValueError(f"--api-target (env {ENV_API_TARGET}) is required: a queue runs "
                             "its Spark drivers in deploy mode 'cluster', and they report "
                             "their results through the TMS API")
        return None
    if ca_file and not Path(ca_file).is_file():
        raise ValueError(f"--api-ca-file: not a file: {ca_file}")
    return ApiEndpoint(target, ca_file or None, server_name or None)


@exit_if_unreachable("tms-executor")
def main(argv: list[str] | None = None) -> None:
    parser = base_parser("TMS executor")
    parser.add_argument("--id", default=member_id("executor"))
    parser.add_argument("--home", default=os.environ.get("TMS_HOME", ".tms"),
                        help="TMS home: Spark jars and job work directories (env TMS_HOME)")
    parser.add_argument("--workdir", default=None,
                        help="job work directories (default: HOME/work/ID)")
    parser.add_argument("--queues", default=os.environ.get(ENV_QUEUES, ""),
                        help=f"serve only these queues, comma-separated (env {ENV_QUEUES}; "
                             "default: every queue)")
    parser.add_argument("--engine-config", default=os.environ.get(ENV_ENGINE_CONFIG),
                        help="TOML file: engine (a tms.engines entry point: spark-submit, "
                             "warm-spark) and Spark settings per queue "
                             f"(env {ENV_ENGINE_CONFIG})")
    parser.add_argument("--api-target", default=os.environ.get(ENV_API_TARGET, ""),
                        help="host:port of the TMS API as Spark drivers reach it: jobs report "
                             "their results there (env " + ENV_API_TARGET + "; required for "
                             "deploy mode cluster; unset: client-mode jobs write a local "
                             "result file)")
    parser.add_argument("--api-ca-file", default=os.environ.get(ENV_API_CA_FILE),
                        help="CA certificate (PEM) of a TLS API, a path the driver can read "
                             f"(env {ENV_API_CA_FILE})")
    parser.add_argument("--api-server-name", default=os.environ.get(ENV_API_SERVER_NAME),
                        help="the API certificate's name when it differs from the target's "
                             f"host (env {ENV_API_SERVER_NAME})")
    parser.add_argument("--lease-s", type=float, default=LEASE_TIMEOUT_S)
    parser.add_argument("--heartbeat-s", type=float, default=HEARTBEAT_INTERVAL_S)
    parser.add_argument("--poll-interval-s", type=float, default=POLL_INTERVAL_S)
    parser.add_argument("--shutdown-grace-s", type=float, default=SHUTDOWN_GRACE_S,
                        help="on SIGTERM, let a running job finish this long, then hand it back")
    parser.add_argument("--attempt-timeout-s", type=attempt_timeout,
                        default=os.environ.get(ENV_ATTEMPT_TIMEOUT, str(ATTEMPT_TIMEOUT_S)),
                        help="stop a job that runs longer than this and fail its operation, "
                             f"not retried (env {ENV_ATTEMPT_TIMEOUT}; default "
                             f"{ATTEMPT_TIMEOUT_S:g} s)")
    parser.add_argument("--retry-base-delay-s", type=float, default=RETRY_BASE_DELAY_S,
                        help="wait after a failed first attempt; doubles with each failure")
    parser.add_argument("--retry-max-delay-s", type=float, default=RETRY_MAX_DELAY_S,
                        help="the longest wait between attempts")
    args = parser.parse_args(argv)
    require(args, parser, "database_url")
    check_database(args.database_url)
    configure_logging("tms-executor")
    start_metrics("tms-executor", parser, args.metrics_listen)
    home = Path(args.home).resolve()
    workdir = Path(args.workdir) if args.workdir else home / "work" / args.id
    # the cold driver's class-data archives: one per jar set for all of this home's executors
    # (an executor's id, hence its work directory, changes with every start)
    os.environ.setdefault(ENV_CDS_DIR, str(home / CDS_DIR_NAME))
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    try:
        retry = RetryPolicy(args.retry_base_delay_s, args.retry_max_delay_s)
        router = make_router(SparkSettings.from_env(home),
                             Path(args.engine_config) if args.engine_config else None, workdir)
        api = api_endpoint(args.api_target.strip(), args.api_ca_file, args.api_server_name,
                           router)
        executor_kw = dict(lease_s=args.lease_s, heartbeat_s=args.heartbeat_s)
        if args.lease_s < 3 * args.heartbeat_s:
            raise ValueError("--lease-s must be at least 3 x --heartbeat-s")
    except ValueError as e:
        parser.error(str(e))
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url, max_size=4)
    try:
        executor = Executor(store, load_formats(), router, args.id, workdir, **executor_kw,
                            poll_interval_s=args.poll_interval_s,
                            shutdown_grace_s=args.shutdown_grace_s,
                            attempt_timeout_s=args.attempt_timeout_s, queues=queues or None,
                            retry=retry, api=api)
        executor.liveness = Heartbeat(store, args.id, "executor", executor.liveness_state,
                                      interval_s=args.heartbeat_s)
        executor.run(stop)
    finally:
        router.close()
        store.close()


if __name__ == "__main__":
    main()
