"""``tms operations list|show|cancel|retry|trigger``, and the operation rows `watch` shares.

``show`` prints the job's log tail (the last lines of the Spark driver's output, which the
executor stores) only where it helps: an operation that did not succeed shows its last
:data:`FAILED_LOG_LINES` lines, since the error is usually there; a successful or running one
shows a line saying how long the log is; ``--logs`` prints all of it for any state.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from google.protobuf.json_format import MessageToDict

from tms.v1 import tms_pb2
from tms_services.cli.client import (
    TIME_HELP,
    Client,
    add_limit_options,
    collect,
    key_value,
    limit_of,
    lower,
    operation_name,
    time_arg,
    upper,
)
from tms_services.cli.errors import usage_error
from tms_services.cli.format import (
    NONE,
    benefit_text,
    block,
    cut,
    metrics_text,
    pairs,
    span,
    struct_text,
    table,
    until,
    when,
)
from tms_services.cli.output import emit, emit_more

OP = tms_pb2.Operation
OP_STATES = tuple(n for n in OP.State.keys() if n != "STATE_UNSPECIFIED")
LOG_INDENT = "  "
FAILED_LOG_LINES = 30  # of a FAILED / CANCELLED / SKIPPED operation's log tail, shown unasked
LOG_ALWAYS = frozenset({OP.FAILED, OP.CANCELLED, OP.SKIPPED})
MAX_SUMMARY_DAYS = 90


def state(op: tms_pb2.Operation) -> str:
    return str(OP.State.Name(op.state))


def attempts_text(op: tms_pb2.Operation) -> str:
    """Attempts used of those allowed; hand-backs (an executor shutting down) are not failures
    and are counted apart."""
    text = f"{op.attempts_used}/{op.max_attempts}"
    if op.attempts_handed_back:
        text += f" +{op.attempts_handed_back} handed back"
    return text


def progress_text(op: tms_pb2.Operation) -> str:
    """A RUNNING job's Spark progress, stage by stage, when its engine reports it."""
    if op.state != OP.RUNNING or not op.HasField("progress"):
        return NONE
    stages = op.progress.fields.get("stages")
    if stages is None or not stages.list_value.values:
        return "no active stage"
    parts = []
    for v in stages.list_value.values:
        st = v.struct_value.fields

        def n(key: str, st: Any = st) -> int:
            return int(st[key].number_value) if key in st else 0

        name = st["name"].string_value if "name" in st else ""
        parts.append(f"stage {n('id')} {cut(name, 40)}: {n('completed')}/{n('tasks')} tasks"
                     + (f", {n('active')} active" if n("active") else "")
                     + (f", {n('failed')} failed" if n("failed") else ""))
    return "; ".join(parts)


def executor(op: tms_pb2.Operation) -> str:
    """The lease holder, or while waiting for a retry (the lease is gone) the executor of the
    last attempt: the one whose logs explain the failure."""
    if op.executor_id or not op.attempts:
        return op.executor_id
    return op.attempts[-1].executor_id


def elapsed(op: tms_pb2.Operation, now: dt.datetime) -> str:
    """RUNNING: time in the current attempt. Ended: from the first attempt's start to the end,
    retry waits included, because that is how long the table waited for the result."""
    if op.state == OP.RUNNING:
        return span(op.start_time, None, now)
    if op.HasField("end_time"):
        first = op.attempts[0].start_time if op.attempts else op.start_time
        return span(first, op.end_time, now)
    return NONE


def outcome_text(op: tms_pb2.Operation) -> str:
    """What a finished job did, from the ``outcome`` block of its result, in a few words."""
    o = MessageToDict(op.result).get("outcome") if op.HasField("result") else None
    if not isinstance(o, dict):
        return NONE
    if o.get("changed_nothing"):
        return f"changed nothing at snapshot {o.get('snapshot_after') or NONE}"
    words = [f"{int(o.get(k) or 0)} {label}" for k, label in (
        ("data_files_rewritten", "data files rewritten"), ("data_files_added", "added"),
        ("delete_files_removed", "delete files removed")) if o.get(k)]
    touched = o.get("partitions_touched")
    if touched is not None:
        words.append(f"{int(touched)} partitions")
    return ", ".join(words) or "changed the table"


def detail(op: tms_pb2.Operation) -> str:
    """What holds a QUEUED operation back, the error of a failed one, the progress of a
    running one, else why it was queued."""
    text = op.error if op.error and op.state in (OP.FAILED, OP.QUEUED) else op.reason
    if op.state == OP.SKIPPED:
        text = f"skipped: {op.error}"
    elif op.state == OP.SUCCEEDED and op.HasField("result") and "outcome" in op.result:
        text = f"{outcome_text(op)}; {op.reason}"
    backing_off = op.HasField("next_attempt_time") and (
        op.next_attempt_time.ToDatetime(dt.UTC) > dt.datetime.now(dt.UTC))
    if op.state == OP.QUEUED and op.hold_reason and not backing_off:  # else: NEXT ATTEMPT
        text = f"held: {op.hold_reason}" + (f"; last error: {op.error}" if op.error else "")
    if op.state == OP.RUNNING and op.HasField("progress"):
        text = progress_text(op)
    if op.cancel_requested and op.state == OP.RUNNING:
        text = f"cancel requested; {text}"
    return cut(text)


