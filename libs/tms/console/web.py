"""The request plumbing every page shares: the signed-in user, CSRF, rendering, the banner
when the API is lost, and what the token may do.

A page handler is a plain function ``(ctx) -> Page`` run in a worker thread (the gRPC calls
block); :func:`page` wraps it with sign-in, error pages and the API-lost banner.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import grpc
import structlog
from google.protobuf.message import Message
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from tms.console import charts, text
from tms.console.gateway import ApiLost, Gateway
from tms.console.session import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    SessionCodec,
    csrf_matches,
    new_csrf,
)
from tms.v1 import tms_pb2
from tms_client import TmsError, UnauthenticatedError

log = structlog.get_logger("tms.console")

TEMPLATES = Path(__file__).parent / "templates"
ROLE_CACHE_S = 60.0  # how long what a token may do is remembered before it is probed again
PROBE_ACTION = "console-probe"  # an action no format has: probing never queues anything
NOT_YET = "not available from this API yet"


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(visible=text.visible, when=text.when, ago=text.ago, size=text.size,
                       number=text.number, duration=text.duration)
    env.globals.update(lookalike=text.lookalike, op_state=_op_state, table_state=_table_state,
                       urlencode=urlencode, short_op=short_op, nonempty=_nonempty,
                       charts=charts, NOT_YET=NOT_YET)
    return env


def _op_state(n: int) -> str:
    return tms_pb2.Operation.State.Name(n) if n in tms_pb2.Operation.State.values() else "?"


def _table_state(n: int) -> str:
    return tms_pb2.Table.State.Name(n) if n in tms_pb2.Table.State.values() else "?"


def short_op(name: str) -> str:
    """``tables/t/operations/7`` → the console path ``/operations/t/7``."""
    parts = name.split("/")
    if len(parts) == 4 and parts[0] == "tables" and parts[2] == "operations":
        return f"/operations/{parts[1]}/{parts[3]}"
    return "/operations"


@dataclass(frozen=True)
class Powers:
    """What a token may do, as the API answered the console's probes."""

    manage: bool  # pause, resume, trigger, cancel, retry (role owner or admin)
    admin: bool  # queue limits, catalogs


@dataclass
class Settings:
    gateway: Gateway
    codec: SessionCodec
    secure_cookies: bool
    api_label: str
    env: Environment = field(default_factory=environment)
    powers: dict[str, tuple[float, Powers]] = field(default_factory=dict)


@dataclass
class Page:
    template: str
    values: dict[str, Any]
    status: int = 200


class Ctx:
    def __init__(self, request: Request, settings: Settings, token: str, csrf: str) -> None:
        self.request = request
        self.settings = settings
        self.token = token
        self.csrf = csrf
        self.notes: list[str] = []

    def call(self, method: str, req: Message) -> Any:
        return self.settings.gateway.call(self.token, method, req)

    def optional(self, method: str, req: Message) -> Any | None:
        """The answer, or None when the API does not implement ``method`` yet."""
        try:
            return self.call(method, req)
        except TmsError as e:
            if e.code == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise

    def powers(self) -> Powers:
        key = hashlib.sha256(self.token.encode()).hexdigest()
        cached = self.settings.powers.get(key)
        if cached is not None and time.monotonic() - cached[0] < ROLE_CACHE_S:
            return cached[1]
        manage = self._allowed("TriggerOperation",
                               tms_pb2.TriggerOperationRequest(parent="", action=PROBE_ACTION))
        admin = self._allowed("UpdateQueue", tms_pb2.UpdateQueueRequest(name=""))
        powers = Powers(manage, admin)
        self.settings.powers[key] = (time.monotonic(), powers)
        return powers

    def _allowed(self, method: str, invalid_request: Message) -> bool:
        """A request the API refuses as malformed if the token may call ``method`` and as
        PERMISSION_DENIED if it may not: the role check comes first, nothing is changed."""
        try:
            self.call(method, invalid_request)
        except TmsError as e:
            return e.code == grpc.StatusCode.INVALID_ARGUMENT
        return False  # the API accepted an empty request: do not trust the probe

    def table_actions(self, table: str) -> tuple[bool, list[str]]:
        """May this token act on ``table`` (scope included), and the actions its format has
        (from the API's answer to a trigger of an action no format has)."""
        if not self.powers().manage:
            return False, []
        try:
            self.call("TriggerOperation",
                      tms_pb2.TriggerOperationRequest(parent=table, action=PROBE_ACTION))
        except TmsError as e:
            if e.code != grpc.StatusCode.INVALID_ARGUMENT:
                return False, []
            for v in e.violations:
                if v.field == "action" and ":" in v.description:
                    names = v.description.split(":", 1)[1]
                    return True, [a.strip() for a in names.split(",") if a.strip()]
            return True, []
        return False, []


