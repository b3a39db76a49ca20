"""Builds and runs the gRPC server: the service, health checking and server reflection.

Health follows the database: SERVING while Postgres answers, NOT_SERVING when it does not and
from the moment shutdown begins, so load balancers drain the node before it stops. While the
database is unreachable the check runs often and waits briefly, so the node reports SERVING
again well within 2 s of PostgreSQL accepting connections; while serving it runs rarely and
waits as long as a request would, so a busy pool is not mistaken for an outage.
"""

from __future__ import annotations

import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from tms.api.allowlist import RegistrationAllowlist
from tms.api.auth import Authenticator
from tms.api.interceptors import add_guarded
from tms.api.servicer import TableManagementServicer
from tms.formats.base import TableFormatPlugin
from tms.storage.postgres import PostgresStore
from tms.v1 import tms_pb2, tms_pb2_grpc

SERVER_THREADS = 32
HEALTH_CHECK_INTERVAL_S = 2.0  # between database checks while serving
HEALTH_CHECK_TIMEOUT_S = 2.0  # a check's wait for a pooled connection while serving
HEALTH_RECHECK_INTERVAL_S = 0.25  # between checks while not serving: notice recovery soon
HEALTH_RECHECK_TIMEOUT_S = 0.5  # a check's wait for a connection while not serving
SHUTDOWN_GRACE_S = 10.0
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
SERVICE_NAME = tms_pb2.DESCRIPTOR.services_by_name["TableManagementService"].full_name

log = structlog.get_logger("tms.api")


@dataclass(frozen=True)
class TlsConfig:
    """Server certificate and key; with ``client_ca`` clients must present a certificate
    signed by it (mutual TLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        ca = self.client_ca.read_bytes() if self.client_ca else None
        return grpc.ssl_server_credentials([(self.key.read_bytes(), self.cert.read_bytes())],
                                           root_certificates=ca,
                                           require_client_auth=ca is not None)


class ApiServer:
    def __init__(self, store: PostgresStore, formats: dict[str, TableFormatPlugin],
                 listen: str, *, reflection_enabled: bool = True,
                 auth: Authenticator | None = None,
                 allowlist: RegistrationAllowlist | None = None,
                 tls: TlsConfig | None = None, reuse_port: bool = False) -> None:
        self._store = store
        self._stop = threading.Event()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=SERVER_THREADS),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                     # several worker processes of one node share the port (--workers)
                     ("grpc.so_reuseport", 1 if reuse_port else 0)],
        )
        self.servicer = TableManagementServicer(store, formats, auth, allowlist)
        # no interceptors: registered methods are then looked up directly, per call
        add_guarded(self.server, tms_pb2_grpc.add_TableManagementServiceServicer_to_server,
                    self.servicer)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        if reflection_enabled:
            reflection.enable_server_reflection(
                (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server)
        self.port = (self.server.add_secure_port(listen, tls.credentials()) if tls
                     else self.server.add_insecure_port(listen))
        if self.port == 0:
            raise RuntimeError(f"cannot listen on {listen}")

    def _set_health(self, serving: bool) -> None:
        status = (health_pb2.HealthCheckResponse.SERVING if serving
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        for name in ("", SERVICE_NAME):
            self.health.set(name, status)

    def _watch_health(self) -> None:
        serving: bool | None = None  # unknown until the first check
        while not self._stop.is_set():
            try:
                self._store.check(HEALTH_CHECK_TIMEOUT_S if serving else HEALTH_RECHECK_TIMEOUT_S)
                if serving is not True:
                    log.info("database reachable: serving")
                serving = True
            except Exception as e:  # any failure to reach the database means not serving
                if serving is not False:  # once per outage, not once per check
                    log.warning("database check failed: not serving", error=str(e))
                serving = False
            if not self._stop.is_set():  # stop() has already said NOT_SERVING
                self._set_health(serving)
            self._stop.wait(HEALTH_CHECK_INTERVAL_S if serving else HEALTH_RECHECK_INTERVAL_S)

    def start(self) -> None:
        self._set_health(False)
        self.server.start()
        threading.Thread(target=self._watch_health, name="health", daemon=True).start()
        log.info("api listening", port=self.port)

    def stop(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        self._stop.set()
        self._set_health(False)
        self.server.stop(grace_s).wait()
        self.servicer.close()
