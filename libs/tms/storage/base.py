"""The storage interface. Postgres is the one implementation; the interface keeps services honest
about what they need from it and lets unit tests use a fake."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tms.domain import (
    CommitEvent,
    Decision,
    OperationRecord,
    OperationState,
    Outcome,
    TableRecord,
    TableSpec,
)


class Store(Protocol):
    # tables
    def register_table(self, spec: TableSpec) -> TableRecord | None:
        """Insert; None when table_id is taken."""

    def get_table(self, table_id: str) -> TableRecord | None: ...

    def get_table_by_pk(self, pk: int) -> TableRecord | None: ...

    def list_tables(self, after: str, limit: int, fmt: str | None) -> list[TableRecord]: ...

    # commits
    def notify_commits(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        """Per event, in order — True: newly recorded; False: a replay; None: unknown table."""

    # scheduling
    def due_tables(self, limit: int) -> list[tuple[int, int]]:
        """(table pk, commit_seq) of tables with undecided commits or a due pull check."""

    def finish_decision(self, pk: int, seq: int, next_check_s: float) -> None: ...

    def record_decision(self, pk: int, decision: Decision, operation_id: int | None,
                        scheduler_id: str) -> None: ...

    def enqueue(self, table: TableRecord, decision: Decision, trigger: str,
                max_attempts: int) -> int | None:
        """New operation id, or None when one is already active for (table, action)."""

    def last_succeeded(self, pk: int, action: str) -> OperationRecord | None: ...

    # execution
    def claim(self, owner: str, lease_s: float) -> OperationRecord | None: ...

    def renew_lease(self, op: OperationRecord, owner: str, lease_s: float) -> bool: ...

    def set_engine_handle(self, op: OperationRecord, owner: str, handle: str) -> bool: ...

    def finish(self, op: OperationRecord, owner: str, outcome: Outcome) -> bool:
        """Fenced terminal write; False when this attempt no longer owns the operation."""

    def release(self, op: OperationRecord, owner: str, reason: str) -> bool:
        """Fenced hand-back to the queue (graceful shutdown)."""

    def reap_expired(self) -> tuple[list[int], list[int]]:
        """(requeued ids, failed ids) of RUNNING operations whose lease expired."""

    # queries
    def get_operation(self, table_id: str, op_id: int) -> OperationRecord | None: ...

    def list_operations(self, table_id: str | None, state: OperationState | None,
                        action: str | None, before_id: int, limit: int
                        ) -> list[OperationRecord]: ...
