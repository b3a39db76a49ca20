"""S3A for the local tiers: ``hadoop-aws`` and the AWS SDK bundle, from a PyPI sdist.

Spark reaches S3 through Hadoop's S3A file system (``org.apache.hadoop.fs.s3a.S3AFileSystem``,
in ``hadoop-aws``), which needs the AWS SDK v1 (``aws-java-sdk-bundle``). Neither is in pyspark
nor in Debian, and Maven Central is out of reach here, but the PyPI sdist of
``sagemaker-pyspark`` 1.4.5 carries ``hadoop-aws-3.3.1.jar`` with the SDK bundle Hadoop 3.3.1 was
built with (1.11.901). hadoop-aws 3.3.1 runs on pyspark 3.5's Hadoop 3.3.4 client (checked: a
Spark job writes and reads ``s3a://`` and ``s3://`` paths on a moto server). Production uses the
matching official coordinates instead (``org.apache.hadoop:hadoop-aws:3.3.4`` with
``com.amazonaws:aws-java-sdk-bundle:1.12.262``; docs/reach.md).

The 181 MB sdist is downloaded to a temporary directory, the two jars are streamed out and
checked (size and sha256), and the sdist is deleted.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

from tms.spark.provision_io import (
    PinnedFile,
    ProvisionError,
    atomic_target,
    jars_dir,
    log,
    pip_download,
)

SAGEMAKER_SDIST_REQUIREMENT = "sagemaker-pyspark==1.4.5"
SAGEMAKER_SDIST = PinnedFile("sagemaker_pyspark-1.4.5.tar.gz", 181_499_812,
                             "05ca2d5081d7138ce29a8fb0a9cba077f28c825288ed07aed46a82e63c0bf1fb")
SDIST_JARS_DIR = "deps/jars/"
HADOOP_AWS = PinnedFile("hadoop-aws-3.3.1.jar", 870_644,
                        "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e")
AWS_SDK_BUNDLE = PinnedFile("aws-java-sdk-bundle-1.11.901.jar", 192_321_266,
                            "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead")
S3A_JARS = (HADOOP_AWS, AWS_SDK_BUNDLE)


def s3a_jar_paths(home: Path) -> list[Path]:
    return [jars_dir(home) / jar.name for jar in S3A_JARS]


def _extract(sdist: Path, wanted: list[PinnedFile], home: Path) -> None:
    """Stream each wanted jar out of the sdist into place, checked before it is renamed in."""
    by_name = {jar.name: jar for jar in wanted}
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            # <project>-<version>/deps/jars/<name>.jar, a regular file (no links, no ..)
            if (not member.isfile() or len(parts) != 4
                    or "/".join(parts[1:3]) + "/" != SDIST_JARS_DIR or parts[3] not in by_name):
                continue
            jar = by_name.pop(parts[3])
            src = tar.extractfile(member)
            if src is None:
                raise ProvisionError(f"{sdist.name}: cannot read {member.name}")
            with atomic_target(jars_dir(home) / jar.name) as out:
                with src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                jar.verify(out, sdist.name)
            log.info("extracted %s", jars_dir(home) / jar.name)
    if by_name:
        raise ProvisionError(f"{sdist.name} does not contain {sorted(by_name)} under "
                             f"{SDIST_JARS_DIR}")


def ensure_s3a_jars(home: Path) -> list[Path]:
    """Put hadoop-aws and the AWS SDK bundle into ``home/jars`` unless already there intact."""
    wanted = []
    for jar in S3A_JARS:
        path = jars_dir(home) / jar.name
        problem = jar.problem(path)
        if problem is None:
            log.info("ok: %s", path)
        else:
            if path.exists():
                log.warning("replacing %s: %s", path, problem)
            wanted.append(jar)
    if wanted:
        with tempfile.TemporaryDirectory(prefix="tms-s3a-sdist-") as tmp:
            sdist = pip_download(SAGEMAKER_SDIST_REQUIREMENT, Path(tmp), sdist=True)
            SAGEMAKER_SDIST.verify(sdist, f"pip download {SAGEMAKER_SDIST_REQUIREMENT}")
            _extract(sdist, wanted, home)
    return s3a_jar_paths(home)
