"""A standalone Spark cluster on 127.0.0.1: one master and two workers (1 core each, small
memory), started with ``spark-class`` from pip's pyspark (which ships no sbin start scripts).

Ports are ephemeral (the master's RPC and UI ports picked free, the workers' left to the OS);
readiness is the master's JSON UI (``/json/``) listing every worker ALIVE; ``stop`` ends the
workers, then the master, each in its own process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tms.engines.children import kill_group
from tms.local.ports import free_port
from tms.spark.settings import SparkSettings, spark_home

CLUSTER_START_TIMEOUT_S = 120.0
POLL_S = 0.25
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"  # what executors may take on one worker
DAEMON_MEMORY = "256m"  # the master's and workers' own JVMs
HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class SparkCluster:
    """A running standalone cluster; ``master_url`` is its ``spark://127.0.0.1:PORT``."""

    master_url: str
    ui_url: str
    root: Path
    started_s: float  # from the first spawn to every worker ALIVE
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's JSON view: workers, activeapps, completedapps."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as resp:
            data: dict[str, Any] = json.load(resp)
        return data

    def app(self, app_id: str) -> dict[str, Any] | None:
        """The application ``app_id`` as the master knows it (active or completed)."""
        data = self.state()
        for app in [*data.get("activeapps", []), *data.get("completedapps", [])]:
            if app.get("id") == app_id:
                return app  # type: ignore[no-any-return]
        return None


def _env() -> dict[str, str]:
    env = SparkSettings().submit_env(dict(os.environ))  # SPARK_HOME, JAVA_HOME pinned
    env.update(SPARK_LOCAL_IP=HOST, SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
               SPARK_NO_DAEMONIZE="1")
    return env


def _spawn(argv: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        kill_group(proc)


def _wait_ready(cluster: SparkCluster, workers: int) -> None:
    deadline = time.monotonic() + CLUSTER_START_TIMEOUT_S
    while True:
        for proc in cluster.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited early; see logs in {cluster.root}")
        try:
            alive = [w for w in cluster.state().get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= workers:
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Spark cluster was not ready within "
                               f"{CLUSTER_START_TIMEOUT_S:.0f} s; see logs in {cluster.root}")
        time.sleep(POLL_S)


@contextmanager
def spark_cluster(root: Path, workers: int = WORKERS) -> Iterator[SparkCluster]:
    """Start a master and ``workers`` workers on 127.0.0.1; stop them all on exit."""
    root.mkdir(parents=True, exist_ok=True)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    env = _env()
    started = time.monotonic()
    cluster = SparkCluster(f"spark://{HOST}:{port}", f"http://{HOST}:{ui_port}", root, 0.0)
    try:
        cluster.procs.append(_spawn(
            [spark_class, MASTER_CLASS, "--host", HOST, "--port", str(port),
             "--webui-port", str(ui_port)], root / "master.log", env))
        for i in range(workers):
            work = root / f"worker-{i}"
            work.mkdir(exist_ok=True)
            cluster.procs.append(_spawn(
                [spark_class, WORKER_CLASS, "--host", HOST, "--port", "0", "--webui-port", "0",
                 "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                 "--work-dir", str(work), cluster.master_url], root / f"worker-{i}.log", env))
        _wait_ready(cluster, workers)
        cluster.started_s = time.monotonic() - started
        yield cluster
    finally:
        for proc in reversed(cluster.procs):  # workers first: they kill their executors
            _stop(proc)
