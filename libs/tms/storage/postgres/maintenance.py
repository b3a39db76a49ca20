"""The leader's housekeeping (MaintenanceStore): the lease reaper, retention pruning, and the
figures the scheduler's gauges report."""

from __future__ import annotations

from typing import Any

from tms.domain import OperationState
from tms.storage.postgres.db import Db

PRUNABLE = ("commit_events", "operations", "requests", "processes")


class MaintenanceMixin(Db):
    def operation_reap_expired(self) -> tuple[list[int], list[int]]:
        found = self._all("operation_reap_expired", {})
        requeued = [int(r["id"]) for r in found if r["state"] == OperationState.QUEUED.value]
        ended = [int(r["id"]) for r in found if r["state"] != OperationState.QUEUED.value]
        return requeued, ended

    def retention_prune(self, what: str, retention_s: float, batch: int) -> int:
        """Delete one batch of ``what`` older than the retention; the number of rows
        removed."""
        if what not in PRUNABLE:
            raise ValueError(f"nothing called {what!r} to prune; one of {PRUNABLE}")
        row = self._one(f"retention_prune_{what}", {"retention_s": retention_s,
                                                    "batch": batch})
        return int(row["pruned"]) if row else 0

    def queue_stats(self) -> list[dict[str, Any]]:
        return self._all("queue_stats", {})

    def table_count_overdue(self, grace_s: float) -> int:
        row = self._one("table_count_overdue", {"grace_s": grace_s})
        return int(row["n"]) if row else 0
