"""One spark-submit: its command line, environment and private properties, built from a job.

The job's spec travels inline (``--spec-b64``), so the driver needs nothing from the executor's
disk and may run anywhere (deploy mode ``cluster``); it therefore carries secret *references*
only (``catalog_secrets``), which the driver resolves. The attempt's report token never goes on
the command line: a client-mode driver (spark-submit's child) gets it in its environment, a
cluster-mode driver through a 0600 ``--properties-file`` (``spark.kubernetes.driverEnv.*`` /
``spark.yarn.appMasterEnv.*``) that the engine deletes once spark-submit has submitted.

What a cluster-mode driver needs to resolve references:

- Kubernetes: ``TMS_SPARK_K8S_SECRET`` mounts that Secret into the driver pod at
  ``TMS_SECRET_DIR`` (``file:`` references); each ``env:TMS_SECRET_X`` reference becomes
  ``spark.kubernetes.driver.secretKeyRef.TMS_SECRET_X=<secret>:TMS_SECRET_X`` (the Secret holds
  the key the executor's own ``envFrom`` turns into that variable).
- YARN: the referenced ``env:`` values go into the private properties file as
  ``spark.yarn.appMasterEnv.*`` (they then live in the application's launch context, visible
  to its owner and YARN admins). ``file:`` references cannot reach a YARN driver: refused with
  a clear error. For production, keep S3 credentials out of the catalog and let Hadoop resolve
  them on the cluster (``hadoop.security.credential.provider.path`` with a JCEKS store).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tms.domain import JobSpec
from tms.domain.jobs import ENV_JOB_TOKEN
from tms.engines import hudi_submit
from tms.secrets import env_names, file_names, resolve
from tms.spark.cluster import Manager, driver_env_key, driver_pod_name, manager_of
from tms.spark.job_package import job_zip
from tms.spark.settings import SparkSettings, spark_home

MAX_INLINE_SPEC_BYTES = 64 * 1024  # one argv string; Linux allows 128 KiB
RESULT_FILE_NAME = "result.json"  # only without a report target (local runs, tests)
PROPERTIES_FILE_NAME = "submit.properties"  # 0600, deleted once spark-submit has submitted
LOCAL_SCHEME = "local://"  # a path inside the driver's image (Kubernetes cluster mode)
ENV_SPARK_CONF_DIR = "SPARK_CONF_DIR"
SPARK_DEFAULTS = "spark-defaults.conf"
# names the attempt (its work directory) on the command line and in Spark's UI: which
# operation a spark-submit process or a cluster's application belongs to
ATTEMPT_CONF = "spark.tms.attempt"


class SubmissionError(ValueError):
    """The job cannot be submitted with these settings (bad configuration: not retried)."""


@dataclass(frozen=True)
class Submission:
    argv: list[str]
    env: dict[str, str] = field(repr=False)
    properties: dict[str, str] = field(default_factory=dict, repr=False)  # private conf
    pod_name: str | None = None  # Kubernetes cluster mode: the driver pod TMS named
    result_path: Path | None = None  # file mode only
    # private files served from memory through a named pipe while the job runs (path ->
    # text; ``props_pipe``): a Hudi utility's writer properties
    pipes: dict[Path, bytes] = field(default_factory=dict, repr=False)


def encode_spec(spec: Mapping[str, Any]) -> str:
    data = json.dumps(spec, separators=(",", ":")).encode()
    if len(data) > MAX_INLINE_SPEC_BYTES:
        raise SubmissionError(f"the job spec is {len(data)} bytes, above the "
                              f"{MAX_INLINE_SPEC_BYTES} an inline argument may carry")
    return base64.b64encode(data).decode()


def inline_secrets(spec: Mapping[str, Any], environ: Mapping[str, str] | None = None
                   ) -> dict[str, Any]:
    """The spec with its secret references resolved here into ``catalog_properties`` (for a
    spec that never leaves this machine: the warm driver's private spec file)."""
    refs = spec.get("catalog_secrets") or {}
    if not refs:
        return dict(spec)
    props = {**spec.get("catalog_properties", {}),
             **{k: resolve(r, environ) for k, r in refs.items()}}
    return {**{k: v for k, v in spec.items() if k != "catalog_secrets"},
            "catalog_properties": props}


def spark_defaults() -> str:
    """spark-defaults.conf's text (spark-submit skips it when given ``--properties-file``)."""
    conf_dir = os.environ.get(ENV_SPARK_CONF_DIR) or str(spark_home() / "conf")
    try:
        return (Path(conf_dir) / SPARK_DEFAULTS).read_text()
    except OSError:
        return ""


def build(settings: SparkSettings, job: JobSpec, workdir: Path, base_env: Mapping[str, str],
          jvm_jar: str | None = None) -> Submission:
    """The submission of ``job``; SubmissionError when these settings cannot run it."""
    if job.kind == "jvm":
        return _jvm(settings, job, workdir, base_env, jvm_jar)
    if job.kind != "pyspark":
        raise SubmissionError(f"spark-submit engine cannot run a {job.kind!r} job")
    return _pyspark(settings, job, workdir, base_env)


def _jvm(settings: SparkSettings, job: JobSpec, workdir: Path, base_env: Mapping[str, str],
         jvm_jar: str | None) -> Submission:
    """A JVM main (a Hudi utility): its jars, arguments and private properties file."""
    try:
        app_jar, bundle = hudi_submit.pick_jars(job, settings, jvm_jar, base_env)
        hudi_submit.check_release(job, app_jar, bundle)
        args, pipes = hudi_submit.job_args(job, settings, workdir, base_env)
    except hudi_submit.HudiSubmitError as e:
        raise SubmissionError(str(e)) from None
    own = hudi_submit.hudi_settings(job, settings, bundle)
    argv = own.submit_argv(app_jar, args, extra_conf={ATTEMPT_CONF: workdir.name})
    at = len(argv) - len(args) - 1
    return Submission([*argv[:at], "--class", job.app, *argv[at:]],
                      settings.submit_env(base_env), pipes=pipes)


def _pyspark(settings: SparkSettings, job: JobSpec, workdir: Path,
             base_env: Mapping[str, str]) -> Submission:
    manager = manager_of(settings.master)
    cluster = settings.deploy_mode == "cluster"
    refs = dict(job.spec.get("catalog_secrets") or {})
    try:
        env_refs, file_refs = env_names(refs), file_names(refs)
    except ValueError as e:
        raise SubmissionError(f"catalog_secrets: {e}") from None
    spec = dict(job.spec)
    args: list[str] = []
    result_path = None
    if job.report is not None:
        spec["report"] = job.report.spec_fields()
    elif cluster:
        raise SubmissionError("deploy mode 'cluster' needs the executor's --api-target: the "
                              "driver reports its result through the TMS API")
    else:
        result_path = workdir / RESULT_FILE_NAME
        args = ["--result", str(result_path)]
    args = ["--spec-b64", encode_spec(spec), *args]
    app, py_files = job.app, [str(job_zip())]  # the job's package, imported as tms.jobs
    if cluster and manager is Manager.KUBERNETES:  # the image carries jobs and jars (TMS's)
        app, py_files = LOCAL_SCHEME + app, [LOCAL_SCHEME + f for f in py_files]
        settings = replace(settings, jars=tuple(j if "://" in j else LOCAL_SCHEME + j
                                                for j in settings.jars))
    if not cluster:
        env = settings.submit_env(base_env, env_refs)
        if job.report is not None:
            env[ENV_JOB_TOKEN] = job.report.token
        return Submission(settings.submit_argv(app, args, py_files=py_files,
                                               extra_conf={ATTEMPT_CONF: workdir.name}),
                          env, result_path=result_path)
    return _cluster(settings, manager, job, workdir, base_env, app, args, py_files,
                    env_refs, file_refs)


def _cluster(settings: SparkSettings, manager: Manager, job: JobSpec, workdir: Path,
             base_env: Mapping[str, str], app: str, args: list[str], py_files: list[str],
             env_refs: list[str], file_refs: list[str]) -> Submission:
    assert job.report is not None
    extra: dict[str, str] = {ATTEMPT_CONF: workdir.name}
    private = {driver_env_key(manager, ENV_JOB_TOKEN): job.report.token}
    pod_name = None
    if manager is Manager.KUBERNETES:
        pod_name = driver_pod_name(workdir.name)
        extra["spark.kubernetes.driver.pod.name"] = pod_name
        if (env_refs or file_refs) and not settings.k8s_secret:
            raise SubmissionError("the catalog's secrets are references the driver pod must "
                                  "resolve: set TMS_SPARK_K8S_SECRET to the Kubernetes Secret "
                                  "holding them")
        for name in env_refs:
            extra[f"spark.kubernetes.driver.secretKeyRef.{name}"] = \
                f"{settings.k8s_secret}:{name}"
    else:  # YARN
        if file_refs:
            raise SubmissionError("file: secret references cannot reach a YARN cluster-mode "
                                  "driver: use env: references, client mode, or Hadoop's "
                                  "credential provider for storage credentials")
        for name in env_refs:
            try:
                private[driver_env_key(manager, name)] = resolve(f"env:{name}", base_env)
            except ValueError as e:
                raise SubmissionError(str(e)) from None
    return Submission(settings.submit_argv(app, args, py_files=py_files, extra_conf=extra,
                                           properties_file=str(workdir / PROPERTIES_FILE_NAME)),
                      settings.submit_env(base_env), private, pod_name)