def safe_next(target: str | None) -> str:
    """A same-site path to go back to after sign-in (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def render(settings: Settings, template: str, values: Mapping[str, Any],
           status: int = 200) -> HTMLResponse:
    body = settings.env.get_template(template).render(api_label=settings.api_label, **values)
    return HTMLResponse(body, status_code=status)


def _ensure_csrf(request: Request, response: Response, settings: Settings, csrf: str) -> None:
    if request.cookies.get(CSRF_COOKIE) != csrf:
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict",
                            secure=settings.secure_cookies, path="/")


def csrf_of(request: Request) -> str:
    return request.cookies.get(CSRF_COOKIE) or new_csrf()


async def csrf_ok(request: Request) -> tuple[bool, dict[str, str]]:
    form = await request.form()
    values = {k: str(v) for k, v in form.items()}
    return csrf_matches(request.cookies.get(CSRF_COOKIE), values.get(CSRF_FIELD)), values


Handler = Callable[[Ctx], Page | Response]


def page(handler: Handler, post: bool = False) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        settings: Settings = request.app.state.settings
        session = settings.codec.open(request.cookies.get(SESSION_COOKIE))
        csrf = csrf_of(request)
        if session is None:
            return RedirectResponse("/signin?" + urlencode({"next": _here(request)}), 303)
        ctx = Ctx(request, settings, session.token, csrf)
        if post:
            ok, form = await csrf_ok(request)
            if not ok:
                return render(settings, "error.html", _chrome(ctx, None) | {
                    "title": "Refused", "message": "This form expired or did not come from the "
                    "console (CSRF check failed). Reload the page and try again."}, 403)
            ctx.request.state.form = form
        try:
            result = await run_in_threadpool(handler, ctx)
        except ApiLost as e:
            log.warning("api lost", target=e.target, error=str(e.error))
            response: Response = render(settings, "error.html", _chrome(ctx, None) | {
                "title": "TMS API unreachable", "lost": True,
                "message": "The console cannot reach the TMS API right now; nothing on this "
                           "page could be read. It reconnects by itself: reload in a moment."},
                503)
        except UnauthenticatedError:
            out = RedirectResponse("/signin?" + urlencode(
                {"next": _here(request), "why": "expired"}), 303)
            out.delete_cookie(SESSION_COOKIE, path="/")
            return out
        except TmsError as e:
            status = {grpc.StatusCode.NOT_FOUND: 404,
                      grpc.StatusCode.PERMISSION_DENIED: 403,
                      grpc.StatusCode.INVALID_ARGUMENT: 400}.get(e.code, 502)  # type: ignore
            response = render(settings, "error.html", _chrome(ctx, None) | {
                "title": e.code.name if e.code else "Error", "message": e.message,
                "violations": e.violations}, status)
        else:
            if isinstance(result, Response):
                response = result
            else:
                values = _chrome(ctx, result) | result.values
                response = render(settings, result.template, values, result.status)
        _ensure_csrf(request, response, settings, csrf)
        return response

    return endpoint


def _chrome(ctx: Ctx, result: Page | None) -> dict[str, Any]:
    return {"csrf": ctx.csrf, "csrf_field": CSRF_FIELD, "notes": ctx.notes,
            "path": ctx.request.url.path, "signed_in": True}


def _here(request: Request) -> str:
    q = request.url.query
    return request.url.path + (f"?{q}" if q else "")


def form(ctx: Ctx) -> dict[str, str]:
    return getattr(ctx.request.state, "form", {})


def _nonempty(values: Mapping[str, str]) -> dict[str, str]:
    """The filters a person set, for links that keep them (sort, next page)."""
    return {k: v for k, v in values.items() if v}
