"""The Spark settings of clusters: a queue's share of a shared cluster, and where drivers and
executors run on YARN and Kubernetes. Read from ``TMS_SPARK_*`` (``from_env``) or a queue's
``[queues.X.spark]`` table, validated (``validate``) and turned into Spark conf
(``cluster_conf``), which ``SparkSettings.submit_argv`` puts on the command line.

===============================  =======================================================
variable (queue setting)         Spark conf
===============================  =======================================================
TMS_SPARK_CORES_MAX              ``spark.cores.max`` (standalone): the most cores the app
(cores_max)                      takes, so a warm driver leaves cores to cold jobs
TMS_SPARK_MIN_EXECUTORS /        dynamic allocation on, ``spark.dynamicAllocation.min/
TMS_SPARK_MAX_EXECUTORS          maxExecutors`` (shuffle tracking on: no external shuffle
(min_executors, max_executors)   service needed)
TMS_SPARK_YARN_QUEUE             ``--queue`` (YARN)
TMS_SPARK_K8S_NAMESPACE          ``spark.kubernetes.namespace`` (default ``default``)
TMS_SPARK_K8S_IMAGE              ``spark.kubernetes.container.image`` (required on k8s)
TMS_SPARK_K8S_SERVICE_ACCOUNT    ``spark.kubernetes.authenticate.driver.serviceAccountName``
TMS_SPARK_K8S_DRIVER_TEMPLATE /  ``spark.kubernetes.driver/executor.podTemplateFile``
TMS_SPARK_K8S_EXECUTOR_TEMPLATE  (files on the executor; spark-submit reads them)
TMS_SPARK_K8S_SECRET             cluster mode: the Kubernetes Secret mounted read-only into
TMS_SPARK_K8S_SECRET_DIR         the driver pod at the directory (default the executor's
                                 secret directory), ``TMS_SECRET_DIR`` pointing there, so
                                 the job resolves its ``file:`` and ``env:`` references
===============================  =======================================================

In cluster mode spark-submit only submits (``...waitAppCompletion=false``): TMS follows the
driver by its submission id (``tms.spark.cluster``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tms.secrets import ENV_SECRET_DIR
from tms.spark.cluster import Manager, manager_of

if TYPE_CHECKING:
    from tms.spark.settings import SparkSettings

DEFAULT_K8S_NAMESPACE = "default"
MAX_EXECUTORS = 10_000
MAX_IMAGE_CHARS = 512
_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_YARN_QUEUE_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,255}$")
_IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$")
_ABS_PATH_RE = re.compile(r"^/[A-Za-z0-9._\-/]*$")
_ENV: dict[str, str] = {
    "cores_max": "TMS_SPARK_CORES_MAX", "min_executors": "TMS_SPARK_MIN_EXECUTORS",
    "max_executors": "TMS_SPARK_MAX_EXECUTORS", "yarn_queue": "TMS_SPARK_YARN_QUEUE",
    "k8s_namespace": "TMS_SPARK_K8S_NAMESPACE", "k8s_image": "TMS_SPARK_K8S_IMAGE",
    "k8s_service_account": "TMS_SPARK_K8S_SERVICE_ACCOUNT",
    "k8s_driver_template": "TMS_SPARK_K8S_DRIVER_TEMPLATE",
    "k8s_executor_template": "TMS_SPARK_K8S_EXECUTOR_TEMPLATE",
    "k8s_secret": "TMS_SPARK_K8S_SECRET", "k8s_secret_dir": "TMS_SPARK_K8S_SECRET_DIR"}
_INTS = ("cores_max", "min_executors", "max_executors")
FIELDS = tuple(_ENV)


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The cluster fields set in ``environ`` (unset or empty: the defaults)."""
    out: dict[str, Any] = {}
    for name, env in _ENV.items():
        raw = environ.get(env, "").strip()
        if not raw:
            continue
        if name in _INTS:
            if not raw.isdigit():
                raise ValueError(f"{env}: expected a whole number, got {raw[:40]!r}")
            out[name] = int(raw)
        else:
            out[name] = raw
    return out


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{_ENV[name]}: {message}")


def _only_on(s: SparkSettings, name: str, managers: tuple[Manager, ...], what: str) -> None:
    if getattr(s, name) is not None:
        _check(manager_of(s.master) in managers, name, f"applies to {what} masters only "
               f"(master is {s.master})")


