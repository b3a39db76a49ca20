"""What each catalog type and storage needs on Spark's classpath: one class per need, the jar
that carries it, and how to provide it (the local tiers' jar from ``scripts/setup``, the Maven
coordinates production gives ``TMS_SPARK_PACKAGES`` or bakes into its image).

Used twice: before spark-submit, to refuse at once a job whose jar is not configured
(``tms.spark.jar_check``), and after a failure, to name the jar behind a
``ClassNotFoundException`` / ``NoClassDefFoundError`` (``tms.failures``). docs/reach.md has the
same table for people.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ICEBERG_VERSION = "1.10.0"
SPARK_VERSION = "3.5.5"
ICEBERG_RUNTIME_COORDINATE = f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}"


@dataclass(frozen=True)
class JarNeed:
    """One class Spark must load for a catalog type or storage, and where it comes from.

    ``packages`` are ``group:artifact`` prefixes any of which, in ``TMS_SPARK_PACKAGES``,
    brings the class (Maven resolves transitive dependencies: hadoop-aws brings the SDK
    bundle)."""

    key: str
    what: str  # who needs it, for the message
    class_name: str
    jar: str  # the jar's name, for the message
    local: str  # how the local tiers get it
    coordinates: tuple[str, ...]  # production: what to add to TMS_SPARK_PACKAGES
    packages: tuple[str, ...]
    prefixes: tuple[str, ...] = ()  # packages of the jar: a missing class there names it

    @property
    def entry(self) -> str:
        """The class's path inside a jar."""
        return self.class_name.replace(".", "/") + ".class"

    def describe(self) -> str:
        """The message for a missing need: the class, the jar, how to provide it."""
        return (f"{self.what} needs {self.class_name} from {self.jar}; add it to the executor's "
                f"TMS_SPARK_JARS (local tiers: {self.local}) or "
                f"TMS_SPARK_PACKAGES={','.join(self.coordinates)}")


_SETUP = "scripts/setup puts it in $TMS_HOME/jars"
NEEDS: dict[str, JarNeed] = {n.key: n for n in (
    JarNeed("iceberg", "every Iceberg job", "org.apache.iceberg.spark.SparkCatalog",
            "iceberg-spark-runtime-3.5_2.12", _SETUP, (ICEBERG_RUNTIME_COORDINATE,),
            ("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12",), ("org.apache.iceberg.",)),
    JarNeed("iceberg-jackson", "every Iceberg job",
            "org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper",
            "iceberg-spark-runtime-3.5_2.12 (its shaded Jackson; iceberg-shaded-jackson.jar "
            "for the PyPI copy)", _SETUP, (ICEBERG_RUNTIME_COORDINATE,),
            ("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12",),
            ("org.apache.iceberg.shaded.com.fasterxml.jackson.",)),
    JarNeed("rest", "an Iceberg REST catalog",
            "org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.HttpClients",
            "iceberg-spark-runtime-3.5_2.12 (its shaded httpclient5; "
            "iceberg-shaded-httpclient5.jar for the PyPI copy)",
            f"{_SETUP} (built from Debian's libhttpclient5-java)",
            (ICEBERG_RUNTIME_COORDINATE,), ("org.apache.iceberg:iceberg-spark-runtime-3.5_2.12",),
            ("org.apache.iceberg.shaded.org.apache.hc.",)),
    JarNeed("jdbc", "a sql/jdbc catalog on PostgreSQL", "org.postgresql.Driver",
            "postgresql (JDBC driver)", "Debian's libpostgresql-jdbc-java",
            ("org.postgresql:postgresql:42.7.4",), ("org.postgresql:postgresql",),
            ("org.postgresql.",)),
    JarNeed("hive", "a Hive Metastore catalog",
            "org.apache.hadoop.hive.metastore.HiveMetaStoreClient", "hive-metastore",
            "pyspark's own jars (hive-metastore-2.3.9.jar)",
            (f"org.apache.spark:spark-hive_2.12:{SPARK_VERSION}",),
            ("org.apache.spark:spark-hive_2.12", "org.apache.hive:hive-metastore"),
            ("org.apache.hadoop.hive.",)),
    JarNeed("glue", "a Glue catalog", "software.amazon.awssdk.services.glue.GlueClient",
            "iceberg-aws-bundle (AWS SDK v2)", "not obtainable from the registries reachable here",
            (f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG_VERSION}",),
            ("org.apache.iceberg:iceberg-aws-bundle", "software.amazon.awssdk:bundle",
             "software.amazon.awssdk:glue"), ("software.amazon.awssdk.",)),
    JarNeed("s3a", "S3 storage (S3A)", "org.apache.hadoop.fs.s3a.S3AFileSystem", "hadoop-aws",
            f"{_SETUP} (hadoop-aws-3.3.1.jar, from the sagemaker-pyspark 1.4.5 sdist)",
            ("org.apache.hadoop:hadoop-aws:3.3.4", "com.amazonaws:aws-java-sdk-bundle:1.12.262"),
            ("org.apache.hadoop:hadoop-aws",), ("org.apache.hadoop.fs.s3a.",)),
    JarNeed("aws-sdk-v1", "S3 storage (S3A)", "com.amazonaws.services.s3.AmazonS3",
            "aws-java-sdk-bundle",
            f"{_SETUP} (aws-java-sdk-bundle-1.11.901.jar, from the sagemaker-pyspark 1.4.5 "
            "sdist)", ("com.amazonaws:aws-java-sdk-bundle:1.12.262",),
            ("com.amazonaws:aws-java-sdk-bundle", "com.amazonaws:aws-java-sdk-s3",
             "org.apache.hadoop:hadoop-aws"), ("com.amazonaws.",)),
)}
S3_SCHEMES = ("s3", "s3a", "s3n")
CATALOG_NEEDS = {"sql": ("jdbc",), "jdbc": ("jdbc",), "rest": ("rest",), "hive": ("hive",),
                 "glue": ("glue",), "hadoop": ()}
STORAGE_NEEDS = {scheme: ("s3a", "aws-sdk-v1") for scheme in S3_SCHEMES}
ICEBERG_NEEDS = ("iceberg", "iceberg-jackson")


# the class a JVM error says is missing (dotted or slashed)
_MISSING_CLASS_RE = re.compile(
    r"(?:ClassNotFoundException|NoClassDefFoundError|Cannot find catalog plugin class for "
    r"catalog '[^']*'|Failed to load class)"
    r"\W+(?:[Cc]ould not initialize class\s+|Class\s+)?([A-Za-z_$][\w$]*(?:[./][A-Za-z_$][\w$]*)+)")
_S3_SCHEME_RE = re.compile(r'No FileSystem for scheme\W+(s3a?|s3n)\b')
_PRECEDENCE = ("iceberg-jackson", "rest", "iceberg", "s3a", "aws-sdk-v1", "glue", "hive", "jdbc")


def need_for_error(text: str) -> JarNeed | None:
    """The need behind a missing-class error: the jar whose package the missing class is in
    (the most specific package first: Iceberg's shaded Jackson before Iceberg), or S3A for
    "No FileSystem for scheme s3", or the JDBC driver for "No suitable driver"."""
    for match in _MISSING_CLASS_RE.finditer(text):
        name = match.group(1).replace("/", ".")
        for key in _PRECEDENCE:
            if any(name.startswith(p) for p in NEEDS[key].prefixes):
                return NEEDS[key]
    if _S3_SCHEME_RE.search(text):
        return NEEDS["s3a"]
    if "No suitable driver" in text and "jdbc:postgresql" in text:
        return NEEDS["jdbc"]
    return None
