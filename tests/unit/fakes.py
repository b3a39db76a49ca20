"""In-memory fakes of the store, coordinator, format plugin and engine, for loop unit tests.
Integration tests use the real ones."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tms.domain import (
    Decision,
    JobSpec,
    Lease,
    OperationRecord,
    OperationState,
    Outcome,
    TableRecord,
    TableState,
)
from tms.engines.base import EngineResult
from tms.formats.base import TableFormatPlugin

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def make_table(pk: int = 1, state: TableState = TableState.ACTIVE) -> TableRecord:
    return TableRecord(
        id=pk, table_id=f"t{pk}", format="fake", catalog="", namespace="", table_name="t",
        base_path="", catalog_properties={}, owner="", queue="default", priority=0, policy={},
        state=state, commit_count=1, last_commit_id=None,
        last_commit_time=None, next_check_at=NOW + timedelta(hours=1), created_at=NOW,
        updated_at=NOW)


def make_op(op_id: int = 1, attempt: int = 1, max_attempts: int = 3) -> OperationRecord:
    return OperationRecord(
        id=op_id, table_pk=1, action="compaction", state=OperationState.RUNNING,
        attempt=attempt, max_attempts=max_attempts, priority=0, trigger="policy", reason="r",
        params={},
        metrics={}, created_at=NOW, started_at=NOW, finished_at=None, lease_owner="e1",
        lease_expires_at=NOW, engine_handle=None, exit_code=None, result=None, error=None,
        log_tail=None)


@dataclass
class FakeStore:
    tables: dict[int, TableRecord] = field(default_factory=dict)
    dirty: set[int] = field(default_factory=set)
    priorities: list[int | None] = field(default_factory=list)
    ops: list[tuple[int, Decision]] = field(default_factory=list)
    decisions: list[tuple[int, Decision, int | None]] = field(default_factory=list)
    finished_decisions: list[tuple[int, int, float]] = field(default_factory=list)
    to_claim: list[OperationRecord] = field(default_factory=list)
    finished: list[tuple[OperationRecord, Outcome]] = field(default_factory=list)
    renew_result: Lease = Lease.HELD
    renewals: int = 0
    handles: list[str] = field(default_factory=list)
    progress: list[tuple[int, int, str, dict[str, Any]]] = field(default_factory=list)
    progress_error: Exception | None = None
    released: list[tuple[OperationRecord, str]] = field(default_factory=list)
    retried: list[tuple[OperationRecord, Outcome, float]] = field(default_factory=list)
    claimed_queues: list[tuple[str, ...] | None] = field(default_factory=list)

    db_now: datetime = NOW  # what PostgreSQL's now() would say

    def begin_decisions(self, shards: list[int], num_shards: int, limit: int
                        ) -> list[tuple[TableRecord, bool, str | None]]:
        due = sorted(pk for pk in set(self.tables) | self.dirty
                     if pk % num_shards in shards
                     and (pk in self.dirty or (pk in self.tables
                                               and self.tables[pk].state is TableState.ACTIVE
                                               and self.tables[pk].next_check_at <= self.db_now)))
        out = []
        for pk in due[:limit]:
            had = self.take_dirty(pk)
            if pk in self.tables:
                out.append((self.tables[pk], had, None))
        return out

    def last_succeeded_for(self, pks: list[int]) -> dict[int, dict[str, OperationRecord]]:
        return {}

    def finish_decisions(self, scheduler_id: str,
                         decisions: list[tuple[int, Decision, int | None]],
                         next_checks: list[tuple[int, float]]) -> None:
        self.decisions += decisions
        self.finished_decisions += next_checks

    def due_tables(self, limit: int) -> list[int]:
        return sorted(set(self.tables) | self.dirty)[:limit]

    def take_dirty(self, pk: int) -> bool:
        had = pk in self.dirty
        self.dirty.discard(pk)
        return had

    def mark_dirty(self, pk: int, traceparent: str | None = None) -> None:
        self.dirty.add(pk)

    def reap_expired(self) -> tuple[list[int], list[int]]:
        return [], []

    def prune(self, what: str, retention_s: float, batch: int) -> int:
        return 0

    def get_table_by_pk(self, pk: int) -> TableRecord | None:
        return self.tables.get(pk)

    def last_succeeded(self, pk: int, action: str) -> OperationRecord | None:
        return None

    def enqueue(self, table: TableRecord, decision: Decision, trigger: str,
                max_attempts: int, priority: int | None = None,
                traceparent: str | None = None) -> int | None:
        if any(pk == table.id and d.action == decision.action for pk, d in self.ops):
            return None
        self.priorities.append(priority)
        self.ops.append((table.id, decision))
        return len(self.ops)

    def record_decisions(self, pk: int, decisions: list[tuple[Decision, int | None]],
                         scheduler_id: str) -> None:
        self.decisions += [(pk, d, op) for d, op in decisions]

    def begin_decision(self, pk: int) -> tuple[TableRecord | None, bool, str | None]:
        return self.tables.get(pk), self.take_dirty(pk), None

    def last_succeeded_all(self, pk: int) -> dict[str, OperationRecord]:
        return {}

    def finish_decision(self, pk: int, next_check_s: float) -> None:
        self.finished_decisions.append((pk, next_check_s))

    def claim(self, owner: str, lease_s: float,
              queues: tuple[str, ...] | None = None) -> OperationRecord | None:
        self.claimed_queues.append(queues)
        return self.to_claim.pop(0) if self.to_claim else None

    def retry_later(self, op: OperationRecord, owner: str, outcome: Outcome,
                    delay_s: float) -> bool:
        self.retried.append((op, outcome, delay_s))
        return True

    def renew_lease(self, op: OperationRecord, owner: str, lease_s: float) -> Lease:
        self.renewals += 1
        return self.renew_result

    def set_engine_handle(self, op: OperationRecord, owner: str, handle: str) -> bool:
        self.handles.append(handle)
        return True

    def attempt_set_progress(self, op: OperationRecord, owner: str,
                             progress: dict[str, Any]) -> bool:
        """Records the fence (operation id, attempt, owner) with each sample; refuses once the
        lease is lost, as the fenced SQL would."""
        if self.progress_error is not None:
            raise self.progress_error
        if self.renew_result is Lease.LOST:
            return False
        self.progress.append((op.id, op.attempt, owner, progress))
        return True

    def release(self, op: OperationRecord, owner: str, reason: str) -> bool:
        self.released.append((op, reason))
        return True

    def finish(self, op: OperationRecord, owner: str, outcome: Outcome) -> bool:
        self.finished.append((op, outcome))
        return True


class FakeCoordinator:
    def __init__(self, healthy: bool = True, locked_by_other: set[int] | None = None,
                 shards: frozenset[int] | None = None) -> None:
        self.healthy = healthy
        self.locked_by_other = locked_by_other or set()
        self.shards = shards  # None: every shard

    def owned_shards(self) -> frozenset[int] | None:
        from tms.coordination import NUM_SHARDS

        if not self.healthy:
            return None
        return frozenset(range(NUM_SHARDS)) if self.shards is None else self.shards

    def is_leader(self) -> bool:
        return self.healthy

    @contextmanager
    def table_lock(self, table_pk: int) -> Iterator[bool]:
        yield self.healthy and table_pk not in self.locked_by_other


class FakeFormat(TableFormatPlugin):
    name = "fake"
    actions = ("compaction",)

    def __init__(self, small_files: int = 20, fail: bool = False) -> None:
        self.small_files = small_files
        self.fail = fail
        self.inspected: list[int] = []

    def inspect(self, table: TableRecord) -> dict[str, Any]:
        self.inspected.append(table.id)
        if self.fail:
            raise OSError("catalog unreachable")
        return {"small_files": self.small_files}

    def evaluate(self, table: TableRecord, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, OperationRecord | None], now: datetime
                 ) -> list[Decision]:
        run = metrics["small_files"] >= 10
        return [Decision("compaction", run, f"{metrics['small_files']} small files",
                         dict(metrics))]

    def build_job(self, table: TableRecord, operation: OperationRecord) -> JobSpec:
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
