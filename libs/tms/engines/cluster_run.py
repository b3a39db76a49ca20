"""Deploy mode ``cluster``: submit, follow the driver by its submission id, kill it by id.

spark-submit only submits (waiting for completion is turned off by the settings) and exits;
the private properties file (report token, YARN's secret environment) is deleted then. The
engine records the submission id as the operation's handle, asks the cluster manager for the
driver's state every ``STATUS_POLL_S`` (``tms.spark.cluster``), and when the driver has ended
reads the result the job reported through the API. A cancel, a lost lease or an executor
shutting down (``stop``) kills the driver itself by its id, not a local process.

A driver that ended without reporting (killed, out of memory, image without grpcio) fails the
attempt with the submission's log classified and the driver's final state named; its own log
stays with the cluster manager (``kubectl logs POD``, ``yarn logs -applicationId ID``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from tms.domain import JobSpec
from tms.engines.base import EngineResult, read_tail
from tms.engines.children import die_with_parent, kill_group
from tms.engines.results import error_from_log, result_from_payload
from tms.engines.submission import PROPERTIES_FILE_NAME, Submission, spark_defaults
from tms.engines.workdir import write_private
from tms.spark.cluster import (
    ENV_YARN_CLI,
    DriverState,
    Manager,
    kill_argv,
    manager_of,
    parse_status,
    properties_text,
    status_argv,
    submission_id,
)
from tms.spark.settings import SparkSettings

STATUS_POLL_S = 5.0  # each status query starts a JVM (Kubernetes) or a Hadoop client (YARN)
COMMAND_TIMEOUT_S = 120.0  # one submit-only spark-submit, status or kill command
KILL_CONFIRM_S = 120.0  # after a kill, how long to wait for the driver to be seen ended
MAX_UNKNOWN_S = 600.0  # status unreadable this long: the attempt fails (retryable)
SUBMIT_POLL_S = 0.5

log = structlog.get_logger("tms.engines.cluster")


def run(settings: SparkSettings, job: JobSpec, sub: Submission, workdir: Path,
        stop: threading.Event, on_handle: Callable[[str], None]) -> EngineResult:
    manager = manager_of(settings.master)
    log_path = workdir / "driver.log"
    props = workdir / PROPERTIES_FILE_NAME
    write_private(props, properties_text(spark_defaults(), list(sub.properties.items()))
                  .encode())
    try:
        code = _submit(sub, workdir, log_path, stop)
    finally:
        props.unlink(missing_ok=True)
    tail = read_tail(log_path)
    sid = submission_id(manager, settings.k8s_namespace, sub.pod_name, _head(log_path))
    follower = Follower(settings, manager, sub, log_path)
    if code is None:  # stopped while submitting: the driver may exist already
        if sid:
            follower.kill(sid)
        return EngineResult(False, None, "stopped", tail, None, sid, stopped=True)
    if code != 0 or sid is None:
        why = (error_from_log(tail, code) if code != 0
               else "spark-submit printed no submission id to follow the driver by")
        return result_from_payload(None, tail, code, sid, lambda: why)
    on_handle(sid)
    log.info("driver submitted", submission=sid)
    state = follower.follow(sid, stop)
    tail = read_tail(log_path)
    if state is None:
        return EngineResult(False, None, "stopped", tail, None, sid, stopped=True)
    if state is DriverState.UNKNOWN:
        follower.kill(sid)
        return EngineResult(False, None, f"the state of driver {sid} could not be read for "
                            f"{MAX_UNKNOWN_S:.0f} s; killed", tail, None, sid)
    exit_code = 0 if state is DriverState.SUCCEEDED else 1
    if job.kind == "jvm":
        return EngineResult(exit_code == 0, {"exit_code": exit_code} if exit_code == 0 else None,
                            None if exit_code == 0 else f"driver {sid} ended {state.value}",
                            tail, exit_code, sid)
    result = job.report.fetch() if job.report is not None else None
    return result_from_payload(result, tail, exit_code, sid,
                               lambda: f"driver {sid} ended {state.value} without reporting "
                                       "a result")


def _head(path: Path, max_bytes: int = 1_000_000) -> str:
    try:
        with path.open("rb") as f:
            return f.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _submit(sub: Submission, workdir: Path, log_path: Path, stop: threading.Event
            ) -> int | None:
    """spark-submit's exit code, None when ``stop`` was set first (it is then killed)."""
    with log_path.open("wb") as out:
        proc = subprocess.Popen(sub.argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=workdir, env=sub.env,
                                start_new_session=True, preexec_fn=die_with_parent)
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    while True:
        try:
            return proc.wait(SUBMIT_POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if stop.is_set() or time.monotonic() > deadline:
            kill_group(proc)
            return None if stop.is_set() else proc.returncode


class Follower:
    """Status and kill commands for one submission; their outputs go to the attempt's log."""

    def __init__(self, settings: SparkSettings, manager: Manager, sub: Submission,
                 log_path: Path) -> None:
        self.settings, self.manager, self.sub, self.log_path = settings, manager, sub, log_path
        self.yarn_cli = os.environ.get(ENV_YARN_CLI) or "yarn"
        self.spark_submit = sub.argv[0]

    def _command(self, argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, env=self.sub.env,
                                  stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S)
            return (done.stdout + done.stderr).decode("utf-8", errors="replace")
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"[tms] {argv[0]} failed: {e}"

    def _note(self, text: str) -> None:
        with self.log_path.open("a") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def state(self, sid: str) -> DriverState:
        out = self._command(status_argv(self.manager, self.spark_submit, self.settings.master,
                                        sid, self.yarn_cli))
        found = parse_status(self.manager, out)
        if found is DriverState.UNKNOWN:
            self._note(f"[tms] status of {sid} not understood:\n{out[-2000:]}")
        return found

    def follow(self, sid: str, stop: threading.Event) -> DriverState | None:
        """The driver's final state; None when ``stop`` was set (the driver is then killed);
        UNKNOWN when its state could not be read for ``MAX_UNKNOWN_S``."""
        last, unknown_since = None, None
        while not stop.wait(STATUS_POLL_S):
            found = self.state(sid)
            if found is not last:
                self._note(f"[tms] driver {sid}: {found.value}")
                last = found
            if found.ended:
                return found
            if found is DriverState.UNKNOWN:
                unknown_since = unknown_since or time.monotonic()
                if time.monotonic() - unknown_since > MAX_UNKNOWN_S:
                    return DriverState.UNKNOWN
            else:
                unknown_since = None
        self.kill(sid)
        return None

    def kill(self, sid: str) -> None:
        """Kill the driver by its id and wait (bounded) until it is seen ended."""
        out = self._command(kill_argv(self.manager, self.spark_submit, self.settings.master,
                                      sid, self.yarn_cli))
        self._note(f"[tms] kill {sid}:\n{out[-2000:]}")
        deadline = time.monotonic() + KILL_CONFIRM_S
        while time.monotonic() < deadline:
            if self.state(sid).ended:
                return
            time.sleep(STATUS_POLL_S)
        log.warning("driver not seen ended after kill", submission=sid)
