"""Refuse, before spark-submit, a job whose catalog or storage needs a jar Spark will not have.

Without this a missing jar costs a JVM start and a Spark session before it fails (and, for a
class loaded lazily, possibly minutes into the job). The executor knows the job's catalog type
and table location from its spec, and the engine's settings name the jars and Maven packages
Spark will get: every class the job needs (``tms.spark.jars``) must be in one of the local
jars (their zip listings are read once per path and modification time), in Spark's own jars,
or come with a package in ``TMS_SPARK_PACKAGES``. Jars given as URLs (``hdfs://``, ``s3a://``)
cannot be looked into here; with one of those configured an unfound class is not refused.

Engine-independent: the executor calls :func:`missing` for any engine that has Spark settings
(cold spark-submit and the warm driver alike).
"""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tms.domain import JobSpec
from tms.locations import LocationError, parse
from tms.spark import jars
from tms.spark.settings import SparkSettings, spark_home

_PROBES = frozenset(need.entry for need in jars.NEEDS.values())
_listing_lock = threading.Lock()
_listings: dict[tuple[str, int, int], frozenset[str]] = {}


def _probes_in(jar: Path) -> frozenset[str]:
    """Which of the table's classes ``jar`` holds; cached by path, mtime and size (a replaced
    jar is read again). An unreadable jar holds nothing."""
    try:
        st = jar.stat()
    except OSError:
        return frozenset()
    key = (str(jar), st.st_mtime_ns, st.st_size)
    with _listing_lock:
        found = _listings.get(key)
    if found is None:
        try:
            with zipfile.ZipFile(jar) as zf:
                found = frozenset(_PROBES.intersection(zf.namelist()))
        except (OSError, zipfile.BadZipFile):
            found = frozenset()
        with _listing_lock:
            _listings[key] = found
    return found


def _scheme(location: str) -> str | None:
    try:
        return parse(location, literal=True).scheme
    except LocationError:
        return None


def storage_jars(location: str, configured: Iterable[str]) -> tuple[str, ...]:
    """Of ``configured``, the local jars the storage of ``location`` needs (S3A and its SDK
    for s3): for jobs that must carry nothing else (a Hudi utility)."""
    keys = jars.STORAGE_NEEDS.get(_scheme(location) or "", ())
    wanted = {jars.NEEDS[k].entry for k in keys}
    return tuple(j for j in configured
                 if wanted and "://" not in j and _probes_in(Path(j)) & wanted)


def needs_of(spec: Mapping[str, Any]) -> list[jars.JarNeed]:
    """What an Iceberg maintenance spec needs: the runtime, its catalog type's jar, and its
    storage's (from the table location and the catalog's warehouse). Other specs: nothing."""
    props = spec.get("catalog_properties")
    if not isinstance(props, Mapping):
        return []
    keys = list(jars.ICEBERG_NEEDS)
    # from what the catalog is (its type: a sql/jdbc catalog is PostgreSQL, CreateCatalog
    # admits no other database), never from which properties are visible: a secret ``uri``
    # is not in the spec's properties, and its driver is needed all the same
    keys += jars.CATALOG_NEEDS.get(str(props.get("type")), ())
    for location in (spec.get("location"), props.get("warehouse")):
        if isinstance(location, str) and location:
            keys += jars.STORAGE_NEEDS.get(_scheme(location) or "", ())
    return [jars.NEEDS[k] for k in dict.fromkeys(keys)]


def _spark_jars() -> list[Path]:
    try:
        return sorted((spark_home() / "jars").glob("*.jar"))
    except ImportError:  # no pyspark here: Spark's own jars are unknown
        return []


def missing(spec: Mapping[str, Any], settings: SparkSettings,
            spark_jars: Iterable[Path] | None = None) -> list[jars.JarNeed]:
    """The needs of ``spec`` that neither the configured jars, Spark's own jars, nor the
    configured packages satisfy (empty when a remote jar might)."""
    needs = needs_of(spec)
    if not needs:
        return []
    if any("://" in j for j in settings.jars):
        return []
    local = [Path(j) for j in settings.jars]
    local += list(spark_jars) if spark_jars is not None else _spark_jars()
    present: set[str] = set()
    for jar in local:
        present |= _probes_in(jar)
    packages = [p.rsplit(":", 1)[0] for p in settings.packages]
    return [need for need in needs
            if need.entry not in present
            and not any(pkg.startswith(prefix) for pkg in packages for prefix in need.packages)]


def jars_for(spec: Mapping[str, Any], configured: Iterable[str]) -> tuple[str, ...]:
    """The configured jars a one-shot ``spec`` needs: a local jar that carries only classes of
    needs this job lacks (the 192 MB AWS SDK bundle for a job on local disk, the REST client
    for a Hive catalog) is left out, since Spark copies every ``--jars`` entry to each
    executor. Jars that carry none of the table's classes (an operator's own), remote jars and
    specs of other jobs keep everything."""
    configured = tuple(configured)
    needs = needs_of(spec)
    if not needs:
        return configured
    wanted = {need.entry for need in needs}
    return tuple(j for j in configured
                 if "://" in j or not (held := _probes_in(Path(j))) or held & wanted)


def refusal(spec: Mapping[str, Any], settings: SparkSettings,
            spark_jars: Iterable[Path] | None = None) -> str | None:
    """The error for a job that cannot load its classes, naming each jar; None if it can."""
    absent = missing(spec, settings, spark_jars)
    if not absent:
        return None
    return "missing jar: " + "; ".join(need.describe() for need in absent)


def engine_refusal(job: JobSpec, engine: object) -> str | None:
    """:func:`refusal` for a job about to run on ``engine``: engines with Spark settings (the
    built-in cold and warm ones) are checked, others (third-party) are trusted."""
    settings = getattr(engine, "settings", None)
    if job.kind != "pyspark" or not isinstance(settings, SparkSettings):
        return None
    return refusal(job.spec, settings)
