"""tms-scheduler: decides what each table needs; many may run, ZooKeeper keeps them apart."""

from __future__ import annotations

import os
import threading

from tms.coordination import SHARD_SETTLE_S, ZK_SESSION_TIMEOUT_S, Coordinator
from tms.formats.registry import load_formats
from tms.liveness import Heartbeat
from tms.observability.logs import configure_logging
from tms.policy.common import DEFAULT_MAX_ATTEMPTS, MAX_MAX_ATTEMPTS
from tms.scheduler.concurrency import (
    CATALOG_READS_IN_FLIGHT,
    DECISION_THREADS,
    MAX_CATALOG_READS_IN_FLIGHT,
    MAX_DECISION_THREADS,
)
from tms.scheduler.discovery import DISCOVERY_POLL_INTERVAL_S, Discovery
from tms.scheduler.gauges import (
    ENV_PER_TABLE_HEALTH,
    MAX_PER_TABLE_SERIES,
    register_scheduler_gauges,
)
from tms.scheduler.loop import POLL_INTERVAL_S, PULL_INTERVAL_S, Scheduler
from tms.scheduler.retention import EVENTS_RETENTION_S, OPERATIONS_RETENTION_S, Retention
from tms.storage.postgres import PostgresStore
from tms.strict import parse_int
from tms_services.common import (
    ENV_ZOOKEEPER,
    base_parser,
    check_database,
    exit_if_unreachable,
    member_id,
    reaching,
    require,
    start_metrics,
    stop_event_on_signals,
)

DISCOVERY_JOIN_TIMEOUT_S = 10.0  # at shutdown, how long a listing in progress may finish
MIN_DISCOVERY_POLL_S = 0.1
MAX_DISCOVERY_POLL_S = 3600.0


def parse_int_map(raw: str, flag: str = "--queue-priorities", what: str = "queue",
                  minimum: int | None = None, maximum: int | None = None) -> dict[str, int]:
    """``name=integer,...`` as a dict; ValueError names the flag and the bad item."""
    out: dict[str, int] = {}
    for item in filter(None, (x.strip() for x in raw.split(","))):
        name, sep, value = item.partition("=")
        problem = ValueError(f"{flag}: expected {what}=integer, got {item!r}")
        if not sep or not name.strip():
            raise problem
        try:
            number = int(value)
        except ValueError:
            raise problem from None
        if (minimum is not None and number < minimum) or (maximum is not None
                                                          and number > maximum):
            raise ValueError(f"{flag}: {name.strip()} must be within [{minimum}, {maximum}], "
                             f"got {number}")
        out[name.strip()] = number
    return out


def parse_queue_priorities(raw: str) -> dict[str, int]:
    return parse_int_map(raw)


def parse_count(raw: str, flag: str, maximum: int) -> int:
    """A flag's (or its environment variable's) count, ASCII digits from 1 to ``maximum``;
    ValueError names the flag."""
    try:
        return parse_int(raw, 1, maximum)
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None


