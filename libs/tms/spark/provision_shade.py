"""Iceberg's shaded dependencies that the PyPI copy of its Spark runtime lacks, rebuilt here.

The official ``iceberg-spark-runtime`` jar carries relocated copies of Jackson
(``org.apache.iceberg.shaded.com.fasterxml.jackson``) and of Apache httpclient5
(``org.apache.iceberg.shaded.org.apache.hc``, used by the REST catalog's HTTP client); the copy
in the ``snowpark-connect-deps-iceberg`` wheel refers to both but contains neither. We relocate
pyspark's own Jackson jars, and Debian's ``libhttpclient5-java`` / ``libhttpcore5-java``, with
Debian's jarjar.

httpclient5: Iceberg 1.10 is built against 5.5, Debian has 5.2.1. Of the 99 httpclient5 methods
and fields Iceberg's classes refer to, one is missing in 5.2:
``PoolingHttpClientConnectionManagerBuilder.setTlsSocketStrategy(TlsSocketStrategy)`` (5.4), which
Iceberg's ``HTTPClient`` calls for every client it builds (without it: ``NoClassDefFoundError:
.../ssl/TlsSocketStrategy``). A two-class shim (``hc5_shim/*.java``, compiled with ``javac`` into
the jar) adds it: 5.2's builder is relocated under another name and wrapped by a builder of the
original name that maps the TLS strategy onto 5.2's ``SSLConnectionSocketFactory``.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

from tms.spark.provision_io import (
    DEBIAN_JAVA_DIR,
    ProvisionError,
    atomic_target,
    find_java,
    jars_dir,
    log,
    pyspark_jars_dir,
    relocate,
    require_entries,
    run_tool,
)

SHADED_JACKSON_JAR = "iceberg-shaded-jackson.jar"
JACKSON_ARTIFACTS = ("jackson-core", "jackson-databind", "jackson-annotations")
JACKSON_RULES = ["rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1"]
JACKSON_PROBE = "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class"

SHADED_HTTPCLIENT5_JAR = "iceberg-shaded-httpclient5.jar"
HTTPCLIENT5_VERSION = "5.2.1"  # the shim is written against this version's API
HTTPCLIENT5_JARS = ("httpclient5", "httpcore5", "httpcore5-h2")
HTTPCLIENT5_PACKAGES = "libhttpclient5-java libhttpcore5-java"
_SHADED_HC = "org.apache.iceberg.shaded.org.apache.hc"
_BUILDER = "client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder"
HTTPCLIENT5_RULES = [
    # 5.2's builder moves aside; the shim takes its name (first matching rule wins)
    f"rule org.apache.hc.{_BUILDER} {_SHADED_HC}.{_BUILDER}52",
    f"rule org.apache.hc.** {_SHADED_HC}.@1",
]
HTTPCLIENT5_PROBES = [
    f"{_SHADED_HC.replace('.', '/')}/{name}.class"
    for name in ("client5/http/impl/classic/HttpClients",
                 "client5/http/impl/io/PoolingHttpClientConnectionManagerBuilder",
                 "client5/http/impl/io/PoolingHttpClientConnectionManagerBuilder52",
                 "client5/http/ssl/TlsSocketStrategy",
                 "core5/http/HttpHost")]
SHIM_PACKAGE = "tms.spark"
SHIM_DIR = "hc5_shim"
JAVA_RELEASE = "8"  # Spark 3.5 runs on Java 8, 11 and 17


def _jackson_jars() -> list[Path]:
    """pyspark's own jackson-{core,databind,annotations} jars, exactly one of each."""
    directory = pyspark_jars_dir()
    found: list[Path] = []
    for artifact in JACKSON_ARTIFACTS:
        # The digit after the dash keeps e.g. jackson-core-asl-1.9.13.jar out.
        pattern = re.compile(rf"^{re.escape(artifact)}-\d[\w.\-]*\.jar$")
        matches = sorted(p for p in directory.glob("*.jar") if pattern.match(p.name))
        if len(matches) != 1:
            raise ProvisionError(
                f"expected one {artifact} jar in {directory}, found {[p.name for p in matches]}")
        found.extend(matches)
    return found


def ensure_shaded_jackson(home: Path) -> Path:
    """Build the relocated Jackson jar the wheel's Iceberg runtime is missing."""
    target = jars_dir(home) / SHADED_JACKSON_JAR
    if target.is_file():
        log.info("ok: %s", target)
        return target
    with atomic_target(target) as out:
        relocate(_jackson_jars(), JACKSON_RULES, out)
        require_entries(out, [JACKSON_PROBE], "relocation did not apply")
    log.info("built %s", target)
    return target


def _httpclient5_jars() -> list[Path]:
    """Debian's httpclient5 / httpcore5 / httpcore5-h2 jars of the version the shim fits."""
    paths = [DEBIAN_JAVA_DIR / f"{name}-{HTTPCLIENT5_VERSION}.jar" for name in HTTPCLIENT5_JARS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ProvisionError(f"{missing} not found under {DEBIAN_JAVA_DIR}: install the Debian "
                             f"packages {HTTPCLIENT5_PACKAGES} (version {HTTPCLIENT5_VERSION}); "
                             "Iceberg's REST catalog on Spark needs them")
    return [p.resolve() for p in paths]


def _slf4j_api() -> Path:
    found = sorted(pyspark_jars_dir().glob("slf4j-api-*.jar"))
    if not found:
        raise ProvisionError(f"no slf4j-api jar in {pyspark_jars_dir()}")
    return found[-1]


def _compile_shim(relocated: Path, out_dir: Path) -> None:
    shim = resources.files(SHIM_PACKAGE).joinpath(SHIM_DIR)
    sources = []
    for entry in shim.iterdir():
        if entry.name.endswith(".java"):
            copy = out_dir.parent / entry.name
            copy.write_text(entry.read_text())
            sources.append(str(copy))
    if not sources:
        raise ProvisionError(f"no shim sources in {SHIM_PACKAGE}/{SHIM_DIR}")
    javac = find_java("javac")
    run_tool([str(javac), "--release", JAVA_RELEASE, "-nowarn", "-Xlint:-options",
              "-cp", f"{relocated}:{_slf4j_api()}", "-d", str(out_dir), *sorted(sources)],
             "javac (httpclient5 shim)")


def _add_tree(jar: Path, root: Path) -> None:
    with zipfile.ZipFile(jar, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*.class")):
            zf.write(path, path.relative_to(root).as_posix())


def ensure_shaded_httpclient5(home: Path) -> Path:
    """Build the relocated httpclient5 jar (with the 5.4 shim) Iceberg's REST catalog needs."""
    target = jars_dir(home) / SHADED_HTTPCLIENT5_JAR
    if target.is_file():
        log.info("ok: %s", target)
        return target
    inputs = _httpclient5_jars()
    with tempfile.TemporaryDirectory(prefix="tms-hc5-shim-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        with atomic_target(target) as out:
            relocate(inputs, HTTPCLIENT5_RULES, out)
            _compile_shim(out, classes)
            _add_tree(out, classes)
            require_entries(out, HTTPCLIENT5_PROBES, "relocation or shim did not apply")
    log.info("built %s", target)
    return target