OP_HEADERS = ["OPERATION", "ACTION", "STATE", "ATTEMPTS", "QUEUE", "EXECUTOR", "CREATED (UTC)",
              "ELAPSED", "NEXT ATTEMPT (UTC)", "DETAIL"]


def op_rows(ops: list[tms_pb2.Operation], now: dt.datetime) -> str:
    return table(OP_HEADERS, [
        [o.name, o.action, state(o), attempts_text(o), o.queue, executor(o),
         when(o.create_time, zone=False), elapsed(o, now),
         until(o.next_attempt_time, now, compact=True), detail(o)] for o in ops], right=(3, 7))


def _attempt_rows(op: tms_pb2.Operation, now: dt.datetime) -> str:
    return table(["ATTEMPT", "STATE", "EXECUTOR", "STARTED (UTC)", "DURATION", "EXIT",
                  "ENGINE HANDLE", "ERROR"], [
        [a.attempt, tms_pb2.Attempt.State.Name(a.state), a.executor_id,
         when(a.start_time, zone=False), span(a.start_time, a.end_time, now),
         a.exit_code if a.HasField("exit_code") else NONE, a.engine_handle, cut(a.error)]
        for a in op.attempts], right=(0, 5))


def log_text(op: tms_pb2.Operation, logs: bool) -> list[str]:
    """The log tail's lines as ``show`` prints them (see the module's docstring)."""
    lines = op.log_tail.splitlines()
    if not lines:
        return []
    if logs:
        return ["", "log tail:", *(LOG_INDENT + line for line in lines)]
    if op.state in LOG_ALWAYS:
        shown = lines[-FAILED_LOG_LINES:]
        head = "log tail" if len(shown) == len(lines) else (
            f"log tail (last {len(shown)} of {len(lines)} lines; --logs prints all)")
        return ["", f"{head}:", *(LOG_INDENT + line for line in shown)]
    return ["", f"log tail: {len(lines):,} lines (--logs prints them)"]


def operation_text(op: tms_pb2.Operation, now: dt.datetime | None = None,
                   logs: bool = True) -> str:
    now = now or dt.datetime.now(dt.UTC)
    ended = op.HasField("end_time")
    parts = [block([
        ("name", op.name), ("table", op.table), ("action", op.action), ("state", state(op)),
        ("attempts", attempts_text(op)), ("held", op.hold_reason or NONE),
        ("progress", progress_text(op)), ("queue", op.queue), ("priority", op.priority),
        ("trigger", op.trigger), ("reason", op.reason), ("params", pairs(op.params)),
        ("benefit", benefit_text(op)), ("waits_for", ", ".join(op.waits_for) or NONE),
        ("outcome", outcome_text(op)),
        ("executor_id", op.executor_id), ("engine_handle", op.engine_handle),
        ("create_time", when(op.create_time)), ("start_time", when(op.start_time)),
        ("end_time", when(op.end_time)), ("elapsed", elapsed(op, now)),
        ("next_attempt_time", until(op.next_attempt_time, now)),
        ("cancel_requested", "yes" if op.cancel_requested else "no"),
        ("retry_of", op.retry_of), ("exit_code", op.exit_code if ended else NONE),
        # a SKIPPED operation's error field holds why it was not needed: not an error
        ("skipped" if op.state == OP.SKIPPED else "error", op.error),
        ("metrics", metrics_text(op.metrics)),
        ("result", struct_text(op.result)),
    ])]
    if op.attempts:
        parts += ["", _attempt_rows(op, now)]
    parts += log_text(op, logs)
    return "\n".join(parts)


def _list(c: Client, args: argparse.Namespace) -> int:
    state = OP.State.Value(args.state) if args.state else 0

    def page(size: int, token: str) -> tms_pb2.ListOperationsResponse:
        return c.tms.list_operations(args.table or None, page_size=size, page_token=token,
                                     state=state, action=args.action,
                                     created_after=args.created_after,
                                     created_before=args.created_before)

    ops, token = collect(page, "operations", limit_of(args))
    now = dt.datetime.now(dt.UTC)
    emit(args, tms_pb2.ListOperationsResponse(operations=ops, next_page_token=token),
         lambda _m: op_rows(ops, now) if ops else "no operations")
    emit_more(args, token)
    return 0


def _show(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.get_operation(operation_name(args.operation)),
         lambda op: operation_text(op, logs=args.logs))
    return 0


