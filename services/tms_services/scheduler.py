"""tms-scheduler: decides what each table needs; many may run, ZooKeeper keeps them apart."""

from __future__ import annotations

import os

from tms.coordination import ZK_SESSION_TIMEOUT_S, Coordinator
from tms.formats.registry import load_formats
from tms.observability import configure_logging
from tms.scheduler.loop import POLL_INTERVAL_S, PULL_INTERVAL_S, Scheduler
from tms.scheduler.retention import EVENTS_RETENTION_S, OPERATIONS_RETENTION_S, Retention
from tms.storage.postgres import PostgresStore
from tms_services.common import (
    ENV_ZOOKEEPER,
    base_parser,
    member_id,
    require,
    stop_event_on_signals,
)


def main(argv: list[str] | None = None) -> None:
    parser = base_parser("TMS scheduler")
    parser.add_argument("--zookeeper", default=os.environ.get(ENV_ZOOKEEPER),
                        help=f"ZooKeeper hosts, host:port[,host:port] (env {ENV_ZOOKEEPER})")
    parser.add_argument("--id", default=member_id("scheduler"))
    parser.add_argument("--zk-session-timeout-s", type=float, default=ZK_SESSION_TIMEOUT_S,
                        help="ZooKeeper session timeout: how long a partitioned scheduler keeps "
                             "its locks")
    parser.add_argument("--poll-interval-s", type=float, default=POLL_INTERVAL_S)
    parser.add_argument("--pull-interval-s", type=float, default=PULL_INTERVAL_S,
                        help="inspect a table at least this often even without commits")
    parser.add_argument("--events-retention-s", type=float, default=EVENTS_RETENTION_S,
                        help="commit events older than this are folded into counters")
    parser.add_argument("--operations-retention-s", type=float,
                        default=OPERATIONS_RETENTION_S,
                        help="finished operations older than this are deleted")
    args = parser.parse_args(argv)
    require(args, parser, "database_url", "zookeeper")
    configure_logging("tms-scheduler")
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url)
    coordinator = Coordinator(args.zookeeper, args.id, args.zk_session_timeout_s)
    coordinator.start()
    try:
        Scheduler(store, coordinator, load_formats(), args.id,
                  poll_interval_s=args.poll_interval_s,
                  pull_interval_s=args.pull_interval_s,
                  retention=Retention(args.events_retention_s,
                                      args.operations_retention_s)).run(stop)
    finally:
        coordinator.stop()
        store.close()


if __name__ == "__main__":
    main()
