"""The warm driver as a child process: start it, talk its line protocol, watch it, end it.

``WarmSparkEngine`` (warm.py) decides *when* to use, restart or abandon a driver; this module
only knows *how*. The protocol is JSON lines: requests on the driver's stdin, messages
(``ready``, ``fatal``, ``{"id": N, "progress": {...}}``, ``{"id": N, "done": true}``) on its
stdout; its stderr is a log file.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import IO, Any

import structlog

from tms.engines.children import die_with_parent

KILL_GRACE_S = 5.0  # SIGTERM to SIGKILL
GROUP_GONE_TIMEOUT_S = 10.0  # after SIGKILL, how long to wait for the group to disappear
GROUP_POLL_S = 0.05
SPAWN_TIMEOUT_S = 30.0  # fork + exec of the interpreter, not the Spark start

log = structlog.get_logger("tms.engines.warm")


class DriverStartError(RuntimeError):
    """The driver exited, reported a fatal error or stayed silent before it was ready."""


class Wait(Enum):
    DONE = "done"
    STOPPED = "stopped"  # ``stop`` was set; the caller kills the driver
    LOST = "lost"  # the driver exited (or closed its stdout) without answering


_EOF = object()


def encode_request(req_id: int, spec: Mapping[str, Any], result: Path) -> bytes:
    """One request line: the spec itself (its secrets resolved) goes through the pipe."""
    return (json.dumps({"id": req_id, "spec": dict(spec), "result": str(result)}) + "\n").encode()


def parse_message(line: bytes) -> dict[str, Any] | None:
    """A protocol message, or None for anything else (which the driver should never write)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, from /proc. A killed JVM is reparented
    to PID 1, which may never reap it, so ``killpg(pgid, 0)`` alone could report zombies."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def read_log_since(path: Path, start: int, max_bytes: int) -> str:
    """What was appended to ``path`` after offset ``start``, at most its last ``max_bytes``
    (cut at a line boundary): the part of a shared driver log that belongs to one operation."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < start:  # truncated since: all of it is this operation's
                start = 0
            begin = max(start, size - max_bytes)
            f.seek(begin)
            data = f.read(size - begin)
    except OSError:
        return ""
    if begin > start and b"\n" in data:
        data = data[data.index(b"\n") + 1:]
    return data.decode("utf-8", errors="replace")


class DriverProcess:
    """One warm driver process and the thread that owns it.

    The process is spawned by a keeper thread that lives exactly as long as the driver: Linux
    delivers the parent-death signal when the *thread* that forked the child exits, so spawning
    from a caller's short-lived thread would kill the driver with that thread.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> None:
        self.argv, self.env, self.log_path = list(argv), dict(env), log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.app_id: str | None = None
        self._messages: queue.Queue[Any] = queue.Queue()
        self._spawned = threading.Event()
        self._spawn_error: BaseException | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self, ready_timeout_s: float, stop: threading.Event, poll_s: float) -> bool:
        """Spawn and wait for ``ready``; False if ``stop`` was set first (the driver is then
        killed). Raises DriverStartError when the driver cannot start."""
        threading.Thread(target=self._keep, name="warm-driver-keeper", daemon=True).start()
        if not self._spawned.wait(SPAWN_TIMEOUT_S) or self.proc is None:
            raise DriverStartError(f"could not spawn the driver: {self._spawn_error}")
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if stop.is_set():
                self.kill_group()
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill_group()
                raise DriverStartError(f"no ready message within {ready_timeout_s:.0f} s")
            message = self._next(min(poll_s, remaining))
            if message is _EOF:
                self.kill_group()
                raise DriverStartError(f"the driver exited before it was ready "
                                       f"(status {self.proc.poll()})")
            if isinstance(message, dict) and message.get("fatal"):
                self.kill_group()
                raise DriverStartError(f"the driver failed to start: {message['fatal']}")
            if isinstance(message, dict) and message.get("ready"):
                self.app_id = str(message.get("spark_app_id") or "") or None
                return True

    def send(self, req_id: int, spec: Mapping[str, Any], result: Path) -> bool:
        """False when the driver can no longer read requests."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode_request(req_id, spec, result))
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def wait_done(self, req_id: int, stop: threading.Event, poll_s: float,
                  on_progress: Callable[[dict[str, Any]], None] | None = None) -> Wait:
        """Wait for the answer to ``req_id``, handing its progress messages to
        ``on_progress`` (a failing callback is logged: progress must not fail the job)."""
        while True:
            if stop.is_set():
                return Wait.STOPPED
            message = self._next(poll_s)
            if message is _EOF:
                return Wait.LOST
            if isinstance(message, dict):
                if message.get("id") == req_id and message.get("done"):
                    return Wait.DONE
                progress = message.get("progress")
                if message.get("id") == req_id and isinstance(progress, dict):
                    if on_progress is not None:
                        try:
                            on_progress(progress)
                        except Exception:
                            log.exception("progress callback failed", request=req_id)
                    continue
                if message.get("error"):
                    log.warning("warm driver protocol error", error=message["error"])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill_group(self, grace_s: float = KILL_GRACE_S) -> None:
        """SIGTERM the driver's whole group (Python, JVM, Python workers), SIGKILL after
        ``grace_s``, and wait until no live member remains."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, GROUP_GONE_TIMEOUT_S)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
            if self._wait_group_gone(pgid, wait_s):
                return
        log.warning("warm driver group still has members after SIGKILL", pgid=pgid,
                    members=group_members(pgid))

    def close(self, timeout_s: float) -> None:
        """EOF on stdin (the driver stops its session and exits), then make sure of it."""
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout_s)
        except (OSError, ValueError):
            pass
        except subprocess.TimeoutExpired:
            log.warning("warm driver did not exit after EOF; killing it", pid=self.proc.pid)
        self.kill_group()

    def _wait_group_gone(self, pgid: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.proc is not None
            self.proc.poll()  # reap our own child so it does not count as a member
            if not group_members(pgid):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(GROUP_POLL_S)

    def _next(self, timeout_s: float) -> Any:
        try:
            return self._messages.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return None

    def _keep(self) -> None:
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as err:  # O_APPEND: the engine may truncate it
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=err,
                                             env=self.env, start_new_session=True,
                                             preexec_fn=die_with_parent)
        except BaseException as e:  # reported by start()
            self._spawn_error = e
            return
        finally:
            self._spawned.set()
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdout is not None
        for line in stdout:
            message = parse_message(line)
            if message is None:
                log.warning("warm driver wrote a non-protocol line", line=line[:200])
                continue
            self._messages.put(message)
        self._messages.put(_EOF)
        self.proc.wait()
