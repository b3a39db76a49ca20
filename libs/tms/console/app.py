"""The console's Starlette application: routes, sign-in and the security headers."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import grpc
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tms.console import actions, assets, pages_fleet, pages_operations, pages_tables
from tms.console.gateway import ApiLost
from tms.console.session import SESSION_COOKIE, token_problem
from tms.console.web import Settings, csrf_of, csrf_ok, page, render, safe_next
from tms.v1 import tms_pb2
from tms_client import TmsError

# script and style only from the console itself; no inline script or style, no frames.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
NO_STORE = "no-store"


class SecurityHeaders:
    """Every response gets the headers above; pages (not static files) are never cached, so
    a signed-out browser's back button shows nothing."""

    def __init__(self, app: ASGIApp, tls: bool) -> None:
        self.app = app
        self.tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    headers[k] = v
                if self.tls:
                    headers["strict-transport-security"] = "max-age=31536000"
                if not static:
                    headers["cache-control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def signin_page(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    csrf = csrf_of(request)
    why = request.query_params.get("why", "")
    response = render(settings, "signin.html", {
        "title": "Sign in", "csrf": csrf, "next": safe_next(request.query_params.get("next")),
        "message": "Your session expired or the API no longer knows the token: sign in again."
        if why == "expired" else "", "problems": {}})
    response.set_cookie("tms_console_csrf", csrf, httponly=True, samesite="strict",
                        secure=settings.secure_cookies, path="/")
    return response


async def signin(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    ok, form = await csrf_ok(request)
    csrf = csrf_of(request)
    nxt = safe_next(form.get("next"))

    def again(problem: str, status: int) -> Response:
        # the token is never echoed back into the page
        return render(settings, "signin.html", {"title": "Sign in", "csrf": csrf, "next": nxt,
                                                "problems": {"token": problem}}, status)

    if not ok:
        return again("This form expired; paste the token again.", 403)
    token = form.get("token", "").strip()
    problem = token_problem(token)
    if problem:
        return again(problem, 400)
    try:
        await run_in_threadpool(settings.gateway.call, token, "ListTables",
                                tms_pb2.ListTablesRequest(page_size=1))
    except ApiLost:
        return again("The TMS API cannot be reached right now; try again in a moment.", 503)
    except TmsError as e:
        if e.code == grpc.StatusCode.UNAUTHENTICATED:
            return again("The API does not know this token.", 401)
        if e.code != grpc.StatusCode.PERMISSION_DENIED:  # a writer token still signs in
            return again(f"The API refused: {e.message}", 400)
    cookie, session = settings.codec.seal(token)
    response = RedirectResponse(nxt, 303)
    response.set_cookie(SESSION_COOKIE, cookie, max_age=int(settings.codec.ttl_s),
                        httponly=True, samesite="strict", secure=settings.secure_cookies,
                        path="/")
    return response


async def signout(request: Request) -> Response:
    ok, _ = await csrf_ok(request)
    if not ok:
        return PlainTextResponse("CSRF check failed", 403)
    response = RedirectResponse("/signin?" + urlencode({"why": ""}), 303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def build(settings: Settings) -> Any:
    routes = [
        Route("/", page(pages_fleet.overview)),
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/healthz", healthz),
        Route("/catalogs", page(pages_fleet.catalogs)),
        Route("/catalogs/{catalog}", page(pages_fleet.catalog_detail)),
        Route("/tables", page(pages_tables.tables)),
        Route("/tables/{table}", page(pages_tables.table_detail)),
        Route("/tables/{table}/trigger", page(actions.trigger_form), methods=["GET"]),
        Route("/tables/{table}/trigger", page(actions.trigger, post=True), methods=["POST"]),
        Route("/tables/{table}/{verb}", page(actions.table_action, post=True),
              methods=["POST"]),
        Route("/operations", page(pages_operations.operations)),
        Route("/operations/{table}/{op}", page(pages_operations.operation_detail)),
        Route("/operations/{table}/{op}/progress",
              page(pages_operations.progress_fragment)),
        Route("/operations/{table}/{op}/{verb}", page(actions.operation_action, post=True),
              methods=["POST"]),
        Route("/queues", page(pages_fleet.queues)),
        Route("/queues/{queue}/limit", page(actions.queue_limit, post=True), methods=["POST"]),
        Mount("/static", StaticFiles(directory=assets.STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.settings = settings
    return SecurityHeaders(app, settings.secure_cookies)
