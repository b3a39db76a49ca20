"""The warm engine: one long-lived PySpark driver per executor process runs operations in turn.

A cold ``spark-submit`` spends about ten seconds starting a JVM and a SparkContext, more than a
small table's compaction takes, so small tables are served by a driver that stays up
(``tms/jobs/warm_driver.py``). Everything else, and every case where the driver cannot be
trusted, goes to a fallback engine (normally ``SparkSubmitEngine``): results are mapped the same
way, so an operation reads the same whichever engine ran it.

- Only Iceberg maintenance jobs go to the driver, and only with a client-mode deploy (the
  protocol runs over the driver's stdin and stdout).
- ``stop`` kills the driver's whole process group; the next job starts a fresh driver.
- A driver that fails to start or dies mid-operation hands *this* job to the fallback and is
  restarted on the next one; after ``MAX_CONSECUTIVE_FAILURES`` in a row the engine uses only
  the fallback for ``FAILURE_COOLDOWN_S``.
- While a job runs the driver samples Spark's stage and task progress (``spark_progress.py``)
  and the engine hands each sample to ``run``'s ``on_progress``.
- Iceberg's JDBC catalog keys its rows by Spark catalog name and a loaded catalog never
  rereads its conf, so a catalog name must keep its properties for a driver's lifetime: a job
  bringing different ones restarts the driver first. Likewise a catalog whose storage is
  reached with another endpoint or other credentials than the driver's catalogs: Hadoop caches
  a file system per scheme, bucket and user, so it would be served theirs.
- Specs travel whole on the driver's stdin (a pipe), never as files: the engine resolves the
  spec's secret references itself (the driver's environment has none of them), and a spec file
  holding the values would stay on disk if the executor died between writing and removing it.
  Catalog properties reach the session as runtime conf inside the driver, never on its command
  line or in its environment; the driver logs a request's action and table only.
- The warm driver keeps this pipe protocol and a local result file on purpose: it is the
  executor's own child by design (client mode only), so nothing needs to travel through the
  API. Cold jobs report through the API (``ReportJobResult``) so their driver may run anywhere.
- On a shared cluster the driver's share is capped by its queue's settings (``cores_max``,
  ``min_executors``/``max_executors``); on a standalone master without ``cores_max`` it takes
  ``WARM_DEFAULT_CORES_MAX`` cores, never the whole cluster.
"""

from __future__ import annotations

import itertools
import os
import shlex
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from tms.domain import JobSpec
from tms.engines.base import (
    LOG_TAIL_MAX_BYTES,
    EngineResult,
    ExecutionEngine,
    ProgressCallback,
)
from tms.engines.results import read_result, result_from_payload
from tms.engines.spark_submit import SparkSubmitEngine
from tms.engines.submission import inline_secrets
from tms.engines.warm_process import DriverProcess, DriverStartError, Wait, read_log_since
from tms.engines.workdir import private_dir
from tms.jobs import ICEBERG_MAINTENANCE_APP, WARM_DRIVER_APP, spark_catalogs
from tms.jobs.spark_progress import ENV_PROGRESS_INTERVAL_S, PROGRESS_INTERVAL_S
from tms.secrets import SecretError
from tms.spark.cluster import Manager, manager_of
from tms.spark.job_package import job_zip
from tms.spark.settings import SparkSettings

READY_TIMEOUT_S = 180.0  # JVM + SparkContext start; a cold start takes ~6-10 s on 2 cores
ANSWER_POLL_S = 0.2  # how often a waiting run looks at ``stop``
CLOSE_TIMEOUT_S = 30.0  # EOF to exit: the driver stops its SparkSession first
MAX_CONSECUTIVE_FAILURES = 3  # failed starts or deaths mid-operation before the cooldown
FAILURE_COOLDOWN_S = 300.0  # then only the fallback runs jobs for this long
DRIVER_LOG_MAX_BYTES = 64 * 1024 * 1024  # the shared driver log is emptied beyond this
DRIVER_LOG_PREFIX = "warm-driver"
STATE_SUBDIR = "warm"  # of the executor's state directory: the driver logs
WARM_DEFAULT_CORES_MAX = 2  # a standalone cluster's cores a warm driver takes when not set
_GATEWAY_ENV = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")
# Conf of the warm driver only, unless the operator's settings name the key. pyspark starts the
# driver as a shell (``pyspark-shell``), for which spark-submit turns Spark's console progress
# bar on: a thread redrawing a bar into the driver log every 200 ms while a stage runs, which
# fills the log tails an operation reports; the driver reports progress itself.
WARM_DRIVER_CONF = {"spark.ui.showConsoleProgress": "false"}

