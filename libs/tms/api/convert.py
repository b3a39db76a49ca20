"""Domain records to API messages."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from google.protobuf.struct_pb2 import Struct
from google.protobuf.timestamp_pb2 import Timestamp

from tms.domain import Attempt, OperationRecord, OperationState, QueueInfo, TableRecord
from tms.v1 import tms_pb2

REDACTED = "****"
_SECRET_KEY_RE = re.compile(r"password|secret|token|credential", re.IGNORECASE)


def _ts(value: datetime | None) -> Timestamp | None:
    if value is None:
        return None
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


def _struct(value: dict[str, Any] | None) -> Struct | None:
    if not value:
        return None
    s = Struct()
    s.update(value)
    return s


def redact(props: dict[str, str]) -> dict[str, str]:
    """Catalog properties as shown to clients: secrets never leave the server."""
    return {k: (REDACTED if _SECRET_KEY_RE.search(k) else v) for k, v in props.items()}


def table_to_pb(t: TableRecord) -> tms_pb2.Table:
    return tms_pb2.Table(
        name=t.name, format=t.format, catalog=t.catalog, namespace=t.namespace,
        table_name=t.table_name, base_path=t.base_path,
        catalog_properties=redact(t.catalog_properties), owner=t.owner, queue=t.queue,
        priority=t.priority, policy=t.policy, state=tms_pb2.Table.State.Value(t.state.value),
        last_commit_id=t.last_commit_id or "", last_commit_time=_ts(t.last_commit_time),
        commit_count=t.commit_count, create_time=_ts(t.created_at), update_time=_ts(t.updated_at),
    )


def attempt_to_pb(a: Attempt, with_log: bool = True) -> tms_pb2.Attempt:
    return tms_pb2.Attempt(
        attempt=a.attempt, executor_id=a.executor_id,
        state=tms_pb2.Attempt.State.Value(a.state.value), start_time=_ts(a.started_at),
        end_time=_ts(a.finished_at), engine_handle=a.engine_handle or "",
        exit_code=a.exit_code, error=a.error or "",
        log_tail=(a.log_tail or "") if with_log else "", result=_struct(a.result),
        retry_time=_ts(a.retry_at),
    )


def queue_to_pb(q: QueueInfo) -> tms_pb2.Queue:
    return tms_pb2.Queue(name=f"queues/{q.name}", max_running=q.max_running, queued=q.queued,
                         running=q.running)


def operation_to_pb(o: OperationRecord, with_logs: bool = True) -> tms_pb2.Operation:
    waiting = o.state is OperationState.QUEUED and o.attempt > 0
    return tms_pb2.Operation(
        name=o.name, table=f"tables/{o.table_id}", action=o.action,
        state=tms_pb2.Operation.State.Value(o.state.value), attempt=o.attempt,
        max_attempts=o.max_attempts, priority=o.priority, trigger=o.trigger, reason=o.reason,
        params={k: str(v) for k, v in o.params.items()}, metrics=_struct(o.metrics),
        create_time=_ts(o.created_at), start_time=_ts(o.started_at),
        end_time=_ts(o.finished_at), executor_id=o.lease_owner or "",
        engine_handle=o.engine_handle or "", exit_code=o.exit_code or 0,
        result=_struct(o.result), error=o.error or "", log_tail=o.log_tail or "",
        cancel_requested=o.cancel_requested,
        retry_of=f"tables/{o.table_id}/operations/{o.retry_of}" if o.retry_of else "",
        attempts=[attempt_to_pb(a, with_logs) for a in o.attempts], queue=o.queue,
        next_attempt_time=_ts(o.run_after) if waiting else None,
    )
