"""Commit intake: NotifyCommit and the batch NotifyCommits share one path into the store.

Intake runs at the rate of gRPC itself, so a request is first checked by a fast path: one
precompiled whole-value regex per field (tms.api.validate's *_RE forms of the same rules). A
request it accepts is one the field-by-field checks accept; anything else, or any batch with
one such entry, goes through those checks, which name every bad field. Strictness is theirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import repeat

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from tms.api import validate as v
from tms.api.auth import Principal
from tms.api.base import ServicerBase, rpc
from tms.api.commit_ids import CommitIdChecks
from tms.api.errors import invalid, not_found
from tms.domain import CommitEvent
from tms.observability.metrics import instruments
from tms.observability.tracing import current_traceparent
from tms.v1 import tms_pb2

MAX_BATCH_COMMITS = 1000

_table = v.TABLE_NAME_ID_RE.fullmatch
_commit_id = v.COMMIT_ID_RE.fullmatch
_operation = v.OPERATION_TYPE_RE.fullmatch
Refused = Callable[[str], tuple[str, ...]]


def _event(p: v.Problems, prefix: str, req: tms_pb2.NotifyCommitRequest,
           traceparent: str, refused: Refused) -> CommitEvent:
    """The field-by-field checks: every problem of the request is appended to ``p``."""
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
        table_id, req.commit_id, commit_time, st.files_added if has_stats else None,
        st.bytes_added if has_stats else None, st.operation, traceparent,
        refused(req.commit_id))


def _fast_event(req: tms_pb2.NotifyCommitRequest, traceparent: str,
                refused: Refused) -> CommitEvent | None:
    """The event when every field passes the whole-value checks; None: take the slow path."""
    m = _table(req.table)
    commit_id = req.commit_id
    if m is None or _commit_id(commit_id) is None:
        return None
    commit_time = None
    if req.HasField("commit_time"):
        p: v.Problems = []
        commit_time = v.recent_timestamp(p, "commit_time", req.commit_time)
        if p:
            return None
    if not req.HasField("stats"):
        return CommitEvent(m.group(1), commit_id, commit_time, None, None, "", traceparent,
                           refused(commit_id))
    st = req.stats
    files, size, operation = st.files_added, st.bytes_added, st.operation
    if files < 0 or size < 0 or _operation(operation) is None:
        return None
    return CommitEvent(m.group(1), commit_id, commit_time, files, size, operation, traceparent,
                       refused(commit_id))


def _joined(pattern: re.Pattern[str]) -> Callable[[list[str]], bool]:
    """Whether every value of a column matches ``pattern`` (which cannot match a newline):
    one match over the newline-joined values, and as many newlines as separators (a value
    holding a newline would otherwise pass as two)."""
    whole = re.compile(rf"(?:{pattern.pattern})(?:\n(?:{pattern.pattern}))*").fullmatch

    def check(values: list[str]) -> bool:
        joined = "\n".join(values)
        return joined.count("\n") == len(values) - 1 and whole(joined) is not None

    return check


_tables = _joined(v.TABLE_NAME_ID_RE)
_commit_ids = _joined(v.COMMIT_ID_RE)
_operations = _joined(v.OPERATION_TYPE_RE)
_TABLE_PREFIX = "tables/"
_new_event = tuple.__new__


def _fast_batch(requests: Sequence[tms_pb2.NotifyCommitRequest],
                traceparent: str, refused: Refused) -> list[CommitEvent] | None:
    """The events of a batch in the usual shape (every entry with stats, none with a commit
    time) when every value passes: the checks of ``_fast_event`` a column at a time, a regex
    per column instead of three per commit. None: not that shape, or a value to look at."""
    if not requests or any([r.HasField("commit_time") for r in requests]) \
            or not all([r.HasField("stats") for r in requests]):
        return None
    tables = [r.table for r in requests]
    ids = [r.commit_id for r in requests]
    if not _tables(tables) or not _commit_ids(ids):
        return None
    stats = [r.stats for r in requests]
    files = [s.files_added for s in stats]
    size = [s.bytes_added for s in stats]
    operations = [s.operation for s in stats]
    if min(files) < 0 or min(size) < 0 or not _operations(operations):
        return None
    # every value is "tables/" and an id (no "/", no newline): the split is exact
    table_ids = "\n".join(tables)[len(_TABLE_PREFIX):].split("\n" + _TABLE_PREFIX)
    return list(map(_new_event, repeat(CommitEvent), zip(
        table_ids, ids, repeat(None), files, size, operations, repeat(traceparent),
        map(refused, ids))))


def events_of(requests: Sequence[tms_pb2.NotifyCommitRequest], prefix: str,
              traceparent: str, refused: Refused) -> list[CommitEvent]:
    """Validated events of ``requests`` (one pass of the fast path), or INVALID_ARGUMENT naming
    every bad field (``prefix`` formats an entry's index into its field paths). Each event
    carries the formats that refuse its commit id (``refused``): the store decides by the
    table's format."""
    fast = _fast_batch(requests, traceparent, refused)
    if fast is not None:
        return fast
    events = []
    for req in requests:
        e = _fast_event(req, traceparent, refused)
        if e is None:
            break
        events.append(e)
    else:
        return events
    p: v.Problems = []
    events = [_event(p, prefix.format(i), req, traceparent, refused)
              for i, req in enumerate(requests)]
    if p:
        raise invalid(p)
    return events  # the fast path is stricter than needed here: the checks decide


def _count(outcomes: list[bool | str | None]) -> None:
    new = dup = bad = 0
    for o in outcomes:
        if o is True:
            new += 1
        elif o is False:
            dup += 1
        elif o is not None:
            bad += 1
    unknown = len(outcomes) - new - dup - bad
    counter = instruments().commits_received
    for result, n in (("new", new), ("duplicate", dup), ("unknown_table", unknown),
                      ("invalid_commit_id", bad)):
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
        traceparent = current_traceparent() or ""
        refused = self.commit_ids.refused
        event = _fast_event(request, traceparent, refused)
        if event is None:  # INVALID_ARGUMENT naming the fields (or the checks' own event)
            event = events_of([request], "", traceparent, refused)[0]
        if principal.scoped and self._out_of_scope(principal, {event.table_id}):
            self.check_scope(principal, event.table_id, None)
        outcome = self.batcher.notify(event, context.time_remaining())
        _count([outcome])
        if outcome is None:
            raise not_found(request.table)
        if isinstance(outcome, str):  # the table's format refuses the id: nothing recorded
            raise invalid([("commit_id", self.commit_ids.problem(outcome, event.commit_id))])
        return tms_pb2.NotifyCommitResponse(duplicate=not outcome)

    @rpc
    def NotifyCommits(self, request: tms_pb2.NotifyCommitsRequest,
                      context: grpc.ServicerContext,
                      principal: Principal) -> tms_pb2.NotifyCommitsResponse:
        commits = request.commits
        n = len(commits)
        if not 1 <= n <= MAX_BATCH_COMMITS:
            raise invalid([("commits", f"must hold 1 to {MAX_BATCH_COMMITS} commits, got {n}")])
        events = events_of(commits, "commits[{}].", current_traceparent() or "",
                           self.commit_ids.refused)
        denied = (self._out_of_scope(principal, {e.table_id for e in events})
                  if principal.scoped else set())
        if not denied:
            outcomes = self.store.commits_notify(events)
            _count(outcomes)
            if all([o is True or o is False for o in outcomes]):  # the answer from its wire form
                return _FROM_WIRE(b"".join([_WIRE[o] for o in outcomes]))
            return tms_pb2.NotifyCommitsResponse(results=[
                _result(e, o, i, self.commit_ids) for i, (e, o) in enumerate(
                    zip(events, outcomes, strict=True))])
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
            results[i].CopyFrom(_result(events[i], outcome, i, self.commit_ids))
        return tms_pb2.NotifyCommitsResponse(results=results)


_DUPLICATE = tms_pb2.NotifyCommitsResponse.Result(duplicate=True)
_NEW = tms_pb2.NotifyCommitsResponse.Result(duplicate=False)
# One result entry of a NotifyCommitsResponse as it is on the wire, by outcome: a response of
# new and duplicate commits is parsed from their concatenation (in C) instead of built from a
# message per commit (a twentieth of the time for 500 commits).
_WIRE: dict[bool | str | None, bytes] = {
    o: tms_pb2.NotifyCommitsResponse(results=[r]).SerializeToString()
    for o, r in ((True, _NEW), (False, _DUPLICATE))}
_FROM_WIRE = tms_pb2.NotifyCommitsResponse.FromString


def _result(event: CommitEvent, outcome: bool | str | None, index: int,
            checks: CommitIdChecks) -> tms_pb2.NotifyCommitsResponse.Result:
    if outcome is None:
        return tms_pb2.NotifyCommitsResponse.Result(error=status_pb2.Status(
            code=code_pb2.NOT_FOUND, message=f"tables/{event.table_id} not found"))
    if isinstance(outcome, str):  # refused by the table's format: INVALID_ARGUMENT, named
        field = f"commits[{index}].commit_id"
        problem = checks.problem(outcome, event.commit_id)
        details = any_pb2.Any()
        details.Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=problem)]))
        return tms_pb2.NotifyCommitsResponse.Result(error=status_pb2.Status(
            code=code_pb2.INVALID_ARGUMENT, message=f"{field}: {problem}", details=[details]))
    return _NEW if outcome else _DUPLICATE