def validate(s: SparkSettings) -> None:
    """ValueError naming the variable for a setting that is malformed or does not apply to
    the master (a setting silently ignored would hide a cluster taken whole)."""
    manager = manager_of(s.master)
    _only_on(s, "cores_max", (Manager.STANDALONE, Manager.MESOS), "standalone (spark://)")
    if s.min_executors is not None:
        _check(0 <= s.min_executors <= MAX_EXECUTORS, "min_executors",
               f"expected 0 to {MAX_EXECUTORS}")
    for name in ("min_executors", "max_executors"):
        _only_on(s, name, (Manager.STANDALONE, Manager.YARN, Manager.KUBERNETES),
                 "cluster (spark://, yarn, k8s://)")
    if s.min_executors is not None and s.max_executors is not None:
        _check(s.min_executors <= s.max_executors, "min_executors",
               f"{s.min_executors} is above TMS_SPARK_MAX_EXECUTORS {s.max_executors}")
    _only_on(s, "yarn_queue", (Manager.YARN,), "YARN")
    if s.yarn_queue is not None:
        _check(bool(_YARN_QUEUE_RE.fullmatch(s.yarn_queue)), "yarn_queue",
               "expected letters, digits, '_', '.' and '-'")
    k8s = ("k8s_image", "k8s_service_account", "k8s_driver_template", "k8s_executor_template",
           "k8s_secret")
    for name in k8s:
        _only_on(s, name, (Manager.KUBERNETES,), "Kubernetes (k8s://)")
    if manager is not Manager.KUBERNETES:
        return
    _check(bool(_DNS_LABEL_RE.fullmatch(s.k8s_namespace)), "k8s_namespace",
           "expected a Kubernetes namespace name (DNS-1123 label)")
    _check(s.k8s_image is not None, "k8s_image", "required with a k8s:// master: the "
           "image of the driver and executor pods (the TMS image carries Spark and the jobs)")
    assert s.k8s_image is not None
    _check(len(s.k8s_image) <= MAX_IMAGE_CHARS and bool(_IMAGE_RE.fullmatch(s.k8s_image)),
           "k8s_image", "expected an image reference such as registry/tms:1.0")
    for name in ("k8s_service_account", "k8s_secret"):
        value = getattr(s, name)
        if value is not None:
            _check(bool(_DNS_SUBDOMAIN_RE.fullmatch(value)), name,
                   "expected a Kubernetes object name (DNS-1123 subdomain)")
    for name in ("k8s_driver_template", "k8s_executor_template"):
        value = getattr(s, name)
        if value is not None:
            _check("," not in value and Path(value).is_file(), name,
                   f"pod template not found: {value[:200]}")
    _check(bool(_ABS_PATH_RE.fullmatch(s.k8s_secret_dir)) and ".." not in s.k8s_secret_dir,
           "k8s_secret_dir", "expected an absolute path of letters, digits, '.', '_', '-'")


def cluster_conf(s: SparkSettings) -> dict[str, str]:
    """The Spark conf of the cluster settings (none of it secret: it goes on argv)."""
    manager = manager_of(s.master)
    conf: dict[str, str] = {}
    if s.cores_max is not None:
        conf["spark.cores.max"] = str(s.cores_max)
    if s.min_executors is not None or s.max_executors is not None:
        conf["spark.dynamicAllocation.enabled"] = "true"
        conf["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"
        if s.min_executors is not None:
            conf["spark.dynamicAllocation.minExecutors"] = str(s.min_executors)
        if s.max_executors is not None:
            conf["spark.dynamicAllocation.maxExecutors"] = str(s.max_executors)
    if manager is Manager.KUBERNETES:
        conf["spark.kubernetes.namespace"] = s.k8s_namespace
        if s.k8s_image:
            conf["spark.kubernetes.container.image"] = s.k8s_image
        if s.k8s_service_account:
            conf["spark.kubernetes.authenticate.driver.serviceAccountName"] = \
                s.k8s_service_account
        if s.k8s_driver_template:
            conf["spark.kubernetes.driver.podTemplateFile"] = s.k8s_driver_template
        if s.k8s_executor_template:
            conf["spark.kubernetes.executor.podTemplateFile"] = s.k8s_executor_template
        if s.deploy_mode == "cluster":
            conf["spark.kubernetes.submission.waitAppCompletion"] = "false"
            if s.k8s_secret:
                conf[f"spark.kubernetes.driver.secrets.{s.k8s_secret}"] = s.k8s_secret_dir
                conf[f"spark.kubernetes.driverEnv.{ENV_SECRET_DIR}"] = s.k8s_secret_dir
    if manager is Manager.YARN and s.deploy_mode == "cluster":
        conf["spark.yarn.submit.waitAppCompletion"] = "false"
    return conf
