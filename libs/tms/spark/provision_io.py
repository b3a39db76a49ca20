"""The provisioner's building blocks: pinned jars, atomic writes, pip downloads, jarjar.

Kept apart from the jar-specific modules (``provision``, ``provision_aws``,
``provision_shade``) so each stays small. Everything here raises :class:`ProvisionError` with a
message that names what is missing and how to get it.
"""

from __future__ import annotations

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
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

log = logging.getLogger("tms.spark.provision")

DEBIAN_JAVA_DIR = Path("/usr/share/java")
PIP_DOWNLOAD_TIMEOUT_S = 900
JAVA_TOOL_TIMEOUT_S = 300
HASH_CHUNK_BYTES = 1 << 20
JAR_FILE_MODE = 0o644


class ProvisionError(RuntimeError):
    """A prerequisite is missing or a provisioning step failed; the message says what to do."""


@dataclass(frozen=True)
class PinnedFile:
    """A file whose exact bytes we expect: a different upload under the same version (or a
    truncated download) must never reach the classpath."""

    name: str
    size: int
    sha256: str

    def problem(self, path: Path) -> str | None:
        """Why ``path`` is not this file, or None when it is (size first: cheap)."""
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != self.size:
            return f"{path} has {size} bytes, expected {self.size}"
        actual = sha256_of(path)
        if actual != self.sha256:
            return f"{path} has sha256 {actual}, expected {self.sha256}"
        return None

    def verify(self, path: Path, source: str) -> None:
        problem = self.problem(path)
        if problem is not None:
            raise ProvisionError(f"{self.name} from {source}: {problem}")


def jars_dir(home: Path) -> Path:
    return home / "jars"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success, so an
    interrupted run never leaves a half-written jar a later run would take for a good one."""
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


def pip_download(requirement: str, dest: Path, *, sdist: bool) -> Path:
    """``pip download`` one distribution with this interpreter's pip (honours the machine's
    pip configuration); the wheel, or with ``sdist`` the source archive."""
    binary = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", *binary, "-d", str(dest),
            requirement]
    log.info("downloading %s", requirement)
    run_tool(argv, f"pip download of {requirement}", PIP_DOWNLOAD_TIMEOUT_S,
             "check the package index configuration")
    found = sorted(p for p in dest.iterdir() if p.name.endswith((".whl", ".tar.gz", ".zip")))
    if not found:
        raise ProvisionError(f"pip download of {requirement} produced no file")
    return found[0]


def pyspark_jars_dir() -> Path:
    try:
        import pyspark
    except ImportError as e:
        raise ProvisionError("pyspark is not installed in this interpreter") from e
    return Path(pyspark.__file__).parent / "jars"


def find_java(tool: str = "java") -> Path:
    """``$JAVA_HOME/bin/TOOL`` if set, else ``TOOL`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / tool).is_file():
        return Path(java_home) / "bin" / tool
    on_path = shutil.which(tool)
    if on_path:
        return Path(on_path)
    package = "openjdk-17-jdk-headless" if tool != "java" else "openjdk-17-jre-headless"
    raise ProvisionError(f"{tool} not found; install {package} or set JAVA_HOME")


def find_jarjar() -> Path:
    preferred = DEBIAN_JAVA_DIR / "jarjar.jar"
    if preferred.is_file():
        return preferred
    others = sorted(DEBIAN_JAVA_DIR.glob("jarjar*.jar"))
    if others:
        return others[-1]
    raise ProvisionError(
        f"jarjar not found under {DEBIAN_JAVA_DIR}; install the Debian package libjarjar-java")


def run_tool(argv: list[str], what: str, timeout_s: float = JAVA_TOOL_TIMEOUT_S,
             hint: str = "") -> None:
    """Run a provisioning tool (pip, javac, jarjar); ProvisionError with its stderr tail."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise ProvisionError(f"{what} timed out") from e
    if res.returncode != 0:
        advice = f"; {hint}" if hint else ""
        raise ProvisionError(f"{what} failed (rc={res.returncode}){advice}:\n"
                             f"{res.stderr[-2000:]}")


def merge_jars(inputs: list[Path], out: Path) -> None:
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


def relocate(inputs: list[Path], rules: list[str], out: Path) -> None:
    """Merge ``inputs`` and rewrite their packages with Debian's jarjar into ``out``."""
    jarjar, java = find_jarjar(), find_java()
    with tempfile.TemporaryDirectory(prefix="tms-jarjar-") as tmp:
        merged, rules_file = Path(tmp) / "merged.jar", Path(tmp) / "rules.txt"
        merge_jars(inputs, merged)
        rules_file.write_text("".join(r + "\n" for r in rules))
        log.info("relocating %s with %s", ", ".join(p.name for p in inputs), jarjar.name)
        run_tool([str(java), "-jar", str(jarjar), "process", str(rules_file), str(merged),
                  str(out)], "jarjar")


def require_entries(jar: Path, entries: list[str], why: str) -> None:
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
    missing = [e for e in entries if e not in names]
    if missing:
        raise ProvisionError(f"{jar.name} lacks {missing}: {why}")


def java_sources(package: str, directory: str) -> dict[str, str]:
    """The ``*.java`` files shipped in ``package``/``directory``, by file name."""
    tree = resources.files(package).joinpath(directory)
    out = {e.name: e.read_text() for e in tree.iterdir() if e.name.endswith(".java")}
    if not out:
        raise ProvisionError(f"no Java sources in {package}/{directory}")
    return out


def sources_digest(sources: dict[str, str]) -> str:
    """One sha256 over the sources' names and texts: the stamp a built jar records."""
    digest = hashlib.sha256()
    for name, text in sorted(sources.items()):
        digest.update(name.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


def jar_stamp(jar: Path, key: str) -> str | None:
    """The value of ``key`` in a jar's manifest (None when the jar or the key is missing)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            manifest = zf.read("META-INF/MANIFEST.MF").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for line in manifest.splitlines():
        if line.startswith(key + ": "):
            return line.split(": ", 1)[1].strip()
    return None


def write_stamped_jar(target: Path, classes: list[Path], root: Path, key: str, stamp: str,
                      probes: list[str], why: str) -> None:
    """Write ``classes`` (paths under ``root``) into ``target`` atomically, recording
    ``key: stamp`` in the manifest; refuse the jar when a ``probes`` entry is missing."""
    with atomic_target(target) as out:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\n{key}: {stamp}\n")
            for path in sorted(classes):
                zf.write(path, path.relative_to(root).as_posix())
        require_entries(out, probes, why)
