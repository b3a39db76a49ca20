"""In-memory fakes of the store, coordinator, format plugin and engine, for loop unit tests.
Integration tests use the real ones."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.catalogs import CatalogAccess
from tms.domain import (
    Catalog,
    CatalogSpec,
    CatalogType,
    Decision,
    DiscoveryStatus,
    DueTable,
    JobSpec,
    LeaseStatus,
    Operation,
    OperationLease,
    OperationResult,
    OperationState,
    OperationWork,
    Outcome,
    Table,
    TableState,
)
from tms.domain.holds import Streak
from tms.engines.base import EngineResult
from tms.formats.base import TableFormatPlugin
from tms.storage.roles import EnqueueParams

NOW = datetime(2026, 6, 1, tzinfo=UTC)
FAKE_ROOT = "/fake-lake"  # where FakeFormat's tables live; the fake catalog allows it


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def make_access(*allowed: str) -> CatalogAccess:
    """An opened catalog of file-system tables allowed under ``allowed`` (default /)."""
    return CatalogAccess("c", CatalogType.HADOOP, {}, {}, allowed or ("/",))


def make_catalog(catalog_id: str = "c", **spec: Any) -> Catalog:
    fields: dict[str, Any] = dict(type=CatalogType.HADOOP, allowed_locations=(FAKE_ROOT,))
    fields.update(spec)
    return Catalog(pk=1, spec=CatalogSpec(catalog_id, **fields), status=DiscoveryStatus(),
                   created_at=NOW, updated_at=NOW)


def make_table(pk: int = 1, state: TableState = TableState.ACTIVE, **kw: Any) -> Table:
    base: dict[str, Any] = dict(
        pk=pk, table_id=f"t{pk}", format="fake", catalog="c", namespace="", table_name="t",
        base_path="", owner="", queue="default", priority=0, policy={},
        state=state, created_at=NOW, updated_at=NOW)
    base.update(kw)
    return Table(**base)


def make_op(op_id: int = 1, attempt: int = 1, max_attempts: int = 3, *,
            action: str = "compaction", state: OperationState = OperationState.RUNNING,
            params: dict[str, Any] | None = None, metrics: dict[str, Any] | None = None,
            finished_at: datetime | None = None, handed_back: int = 0,
            table_pk: int = 1) -> Operation:
    return Operation(
        id=op_id, table_pk=table_pk, table_id=f"t{table_pk}", action=action, state=state,
        queue="default", priority=0, created_at=NOW,
        work=OperationWork("policy", "r", params or {}, metrics or {}),
        lease=OperationLease(attempt=attempt, max_attempts=max_attempts,
                             handed_back=handed_back, owner="e1", expires_at=NOW,
                             started_at=NOW),
        outcome=OperationResult(finished_at=finished_at))


@dataclass
class FakeStore:
    """The roles the scheduler and the executor use (DecisionStore, MaintenanceStore,
    ExecutionStore), in memory."""

    tables: dict[int, Table] = field(default_factory=dict)
    next_checks: dict[int, datetime] = field(default_factory=dict)
    dirty: set[int] = field(default_factory=set)
    priorities: list[int | None] = field(default_factory=list)
    ops: list[tuple[int, Decision]] = field(default_factory=list)
    decisions: list[tuple[int, Decision, int | None]] = field(default_factory=list)
    finished_decisions: list[tuple[int, float]] = field(default_factory=list)
    enqueued: list[EnqueueParams] = field(default_factory=list)
    to_claim: list[Operation] = field(default_factory=list)
    finished: list[tuple[Operation, Outcome]] = field(default_factory=list)
    renew_result: LeaseStatus = LeaseStatus.HELD
    renewals: int = 0
    handles: list[str] = field(default_factory=list)
    progress: list[tuple[int, int, str, dict[str, Any]]] = field(default_factory=list)
    progress_error: Exception | None = None
    released: list[tuple[Operation, str]] = field(default_factory=list)
    retried: list[tuple[Operation, Outcome, float]] = field(default_factory=list)
    streaks: dict[int, dict[str, Streak]] = field(default_factory=dict)
    holds_placed: list[tuple[Streak, int, datetime]] = field(default_factory=list)
    holds_released: list[tuple[Streak, str]] = field(default_factory=list)
    skipped: list[tuple[Operation, str, dict[str, Any] | None]] = field(default_factory=list)
    last_succeeded: dict[int, dict[str, Operation]] = field(default_factory=dict)
    claimed_queues: list[tuple[str, ...] | None] = field(default_factory=list)
    catalogs: dict[str, Catalog] = field(default_factory=lambda: {"c": make_catalog()})
    locations: dict[int, str] = field(default_factory=dict)  # what table_set_location stored
    location_batches: list[list[tuple[int, str]]] = field(default_factory=list)
    enqueue_attempts: int = 0
    inspections: list[Any] = field(default_factory=list)  # what health_record_batch got
    beats: list[Any] = field(default_factory=list)  # heartbeat_record's rows

    db_now: datetime = NOW  # what PostgreSQL's now() would say

    def _due(self, pk: int) -> bool:
        table = self.tables.get(pk)
        return pk in self.dirty or (
            table is not None and table.state is TableState.ACTIVE
            and self.next_checks.get(pk, NOW + timedelta(hours=1)) <= self.db_now)

    def catalog_get(self, catalog_id: str) -> Catalog | None:
        return self.catalogs.get(catalog_id)

    def table_set_location(self, table_pk: int, location: str) -> str | None:
        for pk, other in self.locations.items():
            if pk != table_pk and _overlap(other, location):
                return f"t{pk}"
        self.locations[table_pk] = location
        return None

    def table_pause_refused(self, table_pk: int) -> bool:
        table = self.tables.get(table_pk)
        if table is None or table.state is not TableState.ACTIVE:
            return False
        self.tables[table_pk] = replace(table, state=TableState.PAUSED)
        return True

    def table_set_locations(self, locations: Sequence[tuple[int, str]]) -> dict[int, str]:
        self.location_batches.append(list(locations))
        clashes: dict[int, str] = {}
        for i, (pk, loc) in enumerate(locations):
            earlier = [p for p, o in locations[:i] if _overlap(o, loc)]
            if earlier:
                clashes[pk] = f"t{earlier[0]}"
                continue
            other = self.table_set_location(pk, loc)
            if other is not None:
                clashes[pk] = other
        return clashes

    # DecisionStore --------------------------------------------------------------------------
    def decision_begin_batch(self, shards: list[int], num_shards: int, limit: int
                             ) -> list[DueTable]:
        due = sorted(pk for pk in set(self.tables) | self.dirty
                     if pk % num_shards in shards and self._due(pk))
        out = []
        for pk in due[:limit]:
            had = self.take_dirty(pk)
            if pk in self.tables:
                out.append(DueTable(self.tables[pk], had, None))
        return out

    def operation_last_succeeded(self, pks: list[int]) -> dict[int, dict[str, Operation]]:
        return {pk: self.last_succeeded[pk] for pk in pks if pk in self.last_succeeded}

    def decision_finish_batch(self, scheduler_id: str,
                              decisions: list[tuple[int, Decision, int | None]],
                              next_checks: list[tuple[int, float]]) -> None:
        self.decisions += decisions
        self.finished_decisions += next_checks

    def take_dirty(self, pk: int) -> bool:
        had = pk in self.dirty
        self.dirty.discard(pk)
        return had

    def commits_mark_dirty(self, pk: int, traceparent: str | None = None) -> None:
        self.dirty.add(pk)

    def hold_streaks(self, pks: Sequence[int]) -> dict[int, dict[str, Streak]]:
        return {pk: self.streaks[pk] for pk in pks if pk in self.streaks}

    def hold_place(self, streak: Streak, holds: int, reason: str, now: datetime,
                   held_until: datetime, policy_digest: str) -> bool:
        self.holds_placed.append((streak, holds, held_until))
        return True

    def hold_release(self, streak: Streak, released_by: str, now: datetime) -> bool:
        self.holds_released.append((streak, released_by))
        return True

    def hold_counts(self) -> dict[str, int]:
        return {}

    def operation_active_actions(self, pks: Sequence[int]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = {}
        for p, d in self.ops:  # the fake's operations never end
            if p in pks:
                out.setdefault(p, set()).add(d.action)
        return out

    def operation_enqueue(self, params: EnqueueParams) -> int | None:
        self.enqueue_attempts += 1
        pk = params.table.pk
        if any(p == pk and d.action == params.action for p, d in self.ops):
            return None
        self.priorities.append(params.priority)
        self.enqueued.append(params)
        self.ops.append((pk, Decision(params.action, True, params.reason, params.metrics,
                                      params.params)))
        return len(self.ops)

    # MaintenanceStore -----------------------------------------------------------------------
    def operation_reap_expired(self) -> tuple[list[int], list[int]]:
        return [], []

    def retention_prune(self, what: str, retention_s: float, batch: int) -> int:
        return 0

    def history_downsample(self, after_pk: int, tables: int, raw_s: float, hourly_s: float,
                           keep_s: float) -> tuple[int | None, int]:
        return None, 0

    def health_record_batch(self, inspections: Any, min_spacing_s: float,
                            keepalive_s: float) -> None:
        self.inspections += list(inspections)

    def heartbeat_record(self, beat: Any) -> None:
        self.beats.append(beat)

    def heartbeat_forget(self, process_id: str) -> None:
        self.beats = [b for b in self.beats if b.process_id != process_id]

    # ExecutionStore -------------------------------------------------------------------------
    def table_get_settings(self, pk: int) -> Table | None:
        return self.tables.get(pk)

    def operation_claim(self, owner: str, lease_s: float,
                        queues: tuple[str, ...] | None = None) -> Operation | None:
        self.claimed_queues.append(queues)
        return self.to_claim.pop(0) if self.to_claim else None

    def operation_retry_later(self, op: Operation, owner: str, outcome: Outcome,
                              delay_s: float) -> bool:
        self.retried.append((op, outcome, delay_s))
        return True

    def operation_renew_lease(self, op: Operation, owner: str, lease_s: float) -> LeaseStatus:
        self.renewals += 1
        return self.renew_result

    def attempt_set_engine_handle(self, op: Operation, owner: str, handle: str) -> bool:
        self.handles.append(handle)
        return True

    def attempt_set_progress(self, op: Operation, owner: str, progress: dict[str, Any]) -> bool:
        """Records the fence (operation id, attempt, owner) with each sample; refuses once the
        lease is lost, as the fenced SQL would."""
        if self.progress_error is not None:
            raise self.progress_error
        if self.renew_result is LeaseStatus.LOST:
            return False
        self.progress.append((op.id, op.lease.attempt, owner, progress))
        return True

    def operation_release(self, op: Operation, owner: str, reason: str) -> bool:
        self.released.append((op, reason))
        return True

    def operation_finish(self, op: Operation, owner: str, outcome: Outcome) -> bool:
        self.finished.append((op, outcome))
        return True

    def operation_skip(self, op: Operation, owner: str, reason: str,
                       result: dict[str, Any] | None = None, log_tail: str | None = None,
                       exit_code: int | None = None) -> bool:
        self.skipped.append((op, reason, result))
        return True


class FakeCoordinator:
    def __init__(self, healthy: bool = True, shards: frozenset[int] | None = None) -> None:
        self.healthy = healthy
        self.shards = shards  # None: every shard

    def owned_shards(self) -> frozenset[int] | None:
        from tms.coordination import NUM_SHARDS

        if not self.healthy:
            return None
        return frozenset(range(NUM_SHARDS)) if self.shards is None else self.shards

    def is_leader(self) -> bool:
        return self.healthy


class FakeFormat(TableFormatPlugin):
    name = "fake"
    actions = ("compaction",)

    def __init__(self, small_files: int = 20, fail: bool = False) -> None:
        self.small_files = small_files
        self.fail = fail
        self.inspected: list[int] = []

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        return table.base_path or f"{FAKE_ROOT}/{table.table_id}"

    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        self.inspected.append(table.pk)
        if self.fail:
            raise OSError("catalog unreachable")
        return {"small_files": self.small_files}

    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        run = metrics["small_files"] >= 10
        return [Decision("compaction", run, f"{metrics['small_files']} small files",
                         dict(metrics))]

    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        return JobSpec(kind="pyspark", app="job.py", spec={"table": table.table_id})


class FakeEngine:
    name = "fake"

    def __init__(self, result: EngineResult | None = None, raises: Exception | None = None,
                 block_until_stopped: bool = False,
                 progress: list[dict[str, Any]] | None = None) -> None:
        self.result = result or EngineResult(True, {"rewritten": 3}, None, "log", 0, "app-1")
        self.raises = raises
        self.block_until_stopped = block_until_stopped
        self.progress = progress or []  # reported through on_progress before the result
        self.jobs: list[JobSpec] = []
        self.closes = 0

    def run(self, job: JobSpec, workdir: Any, stop: threading.Event, on_handle: Any,
            on_progress: Any = None) -> EngineResult:
        self.jobs.append(job)
        on_handle("app-1")
        for sample in self.progress:
            if on_progress is not None:
                on_progress(sample)
        if self.raises:
            raise self.raises
        if self.block_until_stopped:
            assert stop.wait(10), "engine was never told to stop"
            return EngineResult(False, None, "stopped", "", -15, "app-1", stopped=True)
        return self.result

    def close(self) -> None:
        self.closes += 1
