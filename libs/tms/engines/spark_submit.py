"""The default engine: ``spark-submit`` as a child process in its own process group.

The argument list is built without a shell (SparkSettings.submit_argv), the job's spec travels
as a JSON file, and stopping kills the whole process group so no JVM outlives its operation.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from tms.domain import JobSpec
from tms.engines.base import EngineResult, ProgressCallback, read_tail
from tms.engines.workdir import private_dir, write_spec
from tms.jobs import JOB_SUPPORT_FILES
from tms.jobs.errors import classify_log, fatal_part
from tms.spark.settings import SparkSettings

POLL_INTERVAL_S = 0.5
ENV_HUDI_UTILITIES_JAR = "TMS_HUDI_UTILITIES_JAR"
KILL_GRACE_S = 5.0
ERROR_MAX_CHARS = 4000
_APP_ID_RE = re.compile(
    rb"\b(local-\d{10,}|application_\d+_\d+|app-\d{14}-\d{4}|spark-[0-9a-f]{32})\b")

log = structlog.get_logger("tms.engines.spark_submit")
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGKILL it when the executor dies, so a
    ``kill -9`` of the executor cannot leave a Spark driver running on its own (the child has
    its own process group, which a group kill of the executor does not reach)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the lease still protects the table
        pass


def read_result(path: Path) -> dict[str, Any] | None:
    """The job's result file, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def result_from_payload(result: dict[str, Any] | None, tail: str, code: int | None,
                        handle: str | None, error_if_missing: Callable[[], str]
                        ) -> EngineResult:
    """Map a maintenance job's result file onto an EngineResult (shared with the warm engine,
    so an operation reads the same whichever engine ran it): the error is prefixed with the
    job's hint and its type and bounded, and ``retryable`` passes through (a missing flag means
    retryable). Without a result (the job died first: a class missing at session start, a JVM
    main that threw) the driver log is classified the way the job classifies exceptions."""
    if code == 0 and result and result.get("ok"):
        handle = result.get("spark_app_id") or handle
        return EngineResult(True, result.get("result") or {}, None, tail, code, handle)
    if not result:
        kind = classify_log(tail)
        return EngineResult(False, None, kind.describe(error_if_missing())[:ERROR_MAX_CHARS],
                            tail, code, handle, retryable=kind.retryable)
    error = result.get("error") or error_if_missing()
    if result.get("error_type"):
        error = f"{result['error_type']}: {error}"
    if isinstance(result.get("hint"), str):
        error = f"{result['hint']}: {error}"
    return EngineResult(False, result.get("result"), error[:ERROR_MAX_CHARS], tail, code,
                        handle, retryable=result.get("retryable", True) is not False)


class SparkSubmitEngine:
    name = "spark-submit"

    def __init__(self, settings: SparkSettings, jvm_jar: str | None = None) -> None:
        self.settings = settings
        self.jvm_jar = jvm_jar if jvm_jar is not None else os.environ.get(ENV_HUDI_UTILITIES_JAR)

    @classmethod
    def from_settings(cls, settings: SparkSettings, state_dir: Path) -> SparkSubmitEngine:
        """The entry point's constructor; a cold engine keeps nothing in ``state_dir`` (every
        job has its own work directory)."""
        return cls(settings)

    def close(self) -> None:
        """Nothing to stop: each job's spark-submit ends (or is killed) within ``run``."""

    def argv(self, job: JobSpec, spec_path: Path, result_path: Path) -> list[str]:
        if job.kind == "pyspark":
            # the job's sibling modules travel with it (a cluster has no TMS installed)
            return self.settings.submit_argv(
                job.app, ["--spec", str(spec_path), "--result", str(result_path)],
                py_files=[str(f) for f in JOB_SUPPORT_FILES])
        if job.kind == "jvm":
            # a JVM main class from a jar (Hudi's utilities): spark-submit --class MAIN JAR ARGS
            if not self.jvm_jar:
                raise ValueError(f"{ENV_HUDI_UTILITIES_JAR} must name the Hudi utilities-bundle "
                                 f"jar to run {job.app}")
            argv = self.settings.submit_argv(self.jvm_jar, list(job.args))
            at = argv.index(self.jvm_jar)
            return [*argv[:at], "--class", job.app, *argv[at:]]
        raise ValueError(f"spark-submit engine cannot run a {job.kind!r} job")

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None],
            on_progress: ProgressCallback | None = None) -> EngineResult:
        """``on_progress`` is never called: a spark-submit child's stage progress is not
        observable from here without Spark's REST API (which the deploy may not expose).

        The spec (catalog credentials included) is a 0600 file in the private work directory,
        removed when the job ends whatever its outcome; only its path is on the command line."""
        private_dir(workdir)
        spec_path = write_spec(workdir, job.spec)
        try:
            return self._run(job, workdir, spec_path, stop, on_handle)
        finally:
            spec_path.unlink(missing_ok=True)

    def _run(self, job: JobSpec, workdir: Path, spec_path: Path, stop: threading.Event,
             on_handle: Callable[[str], None]) -> EngineResult:
        result_path, log_path = workdir / "result.json", workdir / "driver.log"
        result_path.unlink(missing_ok=True)
        argv = self.argv(job, spec_path, result_path)
        with log_path.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=workdir,
                                    env=self.settings.submit_env(dict(os.environ)),
                                    start_new_session=True, preexec_fn=die_with_parent)
        handle = None
        stopped = False
        while True:
            try:
                code = proc.wait(POLL_INTERVAL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if handle is None:
                handle = self._find_handle(log_path)
                if handle:
                    on_handle(handle)
            if stop.is_set() and not stopped:
                stopped = True
                self._kill_group(proc)
        handle = handle or self._find_handle(log_path)
        tail = read_tail(log_path)
        result = read_result(result_path)
        if stopped:
            return EngineResult(False, None, "stopped", tail, code, handle, stopped=True)
        if code == 0 and job.kind == "jvm":  # JVM mains report by exit code alone
            return EngineResult(True, {"exit_code": 0}, None, tail, code, handle)
        return result_from_payload(result, tail, code, handle,
                                   lambda: self._error_from_log(tail, code))

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    @staticmethod
    def _find_handle(log_path: Path) -> str | None:
        try:
            m = _APP_ID_RE.search(log_path.read_bytes()[:1_000_000])
        except OSError:
            return None
        return m.group(1).decode() if m else None

    @staticmethod
    def _error_from_log(tail: str, code: int) -> str:
        lines = [ln for ln in fatal_part(tail).splitlines() if "Exception" in ln or "Error" in ln]
        last = lines[-1].strip() if lines else "no error line in the driver log"
        return f"spark-submit exited with code {code}: {last}"
