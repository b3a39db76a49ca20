"""The storage interface. Postgres is the one implementation; the interface keeps services honest
about what they need from it and lets unit tests use a fake."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from tms.domain import (
    Attempt,
    CommitEvent,
    Decision,
    Explanation,
    Lease,
    OperationRecord,
    OperationState,
    Outcome,
    QueueInfo,
    TableRecord,
    TableSpec,
    TableState,
    TableUpdate,
)


class TableGone(LookupError):
    """The table was deregistered while something was being written for it."""


class Store(Protocol):
    # tables
    def register_table(self, spec: TableSpec) -> TableRecord | None:
        """Insert; None when table_id is taken."""

    def get_table(self, table_id: str) -> TableRecord | None: ...

    def get_table_by_pk(self, pk: int) -> TableRecord | None: ...

    def list_tables(self, after: str, limit: int, fmt: str | None = None,
                    state: TableState | None = None, owner: str | None = None,
                    queue: str | None = None) -> list[TableRecord]: ...

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]: ...

    def update_table(self, table_id: str, update: TableUpdate) -> TableRecord | None: ...

    def set_table_state(self, table_id: str, state: TableState) -> TableRecord | None: ...

    def delete_table(self, table_id: str, force: bool) -> bool:
        """False when unknown, or (without force) while an operation runs."""

    # request_id idempotency
    def claim_request(self, request_id: str, method: str, fingerprint: str
                      ) -> dict[str, Any] | None:
        """None when ``request_id`` is new (now reserved), else the earlier request's row."""

    def set_request_resource(self, request_id: str, resource: str) -> None: ...

    def forget_request(self, request_id: str) -> None: ...

    # commits
    def notify_commits(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        """Per event, in order — True: newly recorded; False: a replay; None: unknown table."""

    # scheduling
    def due_tables(self, limit: int) -> list[int]:
        """Table pks with undecided commits or a due pull check."""

    def mark_dirty(self, pk: int, traceparent: str | None = None) -> None:
        """Put the mark back (a decision failed before it could see the commits)."""

    def finish_decision(self, pk: int, next_check_s: float) -> None: ...

    def begin_decision(self, pk: int) -> tuple[TableRecord | None, bool, str | None]:
        """Consume the table's "new commits" mark and read the table (commit count left 0):
        (table or None when gone, whether there was a mark, the mark's trace context)."""

    def begin_decisions(self, shards: Sequence[int], num_shards: int, limit: int
                        ) -> list[tuple[TableRecord, bool, str | None]]:
        """Shard mode: up to ``limit`` due tables of the given shards, their "new commits"
        marks consumed: (table, whether it had a mark, the mark's trace context)."""

    def last_succeeded_for(self, pks: Sequence[int]) -> dict[int, dict[str, OperationRecord]]:
        """For each table, the last SUCCEEDED operation of each action."""

    def finish_decisions(self, scheduler_id: str,
                         decisions: Sequence[tuple[int, Decision, int | None]],
                         next_checks: Sequence[tuple[int, float]]) -> None:
        """Record a batch's decisions (table pk, decision, queued operation) and set each
        table's next check (table pk, seconds from now) in one statement."""

    def last_succeeded_all(self, pk: int) -> dict[str, OperationRecord]:
        """The last SUCCEEDED operation of each action of the table."""

    def record_decisions(self, pk: int, decisions: Sequence[tuple[Decision, int | None]],
                         scheduler_id: str) -> None:
        """Every action's decision (with the operation it queued, if any) at once."""

    def enqueue(self, table: TableRecord, decision: Decision, trigger: str,
                max_attempts: int, priority: int | None = None,
                traceparent: str | None = None) -> int | None:
        """New operation id, or None when one is already active for (table, action)."""

    def enqueue_manual(self, table: TableRecord, action: str, trigger: str, reason: str,
                       params: dict[str, Any], max_attempts: int,
                       retry_of: int | None = None, priority: int | None = None
                       ) -> int | None: ...

    def active_operation(self, pk: int, action: str) -> int | None: ...

    def cancel_queued(self, op_id: int, reason: str) -> bool: ...

    def request_cancel(self, op_id: int) -> bool: ...

    def explain(self, pk: int, actions: Sequence[str]) -> list[Explanation]: ...

    # execution
    def claim(self, owner: str, lease_s: float,
              queues: Sequence[str] | None = None) -> OperationRecord | None:
        """The next due operation (from ``queues`` only, when given) whose queue is under its
        limit, now RUNNING under this owner's lease as a new attempt; None if there is none."""

    def renew_lease(self, op: OperationRecord, owner: str, lease_s: float) -> Lease: ...

    def set_engine_handle(self, op: OperationRecord, owner: str, handle: str) -> bool: ...

    def attempt_set_progress(self, op: OperationRecord, owner: str,
                             progress: dict[str, Any]) -> bool:
        """Fenced like set_engine_handle: the latest progress the engine reported for this
        RUNNING attempt (replacing the previous); False when the attempt is no longer ours."""

    def finish(self, op: OperationRecord, owner: str, outcome: Outcome) -> bool:
        """Fenced terminal write; False when this attempt no longer owns the operation."""

    def retry_later(self, op: OperationRecord, owner: str, outcome: Outcome,
                    delay_s: float) -> bool:
        """Fenced: record the failed attempt and queue the operation again after ``delay_s``.
        False when this attempt no longer owns it, attempts are spent or a cancel is pending."""

    def release(self, op: OperationRecord, owner: str, reason: str) -> bool:
        """Fenced hand-back to the queue (graceful shutdown)."""

    def prune(self, what: str, retention_s: float, batch: int) -> int:
        """One batch of retention pruning; rows removed."""

    def reap_expired(self) -> tuple[list[int], list[int]]:
        """(requeued ids, failed ids) of RUNNING operations whose lease expired."""

    def set_queue_limit(self, name: str, max_running: int | None) -> None:
        """At most ``max_running`` operations of the queue RUNNING at once (None: no limit)."""

    def list_queues(self) -> list[QueueInfo]: ...

    def queue_stats(self) -> list[dict[str, Any]]:
        """Per (queue, action): QUEUED count and the oldest one's age in seconds."""

    def overdue_tables(self, grace_s: float) -> int:
        """Active tables whose check or commit mark has waited longer than ``grace_s``."""

    # queries
    def attempts(self, op_ids: Sequence[int]) -> dict[int, tuple[Attempt, ...]]:
        """Every attempt of the given operations, oldest first."""

    def get_operation(self, table_id: str, op_id: int) -> OperationRecord | None: ...

    def list_operations(self, table_id: str | None, state: OperationState | None,
                        action: str | None, before_id: int, limit: int,
                        created_after: datetime | None = None,
                        created_before: datetime | None = None) -> list[OperationRecord]: ...
