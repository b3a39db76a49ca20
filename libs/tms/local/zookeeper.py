"""A standalone ZooKeeper server on 127.0.0.1, run from Debian's ``zookeeper`` package.

The Debian wrapper ignores ZOOCFGDIR, so the server's main class is started directly with a
config of our own; readiness is proven by a real kazoo create, not by the port being open.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tms.local.ports import free_port

ZK_JAR = "/usr/share/java/zookeeper.jar"
ZK_START_TIMEOUT_S = 60
ZK_TICK_MS = 500
ZK_STOP_TIMEOUT_S = 10


def _classpath(conf_dir: Path) -> str:
    """zookeeper.jar's manifest names its Debian dependencies, so it alone is enough."""
    if not Path(ZK_JAR).exists():
        raise RuntimeError("ZooKeeper jar not found; run scripts/setup")
    return f"{conf_dir}:{ZK_JAR}"


@dataclass
class LocalZooKeeper:
    """One standalone ZooKeeper in ``root`` listening on 127.0.0.1:``port``."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.root / "zookeeper.log"

    def start(self) -> LocalZooKeeper:
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.root / "zoo.cfg"
        cfg.write_text(
            f"tickTime={ZK_TICK_MS}\ninitLimit=10\nsyncLimit=5\n"
            f"dataDir={self.root / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
            "maxClientCnxns=0\n4lw.commands.whitelist=ruok,srvr,stat\n"
            f"minSessionTimeout={ZK_TICK_MS * 2}\n"
        )
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", _classpath(self.root),
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        from kazoo.client import KazooClient

        # refused connections are expected while the server starts: keep kazoo quiet meanwhile
        kazoo_log = logging.getLogger("kazoo.client")
        level = kazoo_log.level
        kazoo_log.setLevel(logging.CRITICAL)
        try:
            self._poll_ready(KazooClient)
        finally:
            kazoo_log.setLevel(level)

    def _poll_ready(self, KazooClient: type) -> None:  # noqa: N803 - the class, injected
        deadline = time.monotonic() + ZK_START_TIMEOUT_S
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"zookeeper exited: {self.log_file.read_text()[-2000:]}")
            client = KazooClient(hosts=self.hosts, timeout=2)
            try:
                client.start(timeout=2)
                client.ensure_path("/tms")
                client.create("/tms/ready-", ephemeral=True, sequence=True)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
            finally:
                client.stop()
                client.close()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(ZK_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
