"""Retention: keeps the database bounded with 100,000 tables and streaming writers.

Run by the leader only, in small batches within a time budget, so pruning never holds long
locks or competes with the intake. Commit events are folded into per-table counters as they go
(commit counts stay exact); the last decision per (table, action) is kept by design, so
decisions need no pruning.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from tms.storage.roles import MaintenanceStore

DAY_S = 86_400
EVENTS_RETENTION_S = 7 * DAY_S
OPERATIONS_RETENTION_S = 30 * DAY_S
REQUESTS_RETENTION_S = 1 * DAY_S  # request_id replays are for client retries, not archives
PROCESSES_RETENTION_S = 3600.0  # heartbeat rows of processes gone this long
PRUNE_INTERVAL_S = 60.0
PRUNE_BATCH_ROWS = 1000
PRUNE_BUDGET_S = 2.0

log = structlog.get_logger("tms.scheduler.retention")


@dataclass(frozen=True)
class Retention:
    events_s: float = EVENTS_RETENTION_S
    operations_s: float = OPERATIONS_RETENTION_S
    requests_s: float = REQUESTS_RETENTION_S
    processes_s: float = PROCESSES_RETENTION_S
    batch: int = PRUNE_BATCH_ROWS
    budget_s: float = PRUNE_BUDGET_S

    def prune(self, store: MaintenanceStore, clock: Callable[[], float] = time.monotonic
              ) -> dict[str, int]:
        """Prune each kind batch by batch until it is done or the time budget is spent."""
        deadline = clock() + self.budget_s
        done: dict[str, int] = {}
        for what, keep_s in (("commit_events", self.events_s),
                             ("operations", self.operations_s),
                             ("requests", self.requests_s),
                             ("processes", self.processes_s)):
            total = 0
            while clock() < deadline:
                n = store.retention_prune(what, keep_s, self.batch)
                total += n
                if n < self.batch:
                    break
            done[what] = total
        if any(done.values()):
            log.info("pruned", **done)
        return done
