"""`scripts/stack` as an operator meets it: it comes up with authentication on, prints the
address, an admin token and the env lines for the CLI; with those lines the printed
`tms catalogs create` command works and a call without the token is refused; Ctrl-C stops
every process it started and exits 0."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
UP_TIMEOUT_S = 180  # PostgreSQL, ZooKeeper and three Python services on a busy machine
STOP_TIMEOUT_S = 90
CLI_TIMEOUT_S = 60
READY_LINE = "Ctrl-C stops everything."


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _tms(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tms_services.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)


def _read_until_ready(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + UP_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError("scripts/stack ended before it was up:\n" + "\n".join(lines))
        lines.append(line.rstrip("\n"))
        if lines[-1] == READY_LINE:
            return lines
    raise AssertionError("scripts/stack not up in time:\n" + "\n".join(lines))


def test_stack_stays_up_with_tokens_until_ctrl_c() -> None:
    # not under pytest's tmp dir: that one is private, and PostgreSQL may run as its own user
    root = Path(tempfile.mkdtemp(prefix="tms-stack-"))
    root.chmod(0o755)
    state = root / "stack"
    try:
        _stack_until_ctrl_c(state)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stack_until_ctrl_c(state: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "stack.py"),
                             "--state-dir", str(state)], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        lines = _read_until_ready(proc)
        exports = dict(line.strip().removeprefix("export ").split("=", 1)
                       for line in lines if line.strip().startswith("export "))
        assert set(exports) == {"TMS_API", "TMS_TOKEN"}
        admin = next(line.split()[2] for line in lines if line.startswith("admin token"))
        assert exports["TMS_TOKEN"] == admin
        assert admin not in (state / "tokens.json").read_text()  # digests only on disk
        assert oct((state / "tokens.json").stat().st_mode & 0o777) == oct(0o600)

        anonymous = _tms(_env(), "--api", exports["TMS_API"], "tables", "list")
        assert anonymous.returncode == 5 and "TMS_TOKEN" in anonymous.stderr

        env = {**_env(), **exports}
        create = next(line.strip() for line in lines if "tms catalogs create" in line)
        done = _tms(env, *shlex.split(create)[1:])
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("created catalogs/local (sql, 1 allowed location(s)")
        listed = _tms(env, "catalogs", "list")
        assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith("local ")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # what Ctrl-C sends the script
        out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
    assert proc.returncode == 0, out
    assert "[stack] stopped in" in out
    leftover = subprocess.run(["pgrep", "-f", str(state)], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "processes of the stack still run"
