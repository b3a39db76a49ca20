"""PostgreSQL implementation of :class:`tms.storage.base.Store` (psycopg 3 + a connection pool).

All SQL is in ``sql/queries.sql``; this module only binds parameters and maps rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from tms.domain import (
    Attempt,
    AttemptState,
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
from tms.storage.base import TableGone
from tms.storage.queries import q

POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 10
POOL_TIMEOUT_S = 10.0
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 3, "tcp_user_timeout": 30_000}  # libpq: seconds; last in ms
CLAIM_LOCK_KEY = 0x746D735F636C6D  # "tms_clm": claims take turns so queue limits hold
_OP_FIELDS = {f.name for f in fields(OperationRecord)} - {"attempts"}
_ATTEMPT_FIELDS = {f.name for f in fields(Attempt)}
_TABLE_FIELDS = {f.name for f in fields(TableRecord)}


def _table(row: dict[str, Any]) -> TableRecord:
    data = {k: v for k, v in row.items() if k in _TABLE_FIELDS}
    data["state"] = TableState(data["state"])
    return TableRecord(**data)


def _attempt(row: dict[str, Any]) -> Attempt:
    data = {k: v for k, v in row.items() if k in _ATTEMPT_FIELDS}
    data["state"] = AttemptState(data["state"])
    return Attempt(**data)


def _op(row: dict[str, Any]) -> OperationRecord:
    data = {k: v for k, v in row.items() if k in _OP_FIELDS}
    data["state"] = OperationState(data["state"])
    return OperationRecord(**data)


class PostgresStore:
    """Thread-safe: every call borrows a pooled connection for one transaction."""

    def __init__(self, dsn: str, *, min_size: int = POOL_MIN_SIZE,
                 max_size: int = POOL_MAX_SIZE, timeout_s: float = POOL_TIMEOUT_S) -> None:
        self._pool = ConnectionPool(
            dsn, min_size=min_size, max_size=max_size, timeout=timeout_s, open=True,
            # autocommit: every store call is one statement, so one round trip, no BEGIN/COMMIT;
            # keepalives so a connection to a vanished server fails instead of hanging
            kwargs={"row_factory": dict_row, "autocommit": True, **KEEPALIVES},
        )

    def close(self) -> None:
        self._pool.close()

    def check(self) -> None:
        """Raise when the database cannot be reached (used by health checks)."""
        with self._pool.connection() as conn:
            conn.execute(q("ping"))

    def _one(self, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchone()  # type: ignore[return-value]

    def _all(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._pool.connection() as conn:
            return conn.execute(q(name), params).fetchall()  # type: ignore[return-value]

    # tables ---------------------------------------------------------------------------------
    def register_table(self, spec: TableSpec) -> TableRecord | None:
        params = asdict(spec)
        params["catalog_properties"] = Jsonb(spec.catalog_properties)
        params["policy"] = Jsonb(spec.policy)
        row = self._one("insert_table", params)
        return self.get_table_by_pk(row["id"]) if row else None

    def get_table(self, table_id: str) -> TableRecord | None:
        row = self._one("get_table", {"table_id": table_id})
        return _table(row) if row else None

    def get_table_by_pk(self, pk: int) -> TableRecord | None:
        row = self._one("get_table_by_pk", {"pk": pk})
        return _table(row) if row else None

    def list_tables(self, after: str, limit: int, fmt: str | None = None,
                    state: TableState | None = None, owner: str | None = None,
                    queue: str | None = None) -> list[TableRecord]:
        rows = self._all("list_tables", {
            "after": after, "limit": limit, "format": fmt,
            "state": state.value if state else None, "owner": owner, "queue": queue})
        return [_table(r) for r in rows]

    def table_owners(self, table_ids: Sequence[str]) -> dict[str, str]:
        rows = self._all("table_owners", {"table_ids": list(table_ids)})
        return {r["table_id"]: r["owner"] for r in rows}

    def update_table(self, table_id: str, update: TableUpdate) -> TableRecord | None:
        params: dict[str, Any] = {"table_id": table_id}
        for name in ("owner", "queue", "priority", "policy", "catalog_properties"):
            value = getattr(update, name)
            params[f"set_{name}"] = value is not None
            params[name] = Jsonb(value) if isinstance(value, dict) else value
        row = self._one("update_table", params)
        return self.get_table_by_pk(row["id"]) if row else None

    def set_table_state(self, table_id: str, state: TableState) -> TableRecord | None:
        row = self._one("set_table_state", {"table_id": table_id, "state": state.value})
        return self.get_table_by_pk(row["id"]) if row else None

    def delete_table(self, table_id: str, force: bool) -> bool:
        return self._one("delete_table", {"table_id": table_id, "force": force}) is not None

    def claim_request(self, request_id: str, method: str, fingerprint: str
                      ) -> dict[str, Any] | None:
        """Reserve ``request_id``; None when new, else the earlier request's row."""
        with self._pool.connection() as conn:
            new = conn.execute(q("claim_request"), {
                "request_id": request_id, "method": method, "fingerprint": fingerprint,
                "resource": ""}).fetchone()
            if new is not None:
                return None
            return conn.execute(q("get_request"), {"request_id": request_id}).fetchone()  # type: ignore[return-value]

    def set_request_resource(self, request_id: str, resource: str) -> None:
        self._one_write("set_request_resource", {"request_id": request_id,
                                                 "resource": resource})

    def forget_request(self, request_id: str) -> None:
        self._one_write("forget_request", {"request_id": request_id})

    def _one_write(self, name: str, params: dict[str, Any]) -> None:
        with self._pool.connection() as conn:
            conn.execute(q(name), params)

    # commits --------------------------------------------------------------------------------
    def notify_commits(self, events: Sequence[CommitEvent]) -> list[bool | None]:
        """One statement, inserts only; a repeat within the batch counts as a replay."""
        first: dict[tuple[str, str], CommitEvent] = {}
        for e in events:
            first.setdefault((e.table_id, e.commit_id), e)
        if not first:
            return []
        unique = list(first.values())
        params = {
            "table_ids": [e.table_id for e in unique],
            "commit_ids": [e.commit_id for e in unique],
            "commit_times": [e.commit_time for e in unique],
            "files_added": [e.files_added for e in unique],
            "bytes_added": [e.bytes_added for e in unique],
            "operation_types": [e.operation_type for e in unique],
            "traceparents": [e.traceparent for e in unique],
        }
        with self._pool.connection() as conn:
            rows = conn.execute(q("notify_commits"), params).fetchall()
        known = {r["table_id"] for r in rows}  # type: ignore[call-overload]
        new = {(r["table_id"], r["commit_id"]) for r in rows  # type: ignore[call-overload]
               if r["commit_id"] is not None}  # type: ignore[call-overload]
        out: list[bool | None] = []
        for e in events:
            key = (e.table_id, e.commit_id)
            if e.table_id not in known:
                out.append(None)
            else:
                out.append(key in new and first[key] is e)
        return out

    # scheduling -----------------------------------------------------------------------------
    def due_tables(self, limit: int) -> list[int]:
        return [int(r["id"]) for r in self._all("due_tables", {"limit": limit})]

    def mark_dirty(self, pk: int, traceparent: str | None = None) -> None:
        self._one_write("mark_dirty", {"pk": pk, "traceparent": traceparent})

    def finish_decision(self, pk: int, next_check_s: float) -> None:
        self._one_write("finish_decision", {"pk": pk, "next_check_s": next_check_s})

    def begin_decision(self, pk: int) -> tuple[TableRecord | None, bool, str | None]:
        row = self._one("begin_decision", {"pk": pk})
        if row is None:
            return None, False, None
        return _table(row), bool(row["had_commits"]), row["traceparent"]

    def begin_decisions(self, shards: Sequence[int], num_shards: int, limit: int
                        ) -> list[tuple[TableRecord, bool, str | None]]:
        rows = self._all("begin_decisions", {"shards": list(shards), "num_shards": num_shards,
                                             "limit": limit})
        return [(_table(r), bool(r["had_commits"]), r["traceparent"]) for r in rows]

    def last_succeeded_for(self, pks: Sequence[int]) -> dict[int, dict[str, OperationRecord]]:
        out: dict[int, dict[str, OperationRecord]] = {}
        for r in self._all("last_succeeded_for_tables", {"pks": list(pks)}):
            out.setdefault(int(r["table_pk"]), {})[r["action"]] = _op(r)
        return out

    def finish_decisions(self, scheduler_id: str,
                         decisions: Sequence[tuple[int, Decision, int | None]],
                         next_checks: Sequence[tuple[int, float]]) -> None:
        params = {
            "scheduler_id": scheduler_id,
            "table_pks": [pk for pk, _, _ in decisions],
            "actions": [d.action for _, d, _ in decisions],
            "should_run": [d.should_run for _, d, _ in decisions],
            "reasons": [d.reason for _, d, _ in decisions],
            "metrics": [Jsonb(d.metrics) for _, d, _ in decisions],
            "operation_ids": [op for _, _, op in decisions],
            "check_pks": [pk for pk, _ in next_checks],
            "next_check_s": [float(s) for _, s in next_checks],
        }
        try:
            self._one_write("finish_decisions", params)
        except psycopg.errors.ForeignKeyViolation:  # a table went in the same instant: again
            self._one_write("finish_decisions", params)

    def last_succeeded_all(self, pk: int) -> dict[str, OperationRecord]:
        rows = self._all("last_succeeded_by_action", {"table_pk": pk})
        return {r["action"]: _op(r) for r in rows}

    def record_decisions(self, pk: int, decisions: Sequence[tuple[Decision, int | None]],
                         scheduler_id: str) -> None:
        self._one_write("upsert_decisions", {
            "table_pk": pk, "scheduler_id": scheduler_id,
            "actions": [d.action for d, _ in decisions],
            "should_run": [d.should_run for d, _ in decisions],
            "reasons": [d.reason for d, _ in decisions],
            "metrics": [Jsonb(d.metrics) for d, _ in decisions],
            "operation_ids": [op for _, op in decisions],
        })

    def _insert_op(self, name: str, table: TableRecord, params: dict[str, Any]
                   ) -> dict[str, Any] | None:
        try:
            return self._one(name, params)
        except psycopg.errors.ForeignKeyViolation:
            raise TableGone(table.table_id) from None

    def enqueue(self, table: TableRecord, decision: Decision, trigger: str,
                max_attempts: int, priority: int | None = None,
                traceparent: str | None = None) -> int | None:
        row = self._insert_op("insert_operation", table, {
            "table_pk": table.id, "action": decision.action,
            "priority": table.priority if priority is None else priority,
            "trigger": trigger, "reason": decision.reason, "params": Jsonb(decision.params),
            "metrics": Jsonb(decision.metrics), "max_attempts": max_attempts,
            "queue": table.queue, "traceparent": traceparent,
        })
        return int(row["id"]) if row else None

    def enqueue_manual(self, table: TableRecord, action: str, trigger: str, reason: str,
                       params: dict[str, Any], max_attempts: int,
                       retry_of: int | None = None, priority: int | None = None) -> int | None:
        row = self._insert_op("insert_manual_operation", table, {
            "table_pk": table.id, "action": action,
            "priority": table.priority if priority is None else priority, "trigger": trigger,
            "reason": reason, "params": Jsonb(params), "max_attempts": max_attempts,
            "retry_of": retry_of, "queue": table.queue,
        })
        return int(row["id"]) if row else None

    def active_operation(self, pk: int, action: str) -> int | None:
        row = self._one("active_operation", {"table_pk": pk, "action": action})
        return int(row["id"]) if row else None

    def cancel_queued(self, op_id: int, reason: str) -> bool:
        return self._one("cancel_queued", {"id": op_id, "reason": reason}) is not None

    def request_cancel(self, op_id: int) -> bool:
        return self._one("request_cancel", {"id": op_id}) is not None

    def explain(self, pk: int, actions: Sequence[str]) -> list[Explanation]:
        rows = self._all("explain_table", {"table_pk": pk, "actions": list(actions)})
        return [Explanation(**r) for r in rows]

    # execution ------------------------------------------------------------------------------
    def claim(self, owner: str, lease_s: float,
              queues: Sequence[str] | None = None) -> OperationRecord | None:
        params = {"owner": owner, "lease_s": lease_s,
                  "queues": list(queues) if queues else None}
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(q("claim_lock"), {"key": CLAIM_LOCK_KEY})
                row: dict[str, Any] | None = conn.execute(  # type: ignore[assignment]
                    q("claim_operation"), params).fetchone()
        except psycopg.errors.UniqueViolation:
            # Another executor started an operation of the same table in the same instant;
            # the one-RUNNING-per-table index refused ours. Nothing claimed; try again later.
            return None
        return _op(row) if row else None

    def _fenced(self, name: str, op: OperationRecord, owner: str, **extra: Any) -> bool:
        params = {"id": op.id, "attempt": op.attempt, "owner": owner, **extra}
        return self._one(name, params) is not None

    def renew_lease(self, op: OperationRecord, owner: str, lease_s: float) -> Lease:
        row = self._one("renew_lease", {"id": op.id, "attempt": op.attempt, "owner": owner,
                                        "lease_s": lease_s})
        if row is None:
            return Lease.LOST
        return Lease.CANCEL_REQUESTED if row["cancel_requested"] else Lease.HELD

    def set_engine_handle(self, op: OperationRecord, owner: str, handle: str) -> bool:
        return self._fenced("set_engine_handle", op, owner, engine_handle=handle)

    def attempt_set_progress(self, op: OperationRecord, owner: str,
                             progress: dict[str, Any]) -> bool:
        return self._fenced("attempt_set_progress", op, owner, progress=Jsonb(progress))

    def finish(self, op: OperationRecord, owner: str, outcome: Outcome) -> bool:
        return self._fenced(
            "finish_operation", op, owner, state=outcome.state.value,
            result=Jsonb(outcome.result) if outcome.result is not None else None,
            error=outcome.error, log_tail=outcome.log_tail, exit_code=outcome.exit_code,
        )

    def retry_later(self, op: OperationRecord, owner: str, outcome: Outcome,
                    delay_s: float) -> bool:
        return self._fenced(
            "retry_operation", op, owner, delay_s=delay_s,
            result=Jsonb(outcome.result) if outcome.result is not None else None,
            error=outcome.error, log_tail=outcome.log_tail, exit_code=outcome.exit_code,
        )

    def release(self, op: OperationRecord, owner: str, reason: str) -> bool:
        return self._fenced("release_operation", op, owner, error=reason)

    def prune(self, what: str, retention_s: float, batch: int) -> int:
        """Delete one batch of ``what`` (commit_events, operations, requests) older than the
        retention; the number of rows removed."""
        if what == "commit_events":
            row = self._one("prune_commit_events", {"retention_s": retention_s, "batch": batch})
            return int(row["pruned"]) if row else 0
        if what in ("operations", "requests"):
            return len(self._all(f"prune_{what}", {"retention_s": retention_s,
                                                     "batch": batch}))
        raise ValueError(f"nothing called {what!r} to prune")

    def reap_expired(self) -> tuple[list[int], list[int]]:
        requeued = [r["id"] for r in self._all("requeue_expired", {})]
        failed = [r["id"] for r in self._all("fail_expired", {})]
        failed += [r["id"] for r in self._all("cancel_expired", {})]
        return requeued, failed

    def set_queue_limit(self, name: str, max_running: int | None) -> None:
        self._one_write("upsert_queue", {"name": name, "max_running": max_running})

    def queue_stats(self) -> list[dict[str, Any]]:
        return self._all("queue_stats", {})

    def overdue_tables(self, grace_s: float) -> int:
        row = self._one("overdue_tables", {"grace_s": grace_s})
        return int(row["n"]) if row else 0

    def list_queues(self) -> list[QueueInfo]:
        return [QueueInfo(**r) for r in self._all("list_queues", {})]

    # queries --------------------------------------------------------------------------------
    def attempts(self, op_ids: Sequence[int]) -> dict[int, tuple[Attempt, ...]]:
        out: dict[int, list[Attempt]] = {}
        for r in self._all("list_attempts", {"ids": list(op_ids)}):
            out.setdefault(int(r["operation_id"]), []).append(_attempt(r))
        return {k: tuple(v) for k, v in out.items()}

    def get_operation(self, table_id: str, op_id: int) -> OperationRecord | None:
        row = self._one("get_operation", {"table_id": table_id, "id": op_id})
        return _op(row) if row else None

    def list_operations(self, table_id: str | None, state: OperationState | None,
                        action: str | None, before_id: int, limit: int,
                        created_after: datetime | None = None,
                        created_before: datetime | None = None) -> list[OperationRecord]:
        rows = self._all("list_operations", {
            "table_id": table_id, "state": state.value if state else None, "action": action,
            "before_id": before_id, "limit": limit, "created_after": created_after,
            "created_before": created_before,
        })
        return [_op(r) for r in rows]
