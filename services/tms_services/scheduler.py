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


def parse_queue_priorities(raw: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, (x.strip() for x in raw.split(","))):
        name, sep, value = item.partition("=")
        problem = ValueError(f"--queue-priorities: expected queue=integer, got {item!r}")
        if not sep or not name.strip():
            raise problem
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise problem from None
    return out


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
    parser.add_argument("--queue-priorities", default=os.environ.get("TMS_QUEUE_PRIORITIES", ""),
                        help="queue=priority,... added to each table's priority, e.g. "
                             "'urgent=100,batch=-50'")
    args = parser.parse_args(argv)
    try:
        queue_priorities = parse_queue_priorities(args.queue_priorities)
    except ValueError as e:
        parser.error(str(e))
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
                                      args.operations_retention_s),
                  queue_priorities=queue_priorities).run(stop)
    finally:
        coordinator.stop()
        store.close()


if __name__ == "__main__":
    main()
