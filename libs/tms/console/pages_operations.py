"""Operations: the list (by state, action, table, queue, time) and one operation's detail
with its attempts, log tails, result, outcome and live Spark progress."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict

from tms.console import forms
from tms.console.pages_tables import outcome
from tms.console.web import Ctx, Page
from tms.v1 import tms_pb2

OP_ORDERS = ("", "-create_time", "create_time", "-end_time", "priority")
OP_STATES = ("", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED")
FILTERS = ("state", "action", "table", "queue", "created_after", "created_before", "order_by",
           "page_size")
PROGRESS_POLL_S = 2
ACTIVE = (tms_pb2.Operation.QUEUED, tms_pb2.Operation.RUNNING)


def operations(ctx: Ctx) -> Page:
    q = ctx.request.query_params
    p: forms.Problems = {}
    state = forms.choice(p, "state", q.get("state"), OP_STATES)
    action = forms.pattern(p, "action", q.get("action"), forms.ACTION_RE, "an action name")
    table = forms.pattern(p, "table", q.get("table"), forms.TABLE_ID_RE, "a table id")
    queue = forms.pattern(p, "queue", q.get("queue"), forms.QUEUE_RE, "a queue name")
    after = forms.time(p, "created_after", q.get("created_after"))
    before = forms.time(p, "created_before", q.get("created_before"))
    order = forms.choice(p, "order_by", q.get("order_by"), OP_ORDERS)
    size = forms.integer(p, "page_size", q.get("page_size"), 1, forms.MAX_PAGE_SIZE)
    typed = {k: q.get(k, "") for k in FILTERS}
    if p:
        return Page("operations.html", {"title": "Operations", "problems": p, "typed": typed,
                                        "ops": [], "next_token": ""}, 400)
    req = tms_pb2.ListOperationsRequest(
        parent=f"tables/{table}" if table else "tables/-", page_token=q.get("page_token", ""),
        page_size=size or forms.DEFAULT_PAGE_SIZE, action=action, queue=queue, order_by=order,
        state=tms_pb2.Operation.State.Value(state) if state else 0)  # type: ignore[arg-type]
    if after is not None:
        req.created_after.CopyFrom(after)
    if before is not None:
        req.created_before.CopyFrom(before)
    resp = ctx.call("ListOperations", req)
    ops = list(resp.operations)
    if queue and any(o.queue != queue for o in ops):
        ctx.notes.append("queue filter not applied: not available from this API yet")
    return Page("operations.html", {"title": "Operations", "problems": {}, "typed": typed,
                                    "ops": ops, "next_token": resp.next_page_token,
                                    "page_token": q.get("page_token", "")})


def _name(ctx: Ctx) -> tuple[str, str, str] | None:
    tid = ctx.request.path_params["table"]
    oid = ctx.request.path_params["op"]
    p: forms.Problems = {}
    forms.pattern(p, "table", tid, forms.TABLE_ID_RE, "a table id")
    if p or not (oid.isascii() and oid.isdigit()):
        return None
    return tid, oid, f"tables/{tid}/operations/{oid}"


def operation_detail(ctx: Ctx) -> Page:
    names = _name(ctx)
    if names is None:
        return Page("error.html", {"title": "No such operation",
                                   "message": "not an operation name"}, 404)
    tid, oid, name = names
    op = ctx.call("GetOperation", tms_pb2.GetOperationRequest(name=name))
    may_act, _ = ctx.table_actions(f"tables/{tid}")
    return Page("operation.html", {
        "title": f"Operation {tid}/{oid}", "op": op, "tid": tid, "oid": oid,
        "result_json": _json(op.result) if op.HasField("result") else "",
        "metrics_json": _json(op.metrics) if op.HasField("metrics") else "",
        "attempt_results": {a.attempt: _json(a.result) for a in op.attempts
                            if a.HasField("result")},
        "outcome": outcome(op), "progress": progress(op), "may_act": may_act,
        "poll_s": PROGRESS_POLL_S, "active": op.state in ACTIVE})


def progress_fragment(ctx: Ctx) -> Page:
    names = _name(ctx)
    if names is None:
        return Page("error.html", {"title": "No such operation", "message": ""}, 404)
    tid, oid, name = names
    op = ctx.call("GetOperation", tms_pb2.GetOperationRequest(name=name))
    return Page("progress.html", {"op": op, "tid": tid, "oid": oid, "progress": progress(op),
                                  "poll_s": PROGRESS_POLL_S, "active": op.state in ACTIVE})


def progress(op: tms_pb2.Operation) -> list[dict[str, Any]]:
    """The Spark stages of a running operation: id, name, tasks, completed, active, failed."""
    if not op.HasField("progress"):
        return []
    stages = MessageToDict(op.progress).get("stages")
    out = []
    for s in stages if isinstance(stages, list) else []:
        if not isinstance(s, dict):
            continue

        def n(key: str, stage: dict[str, Any] = s) -> int:
            v = stage.get(key)
            return int(v) if isinstance(v, int | float) and v >= 0 else 0

        tasks = n("tasks")
        out.append({"id": n("id"), "name": str(s.get("name", "")), "tasks": tasks,
                    "completed": min(n("completed"), tasks) if tasks else n("completed"),
                    "active": n("active"), "failed": n("failed")})
    return out


def _json(message: Any) -> str:
    return json.dumps(MessageToDict(message), indent=2, sort_keys=True)
