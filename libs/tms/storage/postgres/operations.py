"""Operations as the API and the scheduler see them: queue, read, cancel, explain, and the
queues' limits (OperationStore, most of DecisionStore)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg.types.json import Jsonb

from tms.domain import Attempt, Decision, DueTable, Explanation, Operation, QueueInfo
from tms.domain import OperationState as S
from tms.policy.common import MAX_PULL_INTERVAL_S
from tms.storage.postgres import rows
from tms.storage.postgres.db import Db
from tms.storage.roles import EnqueueParams, OperationListParams, TableGone


class OperationsMixin(Db):
    def operation_enqueue(self, params: EnqueueParams) -> int | None:
        p = params
        try:
            row = self._one("operation_insert", {
                "table_pk": p.table.pk, "action": p.action, "priority": p.priority,
                "trigger": p.trigger, "reason": p.reason, "params": Jsonb(p.params),
                "metrics": Jsonb(p.metrics), "max_attempts": p.max_attempts,
                "queue": p.table.queue, "retry_of": p.retry_of, "traceparent": p.traceparent,
                "benefit": p.benefit, "waits_for": list(p.waits_for),
            })
        except psycopg.errors.ForeignKeyViolation:
            raise TableGone(p.table.table_id) from None
        return int(row["id"]) if row else None

    def operation_active(self, table_pk: int, action: str) -> int | None:
        row = self._one("operation_active", {"table_pk": table_pk, "action": action})
        return int(row["id"]) if row else None

    def _attempts(self, op_ids: Sequence[int]) -> dict[int, tuple[Attempt, ...]]:
        out: dict[int, list[Attempt]] = {}
        if op_ids:
            for r in self._all("attempt_list", {"ids": list(op_ids)}):
                out.setdefault(int(r["operation_id"]), []).append(rows.attempt(r))
        return {k: tuple(v) for k, v in out.items()}

    def operation_list(self, params: OperationListParams) -> list[Operation]:
        return self._list(params, None)

    def _list(self, p: OperationListParams, op_id: int | None) -> list[Operation]:
        name = "operation_list" if p.order_by == "-create_time" else "operation_list_ordered"
        found = self._all(name, {
            "table_id": p.table_id, "id": op_id, "state": p.state.value if p.state else None,
            "action": p.action, "before_id": p.before_id, "limit": p.limit,
            "created_after": p.created_after, "created_before": p.created_before,
            "queue": p.queue, "order_by": p.order_by, "after_id": p.after_id,
            "after_time": p.after_time, "after_priority": p.after_priority,
        })
        attempts = self._attempts([int(r["id"]) for r in found])
        return [rows.operation(r, attempts.get(int(r["id"]), ())) for r in found]

    def operation_get(self, table_id: str, op_id: int) -> Operation | None:
        found = self._list(OperationListParams(table_id=table_id, limit=1), op_id)
        return found[0] if found else None

    def operation_cancel_queued(self, op_id: int, reason: str) -> bool:
        return self._one("operation_cancel_queued", {"id": op_id, "reason": reason}) is not None

    def operation_request_cancel(self, op_id: int) -> bool:
        return self._one("operation_request_cancel", {"id": op_id}) is not None

    def operation_last_succeeded(self, table_pks: Sequence[int]
                                 ) -> dict[int, dict[str, Operation]]:
        out: dict[int, dict[str, Operation]] = {}
        for r in self._all("operation_last_succeeded", {"pks": list(table_pks)}):
            op = rows.operation(r)
            out.setdefault(op.table_pk, {})[op.action] = op
        return out

    def operation_active_actions(self, table_pks: Sequence[int]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = {}
        for pk, action in self._tuples("operation_active_actions", {"pks": list(table_pks)}):
            out.setdefault(pk, set()).add(action)
        return out

    # decisions ------------------------------------------------------------------------------
    def decision_begin_batch(self, shards: Sequence[int], num_shards: int, limit: int
                             ) -> list[DueTable]:
        found = self._all("decision_begin_batch", {
            "shards": list(shards), "num_shards": num_shards, "limit": limit})
        return [DueTable(rows.table(r), bool(r["had_commits"]), r["traceparent"])
                for r in found]

    def decision_finish_batch(self, scheduler_id: str,
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
            "benefits": [d.benefit for _, d, _ in decisions],
            "check_pks": [pk for pk, _ in next_checks],
            "next_check_s": [float(s) for _, s in next_checks],
            "max_next_check_s": float(MAX_PULL_INTERVAL_S),
        }
        try:
            self._write("decision_finish_batch", params)
        except psycopg.errors.ForeignKeyViolation:  # a table went in the same instant: again
            self._write("decision_finish_batch", params)

    def decision_explain(self, table_pk: int, actions: Sequence[str]) -> list[Explanation]:
        found = self._all("decision_explain", {"table_pk": table_pk, "actions": list(actions)})
        return [Explanation(**{**r, "active_state": S(r["active_state"])
                               if r["active_state"] else None}) for r in found]

    # queues ---------------------------------------------------------------------------------
    def queue_set_limit(self, name: str, max_running: int | None) -> None:
        self._write("queue_upsert", {"name": name, "max_running": max_running})

    def queue_list(self) -> list[QueueInfo]:
        return [QueueInfo(**r) for r in self._all("queue_list", {})]
