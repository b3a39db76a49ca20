"""The report intake's HTTP listener: ``POST /v1/reports`` beside the gRPC port.

The engines' reporter (``tms-reporter.jar``) runs inside Spark, Flink or any JVM application
that loads Iceberg tables, whose class path TMS does not own: a gRPC client there would bring
grpc-java, Netty and Guava versions that clash with the engine's. So the reporter speaks plain
HTTP/1.1 with the JDK alone, and the API serves it here: JSON batches (tms.reads.reports),
bearer tokens of the same tokens file (role ``reporter``), TLS with the API's certificate.

Bounded in every direction, since the sender is untrusted: a body larger than the batch limit
is refused before it is read, a slow sender is cut off by the socket timeout, and requests
beyond ``MAX_CONCURRENT_REQUESTS`` are answered 503 at once (the reporter drops the batch and
counts it; no query waits on TMS).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from tms.api.auth import ApiError, Authenticator
from tms.api.report_intake import ReportIntake, may_report
from tms.reads.reports import MAX_BATCH_BYTES, ReportError, parse_batch

REPORTS_PATH = "/v1/reports"
MAX_CONCURRENT_REQUESTS = 16
SOCKET_TIMEOUT_S = 10.0
SHUTDOWN_TIMEOUT_S = 5.0

log = structlog.get_logger("tms.api.reports")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    reuse_port = False

    def server_bind(self) -> None:
        if self.reuse_port:  # several API worker processes share the port (--workers)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


class ReportServer:
    """Serves the report intake on ``host:port`` (port 0 picks one: ``.port``)."""

    def __init__(self, intake: ReportIntake, auth: Authenticator, host: str, port: int, *,
                 tls_cert: str | None = None, tls_key: str | None = None,
                 reuse_port: bool = False) -> None:
        slots = threading.BoundedSemaphore(MAX_CONCURRENT_REQUESTS)
        handler = type("ReportHandler", (_Handler,), {
            "intake": intake, "auth": auth, "slots": slots})
        _Server.reuse_port = reuse_port
        self._server = _Server((host, port), handler)
        if tls_cert and tls_key:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.load_cert_chain(tls_cert, tls_key)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="report-intake", daemon=True)

    def start(self) -> None:
        self._thread.start()
        log.info("report intake listening", port=self.port, path=REPORTS_PATH)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(SHUTDOWN_TIMEOUT_S)


class _Handler(BaseHTTPRequestHandler):
    intake: ReportIntake
    auth: Authenticator
    slots: threading.BoundedSemaphore
    timeout = SOCKET_TIMEOUT_S
    protocol_version = "HTTP/1.1"
    server_version = "tms-report-intake"
    sys_version = ""

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        if not self.slots.acquire(blocking=False):
            self._answer(503, {"error": "too many report requests at once; try later"},
                         close=True)
            return
        try:
            self._post()
        finally:
            self.slots.release()

    def _post(self) -> None:
        if self.path != REPORTS_PATH:
            self._answer(404, {"error": f"unknown path; reports go to {REPORTS_PATH}"},
                         close=True)
            return
        try:
            principal = self.auth.authenticate(
                [("authorization", self.headers.get("Authorization", ""))]
                if "Authorization" in self.headers else [])
        except ApiError as e:
            self._answer(401, {"error": e.message}, close=True)
            return
        if not may_report(principal):
            self._answer(403, {"error": f"token {principal.name!r} lacks role reporter"},
                         close=True)
            return
        raw_length = self.headers.get("Content-Length", "")
        if not raw_length.isdigit():
            self._answer(411, {"error": "Content-Length is required"}, close=True)
            return
        length = int(raw_length)
        if length > MAX_BATCH_BYTES:
            self._answer(413, {"error": f"batch exceeds {MAX_BATCH_BYTES} bytes"}, close=True)
            return
        body = self.rfile.read(length)
        try:
            batch = parse_batch(body)
        except ReportError as e:
            self._answer(400, {"error": str(e)})
            return
        try:
            result = self.intake.take(principal, batch)
        except Exception as e:  # the database is away: the reporter drops and counts
            log.warning("report intake failed", error=type(e).__name__)
            self._answer(503, {"error": "reports cannot be stored now"}, close=True)
            return
        self._answer(200, result.as_json())

    def do_GET(self) -> None:  # noqa: N802
        self._answer(405, {"error": f"POST reports to {REPORTS_PATH}"}, close=True)

    def _answer(self, status: int, payload: dict[str, Any], *, close: bool = False) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return  # structlog above; no per-request line on stderr
