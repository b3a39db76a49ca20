"""Scrape-time gauges of a scheduler process: its ZooKeeper session, leadership and shards,
and — from the leader only, so one process reports them — queue depth and age and the tables
overdue for a check."""

from __future__ import annotations

from collections.abc import Iterable

from tms.coordination import Coordinator
from tms.health.score import BANDS, UNKNOWN_BAND
from tms.observability.metrics import instruments, observe
from tms.storage.roles import SchedulerStore

OVERDUE_GRACE_S = 900.0  # a table whose check or commit waited this long is overdue
# per-table health series are opt-in (100,000 tables are 100,000 series) and capped even then
ENV_PER_TABLE_HEALTH = "TMS_METRICS_PER_TABLE_HEALTH"
MAX_PER_TABLE_SERIES = 10_000


def register_scheduler_gauges(store: SchedulerStore, coordinator: Coordinator,
                              overdue_grace_s: float = OVERDUE_GRACE_S,
                              per_table_health: bool = False) -> None:
    member = {"member": coordinator.member_id}
    for outcome in ("requeued", "failed"):  # present from the start, so rate() works at once
        instruments().lease_expiries.add(0, {"outcome": outcome})

    def session() -> Iterable[tuple[float, dict[str, str]]]:
        return [(1.0 if coordinator.healthy else 0.0, member)]

    def leader() -> Iterable[tuple[float, dict[str, str]]]:
        return [(1.0 if coordinator.leads else 0.0, member)]

    def shards() -> Iterable[tuple[float, dict[str, str]]]:
        return [(float(len(coordinator.held_shards)), member)]

    def depth() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(r["queued"]), {"queue": r["queue"], "action": r["action"]})
                for r in store.queue_stats()]

    def age() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(r["oldest_age_s"]), {"queue": r["queue"], "action": r["action"]})
                for r in store.queue_stats()]

    def overdue() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(store.table_count_overdue(overdue_grace_s)), {})]

    def held() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(n), {"action": action}) for action, n in store.hold_counts().items()]

    def health_buckets() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(n), {"le": str(le)}) for le, n in store.health_histogram().items()]

    def health_bands() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        found = store.health_bands()
        return [(float(found.get(name, 0)), {"band": name})
                for name in (*(b[0] for b in BANDS), UNKNOWN_BAND)]

    def per_table() -> Iterable[tuple[float, dict[str, str]]]:
        if not coordinator.leads:
            return []
        return [(float(score), {"table": table_id})
                for table_id, score in store.health_scores(MAX_PER_TABLE_SERIES)]

    observe("tms_table_health_bucket",
            "tables whose health score is at most le (cumulative, like a histogram's "
            "buckets; leader reports)", health_buckets)
    observe("tms_tables_by_health_band",
            "tables per health band: healthy 80-100, fair 50-79, poor 0-49, unknown never "
            "inspected (leader reports)", health_bands)
    if per_table_health:
        observe("tms_table_health_score",
                f"each table's health score, lowest {MAX_PER_TABLE_SERIES} (opt-in: "
                f"{ENV_PER_TABLE_HEALTH}=1; leader reports)", per_table)
    observe("tms_zookeeper_session_up", "1 while this scheduler's ZooKeeper session is usable",
            session)
    observe("tms_scheduler_leader", "1 on the scheduler that runs the reaper and retention",
            leader)
    observe("tms_scheduler_shards_held", "table shards this scheduler decides for", shards)
    observe("tms_queue_depth", "QUEUED operations by queue and action (leader reports)", depth)
    observe("tms_queue_oldest_age_seconds",
            "age of the oldest QUEUED operation by queue and action (leader reports)", age)
    observe("tms_tables_overdue",
            f"active tables not checked within {overdue_grace_s:.0f} s of being due "
            "(leader reports)", overdue)
    observe("tms_actions_held",
            "actions held after failing too often in a row, by action (leader reports)", held)
