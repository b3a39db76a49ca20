"""Build ``tms-reporter.jar``: TMS's Iceberg ``MetricsReporter`` for the engines that read
and write the tables TMS maintains (``tms/spark/reporter/*.java``; docs/reads.md).

Unlike the fence, this jar is not for TMS's own jobs: a platform puts it on its Spark (or
Flink, or Java) applications' class path and names it in a catalog's
``metrics-reporter-impl``, so that every scan and commit through that catalog reaches TMS's
report intake. It depends only on the JDK and on Iceberg's core classes, which every Iceberg
runtime jar carries, so it is compiled against the provisioned Iceberg runtime and holds no
third-party class of its own. The manifest records the sources' sha256: an unchanged source
is not rebuilt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tms.spark.provision_io import (
    ProvisionError,
    find_java,
    jar_stamp,
    jars_dir,
    java_sources,
    log,
    run_tool,
    sources_digest,
    write_stamped_jar,
)
from tms.spark.provision_shade import JAVA_RELEASE

REPORTER_JAR = "tms-reporter.jar"
REPORTER_CLASS = "tms.reporter.TmsMetricsReporter"
REPORTER_PACKAGE = "tms.spark"
REPORTER_DIR = "reporter"
_STAMP_KEY = "TMS-Reporter-Sources-SHA256"


def reporter_jar(home: Path) -> Path:
    return jars_dir(home) / REPORTER_JAR


def ensure_reporter_jar(home: Path, iceberg_runtime: Path) -> Path:
    """Build ``tms-reporter.jar`` against ``iceberg_runtime`` unless it exists from the same
    sources."""
    target = reporter_jar(home)
    sources = java_sources(REPORTER_PACKAGE, REPORTER_DIR)
    want = sources_digest(sources)
    if target.is_file() and jar_stamp(target, _STAMP_KEY) == want:
        log.info("ok: %s", target)
        return target
    if not iceberg_runtime.is_file():
        raise ProvisionError(f"cannot build {REPORTER_JAR}: {iceberg_runtime} is missing")
    with tempfile.TemporaryDirectory(prefix="tms-reporter-") as tmp:
        src, classes = Path(tmp) / "src", Path(tmp) / "classes"
        src.mkdir()
        classes.mkdir()
        for name, text in sources.items():
            (src / name).write_text(text)
        run_tool([str(find_java("javac")), "--release", JAVA_RELEASE, "-nowarn",
                  "-Xlint:-options", "-cp", str(iceberg_runtime), "-d", str(classes),
                  *sorted(str(p) for p in src.iterdir())], "javac (tms-reporter)")
        write_stamped_jar(target, list(classes.rglob("*.class")), classes, _STAMP_KEY, want,
                          [REPORTER_CLASS.replace(".", "/") + ".class"],
                          "the reporter classes did not compile")
    log.info("built %s", target)
    return target
