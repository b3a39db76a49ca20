"""tms-executor: claims queued operations and runs them on Spark (cold spark-submit or a warm
driver, per queue), retrying failures with backoff."""

from __future__ import annotations

import os
from pathlib import Path

from tms.engines.profiles import ENGINE_COLD, EngineRouter, QueueProfile, load_profiles
from tms.executor.loop import (
    HEARTBEAT_INTERVAL_S,
    LEASE_TIMEOUT_S,
    POLL_INTERVAL_S,
    SHUTDOWN_GRACE_S,
    Executor,
)
from tms.executor.retry import RETRY_BASE_DELAY_S, RETRY_MAX_DELAY_S, RetryPolicy
from tms.formats.registry import load_formats
from tms.observability import configure_logging
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
    parser.add_argument("--lease-s", type=float, default=LEASE_TIMEOUT_S)
    parser.add_argument("--heartbeat-s", type=float, default=HEARTBEAT_INTERVAL_S)
    parser.add_argument("--poll-interval-s", type=float, default=POLL_INTERVAL_S)
    parser.add_argument("--shutdown-grace-s", type=float, default=SHUTDOWN_GRACE_S,
                        help="on SIGTERM, let a running job finish this long, then hand it back")
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
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    try:
        retry = RetryPolicy(args.retry_base_delay_s, args.retry_max_delay_s)
        router = make_router(SparkSettings.from_env(home),
                             Path(args.engine_config) if args.engine_config else None, workdir)
        executor_kw = dict(lease_s=args.lease_s, heartbeat_s=args.heartbeat_s)
        if args.lease_s < 3 * args.heartbeat_s:
            raise ValueError("--lease-s must be at least 3 x --heartbeat-s")
    except ValueError as e:
        parser.error(str(e))
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url, max_size=4)
    try:
        Executor(store, load_formats(), router, args.id, workdir, **executor_kw,
                 poll_interval_s=args.poll_interval_s,
                 shutdown_grace_s=args.shutdown_grace_s, queues=queues or None,
                 retry=retry).run(stop)
    finally:
        router.close()
        store.close()


if __name__ == "__main__":
    main()
