"""Scrape-time gauges of a scheduler process: its ZooKeeper session, leadership and shards,
and — from the leader only, so one process reports them — queue depth and age and the tables
overdue for a check."""

from __future__ import annotations

from collections.abc import Iterable

from tms.coordination import Coordinator
from tms.observability.metrics import instruments, observe
from tms.storage.roles import SchedulerStore

OVERDUE_GRACE_S = 900.0  # a table whose check or commit waited this long is overdue


def register_scheduler_gauges(store: SchedulerStore, coordinator: Coordinator,
                              overdue_grace_s: float = OVERDUE_GRACE_S) -> None:
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
