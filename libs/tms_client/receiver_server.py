"""The HTTP side of the CloudEvents receiver: bounded reads, clear answers, no 500 for input.

POST / (or /events) with CloudEvents → 202 once TMS has taken the commits (the body counts
them and lists ignored events and refused commits), 400 naming the problem for a malformed
event (nothing of that request is forwarded), 411 / 413 for a missing or too large body,
401 without the inbound token (if one is set), 503 with Retry-After when TMS is unreachable so
the sender delivers again, 502 when TMS refuses the receiver itself (its token, say).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import grpc

from tms_client.cloudevents_http import parse_request
from tms_client.errors import TmsError
from tms_client.event_fields import EventError
from tms_client.hook import CommitHook, HookResult
from tms_client.retry import TRANSIENT_CODES

MAX_BODY_BYTES = 1024 * 1024
MAX_EVENTS_PER_REQUEST = 1000
REQUEST_READ_TIMEOUT_S = 10.0
RETRY_AFTER_S = 5
MAX_REPORTED_ITEMS = 100  # ignored / refused entries listed in one answer
EVENT_PATHS = ("/", "/events")
HEALTH_PATH = "/healthz"

log = logging.getLogger("tms_client.receiver")


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], hook: CommitHook,
                 inbound_token: str | None = None) -> None:
        super().__init__(address, _Handler)
        self.hook = hook
        self.inbound_token = inbound_token

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="cloudevents-receiver",
                                  daemon=True)
        thread.start()
        return thread


def _summary(result: HookResult) -> dict[str, Any]:
    answers = result.results or []
    refused = [{"event": result.event_of[i], "table_id": r.commit.table_id,
                "commit_id": r.commit.commit_id,
                "code": r.error.code.name if r.error.code else "UNKNOWN",
                "message": r.error.message}
               for i, r in enumerate(answers) if r.error is not None]
    return {
        "commits": len(result.commits),
        "accepted": sum(1 for r in answers if r.ok and not r.duplicate) + result.queued,
        "duplicates": sum(1 for r in answers if r.ok and r.duplicate),
        "refused": refused[:MAX_REPORTED_ITEMS],
        "ignored": [{"event": i, "reason": why}
                    for i, why in result.ignored[:MAX_REPORTED_ITEMS]],
    }


class _Handler(BaseHTTPRequestHandler):
    timeout = REQUEST_READ_TIMEOUT_S  # a slow or stalled sender cannot hold a thread forever
    protocol_version = "HTTP/1.1"
    server_version = "tms-cloudevents-receiver"

    @property
    def _server(self) -> ReceiverServer:
        return cast(ReceiverServer, self.server)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _answer(self, status: HTTPStatus, body: dict[str, Any],
                headers: dict[str, str] | None = None, close: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: HTTPStatus, message: str, field: str | None = None,
               close: bool = False) -> None:
        body: dict[str, Any] = {"error": message}
        if field is not None:
            body["field"] = field
        self._answer(status, body, close=close)

    def do_GET(self) -> None:  # noqa: N802 (the http.server naming)
        if self.path == HEALTH_PATH:
            self._answer(HTTPStatus.OK, {"status": "ok"})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such path; POST events to / or GET "
                                              f"{HEALTH_PATH}")

    def _authorized(self) -> bool:
        want = self._server.inbound_token
        if want is None:
            return True
        got = self.headers.get("Authorization", "")
        return hmac.compare_digest(got.encode(), f"Bearer {want}".encode())

    def _read_body(self) -> bytes | None:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self._error(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required", close=True)
            return None
        if not length_header.isdigit():
            self._error(HTTPStatus.BAD_REQUEST, "Content-Length is not a number", close=True)
            return None
        length = int(length_header)
        if length > MAX_BODY_BYTES:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        f"body of {length} bytes is over the limit of {MAX_BODY_BYTES} bytes",
                        close=True)
            return None
        body = self.rfile.read(length)
        if len(body) < length:
            self._error(HTTPStatus.BAD_REQUEST, "body shorter than Content-Length", close=True)
            return None
        return body

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] not in EVENT_PATHS:
            self._error(HTTPStatus.NOT_FOUND, "POST CloudEvents to / or /events", close=True)
            return
        if not self._authorized():
            self._error(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token", close=True)
            return
        body = self._read_body()
        if body is None:
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            parsed = parse_request(headers, body)
            if len(parsed.events) > MAX_EVENTS_PER_REQUEST:
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"{len(parsed.events)} events are over the limit of "
                            f"{MAX_EVENTS_PER_REQUEST} per request")
                return
            result = self._server.hook.forward(parsed.events, parsed.batched)
        except EventError as e:
            self._error(HTTPStatus.BAD_REQUEST, f"malformed event: {e}", e.field)
            return
        except TmsError as e:
            if e.code is grpc.StatusCode.INVALID_ARGUMENT:  # stricter than the local checks
                self._error(HTTPStatus.BAD_REQUEST, f"TMS refused the commits: {e}",
                            e.violations[0].field if e.violations else None)
            elif e.code in TRANSIENT_CODES:
                self._answer(HTTPStatus.SERVICE_UNAVAILABLE,
                             {"error": f"TMS unavailable, deliver again later: {e}"},
                             {"Retry-After": str(RETRY_AFTER_S)})
            else:
                self._error(HTTPStatus.BAD_GATEWAY, f"TMS refused the receiver: {e}")
            return
        except Exception:  # a bug here, never bad input: say so rather than drop the line
            log.exception("receiver failed on a request")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error (logged)", close=True)
            return
        self._answer(HTTPStatus.ACCEPTED, _summary(result))
