"""Commit intake: NotifyCommit and the batch NotifyCommits share one path into the store."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2

from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import ServicerBase, rpc
from tms.api.errors import invalid, not_found
from tms.domain import CommitEvent
from tms.telemetry import instruments
from tms.tracing import current_traceparent
from tms.v1 import tms_pb2

MAX_BATCH_COMMITS = 1000


def _event(p: v.Problems, prefix: str, req: tms_pb2.NotifyCommitRequest) -> CommitEvent:
    table_id = v.table_name(p, f"{prefix}table", req.table)
    v.string(p, f"{prefix}commit_id", req.commit_id, v.MAX_COMMIT_ID_LEN, required=True)
    commit_time = None
    if req.HasField("commit_time"):
        commit_time = v.recent_timestamp(p, f"{prefix}commit_time", req.commit_time)
    st = req.stats
    if st.files_added < 0:
        p.append((f"{prefix}stats.files_added", "must not be negative"))
    if st.bytes_added < 0:
        p.append((f"{prefix}stats.bytes_added", "must not be negative"))
    v.string(p, f"{prefix}stats.operation", st.operation, v.MAX_OPERATION_TYPE_LEN)
    has_stats = req.HasField("stats")
    return CommitEvent(
        table_id=table_id, commit_id=req.commit_id, commit_time=commit_time,
        files_added=st.files_added if has_stats else None,
        bytes_added=st.bytes_added if has_stats else None, operation_type=st.operation,
        traceparent=current_traceparent() or "",
    )


def _count(outcomes: list[bool | None]) -> None:
    new = sum(1 for o in outcomes if o)
    dup = sum(1 for o in outcomes if o is False)
    unknown = len(outcomes) - new - dup
    counter = instruments().commits_received
    for result, n in (("new", new), ("duplicate", dup), ("unknown_table", unknown)):
        if n:
            counter.add(n, {"result": result})


class CommitsMixin(ServicerBase):
    def _out_of_scope(self, principal: Principal, table_ids: set[str]) -> set[str]:
        """Table ids of this batch the principal may not notify (none for unscoped tokens)."""
        if not principal.scoped:
            return set()
        owners = self.store.table_owners(sorted(table_ids)) if principal.owner_scoped else {}
        return {t for t in table_ids if not principal.allows(t, owners.get(t))}

    @rpc
    def NotifyCommit(self, request: tms_pb2.NotifyCommitRequest, context: grpc.ServicerContext,
                     principal: Principal) -> tms_pb2.NotifyCommitResponse:
        p: v.Problems = []
        event = _event(p, "", request)
        if p:
            raise invalid(p)
        if self._out_of_scope(principal, {event.table_id}):
            self.check_scope(principal, event.table_id, None)
        outcome = self.batcher.notify(event, context.time_remaining())
        _count([outcome])
        if outcome is None:
            raise not_found(request.table)
        return tms_pb2.NotifyCommitResponse(duplicate=not outcome)

    @rpc
    def NotifyCommits(self, request: tms_pb2.NotifyCommitsRequest,
                      context: grpc.ServicerContext,
                      principal: Principal) -> tms_pb2.NotifyCommitsResponse:
        n = len(request.commits)
        if not 1 <= n <= MAX_BATCH_COMMITS:
            raise invalid([("commits", f"must hold 1 to {MAX_BATCH_COMMITS} commits, got {n}")])
        p: v.Problems = []
        events = [_event(p, f"commits[{i}].", c) for i, c in enumerate(request.commits)]
        if p:
            raise invalid(p)
        denied = self._out_of_scope(principal, {e.table_id for e in events})
        allowed = [i for i, e in enumerate(events) if e.table_id not in denied]
        outcomes = self.store.commits_notify([events[i] for i in allowed])
        _count(outcomes)
        results = [tms_pb2.NotifyCommitsResponse.Result() for _ in events]
        for i, e in enumerate(events):
            if e.table_id in denied:
                results[i].error.CopyFrom(status_pb2.Status(
                    code=code_pb2.PERMISSION_DENIED,
                    message=f"token {principal.name!r} may not access tables/{e.table_id}"))
        for i, outcome in zip(allowed, outcomes, strict=True):
            if outcome is None:
                results[i].error.CopyFrom(status_pb2.Status(
                    code=code_pb2.NOT_FOUND, message=f"tables/{events[i].table_id} not found"))
            else:
                results[i].duplicate = not outcome
        return tms_pb2.NotifyCommitsResponse(results=results)
