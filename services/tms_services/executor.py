"""tms-executor: claims queued operations and runs them with spark-submit."""

from __future__ import annotations

import os
from pathlib import Path

from tms.engines.spark_submit import SparkSubmitEngine
from tms.executor.loop import (
    HEARTBEAT_INTERVAL_S,
    LEASE_TIMEOUT_S,
    POLL_INTERVAL_S,
    SHUTDOWN_GRACE_S,
    Executor,
)
from tms.formats.registry import load_formats
from tms.observability import configure_logging
from tms.spark.settings import SparkSettings
from tms.storage.postgres import PostgresStore
from tms_services.common import base_parser, member_id, require, stop_event_on_signals


def main(argv: list[str] | None = None) -> None:
    parser = base_parser("TMS executor")
    parser.add_argument("--id", default=member_id("executor"))
    parser.add_argument("--home", default=os.environ.get("TMS_HOME", ".tms"),
                        help="TMS home: Spark jars and job work directories (env TMS_HOME)")
    parser.add_argument("--workdir", default=None,
                        help="job work directories (default: HOME/work/ID)")
    parser.add_argument("--lease-s", type=float, default=LEASE_TIMEOUT_S)
    parser.add_argument("--heartbeat-s", type=float, default=HEARTBEAT_INTERVAL_S)
    parser.add_argument("--poll-interval-s", type=float, default=POLL_INTERVAL_S)
    parser.add_argument("--shutdown-grace-s", type=float, default=SHUTDOWN_GRACE_S,
                        help="on SIGTERM, let a running job finish this long, then hand it back")
    args = parser.parse_args(argv)
    require(args, parser, "database_url")
    configure_logging("tms-executor")
    home = Path(args.home).resolve()
    try:
        settings = SparkSettings.from_env(home)
    except ValueError as e:
        parser.error(str(e))
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url, max_size=4)
    workdir = Path(args.workdir) if args.workdir else home / "work" / args.id
    try:
        Executor(store, load_formats(), SparkSubmitEngine(settings), args.id, workdir,
                 lease_s=args.lease_s, heartbeat_s=args.heartbeat_s,
                 poll_interval_s=args.poll_interval_s,
                 shutdown_grace_s=args.shutdown_grace_s).run(stop)
    finally:
        store.close()


if __name__ == "__main__":
    main()
