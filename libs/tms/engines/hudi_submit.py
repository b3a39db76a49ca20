"""A Hudi utility's spark-submit: its jars, its private properties file, and how it ended.

Jars: the utilities jar spark-submit runs and the Hudi Spark bundle are taken from the table's
catalog (``hudi.utilities-jar`` / ``hudi.spark-bundle``), else the queue's Spark settings
(``hudi_utilities_jar`` / ``hudi_spark_bundle``), else ``TMS_HUDI_UTILITIES_JAR`` /
``TMS_HUDI_SPARK_BUNDLE``. Only Hudi's jars and the storage jars of the table's scheme ride
on the job: the Iceberg runtime (and its Maven package) stays off, since two copies of Parquet
or Avro on one classpath fail in ways no message explains. A bundle older than the table
needs (its table version, LANCE base files, the writers' own release) is refused before any
JVM starts, naming both releases.

Properties: the writers' configuration is served to the driver through ``hudi.properties``
in the attempt's private work directory, a 0600 named pipe (``props_pipe``) whose text,
secret references resolved, lives only in the executor's memory: Hudi reads ``--props`` only
from a file system, and a file would keep the secrets on disk for the whole run (and after it,
if the executor died). ``--props file://...`` names it (an unqualified path would be read from
Hadoop's default file system). A cluster-mode driver cannot read the executor's disk: it gets
the settings as ``--hoodie-conf`` instead, and secrets are refused.

Ending: the utilities exit non-zero when they found nothing to plan, and some releases exit 0
after a failure they only logged; the log lines the job names decide: a failure logged with an
exception is FAILED, "no plan" is SKIPPED with the reason, else the exit code.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tms.domain import JobSpec
from tms.engines.base import EngineResult
from tms.engines.workdir import HUDI_PROPERTIES_FILE_NAME, write_private
from tms.secrets import SecretError, resolve
from tms.spark import jar_check
from tms.spark.provision_fence import FENCE_JAR, FENCE_ROOTS_CONF, FENCE_S3A_JAR
from tms.spark.settings import ENV_HUDI_SPARK_BUNDLE, ENV_HUDI_UTILITIES_JAR, SparkSettings

PROPERTIES_FILE_NAME = HUDI_PROPERTIES_FILE_NAME
_RELEASE_IN_NAME_RE = re.compile(r"-([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})(?:[-.][A-Za-z0-9.-]*)?"
                                 r"\.jar$")
_MANIFEST_VERSION_RE = re.compile(rb"^(?:Implementation-Version|Bundle-Version):\s*"
                                  rb"([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})", re.MULTILINE)
_PROP_KEY_RE = re.compile(r"hoodie(\.[a-z0-9_]+)+")
_SAFE_VALUE_RE = re.compile(r"[\x21-\x7e]{1,4096}")  # printable ASCII, no blank
# every failure the utilities log with an exception (UtilHelpers.retry, the compactor's main)
FAILED_MARKERS = (re.compile(r"\b(Compact|Cluster) failed\b"),
                  re.compile(r"Fail to run compaction for"))
# a non-zero result some releases only log before exiting 0 (HoodieClusteringJob before 0.14)
SOFT_FAILED_MARKERS = (re.compile(r"Clustering with basePath: .* failed"),)
LOG_SCAN_BYTES = 4 * 1024 * 1024


class HudiSubmitError(ValueError):
    """The Hudi job cannot be submitted with this configuration (not retried)."""


def release_of(jar: str) -> str | None:
    """The Hudi release of a jar: from its manifest when it is a local file, else from its
    name (``hudi-utilities-slim-bundle_2.12-1.0.2.jar``)."""
    if "://" not in jar:
        try:
            with zipfile.ZipFile(jar) as zf:
                found = _MANIFEST_VERSION_RE.search(zf.read("META-INF/MANIFEST.MF"))
            if found:
                return found.group(1).decode()
        except (OSError, KeyError, zipfile.BadZipFile):
            pass
    m = _RELEASE_IN_NAME_RE.search(jar.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def _tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def render_properties(props: Mapping[str, str]) -> bytes:
    """``props`` as Hudi's properties reader reads them back exactly: it trims, collapses
    blanks, splits at the first '=' and follows ``include=`` lines, so a key must be a dotted
    lower-case ``hoodie.*`` name and a value printable ASCII without blanks or line breaks.
    A refused value is never shown (it may be a secret)."""
    lines = []
    for key in sorted(props):
        value = props[key]
        if not _PROP_KEY_RE.fullmatch(key):
            raise HudiSubmitError(f"refusing property {key[:80]!r}: not a hoodie.* key")
        if not _SAFE_VALUE_RE.fullmatch(value):
            raise HudiSubmitError(f"refusing the value of {key}: it must be printable ASCII "
                                  "without blanks or line breaks (1-4096 characters)")
        lines.append(f"{key}={value}\n")
    return "".join(lines).encode("ascii")


def pick_jars(job: JobSpec, settings: SparkSettings, env_jar: str | None,
          environ: Mapping[str, str]) -> tuple[str, str | None]:
    """(the utilities jar, the Spark bundle or None)."""
    own = (job.spec.get("hudi") or {}).get("jars") or {}
    utilities = own.get("utilities_jar") or settings.hudi_utilities_jar or env_jar
    bundle = (own.get("spark_bundle") or settings.hudi_spark_bundle
              or environ.get(ENV_HUDI_SPARK_BUNDLE) or None)
    if not utilities:
        raise HudiSubmitError(f"{ENV_HUDI_UTILITIES_JAR} (or the queue's hudi_utilities_jar, "
                              f"or the catalog's hudi.utilities-jar) must name the Hudi "
                              f"utilities jar to run {job.app}")
    for jar in (utilities, bundle):
        if jar and "://" not in jar and not Path(jar).is_file():
            raise HudiSubmitError(f"Hudi jar not found: {jar}")
    if "slim" in utilities.rsplit("/", 1)[-1] and not bundle:
        raise HudiSubmitError(f"the slim utilities bundle needs the Hudi Spark bundle: set "
                              f"{ENV_HUDI_SPARK_BUNDLE}, the queue's hudi_spark_bundle or the "
                              "catalog's hudi.spark-bundle")
    return utilities, bundle


def check_release(job: JobSpec, utilities: str, bundle: str | None) -> None:
    """Refuse a bundle older than the job needs, or two jars of different releases."""
    h = job.spec.get("hudi") or {}
    found = {jar: release_of(jar) for jar in (utilities, bundle) if jar}
    known = {r for r in found.values() if r}
    if len(known) > 1:
        raise HudiSubmitError("the Hudi jars are of different releases: " + ", ".join(
            f"{Path(j).name} {r}" for j, r in found.items()))
    needed = h.get("min_release")
    if not needed:
        return
    if not known:
        raise HudiSubmitError(f"{h.get('min_release_why')} needs Hudi {needed} or newer, and "
                              f"the release of {Path(utilities).name} is unknown (neither "
                              "its manifest nor its name says)")
    have = known.pop()
    if _tuple(have) < _tuple(needed):
        raise HudiSubmitError(f"{h.get('min_release_why')} needs Hudi {needed} or newer; the "
                              f"configured bundle is {have} ({Path(utilities).name})")


def hudi_settings(job: JobSpec, settings: SparkSettings, bundle: str | None) -> SparkSettings:
    """``settings`` with only the Hudi job's jars and packages, and TMS's deletion fence
    (``tms-fence.jar``, when provisioned) held to the table's base path: Hudi's utilities
    arm nothing themselves, so every JVM of the application reads the roots from the Hadoop
    conf (``Fence.ROOTS_KEY``). Hudi's cleaner deletes what its metadata table lists, which
    TMS cannot read ahead; the fence refuses any of it outside the table."""
    location = str((job.spec.get("hudi") or {}).get("location") or "")
    fence = tuple(j for j in settings.jars if Path(j).name in (FENCE_JAR, FENCE_S3A_JAR))
    jars = ((bundle,) if bundle else ()) + jar_check.storage_jars(location, settings.jars) + fence
    packages = tuple(p for p in settings.packages if not p.startswith("org.apache.iceberg:"))
    conf = dict(settings.conf)
    if fence and location:
        conf[FENCE_ROOTS_CONF] = location
    return replace(settings, jars=jars, packages=packages, conf=conf)


def job_args(job: JobSpec, settings: SparkSettings, workdir: Path,
             environ: Mapping[str, str]) -> tuple[list[str], dict[Path, bytes]]:
    """The utility's arguments: the job's own, the executor memory for utilities that
    require it, and the writers' properties (``--hoodie-conf`` in cluster mode); and the
    private files to serve through a pipe while the job runs (path -> text)."""
    h: dict[str, Any] = job.spec.get("hudi") or {}
    args = list(job.args)
    if h.get("memory_flag"):
        args += [str(h["memory_flag"]), settings.executor_memory]
    props = dict(h.get("properties") or {})
    refs = dict(h.get("property_secrets") or {})
    if settings.deploy_mode == "cluster":
        if refs:
            raise HudiSubmitError("writer settings given as secrets cannot reach a "
                                  "cluster-mode driver (it cannot read the executor's private "
                                  "file): use client mode for this queue")
        render_properties(props)  # the same checks
        for key in sorted(props):
            args += ["--hoodie-conf", f"{key}={props[key]}"]
        return args, {}
    for key, ref in refs.items():
        try:
            props[key] = resolve(ref, environ)
        except SecretError as e:
            raise HudiSubmitError(f"writer setting {key}: {e}") from None
    if not props:
        return args, {}
    path = workdir.resolve() / PROPERTIES_FILE_NAME
    return [*args, "--props", path.as_uri()], {path: render_properties(props)}


def secret_values(job: JobSpec, environ: Mapping[str, str]) -> list[str]:
    """The resolved values of the job's secret writer settings (longest first): what its
    driver log must never show."""
    refs = (job.spec.get("hudi") or {}).get("property_secrets") or {}
    values = []
    for ref in refs.values():
        try:
            values.append(resolve(ref, environ))
        except SecretError:
            continue
    return sorted((v for v in values if v), key=len, reverse=True)


def scrub_log(job: JobSpec, log_path: Path, environ: Mapping[str, str]) -> None:
    """Mask the job's secret writer settings in its driver log, which is kept on failure and
    whose tail is stored with the operation: Hudi logs its properties (HoodieCleaner prints
    them all when it starts). The engine masks the log as it is written
    (``log_scrub.ScrubbingPump``); this pass over the file afterwards is the second line."""
    values = secret_values(job, environ)
    if not values:
        return
    try:
        data = log_path.read_bytes()
    except OSError:
        return
    for value in values:
        data = data.replace(value.encode(), b"****")
    write_private(log_path, data)


def _log_text(log_path: Path) -> str:
    try:
        with log_path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - LOG_SCAN_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def outcome(job: JobSpec, code: int | None, log_path: Path, tail: str,
            handle: str | None) -> EngineResult | None:
    """How a Hudi utility ended when its driver log says (see the module doc); None when
    only the exit code can tell (0: succeeded; else the log is classified as for any job,
    which names a missing class and its jar)."""
    text = _log_text(log_path)
    name = job.app.rsplit(".", 1)[-1]
    for marker in FAILED_MARKERS:
        m = marker.search(text)
        if m:
            line = text[text.rfind("\n", 0, m.start()) + 1:text.find("\n", m.end())]
            return EngineResult(False, None, f"{name} failed (exit {code}): "
                                f"{line.strip()[:1000]}", tail, code, handle)
    for phrase in (job.spec.get("hudi") or {}).get("no_plan") or ():
        if phrase in text:
            return EngineResult(False, {"exit_code": code, "no_plan": phrase}, None, tail,
                                code, handle, retryable=False,
                                skipped=f"Hudi found nothing to plan: {phrase!r} "
                                        f"({name}, exit {code})")
    for marker in SOFT_FAILED_MARKERS:
        m = marker.search(text)
        if m:
            return EngineResult(False, None, f"{name} failed (exit {code}): "
                                f"{m.group(0)[:1000]}", tail, code, handle)
    return None
