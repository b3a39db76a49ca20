"""The default engine: ``spark-submit`` as a child process in its own process group.

The argument list is built without a shell (``submission.build``); the job's spec travels
inline (secret references only) and its result comes back through the TMS API
(ReportJobResult, read from the database when the driver has ended), so the driver may run on
the executor (deploy mode ``client``) or anywhere on a cluster (deploy mode ``cluster``,
``cluster_run.py``). Without an API target (local runs, tests) the job writes a result file.

Client mode: the driver is spark-submit's own JVM; stopping kills the whole process group so
no JVM outlives its operation. Without a reported result (the driver died first: a class
missing at session start, a JVM main that threw, a killed JVM) the driver log is classified.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import structlog

from tms.domain import JobSpec
from tms.engines import cluster_run, cold_jvm, hudi_submit, props_pipe
from tms.engines.base import EngineResult, ProgressCallback, read_tail
from tms.engines.children import die_with_parent, kill_group
from tms.engines.cold_cds import (
    CDS_DIR_NAME,
    ENV_JVM_OPTIONS,
    ArchiveCache,
    Lease,
    archive_key,
)
from tms.engines.log_scrub import ScrubbingPump
from tms.engines.results import error_from_log, read_result, result_from_payload
from tms.engines.submission import Submission, SubmissionError, build
from tms.engines.workdir import HUDI_PROPERTIES_FILE_NAME, private_dir
from tms.spark import jar_check
from tms.spark.settings import SparkSettings, spark_home

__all__ = ["SparkSubmitEngine", "die_with_parent", "error_from_log", "find_handle",
           "kill_group", "read_result", "result_from_payload"]

POLL_INTERVAL_S = 0.5
LOG_HEAD_BYTES = 65536  # a JVM that died at start wrote little more than its fatal banner
ENV_HUDI_UTILITIES_JAR = "TMS_HUDI_UTILITIES_JAR"
ENV_CDS_DIR = "TMS_COLD_CDS_DIR"  # the cold driver's class-data archives (cold_cds)
CDS_OFF = "off"
_APP_ID_RE = re.compile(
    rb"\b(local-\d{10,}|application_\d+_\d+|app-\d{14}-\d{4}|spark-[0-9a-f]{32})\b")

log = structlog.get_logger("tms.engines.spark_submit")


class SparkSubmitEngine:
    name = "spark-submit"

    def __init__(self, settings: SparkSettings, jvm_jar: str | None = None,
                 cds_dir: Path | None = None) -> None:
        """``cds_dir``: where the cold local driver's class-data archives live (``cold_cds``);
        None: no archive."""
        self.settings = settings
        self.jvm_jar = jvm_jar if jvm_jar is not None else os.environ.get(ENV_HUDI_UTILITIES_JAR)
        self.cds = ArchiveCache(cds_dir) if cds_dir is not None else None

    @classmethod
    def from_settings(cls, settings: SparkSettings, state_dir: Path) -> SparkSubmitEngine:
        """The entry point's constructor; a cold engine keeps only its class-data archives:
        in ``TMS_COLD_CDS_DIR`` (the executor sets ``$TMS_HOME/cds``: shared by the host's
        executors and kept across restarts; ``off``: none), else in ``state_dir``."""
        raw = os.environ.get(ENV_CDS_DIR, "").strip()
        if raw == CDS_OFF:
            return cls(settings)
        return cls(settings, cds_dir=Path(raw) if raw else state_dir / CDS_DIR_NAME)

    def close(self) -> None:
        """Nothing to stop: each job's spark-submit ends (or is killed) within ``run``."""

    def submission(self, job: JobSpec, workdir: Path,
                   java_options: tuple[str, ...] = ()) -> Submission:
        """The command line, environment and private conf of ``job`` (SubmissionError, a
        ValueError, when these settings cannot run it); ``java_options``: the class-data
        archive's, added to the cold local driver's own."""
        settings = cold_jvm.tuned(self.settings, java_options)  # the cold local driver's
        if job.kind == "pyspark":  # only the jars this job's catalog and storage need
            settings = replace(settings, jars=jar_check.jars_for(job.spec, settings.jars))
        sub = build(settings, job, workdir, dict(os.environ), self.jvm_jar)
        return replace(sub, env=cold_jvm.launcher_env(self.settings, sub.env))

    def lease(self, job: JobSpec) -> Lease | None:
        """This job's use of the class-data archive (``cold_cds``); None when it has none."""
        key = self.cds_key(job)
        return self.cds.lease(key) if self.cds is not None and key is not None else None

    def cds_key(self, job: JobSpec) -> str | None:
        """The key of this job's class-data archive: a PySpark job on a local master whose
        driver's JVM options are TMS's, with a cache; None otherwise."""
        if self.cds is None or job.kind != "pyspark" or not cold_jvm.applies(self.settings):
            return None
        if any(os.environ.get(name, "").strip() for name in ENV_JVM_OPTIONS):
            return None  # an agent there may crash a JVM mapping an archive
        env = self.settings.submit_env(os.environ)
        java = Path(env["JAVA_HOME"]) / "bin" / "java" if env.get("JAVA_HOME") else None
        if java is None or not java.is_file():
            return None
        jars = jar_check.jars_for(job.spec, self.settings.jars)
        classpath = [spark_home() / "jars", *(Path(j) for j in jars if "://" not in j)]
        extra = self.settings.conf.get("spark.driver.extraClassPath", "")
        classpath += [Path(p) for p in extra.split(os.pathsep) if p]
        return archive_key(java, classpath)

    def argv(self, job: JobSpec, workdir: Path) -> list[str]:
        return self.submission(job, workdir).argv

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None],
            on_progress: ProgressCallback | None = None) -> EngineResult:
        """``on_progress`` is never called: a spark-submit child's stage progress is not
        observable from here without Spark's REST API (which the deploy may not expose)."""
        private_dir(workdir)
        lease = self.lease(job) if self.settings.deploy_mode != "cluster" else None
        res: EngineResult | None = None
        try:
            try:
                sub = self.submission(job, workdir, lease.java_options if lease else ())
            except SubmissionError as e:
                return EngineResult(False, None, f"bad configuration: {e}", retryable=False)
            if self.settings.deploy_mode == "cluster":
                return cluster_run.run(self.settings, job, sub, workdir, stop, on_handle)
            res = self._run_client(job, sub, workdir, stop, on_handle)
            if lease is not None and not res.stopped and lease.crashed_at_start(
                    res.exit_code, _log_head(workdir / "driver.log")):
                # the archive broke the JVM before Spark started: nothing ran; again without
                res = self._run_client(job, self.submission(job, workdir), workdir, stop,
                                       on_handle)
            return res
        finally:  # the name of a Hudi job's properties pipe (no data): gone with the attempt
            (workdir / HUDI_PROPERTIES_FILE_NAME).unlink(missing_ok=True)
            if lease is not None:
                lease.finish(succeeded=res is not None and res.succeeded)

    def _run_client(self, job: JobSpec, sub: Submission, workdir: Path,
                    stop: threading.Event, on_handle: Callable[[str], None]) -> EngineResult:
        log_path = workdir / "driver.log"
        if sub.result_path is not None:
            sub.result_path.unlink(missing_ok=True)
        secrets = hudi_submit.secret_values(job, os.environ) if job.kind == "jvm" else []
        with props_pipe.serving(sub.pipes):  # a Hudi job's properties, never on disk
            pump: ScrubbingPump | None = None
            with log_path.open("wb") as out:
                proc = subprocess.Popen(sub.argv, stdout=subprocess.PIPE if secrets else out,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        cwd=workdir, env=sub.env, start_new_session=True,
                                        preexec_fn=die_with_parent)
            if secrets:  # the log gets the output with the secrets masked on the way
                assert proc.stdout is not None
                pump = ScrubbingPump(proc.stdout, log_path.open("ab", buffering=0),
                                     secrets).start()
            handle = None
            stopped = False
            while True:
                try:
                    code = proc.wait(POLL_INTERVAL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if handle is None:
                    handle = find_handle(log_path)
                    if handle:
                        on_handle(handle)
                if stop.is_set() and not stopped:
                    stopped = True
                    kill_group(proc)
            if pump is not None and not pump.join():
                log.warning("the driver's output is still open after it exited; its log ends here",
                            log=str(log_path))
        handle = handle or find_handle(log_path)
        if job.kind == "jvm":  # before anything reads the log: Hudi prints its properties
            hudi_submit.scrub_log(job, log_path, os.environ)
        tail = read_tail(log_path)
        if stopped:
            return EngineResult(False, None, "stopped", tail, code, handle, stopped=True)
        if job.kind == "jvm":  # Hudi's utilities: log lines (no plan: skipped), exit code
            said = hudi_submit.outcome(job, code, log_path, tail, handle)
            if said is not None:
                return said
            if code == 0:
                return EngineResult(True, {"exit_code": 0}, None, tail, code, handle)
        if job.report is not None:
            result = job.report.fetch()
        else:
            result = read_result(sub.result_path) if sub.result_path else None
        return result_from_payload(result, tail, code, handle,
                                   lambda: error_from_log(tail, code))


def _log_head(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return f.read(LOG_HEAD_BYTES).decode(errors="replace")
    except OSError:
        return ""


def find_handle(log_path: Path) -> str | None:
    try:
        m = _APP_ID_RE.search(log_path.read_bytes()[:1_000_000])
    except OSError:
        return None
    return m.group(1).decode() if m else None
