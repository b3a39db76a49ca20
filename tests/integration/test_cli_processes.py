"""The CLI and the service mains as a person meets them, as real processes: nothing answering
at the given address gives one line on stderr and a non-zero exit, never a traceback; and a
Ctrl-C that lands while `tms watch` waits for an answer ends it at once with exit code 0.

The Ctrl-C test does not depend on timing: the API here is a tiny gRPC server whose
ListOperations blocks until the test releases it, and it tells the test (an event set on the
server side) that the call is in flight before the signal is sent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from tms.local.ports import free_port
from tms.v1 import tms_pb2, tms_pb2_grpc

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROC_TIMEOUT_S = 60  # a bound on a hang, not a measure of speed
SIGNAL_WAIT_S = 60  # how long the test waits for the watch's call to reach the server
ZK_TIMEOUT_S = 90  # the scheduler's ZooKeeper connect timeout (15 s) plus start-up, bounded
SERVER_THREADS = 4


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _run(*argv: str, timeout_s: float = PROC_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                          env=_env(), timeout=timeout_s)


def _one_clear_line(done: subprocess.CompletedProcess[str], prefix: str, *words: str) -> None:
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def _closed() -> str:
    return f"127.0.0.1:{free_port()}"


def test_cli_against_a_closed_port() -> None:
    address = _closed()
    for argv in (["tables", "list"], ["watch", "--once"], ["explain", "t"]):
        done = _run("tms_services.cli", "--api", address, *argv)
        assert done.returncode == 1 and done.stdout == ""
        _one_clear_line(done, "tms: UNAVAILABLE: cannot reach tms-api at", address)


def test_tls_to_a_plaintext_api_is_one_line_without_grpc_core_logs(api) -> None:
    """https:// means TLS; against a plaintext tms-api the handshake fails, and the person sees
    the CLI's one line with a hint, not the C core's own log line above it."""
    done = _run("tms_services.cli", "--api", f"https://{api.address}", "tables", "list")
    assert done.returncode == 1 and done.stdout == ""
    _one_clear_line(done, "tms: UNAVAILABLE: cannot reach tms-api at",
                    "the TLS handshake failed: is the server plaintext")
    plain = _run("tms_services.cli", "--api", f"http://{api.address}", "tables", "list")
    assert plain.returncode == 0 and plain.stdout.strip() == "no tables", plain.stderr


def test_migrate_against_a_closed_port() -> None:
    url = f"postgresql://tms:secret-pw@{_closed()}/tms"
    done = _run("tms_services.cli", "migrate", "--database-url", url)
    assert done.returncode == 1
    _one_clear_line(done, "tms: UNAVAILABLE: cannot reach the database at", "/tms")
    assert "secret-pw" not in done.stderr


@pytest.mark.parametrize("service", ["api", "scheduler", "executor"])
def test_service_without_its_database(service: str) -> None:
    url = f"postgresql://tms:secret-pw@{_closed()}/tms"
    extra = ["--zookeeper", _closed()] if service == "scheduler" else []
    done = _run(f"tms_services.{service}", "--database-url", url, *extra)
    assert done.returncode == 1
    _one_clear_line(done, f"tms-{service}: cannot reach the database at", "Connection refused")
    assert "secret-pw" not in done.stderr


def test_scheduler_without_zookeeper(db_dsn: str) -> None:
    zk = _closed()
    done = _run("tms_services.scheduler", "--database-url", db_dsn, "--zookeeper", zk,
                timeout_s=ZK_TIMEOUT_S)
    assert done.returncode == 1
    _one_clear_line(done, "tms-scheduler: cannot reach ZooKeeper at", zk)


class BlockingApi(tms_pb2_grpc.TableManagementServiceServicer):  # type: ignore[misc]
    """ListOperations never answers until released; ``in_flight`` is set when one arrives."""

    def __init__(self) -> None:
        self.in_flight = threading.Event()
        self.release = threading.Event()

    def ListOperations(self, request: tms_pb2.ListOperationsRequest,
                       context: grpc.ServicerContext) -> tms_pb2.ListOperationsResponse:
        self.in_flight.set()
        self.release.wait()
        return tms_pb2.ListOperationsResponse()


@pytest.fixture
def blocking_api() -> Iterator[tuple[str, BlockingApi]]:
    servicer = BlockingApi()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS))
    tms_pb2_grpc.add_TableManagementServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        servicer.release.set()
        server.stop(0)


def test_ctrl_c_during_a_call_ends_watch_at_once(
        blocking_api: tuple[str, BlockingApi]) -> None:
    address, servicer = blocking_api
    proc = subprocess.Popen(
        [sys.executable, "-m", "tms_services.cli", "--api", address, "--timeout-s", "3600",
         "watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        assert servicer.in_flight.wait(SIGNAL_WAIT_S), "the watch never called the API"
        proc.send_signal(signal.SIGINT)
        # The server is still holding the call (the deadline is an hour away): only the
        # cancellation can end the watch within this bound.
        out, err = proc.communicate(timeout=PROC_TIMEOUT_S)
        assert not servicer.release.is_set()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and err == "" and out == ""
