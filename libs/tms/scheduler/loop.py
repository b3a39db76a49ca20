"""The scheduler loop: take a batch of due tables of the shards this scheduler holds, decide
for each, queue what the format plugin calls for, and record every decision with its reason.

A table is due when it carries a "new commits" mark (set by the intake, consumed here when a
decision starts, set again by any commit arriving meanwhile) or its pull check is due
(next_check_at), so a lost notification delays maintenance but never stops it. The loop also
runs the lease reaper and retention on the elected leader.

The decisions of a batch run through a :class:`~tms.scheduler.concurrency.DecisionRunner`:
one after another while they are fast, on up to ``decision_threads`` threads (a bounded
number in flight per catalog) once they wait on a catalog or on storage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from tms.catalogs import CatalogCache
from tms.coordination import NUM_SHARDS, Coordinator
from tms.domain import Decision, DueTable, TableState
from tms.formats.base import TableFormatPlugin
from tms.liveness import Heartbeat
from tms.observability.metrics import instruments
from tms.policy.common import DEFAULT_PULL_INTERVAL_S
from tms.scheduler.checked import CheckedLocations
from tms.scheduler.concurrency import CATALOG_READS_IN_FLIGHT, DecisionRunner, Outcome
from tms.scheduler.decide import (
    INSPECT_FAILURE_RETRY_S,
    DecisionMaker,
    ZooKeeperLost,
    decision_span,
)
from tms.scheduler.history import HistorySettings
from tms.scheduler.located import Unsettled
from tms.scheduler.retention import PRUNE_INTERVAL_S, Retention
from tms.scheduler.written import WrittenDecisions
from tms.storage.roles import SchedulerStore

POLL_INTERVAL_S = 0.5
PULL_INTERVAL_S = float(DEFAULT_PULL_INTERVAL_S)
DUE_BATCH_SIZE = 100
REAP_INTERVAL_S = 5.0

log = structlog.get_logger("tms.scheduler")


class Scheduler(DecisionMaker):
    store: SchedulerStore

    def __init__(self, store: SchedulerStore, coordinator: Coordinator,
                 formats: dict[str, TableFormatPlugin], scheduler_id: str, *,
                 poll_interval_s: float = POLL_INTERVAL_S,
                 pull_interval_s: float = PULL_INTERVAL_S,
                 retention: Retention | None = None,
                 history: HistorySettings | None = None,
                 heartbeat: Heartbeat | None = None,
                 queue_priorities: dict[str, int] | None = None,
                 max_attempts_by_action: dict[str, int] | None = None,
                 decision_threads: int = 1,
                 catalog_reads_in_flight: int = CATALOG_READS_IN_FLIGHT,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.catalogs = CatalogCache(store.catalog_get)
        self.coordinator = coordinator
        self.formats = formats
        self.scheduler_id = scheduler_id
        self.poll_interval_s = poll_interval_s
        self.pull_interval_s = pull_interval_s
        self._clock = clock
        self._now = now
        self._last_reap = float("-inf")
        self._last_prune = float("-inf")
        self.retention = retention or Retention()
        self.queue_priorities = dict(queue_priorities or {})
        self.max_attempts_by_action = dict(max_attempts_by_action or {})
        self.decided = threading.Event()  # set after each decision: a signal for tests
        self.written = WrittenDecisions()  # an equal decision is not written again
        self.checked = CheckedLocations()  # a location checked from the same state, reused
        self.inspections = {}
        self.history = history or HistorySettings()
        self.heartbeat = heartbeat
        self.runner = DecisionRunner(decision_threads, catalog_reads_in_flight,
                                     stop_on=(ZooKeeperLost,))
        # a batch spread over threads should keep them all busy for a few rounds
        self.batch_size = DUE_BATCH_SIZE if decision_threads == 1 else max(
            DUE_BATCH_SIZE, 4 * decision_threads)

    def run(self, stop: threading.Event) -> None:
        log.info("scheduler started", scheduler=self.scheduler_id,
                 decision_threads=self.runner.threads)
        try:
            while not stop.is_set():
                try:
                    busy = self.run_once()
                except Exception:
                    log.exception("scheduler pass failed")
                    busy = 0
                if not busy:
                    stop.wait(self.poll_interval_s)
        finally:
            self.runner.close()

    def run_once(self) -> int:
        """One pass over the due tables; returns how many decisions it took."""
        if self.heartbeat is not None:
            self.heartbeat.tick()
        self._leader_duties()
        if not self.coordinator.healthy:
            self.written.holding(())  # the session may be lost: so may our shards
            return 0
        return self.decide_batch()

    def decide_batch(self) -> int:
        """A batch of due tables of the shards we hold, in three round trips plus one insert
        per queued operation, and no ZooKeeper request."""
        shards = self.coordinator.owned_shards()
        # shards are released only in owned_shards (None then): a change drops the memory
        self.written.holding(shards or ())
        if not shards:
            return 0
        batch = self.store.decision_begin_batch(sorted(shards), NUM_SHARDS, self.batch_size)
        if not batch:
            return 0
        now = self._now()
        pks = [due.table.pk for due in batch]
        last = self.store.operation_last_succeeded(pks)
        busy = self.store.operation_active_actions(pks)
        streaks = self.store.hold_streaks(pks)
        active = [due for due in batch if due.table.state is TableState.ACTIVE]
        quick = self.prepare_batch([due.table for due in active])

        def decide(due: DueTable) -> tuple[list[tuple[Decision, int | None]], float] | Unsettled:
            table = due.table
            try:
                with decision_span(table, due.traceparent):
                    return self._evaluate(table, now, last.get(table.pk, {}), defer=True,
                                          active=busy.get(table.pk, ()),
                                          streaks=streaks.get(table.pk))
            except ZooKeeperLost:
                raise
            except Exception:  # one table's fault must not stop its batch
                log.exception("decision failed", table=table.table_id)
                return [], INSPECT_FAILURE_RETRY_S

        outcome = self.runner.run(active, lambda due: due.table.catalog, decide,
                                  (lambda due: due.table.pk in quick) if quick else None)
        self._settle_locations(outcome)
        decisions: list[tuple[int, Decision, int | None]] = []
        checks: list[tuple[int, float]] = []
        for i, due in enumerate(active):  # in batch order, whatever order they finished in
            if i in outcome.results:
                taken, next_s = outcome.results[i]  # type: ignore[misc]  # settled
                decisions += [(due.table.pk, d, op) for d, op in taken]
                checks.append((due.table.pk, next_s))
            elif i in outcome.failures and not isinstance(outcome.failures[i], ZooKeeperLost):
                log.error("decision crashed", table=due.table.table_id,
                          error=repr(outcome.failures[i]))
        try:
            if outcome.stopped is not None or len(checks) < len(active):
                # interrupted (ZooKeeper lost): the tables not decided keep their marks
                decided = {pk for pk, _ in checks}
                rest = batch if outcome.stopped is not None else active
                for due in rest:
                    if due.table.pk not in decided and due.had_commits:
                        self.store.commits_mark_dirty(due.table.pk, due.traceparent)
        finally:
            if decisions or checks:
                changed = self.written.changed(decisions)
                self.store.decision_finish_batch(self.scheduler_id, changed, checks)
                self.written.wrote(changed)
            self._record_inspections([due.table.pk for due in active])
        if outcome.stopped is not None:
            raise outcome.stopped
        self.decided.set()
        return len(checks)

    def _record_inspections(self, pks: list[int]) -> None:
        """The batch's health and history rows in one statement (after its decisions, so a
        failure here costs the trend a point, never a decision)."""
        found = [i for i in (self.inspections.pop(pk, None) for pk in pks) if i is not None]
        self.inspections.clear()  # nothing of an earlier batch lingers
        if not found:
            return
        try:
            self.store.health_record_batch(found, self.history.min_spacing_s,
                                           self.history.keepalive_s)
        except Exception:
            log.exception("recording the batch's health failed", tables=len(found))

    def _settle_locations(self, outcome: Outcome[Any]) -> None:
        """The batch's tables whose location is new (first looks, moves) get it stored in
        one statement, in batch order, and only then what they call for queued (``settle``);
        if that fails, nothing is queued for them: decisions that failed, looked at again
        after INSPECT_FAILURE_RETRY_S like any other."""
        pending = sorted(i for i, r in outcome.results.items() if isinstance(r, Unsettled))
        if not pending:
            return
        try:
            settled = self.settle([outcome.results[i] for i in pending])
        except Exception:  # the statement failed: no location stored, nothing queued
            log.exception("storing the batch's new locations failed", tables=len(pending))
            for i in pending:
                outcome.results[i] = ([], INSPECT_FAILURE_RETRY_S)
            return
        for i, result in zip(pending, settled, strict=True):
            if isinstance(result, BaseException):
                del outcome.results[i]
                outcome.failures[i] = result
                if outcome.stopped is None:
                    outcome.stopped = result
            else:
                outcome.results[i] = result

    def _leader_duties(self) -> None:
        """The reaper often, retention pruning now and then: only on the elected leader."""
        now = self._clock()
        due_reap = now - self._last_reap >= REAP_INTERVAL_S
        due_prune = now - self._last_prune >= PRUNE_INTERVAL_S
        if not (due_reap or due_prune) or not self.coordinator.is_leader():
            return
        if due_reap:
            self._last_reap = now
            requeued, failed = self.store.operation_reap_expired()
            for what, ids in (("requeued", requeued), ("failed", failed)):
                if ids:
                    instruments().lease_expiries.add(len(ids), {"outcome": what})
            if requeued or failed:
                log.warning("expired leases reaped", requeued=requeued, failed=failed)
        if due_prune:
            self._last_prune = now
            self.retention.prune(self.store, self._clock)
            self.history.downsample(self.store, self._clock)
