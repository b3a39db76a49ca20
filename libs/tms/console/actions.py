"""Actions: pause / resume a table, trigger an operation, cancel, retry, set a queue limit.

Each is two POSTs: the first shows what will happen and asks for confirmation (the typed
values ride along in hidden fields), the second calls the API. The API decides: its error is
shown on the form, field violations next to their field, with everything typed kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from google.protobuf.message import Message
from starlette.responses import RedirectResponse, Response

from tms.console import forms
from tms.console.pages_fleet import queues
from tms.console.web import Ctx, Page, form, short_op
from tms.v1 import tms_pb2
from tms_client import TmsError

CONFIRM = "confirm"
EDIT = "edit"
NEW_QUEUE = "-"  # the path of the form that names its queue in a field


@dataclass(frozen=True)
class Simple:
    method: str
    verb: str
    question: str


TABLE_ACTIONS = {
    "pause": Simple("PauseTable", "Pause", "Pause {x}? It gets no new operations until "
                    "resumed; queued ones stay queued."),
    "resume": Simple("ResumeTable", "Resume", "Resume {x}? The scheduler checks it at once."),
}
OPERATION_ACTIONS = {
    "cancel": Simple("CancelOperation", "Cancel operation",
                     "Cancel {x}? A queued operation is cancelled at once; a running job is "
                     "stopped by its executor."),
    "retry": Simple("RetryOperation", "Retry", "Queue a new operation repeating {x}?"),
}


def _confirm(ctx: Ctx, title: str, question: str, verb: str, hidden: dict[str, str],
             summary: list[tuple[str, str]], back: str, error: TmsError | None = None,
             editable: bool = False) -> Page:
    return Page("confirm.html", {
        "title": title, "question": question, "verb": verb, "hidden": hidden,
        "summary": summary, "back": back, "editable": editable,
        "error": error.message if error else "",
        "violations": error.violations if error else ()}, 409 if error else 200)


def _table_id(ctx: Ctx) -> str | None:
    tid = str(ctx.request.path_params["table"])
    return tid if forms.TABLE_ID_RE.fullmatch(tid) else None


def table_action(ctx: Ctx) -> Page | Response:
    verb = str(ctx.request.path_params["verb"])
    tid = _table_id(ctx)
    spec = TABLE_ACTIONS.get(verb)
    if tid is None or spec is None:
        return Page("error.html", {"title": "Not found", "message": "no such action"}, 404)
    name = f"tables/{tid}"
    back = f"/tables/{tid}"
    req: Message = (tms_pb2.PauseTableRequest(name=name) if verb == "pause"
                    else tms_pb2.ResumeTableRequest(name=name))
    return _simple(ctx, spec, name, req, back, f"{back}?" + urlencode({"done": verb}))


def operation_action(ctx: Ctx) -> Page | Response:
    verb = str(ctx.request.path_params["verb"])
    tid = _table_id(ctx)
    oid = str(ctx.request.path_params["op"])
    spec = OPERATION_ACTIONS.get(verb)
    if tid is None or spec is None or not (oid.isascii() and oid.isdigit()):
        return Page("error.html", {"title": "Not found", "message": "no such action"}, 404)
    name = f"tables/{tid}/operations/{oid}"
    back = f"/operations/{tid}/{oid}"
    req: Message = (tms_pb2.CancelOperationRequest(name=name) if verb == "cancel"
                    else tms_pb2.RetryOperationRequest(name=name))
    return _simple(ctx, spec, name, req, back, None)


def _simple(ctx: Ctx, spec: Simple, name: str, req: Message, back: str,
            done: str | None) -> Page | Response:
    question = spec.question.format(x=name)
    if form(ctx).get("step") != CONFIRM:
        return _confirm(ctx, spec.verb, question, spec.verb, {}, [("Resource", name)], back)
    try:
        result = ctx.call(spec.method, req)
    except TmsError as e:
        return _confirm(ctx, spec.verb, question, spec.verb, {}, [("Resource", name)], back, e)
    target = done or (short_op(result.name) if isinstance(result, tms_pb2.Operation)
                      else back)
    return RedirectResponse(target, 303)


def trigger_form(ctx: Ctx, typed: dict[str, str] | None = None,
                 problems: forms.Problems | None = None, error: str = "",
                 status: int = 200) -> Page:
    tid = _table_id(ctx)
    if tid is None:
        return Page("error.html", {"title": "Not found", "message": "no such table"}, 404)
    may_act, actions = ctx.table_actions(f"tables/{tid}")
    if not may_act:
        return Page("error.html", {"title": "Not allowed", "message":
                                   "This token may not trigger operations on this table."}, 403)
    return Page("trigger.html", {"title": f"Trigger an operation on {tid}", "tid": tid,
                                 "actions": actions, "typed": typed or {},
                                 "problems": problems or {}, "error": error}, status)


def trigger(ctx: Ctx) -> Page | Response:
    tid = _table_id(ctx)
    if tid is None:
        return Page("error.html", {"title": "Not found", "message": "no such table"}, 404)
    f = form(ctx)
    typed = {k: f.get(k, "") for k in ("action", "params", "reason")}
    p: forms.Problems = {}
    action = forms.pattern(p, "action", typed["action"], forms.ACTION_RE, "an action name")
    if not typed["action"].strip():
        p["action"] = "choose an action"
    params = forms.params(p, "params", typed["params"])
    reason = forms.text(p, "reason", typed["reason"])
    step = f.get("step")
    if p or step == EDIT:
        return trigger_form(ctx, typed, p, status=400 if p else 200)
    summary = [("Table", f"tables/{tid}"), ("Action", action)]
    summary += [(f"params[{k}]", v) for k, v in params.items()]
    if reason:
        summary.append(("Reason", reason))
    if step != CONFIRM:
        return _confirm(ctx, "Trigger", f"Queue {action} on tables/{tid} now, bypassing its "
                        "policy?", "Trigger", typed, summary, f"/tables/{tid}", editable=True)
    try:
        op = ctx.call("TriggerOperation", tms_pb2.TriggerOperationRequest(
            parent=f"tables/{tid}", action=action, params=params, reason=reason))
    except TmsError as e:
        problems: dict[str, str] = {}
        for v in e.violations:
            key = forms.violation_field(v.field)
            key = key if key in typed else "action"
            problems[key] = (problems.get(key, "") + f" {v.field}: {v.description}").strip()
        return trigger_form(ctx, typed, problems, error=e.message, status=400)
    return RedirectResponse(short_op(op.name), 303)


def queue_limit(ctx: Ctx) -> Page | Response:
    qname = str(ctx.request.path_params["queue"])
    f = form(ctx)
    p: forms.Problems = {}
    if qname == NEW_QUEUE:
        qname = forms.pattern(p, "queue", f.get("queue"), forms.QUEUE_RE, "a queue name")
        if not qname and "queue" not in p:
            p["queue"] = "name the queue"
    elif not forms.QUEUE_RE.fullmatch(qname):
        return Page("error.html", {"title": "Not found", "message": "no such queue"}, 404)
    typed = {"queue": qname or f.get("queue", ""), "max_running": f.get("max_running", ""),
             "new": f.get("new", "")}
    limit = forms.integer(p, "max_running", typed["max_running"], 0, forms.MAX_QUEUE_LIMIT)
    if p or f.get("step") == EDIT:
        return queues(ctx, p, typed)
    what = "no limit" if limit is None else f"at most {limit} running"
    question = f"Set queue {qname} to {what}?" + (" 0 holds every operation of the queue "
                                                    "back." if limit == 0 else "")
    summary = [("Queue", f"queues/{qname}"), ("Limit", what)]
    if f.get("step") != CONFIRM:
        return _confirm(ctx, "Queue limit", question, "Set limit", typed, summary, "/queues",
                        editable=True)
    req = tms_pb2.UpdateQueueRequest(name=f"queues/{qname}")
    if limit is not None:
        req.max_running = limit
    try:
        ctx.call("UpdateQueue", req)
    except TmsError as e:
        bad = {forms.violation_field(v.field): v.description for v in e.violations}
        return queues(ctx, {"max_running": bad.get("max_running", e.message)}, typed)
    return RedirectResponse("/queues", 303)


def hidden_of(values: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}