log = structlog.get_logger("tms.engines.warm")
_engine_numbers = itertools.count(1)  # engines of one process may share a state directory
Clock = Callable[[], float]
Launch = Callable[[], tuple[list[str], dict[str, str]]]


def driver_launch(settings: SparkSettings, progress_interval_s: float = PROGRESS_INTERVAL_S
                  ) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of the driver: the venv's Python runs the driver file with the job's
    package first on its path (as spark-submit puts it for a cold job), and pyspark launches
    the JVM through spark-submit with exactly the options ``submit_argv`` builds (the package
    as ``--py-files``, for the executors), passed in ``PYSPARK_SUBMIT_ARGS`` (split with shlex
    by pyspark, so ``shlex.join`` round-trips), plus ``WARM_DRIVER_CONF`` where the settings'
    own conf does not name the key."""
    app, package = str(WARM_DRIVER_APP), str(job_zip())
    own = settings.effective_conf()
    argv = settings.submit_argv(app, [], py_files=[package], extra_conf={
        k: v for k, v in WARM_DRIVER_CONF.items() if k not in own})
    assert argv[-1] == app
    env = settings.submit_env(dict(os.environ))
    for name in _GATEWAY_ENV:  # would make pyspark attach to some other JVM
        env.pop(name, None)
    env["PYSPARK_SUBMIT_ARGS"] = shlex.join([*argv[1:-1], "pyspark-shell"])
    env[ENV_PROGRESS_INTERVAL_S] = str(progress_interval_s)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    return [env["PYSPARK_DRIVER_PYTHON"], app], env


def capped_share(settings: SparkSettings) -> SparkSettings:
    """A warm driver holds its executors for its whole life: on a standalone master without
    ``cores_max`` (Spark's default: every core of the cluster) it takes
    ``WARM_DEFAULT_CORES_MAX``, so cold jobs are not starved."""
    if manager_of(settings.master) is Manager.STANDALONE and settings.cores_max is None:
        return replace(settings, cores_max=WARM_DEFAULT_CORES_MAX)
    return settings


def catalog_of(spec: Mapping[str, Any]) -> tuple[str, dict[str, str]] | None:
    """The (name, properties) a spec registers, or None if the spec is malformed (the driver
    then reports the spec error itself)."""
    name, props = spec.get("catalog_name"), spec.get("catalog_properties", {})
    if not isinstance(name, str) or not isinstance(props, dict):
        return None
    return name, {str(k): str(v) for k, v in props.items()}


def _storage(props: Mapping[str, str]) -> tuple[tuple[str, str], ...] | None:
    try:
        return spark_catalogs.storage_identity(props)
    except spark_catalogs.CatalogConfError:
        return None  # a bad option: the driver refuses the spec and says why


class CatalogRegistry:
    """Catalog names registered in the current driver, with their properties. A driver
    serves catalogs of one storage identity only (``spark_catalogs.storage_identity``):
    Hadoop caches an object-store file system per scheme, bucket and user, not per endpoint
    or credentials, so two catalogs reaching same-named buckets through different endpoints
    or keys in one JVM would share the first one's file system."""

    def __init__(self) -> None:
        self._props: dict[str, dict[str, str]] = {}

    def conflicts(self, name: str, props: Mapping[str, str]) -> bool:
        known = self._props.get(name)
        if known is not None:
            return known != dict(props)
        storage = _storage(props)
        return any(_storage(other) != storage for other in self._props.values())

    def add(self, name: str, props: Mapping[str, str]) -> None:
        self._props.setdefault(name, dict(props))

    def clear(self) -> None:
        self._props.clear()


class DriverHealth:
    """Counts consecutive driver failures; too many in a row open a cooldown during which
    only the fallback runs, so a driver that cannot start is not retried before every job."""

    def __init__(self, clock: Clock, max_failures: int = MAX_CONSECUTIVE_FAILURES,
                 cooldown_s: float = FAILURE_COOLDOWN_S) -> None:
        self.clock, self.max_failures, self.cooldown_s = clock, max_failures, cooldown_s
        self.failures = 0
        self.cooldown_until = float("-inf")

    def usable(self) -> bool:
        return self.clock() >= self.cooldown_until

    def failed(self) -> None:
        self.failures += 1
        if self.failures >= self.max_failures:
            self.cooldown_until = self.clock() + self.cooldown_s
            log.warning("warm driver failed repeatedly; using the fallback engine only",
                        failures=self.failures, cooldown_s=self.cooldown_s)
            self.failures = 0

    def succeeded(self) -> None:
        self.failures = 0


class WarmSparkEngine:
    name = "warm-spark"

    def __init__(self, settings: SparkSettings, fallback: ExecutionEngine | None = None,
                 state_dir: Path | None = None, clock: Clock = time.monotonic,
                 launch: Launch | None = None,
                 progress_interval_s: float = PROGRESS_INTERVAL_S) -> None:
        """``settings`` are the driver's (fixed for its lifetime); ``fallback`` runs what the
        driver cannot (default: spark-submit with the same settings); ``state_dir`` holds the
        driver log (default: a new temporary directory); ``clock`` times the cooldown;
        ``launch`` replaces the driver command line (tests use a stand-in driver);
        ``progress_interval_s`` is how often the driver samples a running job's progress."""
        self.settings = settings
        self.fallback = fallback if fallback is not None else SparkSubmitEngine(settings)
        self.state_dir = state_dir or Path(tempfile.mkdtemp(prefix="tms-warm-"))
        self.log_path = self.state_dir / f"{DRIVER_LOG_PREFIX}-{next(_engine_numbers)}.log"
        self.health = DriverHealth(clock)
        self._launch = launch or (lambda: driver_launch(settings, progress_interval_s))
        self._catalogs = CatalogRegistry()
        self._driver: DriverProcess | None = None
        self._lock = threading.Lock()
        self._requests = 0

    @classmethod
    def from_settings(cls, settings: SparkSettings, state_dir: Path) -> WarmSparkEngine:
        """The entry point's constructor: cold spark-submit with the same settings as the
        fallback, the driver log in ``state_dir/warm``; a standalone cluster's cores capped
        (``capped_share``)."""
        return cls(capped_share(settings), SparkSubmitEngine.from_settings(settings, state_dir),
                   state_dir / STATE_SUBDIR)

    @property
    def driver(self) -> DriverProcess | None:
        return self._driver

    def accepts(self, job: JobSpec) -> bool:
        return (job.kind == "pyspark" and self.settings.deploy_mode == "client"
                and Path(job.app).resolve() == ICEBERG_MAINTENANCE_APP.resolve())

    def run(self, job: JobSpec, workdir: Path, stop: threading.Event,
            on_handle: Callable[[str], None],
            on_progress: ProgressCallback | None = None) -> EngineResult:
        """``on_progress`` gets the driver's samples of Spark's stage progress (at most one per
        ``progress_interval_s``); a job run by the fallback reports what the fallback does."""
        if not self.accepts(job):
            return self.fallback.run(job, workdir, stop, on_handle, on_progress)
        with self._lock:
            result = self._run_warm(job, workdir, stop, on_handle, on_progress)
        if result is None:  # the driver could not run it: this job goes cold
            return self.fallback.run(job, workdir, stop, on_handle, on_progress)
        return result

    def close(self) -> None:
        """End the driver: EOF (it stops its session), then kill whatever is left. Idempotent;
        a later ``run`` would start a new driver."""
        with self._lock:
            if self._driver is not None:
                self._driver.close(CLOSE_TIMEOUT_S)
            self._forget_driver()
        self.fallback.close()

    def __enter__(self) -> WarmSparkEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run_warm(self, job: JobSpec, workdir: Path, stop: threading.Event,
                  on_handle: Callable[[str], None], on_progress: ProgressCallback | None
                  ) -> EngineResult | None:
        if stop.is_set():
            return EngineResult(False, None, "stopped", "", None, None, stopped=True)
        self._ensure_alive()
        if not self.health.usable():
            return None
        try:  # the driver is a local child: the spec it reads from the pipe gets values
            spec = inline_secrets(job.spec)
        except SecretError as e:
            return EngineResult(False, None, f"bad configuration: {e}", retryable=False)
        catalog = catalog_of(spec)
        if self._driver is not None and catalog and self._catalogs.conflicts(*catalog):
            log.info("catalog name reused with other properties, or another storage "
                     "identity (endpoint, credentials): restarting the warm driver",
                     catalog=catalog[0])
            self._driver.close(CLOSE_TIMEOUT_S)
            self._forget_driver()
        driver = self._driver if self._driver is not None else self._start(stop)
        if driver is None:
            if stop.is_set():  # set while the driver started (it was killed)
                return EngineResult(False, None, "stopped", "", None, None, stopped=True)
            return None
        handle = driver.app_id
        if handle:
            on_handle(handle)
        private_dir(workdir)
        result_path = workdir / "result.json"
        result_path.unlink(missing_ok=True)
        if catalog:
            self._catalogs.add(*catalog)
        start = self._log_offset()
        self._requests += 1
        sent = driver.send(self._requests, spec, result_path)
        outcome = (driver.wait_done(self._requests, stop, ANSWER_POLL_S, on_progress)
                   if sent else Wait.LOST)
        tail = read_log_since(self.log_path, start, LOG_TAIL_MAX_BYTES)
        if outcome is Wait.STOPPED:
            self._kill_driver()
            return EngineResult(False, None, "stopped", tail, None, handle, stopped=True)
        if outcome is Wait.LOST:
            log.warning("warm driver died during an operation; running it with the fallback",
                        pid=driver.pid, log_tail=tail[-2000:])
            self._kill_driver()
            self.health.failed()
            return None
        self.health.succeeded()
        result = read_result(result_path)
        code = 0 if result and result.get("ok") else 1  # what the one-shot job would exit with
        return result_from_payload(result, tail, code, handle,
                                   lambda: "the warm driver answered without a result file")

    def _start(self, stop: threading.Event) -> DriverProcess | None:
        """A ready driver, or None: ``stop`` was set (the driver is killed) or it failed."""
        self._rotate_log()
        argv, env = self._launch()
        driver = DriverProcess(argv, env, self.log_path)
        try:
            if not driver.start(READY_TIMEOUT_S, stop, ANSWER_POLL_S):
                return None
        except DriverStartError as e:
            log.warning("warm driver failed to start; running the job with the fallback",
                        error=str(e), log=str(self.log_path))
            self.health.failed()
            return None
        log.info("warm driver ready", pid=driver.pid, spark_app_id=driver.app_id)
        self._driver = driver
        return driver

    def _kill_driver(self) -> None:
        if self._driver is not None:
            self._driver.kill_group()
        self._forget_driver()

    def _forget_driver(self) -> None:
        self._driver = None
        self._catalogs.clear()

    def _ensure_alive(self) -> None:
        if self._driver is not None and not self._driver.alive():
            log.warning("warm driver exited between operations; starting a new one",
                        pid=self._driver.pid)
            self._kill_driver()
            self.health.failed()

    def _rotate_log(self) -> None:
        """Keep the previous driver's log (the one that died) next to the new one."""
        private_dir(self.state_dir)
        if self.log_path.exists():
            os.replace(self.log_path, self.log_path.with_name(self.log_path.name + ".1"))

    def _log_offset(self) -> int:
        try:
            size = self.log_path.stat().st_size
            if size > DRIVER_LOG_MAX_BYTES:  # opened O_APPEND: writers continue at the new end
                os.truncate(self.log_path, 0)
                return 0
            return size
        except OSError:
            return 0


