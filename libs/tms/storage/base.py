"""The storage interface. Postgres is the one implementation; the interface keeps services honest
about what they need from it and lets unit tests use a fake."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from tms.domain import (
    CommitEvent,
    Decision,
    Explanation,
    Lease,
    OperationRecord,
    OperationState,
    Outcome,
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

    def mark_dirty(self, pk: int) -> None:
        """Put the mark back (a decision failed before it could see the commits)."""

    def finish_decision(self, pk: int, next_check_s: float) -> None: ...

    def begin_decision(self, pk: int) -> tuple[TableRecord | None, bool]:
        """Consume the table's "new commits" mark and read the table (commit count left 0):
        (table or None when gone, whether there was a mark)."""

    def last_succeeded_all(self, pk: int) -> dict[str, OperationRecord]:
        """The last SUCCEEDED operation of each action of the table."""

    def record_decisions(self, pk: int, decisions: Sequence[tuple[Decision, int | None]],
                         scheduler_id: str) -> None:
        """Every action's decision (with the operation it queued, if any) at once."""

    def enqueue(self, table: TableRecord, decision: Decision, trigger: str,
                max_attempts: int, priority: int | None = None) -> int | None:
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
    def claim(self, owner: str, lease_s: float) -> OperationRecord | None: ...

    def renew_lease(self, op: OperationRecord, owner: str, lease_s: float) -> Lease: ...

    def set_engine_handle(self, op: OperationRecord, owner: str, handle: str) -> bool: ...

    def finish(self, op: OperationRecord, owner: str, outcome: Outcome) -> bool:
        """Fenced terminal write; False when this attempt no longer owns the operation."""

    def release(self, op: OperationRecord, owner: str, reason: str) -> bool:
        """Fenced hand-back to the queue (graceful shutdown)."""

    def prune(self, what: str, retention_s: float, batch: int) -> int:
        """One batch of retention pruning; rows removed."""

    def reap_expired(self) -> tuple[list[int], list[int]]:
        """(requeued ids, failed ids) of RUNNING operations whose lease expired."""

    # queries
    def get_operation(self, table_id: str, op_id: int) -> OperationRecord | None: ...

    def list_operations(self, table_id: str | None, state: OperationState | None,
                        action: str | None, before_id: int, limit: int,
                        created_after: datetime | None = None,
                        created_before: datetime | None = None) -> list[OperationRecord]: ...
