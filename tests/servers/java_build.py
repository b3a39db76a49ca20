"""Compile and run the small Java launchers under ``tests/servers/java`` (test servers built
from the Hive and Iceberg jars the project already has: no server binary is downloaded).

Classes are compiled with ``javac`` once per source and classpath (cached under the system's
temp directory by content hash), so a second server start costs no compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tms.engines.children import kill_group
from tms.spark.provision import find_java, pyspark_jars_dir

JAVA_SOURCES = Path(__file__).resolve().parent / "java"
JAVAC_TIMEOUT_S = 180
JAVA_POLL_S = 0.25
CLASS_CACHE = Path(tempfile.gettempdir()) / "tms-test-java"
# The S3A pair another step provisions into $TMS_HOME/jars (Hadoop 3.3.1's own pairing, from
# the sagemaker-pyspark sdist): servers that touch s3:// paths need them on their classpath.
S3A_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")


class JavaUnavailable(RuntimeError):
    """No javac (the JDK is missing) or a jar a server needs is not there."""


def find_javac() -> Path:
    java = find_java()
    javac = java.with_name("javac")
    if javac.is_file():
        return javac
    found = shutil.which("javac")
    if found:
        return Path(found)
    raise JavaUnavailable("javac not found: install openjdk-17-jdk-headless")


def s3a_jars(jars_dir: Path) -> list[Path]:
    """The S3A jars when both are provisioned, else an empty list."""
    paths = [jars_dir.resolve() / name for name in S3A_JARS]
    return paths if all(p.is_file() for p in paths) else []


def pyspark_classpath() -> str:
    return str(pyspark_jars_dir() / "*")


def compile_sources(names: Sequence[str], classpath: Sequence[str]) -> Path:
    """The directory of the compiled classes of ``java/<name>`` for each name."""
    sources = [JAVA_SOURCES / n for n in names]
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    digest.update(os.pathsep.join(classpath).encode())
    out = CLASS_CACHE / digest.hexdigest()[:24]
    if out.is_dir():
        return out
    CLASS_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=CLASS_CACHE))
    done = subprocess.run([str(find_javac()), "-nowarn", "-d", str(tmp), "-cp",
                           os.pathsep.join(classpath), *map(str, sources)],
                          capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False)
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{done.stderr[-4000:]}")
    try:
        tmp.rename(out)
    except OSError:  # another process compiled the same sources meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return out


@contextmanager
def java_process(main: str, args: Sequence[str], classpath: Sequence[str], log_path: Path,
                 jvm_options: Sequence[str] = (), cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """``java -cp CLASSPATH MAIN ARGS`` in its own session, output to ``log_path``; its
    whole process group is stopped on exit."""
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [str(find_java()), *jvm_options, "-cp", os.pathsep.join(classpath), main, *args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
            env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            kill_group(proc)


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], log_path: Path,
               what: str, timeout_s: float, port: int | None = None) -> float:
    """Poll ``ready`` until true (once ``port`` accepts connections, when given); seconds
    taken. Fails at once if the process died."""
    start = time.monotonic()
    last: Exception | None = None
    while time.monotonic() - start < timeout_s:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{what} exited early ({proc.returncode}); log tail:\n{tail}")
        try:
            if (port is None or port_open(port)) and ready():
                return time.monotonic() - start
        except Exception as e:  # not up yet
            last = e
        time.sleep(JAVA_POLL_S)
    raise RuntimeError(f"{what} not ready within {timeout_s:.0f} s (last error: {last!r}); "
                       f"see {log_path}")
