"""Domain records to API messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from google.protobuf.struct_pb2 import Struct
from google.protobuf.timestamp_pb2 import Timestamp

from tms.domain import Attempt, Catalog, Operation, OperationState, QueueInfo, TableView
from tms.reads.profile import PROJECTED, ReadProfile
from tms.v1 import tms_pb2


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


def table_to_pb(view: TableView) -> tms_pb2.Table:
    t, stats = view.table, view.stats
    return tms_pb2.Table(
        name=t.name, format=t.format, catalog=t.catalog, namespace=t.namespace,
        table_name=t.table_name, base_path=t.base_path, owner=t.owner, queue=t.queue,
        priority=t.priority, policy=t.policy, state=tms_pb2.Table.State.Value(t.state.value),
        last_commit_id=stats.last_commit_id or "", last_commit_time=_ts(stats.last_commit_time),
        commit_count=stats.commit_count, create_time=_ts(t.created_at),
        update_time=_ts(t.updated_at), location=t.location, discovered=t.discovered,
        health_score=stats.health_score, last_decision=(stats.last_decision or "")[:2000],
        last_operation=(f"tables/{t.table_id}/operations/{stats.last_operation_id}"
                        if stats.last_operation_id else ""),
        last_operation_state=stats.last_operation_state or "STATE_UNSPECIFIED",
        state_reason=t.state_reason,
    )


def catalog_to_pb(c: Catalog) -> tms_pb2.Catalog:
    """A catalog as every RPC shows it: secrets as their references (the values are never
    stored, so they cannot be shown)."""
    s, d, st = c.spec, c.spec.discovery, c.status
    return tms_pb2.Catalog(
        name=c.name, type=s.type.value, properties=s.properties, secrets=s.secrets,
        storage_options=s.storage_options, allowed_locations=list(s.allowed_locations),
        allowed_owners=list(s.allowed_owners), allowed_tokens=list(s.allowed_tokens),
        discovery=tms_pb2.CatalogDiscovery(
            enabled=d.enabled, include=list(d.include), exclude=list(d.exclude), queue=d.queue,
            owner=d.owner, priority=d.priority, interval_s=d.interval_s,
            last_run_time=_ts(st.last_at), last_error=st.last_error or "",
            last_registered=st.last_registered or 0, last_missing=st.last_missing or 0),
        default_policy=s.default_policy, create_time=_ts(c.created_at),
        update_time=_ts(c.updated_at), table_count=c.table_count,
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


def operation_to_pb(o: Operation, with_logs: bool = True) -> tms_pb2.Operation:
    lease, out, work = o.lease, o.outcome, o.work
    waiting = o.state is OperationState.QUEUED and lease.attempt > 0
    running = o.attempts[-1] if o.attempts and o.state is OperationState.RUNNING else None
    return tms_pb2.Operation(
        name=o.name, table=f"tables/{o.table_id}", action=o.action,
        state=tms_pb2.Operation.State.Value(o.state.value), attempt=lease.attempt,
        max_attempts=lease.max_attempts, attempts_used=lease.attempts_used,
        attempts_handed_back=lease.handed_back, priority=o.priority, trigger=work.trigger,
        reason=work.reason, params={k: str(v) for k, v in work.params.items()},
        metrics=_struct(work.metrics), create_time=_ts(o.created_at),
        start_time=_ts(lease.started_at), end_time=_ts(out.finished_at),
        executor_id=lease.owner or "", engine_handle=lease.engine_handle or "",
        exit_code=out.exit_code or 0, result=_struct(out.result), error=out.error or "",
        log_tail=out.log_tail or "",
        cancel_requested=lease.cancel_requested,
        retry_of=f"tables/{o.table_id}/operations/{work.retry_of}" if work.retry_of else "",
        attempts=[attempt_to_pb(a, with_logs) for a in o.attempts], queue=o.queue,
        next_attempt_time=_ts(lease.run_after) if waiting else None,
        hold_reason=o.hold or "", progress=_struct(running.progress if running else None),
        benefit=work.benefit, waits_for=list(work.waits_for),
    )


MAX_PROFILE_COLUMNS = 50
MAX_PROFILE_SETS = 20


def read_profile_message(p: ReadProfile) -> tms_pb2.ReadProfile:
    """A table's read profile for ExplainTable: shares of recent scans, most used first."""
    scans = p.scans or 1.0
    return tms_pb2.ReadProfile(
        reports=p.reports, recent_scans=p.scans,
        filtered_share=min(1.0, p.filtered_scans / scans) if p.scans else 0.0,
        kept_share=p.kept_share,
        columns=[tms_pb2.ColumnRead(column=u.column, operator=u.operator,
                                    share=min(1.0, u.weight / scans), weight=u.weight)
                 for u in sorted(p.predicates, key=lambda u: (u.operator == PROJECTED,
                                                              -u.weight, u.column))
                 [:MAX_PROFILE_COLUMNS]],
        column_sets=[tms_pb2.ColumnSetRead(columns=list(cols), share=min(1.0, w / scans))
                     for cols, w in p.column_sets[:MAX_PROFILE_SETS]],
        summary=p.summary())
