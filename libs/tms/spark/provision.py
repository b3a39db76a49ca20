"""Put the jars Spark needs into ``$TMS_HOME/jars`` without Maven access.

Our machines cannot reach Maven Central, so every jar comes from PyPI or Debian:

- the Iceberg Spark runtime from a PyPI wheel (``snowpark-connect-deps-iceberg``) that carries it;
- what that copy of the runtime lacks, relocated with Debian's jarjar: Jackson (from pyspark) and
  httpclient5 for the REST catalog (from Debian, with a small shim: ``provision_shade``);
- S3A (``hadoop-aws`` + the AWS SDK bundle) from a PyPI sdist (``provision_aws``);
- the PostgreSQL JDBC driver (Iceberg's JDBC catalog) from Debian's ``libpostgresql-jdbc-java``;
- TMS's own fenced Hadoop file systems, compiled here (``provision_fence``).

Downloaded jars are pinned by size and sha256. Run as ``python -m tms.spark.provision --home
DIR``; it is idempotent and only does work for jars that are missing or not the pinned bytes.
Every file is written under a temporary name and renamed into place, so an interrupted run never
leaves a half-written jar that a later run would mistake for a good one. Which jar each catalog
type and storage needs, and the production Maven coordinates: ``tms.spark.jar_table`` and
docs/reach.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from tms.spark.provision_aws import AWS_SDK_BUNDLE, HADOOP_AWS, ensure_s3a_jars
from tms.spark.provision_fence import FENCE_JAR, FENCE_S3A_JAR, ensure_fence_jar
from tms.spark.provision_io import (
    DEBIAN_JAVA_DIR,
    PinnedFile,
    ProvisionError,
    atomic_target,
    find_java,
    jars_dir,
    log,
    pip_download,
    pyspark_jars_dir,
)
from tms.spark.provision_reporter import ensure_reporter_jar
from tms.spark.provision_shade import (
    SHADED_HTTPCLIENT5_JAR,
    SHADED_JACKSON_JAR,
    ensure_shaded_httpclient5,
    ensure_shaded_jackson,
)

__all__ = ["AWS_SDK_BUNDLE", "FENCE_JAR", "HADOOP_AWS", "ICEBERG_RUNTIME_JAR", "POSTGRES_JDBC_JAR",
           "SHADED_HTTPCLIENT5_JAR", "SHADED_JACKSON_JAR", "ProvisionError", "default_jars",
           "find_java", "jars_dir", "provision", "pyspark_jars_dir"]

ICEBERG_WHEEL_REQUIREMENT = "snowpark-connect-deps-iceberg==1.0.3"
ICEBERG_RUNTIME = PinnedFile("iceberg-spark-runtime-3.5_2.12-1.10.2.jar", 42_051_536,
                             "5b30080c7bbbced0fb0900894b7ea0200b1bbb2e4c355ebe727baafaf49c16f6")
ICEBERG_RUNTIME_JAR = ICEBERG_RUNTIME.name
ICEBERG_RUNTIME_SHA256 = ICEBERG_RUNTIME.sha256
POSTGRES_JDBC_JAR = DEBIAN_JAVA_DIR / "postgresql.jar"

# In classpath order: the runtime first, then what it lacks, then S3A.
PROVISIONED_JARS = (ICEBERG_RUNTIME_JAR, SHADED_JACKSON_JAR, SHADED_HTTPCLIENT5_JAR,
                    HADOOP_AWS.name, AWS_SDK_BUNDLE.name, FENCE_JAR, FENCE_S3A_JAR)


def default_jars(home: Path) -> list[str]:
    """The local jars spark-submit gets by default: everything provisioned, and the JDBC driver.

    Only jars that exist are returned, so callers on machines that fetch Iceberg through
    ``spark.jars.packages`` instead still get the JDBC driver; a catalog or storage whose jar is
    absent is refused before spark-submit, naming the jar (``tms.spark.jar_check``).
    """
    candidates = [jars_dir(home) / name for name in PROVISIONED_JARS] + [POSTGRES_JDBC_JAR]
    return [str(p) for p in candidates if p.is_file()]


def ensure_iceberg_runtime(home: Path) -> Path:
    """Extract the Iceberg Spark runtime jar from its PyPI wheel unless it is already there."""
    target = jars_dir(home) / ICEBERG_RUNTIME_JAR
    if ICEBERG_RUNTIME.problem(target) is None:
        log.info("ok: %s", target)
        return target
    with tempfile.TemporaryDirectory(prefix="tms-iceberg-wheel-") as tmp:
        wheel = pip_download(ICEBERG_WHEEL_REQUIREMENT, Path(tmp), sdist=False)
        with zipfile.ZipFile(wheel) as zf:
            members = [n for n in zf.namelist() if n.rsplit("/", 1)[-1] == ICEBERG_RUNTIME_JAR]
            if not members:
                raise ProvisionError(f"{wheel.name} does not contain {ICEBERG_RUNTIME_JAR}")
            with atomic_target(target) as out:
                with zf.open(members[0]) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                ICEBERG_RUNTIME.verify(out, wheel.name)
    log.info("extracted %s", target)
    return target


def provision(home: Path) -> list[str]:
    """Make sure every jar in :func:`default_jars` exists; return the list."""
    runtime = ensure_iceberg_runtime(home)
    ensure_shaded_jackson(home)
    ensure_shaded_httpclient5(home)
    ensure_s3a_jars(home)
    ensure_fence_jar(home)
    ensure_reporter_jar(home, runtime)  # for the engines that read the tables, not TMS's jobs
    if not POSTGRES_JDBC_JAR.is_file():
        log.warning(
            "%s missing: Iceberg JDBC catalogs will not work; install libpostgresql-jdbc-java",
            POSTGRES_JDBC_JAR,
        )
    return default_jars(home)


def main(argv: list[str] | None = None) -> int:
    import logging

    parser = argparse.ArgumentParser(prog="python -m tms.spark.provision", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=os.environ.get("TMS_HOME"),
                        help="TMS home directory; jars go to HOME/jars (default: $TMS_HOME)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[setup] %(message)s", stream=sys.stderr)
    if args.home is None:
        parser.error("--home is required when TMS_HOME is not set")
    try:
        provision(Path(args.home).resolve())
    except ProvisionError as e:
        log.error("error: %s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
