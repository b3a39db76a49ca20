"""Job results reported through the API (ReportJobResult) and the per-attempt tokens that
authenticate them. Only a token's SHA-256 is stored; every write is fenced by operation,
attempt and state, and the executor's write also by its lease."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from tms.domain import Operation
from tms.storage.postgres.db import Db
from tms.storage.roles import ReportTarget


class ReportsMixin(Db):
    def attempt_set_report_token(self, op: Operation, owner: str, digest: bytes) -> bool:
        params = {"id": op.id, "attempt": op.lease.attempt, "owner": owner, "digest": digest}
        return self._one("attempt_set_report_token", params) is not None

    def attempt_reported_result(self, op: Operation) -> dict[str, Any] | None:
        row = self._one("attempt_reported_result", {"id": op.id, "attempt": op.lease.attempt})
        return row["reported_result"] if row else None

    def attempt_report_lookup(self, table_id: str, op_id: int, attempt: int
                              ) -> ReportTarget | None:
        row = self._one("attempt_report_lookup",
                        {"id": op_id, "attempt": attempt, "table_id": table_id})
        if row is None:
            return None
        digest = row["report_token_sha256"]
        return ReportTarget(bytes(digest) if digest is not None else None, bool(row["running"]),
                            row["reported_result"])

    def attempt_report_result(self, op_id: int, attempt: int, digest: bytes,
                              result: dict[str, Any]) -> bool:
        params = {"id": op_id, "attempt": attempt, "digest": digest, "result": Jsonb(result)}
        return self._one("attempt_report_result", params) is not None
