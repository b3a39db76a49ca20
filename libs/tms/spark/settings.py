"""How TMS runs spark-submit: master, memory, jars or Maven packages, and extra Spark conf.

Settings come from ``TMS_SPARK_*`` environment variables so that one deployment can point at a
local Spark (the default, using the jars ``tms.spark.provision`` put in ``$TMS_HOME/jars``) and
another at a cluster that fetches Iceberg from Maven (``TMS_SPARK_PACKAGES``). Everything is
validated up front, because a bad value would otherwise surface minutes later as an obscure
spark-submit failure inside a maintenance job. The argument list is meant for ``subprocess``
without a shell, so no quoting is involved.

A command line is world-readable (``/proc/<pid>/cmdline``), so conf that looks like a secret
(Spark's own redaction pattern: password, secret, token, access.key) is refused
here rather than passed with ``--conf``; catalog properties never come here at all (the job
sets them from its private spec file).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tms.secrets import DEFAULT_SECRET_DIR, ENV_SECRET_DIR
from tms.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from tms.spark import cluster_settings as cs
from tms.spark.cluster import refusal
from tms.spark.provision import ICEBERG_RUNTIME_JAR, POSTGRES_JDBC_JAR, default_jars
from tms.spark.provision_fence import (
    CLASS_PATH_KEYS,
    FENCE_JAR,
    FENCE_S3A_JAR,
    operator_key,
    storage_conf,
)
from tms.spark.provision_io import jars_dir

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[2]"
DEFAULT_DEPLOY_MODE = "client"
DEFAULT_DRIVER_MEMORY = "1g"  # JVM size string: digits with an optional k/m/g/t unit
DEFAULT_EXECUTOR_MEMORY = "1g"
# Our tables are small and local runs have two cores; Spark's default of 200 shuffle partitions
# would only add task overhead.
LOCAL_SHUFFLE_PARTITIONS = 4
LOCAL_BIND_ADDRESS = "127.0.0.1"

ENV_MASTER = "TMS_SPARK_MASTER"
ENV_DEPLOY_MODE = "TMS_SPARK_DEPLOY_MODE"
ENV_DRIVER_MEMORY = "TMS_SPARK_DRIVER_MEMORY"
ENV_EXECUTOR_MEMORY = "TMS_SPARK_EXECUTOR_MEMORY"
ENV_JARS = "TMS_SPARK_JARS"
ENV_PACKAGES = "TMS_SPARK_PACKAGES"
ENV_CONF = "TMS_SPARK_CONF"
# spark-submit's own JVM options; in cluster mode they tell the fence that this JVM only
# submits (tms.fence.Fence.SUBMIT_ONLY_PROPERTY): a Hudi job's roots do not apply to it
ENV_SUBMIT_OPTS = "SPARK_SUBMIT_OPTS"
SUBMIT_ONLY_OPT = "-Dtms.fence.submit-only=true"
# Hudi jobs: the utilities jar spark-submit runs (the slim bundle, or the full one) and the
# Hudi Spark bundle the slim one needs; per queue as hudi_utilities_jar / hudi_spark_bundle
ENV_HUDI_UTILITIES_JAR = "TMS_HUDI_UTILITIES_JAR"
ENV_HUDI_SPARK_BUNDLE = "TMS_HUDI_SPARK_BUNDLE"

_MASTER_RE = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|yarn|(spark|mesos)://[^\s,]+"
    r"|k8s://(https?://)?[A-Za-z0-9.\-\[\]:]+(:\d{1,5})?/?)$"
)
_MEMORY_RE = re.compile(r"^[1-9][0-9]*[kmgtKMGT]?$")
_MAVEN_PART = r"[A-Za-z0-9_.\-]+"
_PACKAGE_RE = re.compile(rf"^{_MAVEN_PART}:{_MAVEN_PART}:{_MAVEN_PART}$")
_CONF_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-\[\]]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# Spark's default spark.redaction.regex: conf it would hide in its UI must never be in argv.
_SECRET_KEY_RE = re.compile(r"secret|password|token|access[.]key", re.IGNORECASE)
DEPLOY_MODES = ("client", "cluster")
MAX_CORES_OR_EXECUTORS = 10_000


def spark_home() -> Path:
    """The Spark distribution inside the pip-installed pyspark package."""
    import pyspark

    return Path(pyspark.__file__).parent


def spark_submit_path() -> str:
    return str(spark_home() / "bin" / "spark-submit")


def _split_list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _parse_conf(raw: str) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in _split_list(raw):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{ENV_CONF}: expected key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


def _derive_java_home() -> str | None:
    """JAVA_HOME from the ``java`` on PATH (following Debian's alternatives symlinks)."""
    java = shutil.which("java")
    if not java:
        return None
    real = Path(java).resolve()
    if real.parent.name != "bin":
        return None
    return str(real.parent.parent)


@dataclass(frozen=True)
class SparkSettings:
    """Everything spark-submit needs besides the application and its arguments."""

    master: str = DEFAULT_MASTER
    deploy_mode: str = DEFAULT_DEPLOY_MODE
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    executor_memory: str = DEFAULT_EXECUTOR_MEMORY
    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    conf: dict[str, str] = field(default_factory=dict)
    driver_cores: int | None = None  # None: Spark's own default
    executor_cores: int | None = None
    num_executors: int | None = None  # YARN / Kubernetes static allocation
    # a queue's share of a shared cluster (see cluster_settings): standalone cores, executors
    cores_max: int | None = None
    min_executors: int | None = None
    max_executors: int | None = None
    # where the driver and executors run on YARN / Kubernetes (see cluster_settings)
    yarn_queue: str | None = None
    k8s_namespace: str = cs.DEFAULT_K8S_NAMESPACE
    k8s_image: str | None = None
    k8s_service_account: str | None = None
    k8s_driver_template: str | None = None
    k8s_executor_template: str | None = None
    k8s_secret: str | None = None
    k8s_secret_dir: str = DEFAULT_SECRET_DIR
    hudi_utilities_jar: str | None = None  # None: the engine's TMS_HUDI_UTILITIES_JAR
    hudi_spark_bundle: str | None = None

    def __post_init__(self) -> None:
        for name in ("driver_cores", "executor_cores", "num_executors", "cores_max",
                     "max_executors"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 1 <= value <= MAX_CORES_OR_EXECUTORS):
                raise ValueError(f"{name}: expected an integer from 1 to "
                                 f"{MAX_CORES_OR_EXECUTORS}, got {value!r}")
        if not _MASTER_RE.fullmatch(self.master):
            raise ValueError(f"{ENV_MASTER}: unsupported Spark master {self.master!r}")
        if self.deploy_mode not in DEPLOY_MODES:
            raise ValueError(f"{ENV_DEPLOY_MODE}: must be one of {DEPLOY_MODES}, "
                             f"got {self.deploy_mode!r}")
        refused = refusal(self.master, self.deploy_mode)
        if refused:
            raise ValueError(f"{ENV_DEPLOY_MODE}: {refused}")
        cs.validate(self)
        for env, value in ((ENV_DRIVER_MEMORY, self.driver_memory),
                           (ENV_EXECUTOR_MEMORY, self.executor_memory)):
            if not _MEMORY_RE.fullmatch(value):
                raise ValueError(f"{env}: expected a size like 512m or 2g, got {value!r}")
        for jar in self.jars:
            self._check_jar(jar)
        for hudi_jar in (self.hudi_utilities_jar, self.hudi_spark_bundle):
            if hudi_jar is not None:
                self._check_jar(hudi_jar)
        for package in self.packages:
            if not _PACKAGE_RE.fullmatch(package):
                raise ValueError(f"{ENV_PACKAGES}: expected group:artifact:version, "
                                 f"got {package!r}")
        for key, value in self.conf.items():
            if not _CONF_KEY_RE.fullmatch(key):
                raise ValueError(f"{ENV_CONF}: invalid conf key {key!r}")
            if _CONTROL_RE.search(value):
                raise ValueError(f"{ENV_CONF}: value of {key!r} contains control characters "
                                 "(newline?)")
            if _SECRET_KEY_RE.search(key):
                raise ValueError(f"{ENV_CONF}: {key!r} looks like a secret, and spark-submit's "
                                 "command line is readable by every local user; set it in "
                                 "spark-defaults.conf, Hadoop's configuration or the catalog")

    @staticmethod
    def _check_jar(jar: str) -> None:
        if not jar or "," in jar or _CONTROL_RE.search(jar):
            raise ValueError(f"{ENV_JARS}: invalid jar entry {jar!r}")
        if "://" in jar:  # hdfs://, s3a://, file:// ... are resolved by Spark itself
            return
        if not Path(jar).is_file():
            raise ValueError(f"{ENV_JARS}: jar not found: {jar}")

    @classmethod
    def from_env(cls, home: Path, environ: Mapping[str, str] = os.environ) -> SparkSettings:
        """Read ``TMS_SPARK_*``; unset or empty variables take the defaults.

        Without ``TMS_SPARK_JARS`` the jars are the provisioned ones in ``home/jars``; when
        ``TMS_SPARK_PACKAGES`` is set (Maven reachable) only the PostgreSQL JDBC driver is kept,
        since the Iceberg runtime then comes from Maven and two copies would clash.
        """

        def get(name: str, default: str) -> str:
            return environ.get(name, "").strip() or default

        packages = _split_list(environ.get(ENV_PACKAGES, ""))
        if environ.get(ENV_JARS, "").strip():
            jars = _split_list(environ[ENV_JARS])
        elif packages:
            jars = (str(POSTGRES_JDBC_JAR),) if POSTGRES_JDBC_JAR.is_file() else ()
        else:
            jars = tuple(default_jars(home))
            if not any(Path(j).name == ICEBERG_RUNTIME_JAR for j in jars):
                log.warning("no Iceberg runtime jar in %s and %s unset: Spark jobs will fail; "
                            "run scripts/setup", home / "jars", ENV_PACKAGES)
        for name in (FENCE_JAR, FENCE_S3A_JAR):  # TMS's own: whichever way the rest comes
            fence = jars_dir(home) / name
            if fence.is_file() and not any(Path(j).name == name for j in jars):
                jars = (*jars, str(fence))
        return cls(
            master=get(ENV_MASTER, DEFAULT_MASTER),
            deploy_mode=get(ENV_DEPLOY_MODE, DEFAULT_DEPLOY_MODE),
            driver_memory=get(ENV_DRIVER_MEMORY, DEFAULT_DRIVER_MEMORY),
            executor_memory=get(ENV_EXECUTOR_MEMORY, DEFAULT_EXECUTOR_MEMORY),
            jars=jars,
            packages=packages,
            conf=_parse_conf(environ.get(ENV_CONF, "")),
            hudi_spark_bundle=environ.get(ENV_HUDI_SPARK_BUNDLE, "").strip() or None,
            **cs.from_env(environ),
        )

    @property
    def is_local(self) -> bool:
        return self.master.startswith("local")

    def effective_conf(self) -> dict[str, str]:
        """Spark conf passed with ``--conf``: the file systems (fenced when the fence jar is
        there: ``provision_fence.storage_conf``), local-mode defaults, then user conf."""
        conf: dict[str, str] = {"spark.executor.memory": self.executor_memory,
                                **storage_conf(self.jars)}
        if self.is_local:
            conf.update({
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.driver.bindAddress": LOCAL_BIND_ADDRESS,
                "spark.driver.host": LOCAL_BIND_ADDRESS,
            })
        conf.update(cs.cluster_conf(self))
        for key, value in self.conf.items():  # the operator's class path keeps the fence's
            key = operator_key(key, value, conf)  # and a fenced store's own class is wrapped
            joined = key in CLASS_PATH_KEYS and key in conf and value != conf[key]
            conf[key] = f"{conf[key]}:{value}" if joined else value
        return conf

    def submit_argv(self, app_path: str, app_args: list[str],
                    py_files: list[str] | None = None,
                    extra_conf: Mapping[str, str] | None = None,
                    properties_file: str | None = None) -> list[str]:
        """The full spark-submit command line, for ``subprocess`` without a shell;
        ``py_files`` are Python modules shipped next to a PySpark application, ``extra_conf``
        one submission's own conf (never secret: a command line is world-readable), and
        ``properties_file`` a private file of conf that must not be on it."""
        argv = [spark_submit_path(), "--master", self.master, "--deploy-mode", self.deploy_mode,
                "--driver-memory", self.driver_memory]
        if properties_file:
            argv += ["--properties-file", properties_file]
        if self.yarn_queue:
            argv += ["--queue", self.yarn_queue]
        for flag, number in (("--driver-cores", self.driver_cores),
                             ("--executor-cores", self.executor_cores),
                             ("--num-executors", self.num_executors)):
            if number is not None:
                argv += [flag, str(number)]
        if self.jars:
            argv += ["--jars", ",".join(self.jars)]
        if self.packages:
            argv += ["--packages", ",".join(self.packages)]
        if py_files:
            argv += ["--py-files", ",".join(py_files)]
        for key, value in {**self.effective_conf(), **(extra_conf or {})}.items():
            argv += ["--conf", f"{key}={value}"]
        return [*argv, app_path, *app_args]

    def submit_env(self, base_env: Mapping[str, str],
                   secrets: Iterable[str] = ()) -> dict[str, str]:
        """Environment for spark-submit: this venv's Python on both driver and executors.

        pip-installed spark-submit otherwise starts whatever ``python3`` is on PATH, which lacks
        pyspark. SPARK_HOME is pinned to the pyspark package so a stray SPARK_HOME for another
        Spark version cannot redirect the launcher. Of the catalogs' secrets (``TMS_SECRET_*``)
        only ``secrets`` are passed on: the variables the job's own spec references, which a
        client-mode driver resolves itself (the spec travels on the command line, so it holds
        references, never values). ``TMS_SECRET_DIR`` (a path) is always kept.
        """
        keep = set(secrets) | {ENV_SECRET_DIR}
        env = {k: v for k, v in base_env.items()
               if not k.startswith(SECRET_ENV_PREFIX) or k in keep}
        env["PYSPARK_PYTHON"] = sys.executable
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        env["SPARK_HOME"] = str(spark_home())
        opts = [o for o in env.get(ENV_SUBMIT_OPTS, "").split() if o != SUBMIT_ONLY_OPT]
        if self.deploy_mode == "cluster":  # that JVM only submits: no table roots in it
            opts.append(SUBMIT_ONLY_OPT)
        if opts:
            env[ENV_SUBMIT_OPTS] = " ".join(opts)
        else:
            env.pop(ENV_SUBMIT_OPTS, None)
        if not env.get("JAVA_HOME"):
            java_home = _derive_java_home()
            if java_home:
                env["JAVA_HOME"] = java_home
        return env
