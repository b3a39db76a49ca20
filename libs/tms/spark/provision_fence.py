"""Build TMS's own Hadoop file systems from the sources shipped with the package
(``tms/spark/fence/*.java``): the local file system, S3A, and a filter for every other store
(HDFS, GCS, Azure, OSS) with deletes, renames and writes held to the table a job works on
(``tms.jobs.fence`` arms them; docs/security.md).

Two jars, because of class loaders: spark-submit opens ``file:`` paths through Hadoop before
``--jars`` are loaded, so the fence and the local file system (``tms-fence.jar``) go on the
JVMs' own class path; the S3A one (``tms-fence-s3a.jar``) must be loaded beside hadoop-aws,
which comes with ``--jars`` (or Maven packages), where the system class loader cannot see it.

Built with the JDK's ``javac`` against pyspark's Hadoop client API and the provisioned S3A
jars. The jar records the sources' sha256 in its manifest, so a changed source is rebuilt and
an unchanged one is left alone.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

from tms.spark.provision_aws import AWS_SDK_BUNDLE, HADOOP_AWS
from tms.spark.provision_io import (
    ProvisionError,
    find_java,
    jar_stamp,
    jars_dir,
    java_sources,
    log,
    pyspark_jars_dir,
    run_tool,
    sources_digest,
    write_stamped_jar,
)
from tms.spark.provision_shade import JAVA_RELEASE

FENCE_JAR = "tms-fence.jar"
FENCE_S3A_JAR = "tms-fence-s3a.jar"
FENCE_PACKAGE = "tms.spark"
FENCE_DIR = "fence"
LOCAL_FS_CLASS = "tms.fence.FencedLocalFileSystem"
S3A_FS_CLASS = "tms.fence.FencedS3AFileSystem"
FENCE_CLASS = "tms.fence.Fence"
_STAMP_KEY = "TMS-Fence-Sources-SHA256"
_S3A_SOURCE = "FencedS3AFileSystem.java"


def _entry(class_name: str) -> str:
    return class_name.replace(".", "/") + ".class"


def _sources() -> dict[str, str]:
    return java_sources(FENCE_PACKAGE, FENCE_DIR)


def sources_sha256() -> str:
    return sources_digest(_sources())


def _classpath(home: Path) -> str:
    hadoop = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    s3a = [jars_dir(home) / HADOOP_AWS.name, jars_dir(home) / AWS_SDK_BUNDLE.name]
    missing = [str(p) for p in s3a if not p.is_file()]
    if not hadoop or missing:
        raise ProvisionError(f"cannot build {FENCE_JAR}: missing Hadoop client API in "
                             f"{pyspark_jars_dir()} or {missing}")
    return ":".join(str(p) for p in [hadoop[-1], *s3a])


def _write_jar(target: Path, classes: list[Path], root: Path, stamp: str,
               probes: list[str]) -> None:
    write_stamped_jar(target, classes, root, _STAMP_KEY, stamp, probes,
                      "the fence classes did not compile")


def ensure_fence_jar(home: Path) -> list[Path]:
    """Build ``tms-fence.jar`` and ``tms-fence-s3a.jar`` unless both exist from the same
    sources."""
    targets = [jars_dir(home) / FENCE_JAR, jars_dir(home) / FENCE_S3A_JAR]
    want = sources_sha256()
    if all(t.is_file() and jar_stamp(t, _STAMP_KEY) == want for t in targets):
        for t in targets:
            log.info("ok: %s", t)
        return targets
    with tempfile.TemporaryDirectory(prefix="tms-fence-") as tmp:
        src, classes = Path(tmp) / "src", Path(tmp) / "classes"
        src.mkdir()
        classes.mkdir()
        for name, text in _sources().items():
            (src / name).write_text(text)
        run_tool([str(find_java("javac")), "--release", JAVA_RELEASE, "-nowarn",
                  "-Xlint:-options", "-cp", _classpath(home), "-d", str(classes),
                  *sorted(str(p) for p in src.iterdir())], "javac (tms-fence)")
        s3a = classes / _entry(S3A_FS_CLASS)
        local = [p for p in classes.rglob("*.class") if p != s3a]
        _write_jar(targets[0], local, classes, want,
                   [_entry(FENCE_CLASS), _entry(LOCAL_FS_CLASS), _entry(FILTER_FS_CLASS)])
        _write_jar(targets[1], [s3a], classes, want, [_entry(S3A_FS_CLASS)])
    for t in targets:
        log.info("built %s", t)
    return targets

S3A_PLAIN_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"
FILTER_FS_CLASS = "tms.fence.FencedFilterFileSystem"
# the class the filter wraps for a scheme: FencedFilterFileSystem.INNER_PREFIX in Hadoop's conf
INNER_CONF = "spark.hadoop.tms.fence.inner.{}.impl"
# Every other store TMS's locations accept, and the connector class Hadoop would use for it;
# an operator's own ``spark.hadoop.fs.<scheme>.impl`` becomes the wrapped class instead
# (``operator_key``). viewfs is left alone: its mount points resolve to other file systems
# whose paths its roots do not name, so a viewfs table's job is refused as unfenced.
WRAPPED_FILE_SYSTEMS = {
    "hdfs": "org.apache.hadoop.hdfs.DistributedFileSystem",
    "gs": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "abfs": "org.apache.hadoop.fs.azurebfs.AzureBlobFileSystem",
    "abfss": "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem",
    "wasbs": "org.apache.hadoop.fs.azure.NativeAzureFileSystem$Secure",
    "oss": "org.apache.hadoop.fs.aliyun.oss.AliyunOSSFileSystem",
}
REQUIRED_CONF = "spark.tms.fence.required"  # read by tms.jobs.fence
# the roots of a JVM nobody arms (Hudi's utilities): Fence.ROOTS_KEY in the Hadoop conf
FENCE_ROOTS_CONF = "spark.hadoop.tms.fence.roots"


CLASS_PATH_KEYS = ("spark.driver.extraClassPath", "spark.executor.extraClassPath")


def storage_conf(jars: Iterable[str]) -> dict[str, str]:
    """The Spark conf naming the file systems a job uses: the fenced ones, and the fence
    required, when ``tms-fence.jar`` is among ``jars`` (S3A fenced when ``tms-fence-s3a.jar``
    is too); ``s3://`` served by S3A either way. ``tms-fence.jar`` also goes on the JVMs' own
    class path (see above)."""
    jars = list(jars)
    fence = [j for j in jars if Path(j).name == FENCE_JAR and "://" not in j]
    if not fence:
        return {"spark.hadoop.fs.s3.impl": S3A_PLAIN_CLASS}
    s3a = S3A_FS_CLASS if any(Path(j).name == FENCE_S3A_JAR for j in jars) else S3A_PLAIN_CLASS
    wrapped = {}
    for scheme, inner in WRAPPED_FILE_SYSTEMS.items():
        wrapped[f"spark.hadoop.fs.{scheme}.impl"] = FILTER_FS_CLASS
        wrapped[INNER_CONF.format(scheme)] = inner
    return {"spark.hadoop.fs.file.impl": LOCAL_FS_CLASS,
            "spark.hadoop.fs.s3a.impl": s3a,
            "spark.hadoop.fs.s3.impl": s3a,
            **wrapped,
            REQUIRED_CONF: "true",
            **{key: fence[0] for key in CLASS_PATH_KEYS}}


def operator_key(key: str, value: str, conf: dict[str, str]) -> str:
    """Where an operator's conf entry goes: ``spark.hadoop.fs.<scheme>.impl`` for a store the
    fence wraps (``conf`` already maps it to the filter) names the class to wrap, so a
    connector of the operator's choice is used and stays fenced; any other key is kept."""
    scheme = key.removeprefix("spark.hadoop.fs.").removesuffix(".impl")
    if (key.startswith("spark.hadoop.fs.") and key.endswith(".impl")
            and conf.get(key) == FILTER_FS_CLASS and value != FILTER_FS_CLASS
            and scheme in WRAPPED_FILE_SYSTEMS):
        return INNER_CONF.format(scheme)
    return key
