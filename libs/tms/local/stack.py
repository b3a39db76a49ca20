"""The whole service on one machine: PostgreSQL, ZooKeeper and the tms-api, tms-scheduler and
tms-executor processes, all on loopback, all in one state directory.

Used by ``scripts/demo`` and the end-to-end tests. ``stop()`` ends everything that was started,
process groups included, and is safe to call more than once or after a partial start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tms.local.ports import free_port
from tms.local.postgres import LocalPostgres
from tms.local.zookeeper import LocalZooKeeper

PROCESS_STOP_TIMEOUT_S = 30.0  # > the executor's shutdown grace + engine kill grace
API_READY_TIMEOUT_S = 60.0
CONSOLE_READY_TIMEOUT_S = 30.0
TMS_DATABASE = "tms"


@dataclass
class ServiceProcess:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env,
                                         start_new_session=True)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a killed executor takes its spark-submit along)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if not self.alive:
            return
        assert self.proc is not None
        self.kill(signal.SIGTERM)
        try:
            self.proc.wait(PROCESS_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill(signal.SIGKILL)
            self.proc.wait()


@dataclass
class LocalStack:
    state_dir: Path
    tms_home: Path
    executors: int = 1
    schedulers: int = 1
    scheduler_args: list[str] = field(default_factory=list)
    executor_args: list[str] = field(default_factory=list)
    api_args: list[str] = field(default_factory=list)
    postgres: LocalPostgres | None = None
    zookeeper: LocalZooKeeper | None = None
    services: list[ServiceProcess] = field(default_factory=list)
    api_port: int = 0
    console_port: int = 0
    database_url: str = ""

    @property
    def api_address(self) -> str:
        return f"127.0.0.1:{self.api_port}"

    def start_servers(self) -> None:
        pg_root = self.state_dir / "postgres"
        pg_root.mkdir(parents=True, exist_ok=True)
        for p in (self.state_dir, pg_root):
            p.chmod(0o755)
        self.postgres = LocalPostgres(pg_root).start()
        self.database_url = self.postgres.create_database(TMS_DATABASE)
        self.zookeeper = LocalZooKeeper(self.state_dir / "zookeeper").start()
        from tms.storage.migrate import migrate

        migrate(self.database_url)

    def _env(self) -> dict[str, str]:
        assert self.zookeeper is not None
        env = dict(os.environ)
        env.update(TMS_DATABASE_URL=self.database_url, TMS_ZOOKEEPER_HOSTS=self.zookeeper.hosts,
                   TMS_HOME=str(self.tms_home), PYTHONUNBUFFERED="1")
        return env

    def _service(self, name: str, module: str, args: list[str]) -> ServiceProcess:
        logs = self.state_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        svc = ServiceProcess(name, [sys.executable, "-m", module, *args],
                             logs / f"{name}.log", self._env()).start()
        self.services.append(svc)
        return svc

    def start_api(self) -> ServiceProcess:
        self.api_port = self.api_port or free_port()
        svc = self._service("api", "tms_services.api",
                            ["--listen", self.api_address, *self.api_args])
        self.wait_api_ready()
        return svc

    def start_scheduler(self, index: int = 0) -> ServiceProcess:
        return self._service(f"scheduler-{index}", "tms_services.scheduler",
                             ["--id", f"scheduler-{index}", *self.scheduler_args])

    def start_executor(self, index: int = 0) -> ServiceProcess:
        # jobs report their results through the API (when one was started)
        api = ["--api-target", self.api_address] if self.api_port else []
        return self._service(f"executor-{index}", "tms_services.executor",
                             ["--id", f"executor-{index}", "--workdir",
                              str(self.workdir(index)), *api, *self.executor_args])

    def start_console(self, port: int = 0) -> ServiceProcess:
        """tms-console in front of this stack's API, on loopback; returns once it answers."""
        import urllib.request

        self.console_port = self.console_port or port or free_port()
        svc = self._service("console", "tms_services.console",
                            ["--listen", f"127.0.0.1:{self.console_port}",
                             "--api", self.api_address])
        deadline = time.monotonic() + CONSOLE_READY_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{self.console_url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return svc
            except OSError:
                pass
            if not svc.alive or time.monotonic() > deadline:
                raise RuntimeError(f"tms-console did not start; see {svc.log_path}")
            time.sleep(0.2)

    @property
    def console_url(self) -> str:
        return f"http://127.0.0.1:{self.console_port}"

    def workdir(self, index: int) -> Path:
        return self.state_dir / "work" / f"executor-{index}"

    def start(self) -> LocalStack:
        try:
            self.start_servers()
            self.start_api()
            for i in range(self.schedulers):
                self.start_scheduler(i)
            for i in range(self.executors):
                self.start_executor(i)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_api_ready(self) -> None:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = time.monotonic() + API_READY_TIMEOUT_S
        with grpc.insecure_channel(self.api_address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                    if resp.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                api = next(s for s in self.services if s.name == "api")
                if not api.alive or time.monotonic() > deadline:
                    raise RuntimeError(f"tms-api did not become ready; see {api.log_path}")
                time.sleep(0.2)

    def stop(self) -> None:
        for svc in reversed(self.services):
            svc.stop()
        self.services.clear()
        if self.zookeeper is not None:
            self.zookeeper.stop()
        if self.postgres is not None:
            self.postgres.stop()
