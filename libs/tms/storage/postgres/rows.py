"""Rows to domain records. Column names match the domain's field names; the groups of an
operation (work, lease, outcome) are gathered from its flat row here and nowhere else."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from tms.domain import (
    Attempt,
    AttemptState,
    Operation,
    OperationLease,
    OperationResult,
    OperationState,
    OperationWork,
    Table,
    TableState,
    TableStats,
    TableView,
)

Row = dict[str, Any]
_TABLE_FIELDS = {f.name for f in fields(Table)} - {"pk"}
_ATTEMPT_FIELDS = {f.name for f in fields(Attempt)}


def table(row: Row) -> Table:
    data = {k: row[k] for k in _TABLE_FIELDS if k in row}
    data["state"] = TableState(data["state"])
    return Table(pk=int(row["id"]), **data)


def table_view(row: Row) -> TableView:
    return TableView(table(row), TableStats(
        commit_count=int(row["commit_count"]), last_commit_id=row["last_commit_id"],
        last_commit_time=row["last_commit_time"], next_check_at=row["next_check_at"],
        health_score=row.get("health_score"), last_decision=row.get("last_decision"),
        last_operation_id=row.get("last_operation_id"),
        last_operation_state=row.get("last_operation_state")))


def attempt(row: Row) -> Attempt:
    data = {k: v for k, v in row.items() if k in _ATTEMPT_FIELDS}
    data["state"] = AttemptState(data["state"])
    return Attempt(**data)


def operation(row: Row, attempts: tuple[Attempt, ...] = ()) -> Operation:
    state = OperationState(row["state"])
    return Operation(
        id=int(row["id"]), table_pk=int(row["table_pk"]), table_id=row["table_id"],
        action=row["action"], state=state, queue=row["queue"], priority=row["priority"],
        created_at=row["created_at"], traceparent=row["traceparent"], attempts=attempts,
        work=OperationWork(trigger=row["trigger"], reason=row["reason"], params=row["params"],
                           metrics=row["metrics"], retry_of=row["retry_of"],
                           benefit=row.get("benefit"),
                           waits_for=tuple(row.get("waits_for") or ())),
        lease=OperationLease(
            attempt=row["attempt"], max_attempts=row["max_attempts"],
            handed_back=row["handed_back"], owner=row["lease_owner"],
            expires_at=row["lease_expires_at"], started_at=row["started_at"],
            run_after=row["run_after"], engine_handle=row["engine_handle"],
            cancel_requested=row["cancel_requested"]),
        outcome=OperationResult(
            finished_at=row["finished_at"], exit_code=row["exit_code"], result=row["result"],
            error=row["error"], log_tail=row["log_tail"]),
        hold=hold_reason(row) if state is OperationState.QUEUED and "db_now" in row else None,
    )


def hold_reason(row: Row) -> str:
    """Why a QUEUED operation is not running yet, in the order the claim checks it."""
    table_name = f"tables/{row['table_id']}"
    run_after: datetime | None = row["run_after"]
    if row["table_state"] != TableState.ACTIVE.value:
        return f"{table_name} is {row['table_state'].lower()}"
    if run_after is not None and run_after > row["db_now"]:
        return f"backing off until {run_after.isoformat(timespec='seconds')}"
    limit = row["queue_limit"]
    if limit is not None and (row["queue_running"] or 0) >= limit:
        return (f"queue {row['queue']} at its limit "
                f"({row['queue_running']} of {limit} running)")
    if row["busy_with"] is not None:
        return f"table busy: {table_name}/operations/{row['busy_with']} is running"
    if row.get("waiting_for") is not None:
        return (f"waits for {row['waiting_for_action']} {table_name}/operations/"
                f"{row['waiting_for']} to end (it may change what this one would do)")
    return "waiting for an executor of queue " + row["queue"]