def _cancelled(op: tms_pb2.Operation) -> str:
    if op.state == OP.RUNNING:
        return f"cancel requested for {op.name} (RUNNING on {op.executor_id or 'an executor'})"
    return f"{op.name} is {state(op)}"


def _cancel(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.cancel_operation(operation_name(args.operation)), _cancelled)
    return 0


def _queued(op: tms_pb2.Operation) -> str:
    extra = f", retry of {op.retry_of}" if op.retry_of else ""
    return (f"queued {op.name} ({op.action}, queue {op.queue}, priority {op.priority}, "
            f"up to {op.max_attempts} attempts{extra})")


def _retry(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.retry_operation(operation_name(args.operation)), _queued)
    return 0


def _trigger(c: Client, args: argparse.Namespace) -> int:
    op = c.tms.trigger_operation(args.table, args.action_name, params=dict(args.param),
                                 reason=args.reason, request_id=args.request_id or None)
    emit(args, op, _queued)
    return 0


def summary_text(resp: tms_pb2.SummarizeOperationsResponse) -> str:
    rows = [[d.day, d.succeeded, d.failed, d.skipped, d.cancelled, d.data_files_before,
             d.data_files_after, size_text(d.bytes_rewritten)] for d in resp.days]
    total = tms_pb2.DaySummary()
    for d in resp.days:
        for f in ("succeeded", "failed", "skipped", "cancelled", "data_files_before",
                  "data_files_after", "bytes_rewritten"):
            setattr(total, f, getattr(total, f) + getattr(d, f))
    rows.append(["total", total.succeeded, total.failed, total.skipped, total.cancelled,
                 total.data_files_before, total.data_files_after,
                 size_text(total.bytes_rewritten)])
    return table(["DAY (UTC)", "SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED", "FILES BEFORE",
                  "FILES AFTER", "REWRITTEN"], rows, right=range(1, 8))


def size_text(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} B"


def _summary(c: Client, args: argparse.Namespace) -> int:
    if not 1 <= args.days <= MAX_SUMMARY_DAYS:
        raise usage_error(f"--days must be between 1 and {MAX_SUMMARY_DAYS}")
    emit(args, c.tms.summarize_operations(args.table or None, days=args.days), summary_text)
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    o = sub.add_parser("operations", parents=[common],
                       help="list, show, cancel, retry, trigger operations")
    os_ = o.add_subparsers(dest="subcommand", metavar="COMMAND", required=True,
                           help="what to do with operations")

    ls = os_.add_parser("list", parents=[common], help="operations, newest first")
    ls.add_argument("--table", default="", help="only this table's (default: every table)")
    ls.add_argument("--state", type=upper, choices=OP_STATES,
                    help="only operations in this state (any case)")
    ls.add_argument("--action", type=lower, default="", help="only this action")
    ls.add_argument("--created-after", type=time_arg, metavar="TIME",
                    help=f"created at or after TIME: {TIME_HELP}")
    ls.add_argument("--created-before", type=time_arg, metavar="TIME",
                    help=f"created before TIME: {TIME_HELP}")
    add_limit_options(ls)
    ls.set_defaults(fn=_list)

    for name, fn, text in (("show", _show, "one operation with its attempts and log tail"),
                           ("cancel", _cancel, "cancel a queued or running operation"),
                           ("retry", _retry, "queue a new try of a FAILED/CANCELLED/SKIPPED one")):
        p = os_.add_parser(name, parents=[common], help=text)
        p.add_argument("operation", metavar="OPERATION",
                       help="tables/{table}/operations/{id}, or {table}/{id}")
        if name == "show":
            p.add_argument("--logs", action="store_true",
                           help="print the whole log tail (unasked: the last "
                                f"{FAILED_LOG_LINES} lines of an operation that did not "
                                "succeed, none of one that did)")
        p.set_defaults(fn=fn)

    sm = os_.add_parser("summary", parents=[common],
                        help="finished operations per UTC day: outcomes, files before and "
                             "after, bytes rewritten")
    sm.add_argument("--days", type=int, default=7, help="days ending today (1-90, default 7)")
    sm.add_argument("--table", default="", help="only this table's (default: every table)")
    sm.set_defaults(fn=_summary)

    t = os_.add_parser("trigger", parents=[common],
                       help="queue an action now, bypassing the table's policy")
    t.add_argument("table", metavar="TABLE", help="table id or tables/{id}")
    t.add_argument("action_name", type=lower, metavar="ACTION", help="e.g. compaction")
    t.add_argument("--param", type=key_value, action="append", default=[], metavar="K=V",
                   help="engine parameter (repeatable)")
    t.add_argument("--reason", default="", help="note stored with the operation")
    t.add_argument("--request-id", default="",
                   help="idempotency key: a replay returns the first result")
    t.set_defaults(fn=_trigger)
