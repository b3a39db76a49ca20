"""The tms-api process itself: flags, several workers on one port, clean shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.helpers import wait_for
from tms.local.ports import free_port

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def test_workers_share_the_port_and_stop_together(db_dsn: str) -> None:
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "tms_services.api", "--listen", address,
                             "--workers", "2"], env=dict(os.environ, TMS_DATABASE_URL=db_dsn))
    try:
        workers = wait_for(lambda: len(_children(proc.pid)) == 2 and _children(proc.pid),
                           "two worker processes")

        def serving() -> bool:
            with grpc.insecure_channel(address) as ch:
                try:
                    return health_pb2_grpc.HealthStub(ch).Check(
                        health_pb2.HealthCheckRequest(), timeout=2).status == \
                        health_pb2.HealthCheckResponse.SERVING
                except grpc.RpcError:
                    return False

        wait_for(serving, "the workers to serve")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        for pid in workers:
            assert not os.path.exists(f"/proc/{pid}") or \
                open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("args,message", [
    (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
    (["--tls-client-ca", "ca.pem"], "--tls-client-ca needs"),
    (["--workers", "0"], "--workers must be between"),
])
def test_bad_flags_are_refused(args: list[str], message: str) -> None:
    res = subprocess.run([sys.executable, "-m", "tms_services.api", "--database-url", "x",
                          *args], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and message in res.stderr
