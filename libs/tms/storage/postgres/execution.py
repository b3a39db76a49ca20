"""What an executor writes while it runs an attempt (ExecutionStore). Every write is fenced by
operation id, attempt and lease owner: no row changed means the attempt no longer owns the
operation, and the caller must stop and write nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from tms.domain import LeaseStatus, Operation, Outcome
from tms.storage.postgres import rows
from tms.storage.postgres.db import Db
from tms.storage.queries import q

CLAIM_LOCK_KEY = 0x746D735F636C6D  # "tms_clm": claims take turns so queue limits hold


def _ended(outcome: Outcome) -> dict[str, Any]:
    return {"result": Jsonb(outcome.result) if outcome.result is not None else None,
            "error": outcome.error, "log_tail": outcome.log_tail,
            "exit_code": outcome.exit_code}


class ExecutionMixin(Db):
    def operation_claim(self, owner: str, lease_s: float,
                        queues: Sequence[str] | None = None) -> Operation | None:
        params = {"owner": owner, "lease_s": lease_s,
                  "queues": list(queues) if queues else None}
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(q("operation_claim_lock"), {"key": CLAIM_LOCK_KEY})
                row: dict[str, Any] | None = conn.execute(  # type: ignore[assignment]
                    q("operation_claim"), params).fetchone()
        except psycopg.errors.UniqueViolation:
            # Another executor started an operation of the same table in the same instant;
            # the one-RUNNING-per-table index refused ours. Nothing claimed; try again later.
            return None
        return rows.operation(row) if row else None

    def _fenced(self, name: str, op: Operation, owner: str, **extra: Any) -> bool:
        params = {"id": op.id, "attempt": op.lease.attempt, "owner": owner, **extra}
        return self._one(name, params) is not None

    def operation_renew_lease(self, op: Operation, owner: str, lease_s: float) -> LeaseStatus:
        row = self._one("operation_renew_lease", {"id": op.id, "attempt": op.lease.attempt,
                                                  "owner": owner, "lease_s": lease_s})
        if row is None:
            return LeaseStatus.LOST
        return LeaseStatus.CANCEL_REQUESTED if row["cancel_requested"] else LeaseStatus.HELD

    def attempt_set_engine_handle(self, op: Operation, owner: str, handle: str) -> bool:
        return self._fenced("attempt_set_engine_handle", op, owner, engine_handle=handle)

    def attempt_set_progress(self, op: Operation, owner: str, progress: dict[str, Any]) -> bool:
        return self._fenced("attempt_set_progress", op, owner, progress=Jsonb(progress))

    def operation_finish(self, op: Operation, owner: str, outcome: Outcome) -> bool:
        return self._fenced("operation_finish", op, owner, state=outcome.state.value,
                            **_ended(outcome))

    def operation_skip(self, op: Operation, owner: str, reason: str,
                       result: dict[str, Any] | None = None, log_tail: str | None = None,
                       exit_code: int | None = None) -> bool:
        return self._fenced("operation_skip", op, owner, reason=reason[:4000],
                            result=Jsonb(result) if result is not None else None,
                            log_tail=log_tail, exit_code=exit_code)

    def operation_retry_later(self, op: Operation, owner: str, outcome: Outcome,
                              delay_s: float) -> bool:
        return self._fenced("operation_retry_later", op, owner, delay_s=delay_s,
                            **_ended(outcome))

    def operation_release(self, op: Operation, owner: str, reason: str) -> bool:
        return self._fenced("operation_release", op, owner, error=reason)
