"""Put the jars Spark needs for Iceberg into ``$TMS_HOME/jars`` without Maven access.

Our machines cannot reach Maven Central, so the Iceberg Spark runtime comes from a PyPI wheel
(``snowpark-connect-deps-iceberg``) that happens to carry it. That copy lacks the shaded Jackson
classes the runtime refers to (``org.apache.iceberg.shaded.com.fasterxml.jackson``), so we build
them by relocating pyspark's own Jackson jars with Debian's jarjar. The PostgreSQL JDBC driver
(for Iceberg's JDBC catalog) comes from Debian's ``libpostgresql-jdbc-java``.

Run as ``python -m tms.spark.provision --home DIR``; it is idempotent and only does work for jars
that are missing. Every file is written under a temporary name and renamed into place, so an
interrupted run never leaves a half-written jar that a later run would mistake for a good one.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("tms.spark.provision")

ICEBERG_WHEEL_REQUIREMENT = "snowpark-connect-deps-iceberg==1.0.3"
ICEBERG_RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
# Pinned so that a different upload under the same wheel version cannot slip onto the classpath.
ICEBERG_RUNTIME_SHA256 = "5b30080c7bbbced0fb0900894b7ea0200b1bbb2e4c355ebe727baafaf49c16f6"
SHADED_JACKSON_JAR = "iceberg-shaded-jackson.jar"
JACKSON_ARTIFACTS = ("jackson-core", "jackson-databind", "jackson-annotations")
JARJAR_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1"

DEBIAN_JAVA_DIR = Path("/usr/share/java")
POSTGRES_JDBC_JAR = DEBIAN_JAVA_DIR / "postgresql.jar"

PIP_DOWNLOAD_TIMEOUT_S = 900
JARJAR_TIMEOUT_S = 300
HASH_CHUNK_BYTES = 1 << 20
JAR_FILE_MODE = 0o644


class ProvisionError(RuntimeError):
    """A prerequisite is missing or a provisioning step failed; the message says what to do."""


def jars_dir(home: Path) -> Path:
    return home / "jars"


def default_jars(home: Path) -> list[str]:
    """The local jars spark-submit needs for Iceberg (runtime, shaded Jackson, JDBC driver).

    Only jars that exist are returned, so callers on machines that fetch Iceberg through
    ``spark.jars.packages`` instead still get the JDBC driver.
    """
    candidates = [
        jars_dir(home) / ICEBERG_RUNTIME_JAR,
        jars_dir(home) / SHADED_JACKSON_JAR,
        POSTGRES_JDBC_JAR,
    ]
    return [str(p) for p in candidates if p.is_file()]


@contextmanager
def _atomic_target(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        tmp.chmod(JAR_FILE_MODE)  # mkstemp creates 0600; Spark may run as another user
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _download_wheel(dest: Path) -> Path:
    """``pip download`` the wheel with this interpreter's pip (honours the machine's pip config)."""
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "-d", str(dest), ICEBERG_WHEEL_REQUIREMENT]
    log.info("downloading %s", ICEBERG_WHEEL_REQUIREMENT)
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise ProvisionError(f"pip download of {ICEBERG_WHEEL_REQUIREMENT} timed out") from e
    if res.returncode != 0:
        raise ProvisionError(
            f"pip download of {ICEBERG_WHEEL_REQUIREMENT} failed (rc={res.returncode}); check the "
            f"package index configuration:\n{res.stderr[-2000:]}"
        )
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ProvisionError(f"pip download of {ICEBERG_WHEEL_REQUIREMENT} produced no wheel")
    return wheels[0]


def ensure_iceberg_runtime(home: Path) -> Path:
    """Extract the Iceberg Spark runtime jar from its PyPI wheel unless it is already there."""
    target = jars_dir(home) / ICEBERG_RUNTIME_JAR
    if target.is_file():
        log.info("ok: %s", target)
        return target
    with tempfile.TemporaryDirectory(prefix="tms-iceberg-wheel-") as tmp:
        wheel = _download_wheel(Path(tmp))
        with zipfile.ZipFile(wheel) as zf:
            members = [n for n in zf.namelist() if n.rsplit("/", 1)[-1] == ICEBERG_RUNTIME_JAR]
            if not members:
                raise ProvisionError(f"{wheel.name} does not contain {ICEBERG_RUNTIME_JAR}")
            with _atomic_target(target) as out:
                with zf.open(members[0]) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                actual = _sha256(out)
                if actual != ICEBERG_RUNTIME_SHA256:
                    raise ProvisionError(
                        f"{ICEBERG_RUNTIME_JAR} from {wheel.name} has sha256 {actual}, "
                        f"expected {ICEBERG_RUNTIME_SHA256}"
                    )
    log.info("extracted %s", target)
    return target


def pyspark_jars_dir() -> Path:
    try:
        import pyspark
    except ImportError as e:
        raise ProvisionError("pyspark is not installed in this interpreter") from e
    return Path(pyspark.__file__).parent / "jars"


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
                f"expected one {artifact} jar in {directory}, found {[p.name for p in matches]}"
            )
        found.extend(matches)
    return found


def _find_jarjar() -> Path:
    preferred = DEBIAN_JAVA_DIR / "jarjar.jar"
    if preferred.is_file():
        return preferred
    others = sorted(DEBIAN_JAVA_DIR.glob("jarjar*.jar"))
    if others:
        return others[-1]
    raise ProvisionError(
        f"jarjar not found under {DEBIAN_JAVA_DIR}; install the Debian package libjarjar-java"
    )


def find_java() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return Path(java_home) / "bin" / "java"
    on_path = shutil.which("java")
    if on_path:
        return Path(on_path)
    raise ProvisionError("java not found; install openjdk-17-jre-headless or set JAVA_HOME")


def _merge_jars(inputs: list[Path], out: Path) -> None:
    """Merge class files and licences into one jar, which is the single input jarjar accepts.

    Dropped on purpose: module descriptors and multi-release ``META-INF/versions`` copies (jarjar
    would relocate the latter onto the base classes' paths), manifests, Maven metadata, and
    service registrations (they name unrelocated classes).
    """
    seen: set[str] = set()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for jar in inputs:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if info.is_dir() or name in seen or name.endswith("module-info.class"):
                        continue
                    if name.startswith("META-INF/") and not re.match(
                        r"^META-INF/[^/]*(LICENSE|NOTICE)[^/]*$", name
                    ):
                        continue
                    seen.add(name)
                    dst.writestr(info, src.read(name))


def ensure_shaded_jackson(home: Path) -> Path:
    """Build the relocated Jackson jar the wheel's Iceberg runtime is missing."""
    target = jars_dir(home) / SHADED_JACKSON_JAR
    if target.is_file():
        log.info("ok: %s", target)
        return target
    jackson = _jackson_jars()
    jarjar = _find_jarjar()
    java = find_java()
    with tempfile.TemporaryDirectory(prefix="tms-jarjar-") as tmp:
        merged = Path(tmp) / "jackson-merged.jar"
        rules = Path(tmp) / "rules.txt"
        _merge_jars(jackson, merged)
        rules.write_text(JARJAR_RULE + "\n")
        with _atomic_target(target) as out:
            argv = [str(java), "-jar", str(jarjar), "process", str(rules), str(merged), str(out)]
            log.info("relocating %s with %s", ", ".join(p.name for p in jackson), jarjar.name)
            try:
                res = subprocess.run(argv, capture_output=True, text=True, timeout=JARJAR_TIMEOUT_S)
            except subprocess.TimeoutExpired as e:
                raise ProvisionError("jarjar timed out") from e
            if res.returncode != 0:
                raise ProvisionError(f"jarjar failed (rc={res.returncode}): {res.stderr[-2000:]}")
            _check_relocated(out)
    log.info("built %s", target)
    return target


def _check_relocated(jar: Path) -> None:
    probe = "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class"
    with zipfile.ZipFile(jar) as zf:
        if probe not in zf.namelist():
            raise ProvisionError(f"jarjar output lacks {probe}; relocation did not apply")


def provision(home: Path) -> list[str]:
    """Make sure every jar in :func:`default_jars` exists; return the list."""
    ensure_iceberg_runtime(home)
    ensure_shaded_jackson(home)
    if not POSTGRES_JDBC_JAR.is_file():
        log.warning(
            "%s missing: Iceberg JDBC catalogs will not work; install libpostgresql-jdbc-java",
            POSTGRES_JDBC_JAR,
        )
    return default_jars(home)


def main(argv: list[str] | None = None) -> int:
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