@exit_if_unreachable("tms-scheduler")
def main(argv: list[str] | None = None) -> None:
    parser = base_parser("TMS scheduler")
    parser.add_argument("--zookeeper", default=os.environ.get(ENV_ZOOKEEPER),
                        help=f"ZooKeeper hosts, host:port[,host:port] (env {ENV_ZOOKEEPER})")
    parser.add_argument("--id", default=member_id("scheduler"))
    parser.add_argument("--zk-session-timeout-s", type=float, default=ZK_SESSION_TIMEOUT_S,
                        help="ZooKeeper session timeout: how long a partitioned scheduler keeps "
                             "its shards")
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
    parser.add_argument("--max-attempts", default=os.environ.get("TMS_MAX_ATTEMPTS", ""),
                        help="action=attempts,... for operations the scheduler queues (default "
                             f"{DEFAULT_MAX_ATTEMPTS}; a table's execution.max-attempts wins), "
                             "e.g. 'compaction=5,remove_orphan_files=1'")
    parser.add_argument("--discovery-poll-interval-s", type=float,
                        default=DISCOVERY_POLL_INTERVAL_S,
                        help="while leading, look this often for catalogs due for discovery "
                             "(each catalog sets its own listing interval)")
    parser.add_argument("--shard-settle-s", type=float, default=SHARD_SETTLE_S,
                        help="how long the set of schedulers must stay unchanged before the "
                             "shards are divided again")
    parser.add_argument("--decision-threads",
                        default=os.environ.get("TMS_DECISION_THREADS", str(DECISION_THREADS)),
                        help="threads deciding at once when inspections wait on a catalog or "
                             f"on storage (env TMS_DECISION_THREADS, default {DECISION_THREADS}, "
                             "1 decides one table after another)")
    parser.add_argument("--catalog-reads-in-flight",
                        default=os.environ.get("TMS_CATALOG_READS_IN_FLIGHT",
                                               str(CATALOG_READS_IN_FLIGHT)),
                        help="decisions (so metadata reads) in flight per catalog at most (env "
                             "TMS_CATALOG_READS_IN_FLIGHT, default "
                             f"{CATALOG_READS_IN_FLIGHT})")
    parser.add_argument("--metrics-per-table-health", action="store_true",
                        help="export each table's health score as its own series (at most "
                             f"{MAX_PER_TABLE_SERIES:,}; also env {ENV_PER_TABLE_HEALTH}=1): "
                             "off by default, since 100,000 tables are 100,000 series")
    args = parser.parse_args(argv)
    try:
        decision_threads = parse_count(args.decision_threads, "--decision-threads",
                                       MAX_DECISION_THREADS)
        reads_in_flight = parse_count(args.catalog_reads_in_flight,
                                      "--catalog-reads-in-flight", MAX_CATALOG_READS_IN_FLIGHT)
        queue_priorities = parse_queue_priorities(args.queue_priorities)
        max_attempts = parse_int_map(args.max_attempts, "--max-attempts", "action", 1,
                                     MAX_MAX_ATTEMPTS)
    except ValueError as e:
        parser.error(str(e))
    if not MIN_DISCOVERY_POLL_S <= args.discovery_poll_interval_s <= MAX_DISCOVERY_POLL_S:
        parser.error(f"--discovery-poll-interval-s must be within [{MIN_DISCOVERY_POLL_S}, "
                     f"{MAX_DISCOVERY_POLL_S}]")
    require(args, parser, "database_url", "zookeeper")
    check_database(args.database_url)
    configure_logging("tms-scheduler")
    start_metrics("tms-scheduler", parser, args.metrics_listen)
    stop = stop_event_on_signals()
    store = PostgresStore(args.database_url)
    coordinator = Coordinator(args.zookeeper, args.id, args.zk_session_timeout_s,
                              args.shard_settle_s)
    with reaching(f"ZooKeeper at {args.zookeeper}"):
        coordinator.start()
    register_scheduler_gauges(store, coordinator,
                              per_table_health=os.environ.get(ENV_PER_TABLE_HEALTH) == "1"
                              or args.metrics_per_table_health)
    # Listing a catalog can take a while: its own thread, so decisions never wait for it.
    # Leadership is taken by the scheduler loop (is_leader); this thread only reads it.
    discovery = threading.Thread(
        target=Discovery(store, load_formats(),
                         poll_interval_s=args.discovery_poll_interval_s).run,
        args=(stop, lambda: coordinator.leads), name="tms-discovery", daemon=True)
    discovery.start()
    heartbeat = Heartbeat(store, args.id, "scheduler", lambda: (
        coordinator.leads, tuple(sorted(coordinator.held_shards)), ()))
    try:
        Scheduler(store, coordinator, load_formats(), args.id,
                  poll_interval_s=args.poll_interval_s,
                  pull_interval_s=args.pull_interval_s,
                  retention=Retention(args.events_retention_s,
                                      args.operations_retention_s),
                  queue_priorities=queue_priorities,
                  max_attempts_by_action=max_attempts,
                  decision_threads=decision_threads,
                  catalog_reads_in_flight=reads_in_flight,
                  heartbeat=heartbeat).run(stop)
    finally:
        stop.set()
        heartbeat.forget()  # a clean stop is not a death: the row goes now
        discovery.join(DISCOVERY_JOIN_TIMEOUT_S)
        coordinator.stop()
        store.close()


if __name__ == "__main__":
    main()
