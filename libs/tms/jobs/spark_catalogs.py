"""The Spark conf that registers one catalog in the job: Iceberg's Spark catalog properties for
each catalog type TMS offers, and the catalog's storage as per-catalog Hadoop conf.

The job receives the catalog in pyiceberg's terms (``tms.catalogs.job_properties``: ``type``,
``uri``, ``warehouse``, ... and the storage options ``s3.*`` / ``fs.*``) and maps it here onto
Iceberg's ``SparkCatalog`` (``spark.sql.catalog.<name>.*``):

- ``sql`` / ``jdbc``: Iceberg's ``JdbcCatalog`` on the same rows (a JDBC URL, ``jdbc.user``,
  ``jdbc.password``);
- ``rest``, ``hive``, ``hadoop``: ``type`` and the properties as they are (``uri``,
  ``warehouse``, ``prefix``, ``credential``, ``token``, ...), the names both libraries share;
- ``glue``: ``catalog-impl`` ``org.apache.iceberg.aws.glue.GlueCatalog`` with pyiceberg's
  ``glue.region`` as Iceberg's ``client.region``. Iceberg's Glue client takes credentials only
  from ``client.credentials-provider`` or the AWS default chain, so static ``glue.*`` keys are
  refused rather than silently dropped.

Storage: Spark reads and writes through Hadoop file systems (``io-impl`` ``HadoopFileIO`` unless
the catalog names another), S3 through S3A. The S3 options map onto ``fs.s3a.*`` under the
catalog's ``hadoop.`` prefix (Iceberg's per-catalog Hadoop conf: it works in a running session
too, so the warm driver registers catalogs the same way, and two catalogs keep their own
endpoints and keys); ``s3://`` is served by S3A through the session's conf. The conf is set
on the session from the job's private spec: never on a command line. ``fs.*`` storage
options are the operator's own Hadoop conf and pass as they are, after the derived ones.

Every property name is checked against a strict pattern before it becomes a conf key.
Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
JDBC_CATALOG_IMPL = "org.apache.iceberg.jdbc.JdbcCatalog"
GLUE_CATALOG_IMPL = "org.apache.iceberg.aws.glue.GlueCatalog"
HADOOP_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"
S3A_TEMPORARY_CREDENTIALS = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
HADOOP_PREFIX = "hadoop."  # spark.sql.catalog.<name>.hadoop.* -> the catalog's Hadoop conf

_PROPERTY_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")
_HADOOP_KEY_RE = re.compile(r"^fs\.[A-Za-z0-9_][A-Za-z0-9_.\-]{0,196}$")
_SQLALCHEMY_PG_SCHEMES = ("postgresql", "postgresql+psycopg", "postgresql+psycopg2")
PASS_THROUGH_TYPES = ("rest", "hive", "hadoop")
GLUE_STATIC_KEYS = ("glue.access-key-id", "glue.secret-access-key", "glue.session-token",
                    "glue.profile-name")
# pyiceberg FileIO option -> S3A Hadoop conf
S3A_OPTIONS = {
    "s3.endpoint": "fs.s3a.endpoint",
    "s3.region": "fs.s3a.endpoint.region",
    "s3.path-style-access": "fs.s3a.path.style.access",
    "s3.access-key-id": "fs.s3a.access.key",
    "s3.secret-access-key": "fs.s3a.secret.key",
    "s3.session-token": "fs.s3a.session.token",
}
_BOOLEAN_S3_OPTIONS = ("s3.path-style-access",)
_NOT_FOR_SPARK_PREFIXES = ("py-",)  # pyiceberg's own (py-io-impl, ...)


class CatalogConfError(ValueError):
    """The catalog's properties cannot be turned into Spark conf; the message says why."""


def check_key(key: str) -> str:
    if not isinstance(key, str) or not _PROPERTY_KEY_RE.fullmatch(key) or ".." in key:
        raise CatalogConfError(f"invalid catalog property name {str(key)[:200]!r}")
    return key


def sql_to_jdbc(props: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg's SqlCatalog properties as Iceberg's JdbcCatalog's: both keep tables in the
    same ``iceberg_tables`` rows, so a table pyiceberg created is the table Spark compacts.
    pyiceberg takes a SQLAlchemy URL, Iceberg a JDBC URL plus credentials."""
    out = {k: v for k, v in props.items() if k not in ("type", "uri")}
    url = urlsplit(props.get("uri", ""))
    if url.scheme not in _SQLALCHEMY_PG_SCHEMES or not url.hostname:
        raise CatalogConfError("catalog type 'sql' is supported only with a postgresql:// uri "
                               f"(got scheme {url.scheme!r})")
    host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
    port = f":{url.port}" if url.port else ""
    query = f"?{url.query}" if url.query else ""
    out["catalog-impl"] = JDBC_CATALOG_IMPL
    out["uri"] = f"jdbc:postgresql://{host}{port}{url.path}{query}"
    if url.username:
        out["jdbc.user"] = unquote(url.username)
    if url.password is not None:
        out["jdbc.password"] = unquote(url.password)
    return out


def glue_to_iceberg(props: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg's Glue properties as Iceberg's GlueCatalog's (``catalog-impl``, not ``type``)."""
    static = sorted(k for k in GLUE_STATIC_KEYS if k in props)
    if static:
        raise CatalogConfError(
            f"glue catalog: {static} cannot reach Iceberg's Glue client on Spark (it takes "
            "credentials from client.credentials-provider or the AWS default chain: instance "
            "profile, web identity, environment); remove them or use those")
    out = {k: v for k, v in props.items() if k not in ("type", "glue.region")}
    out["catalog-impl"] = GLUE_CATALOG_IMPL
    region = props.get("glue.region") or props.get("client.region") or props.get("s3.region")
    if region:
        out["client.region"] = region
    return out


def iceberg_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The Iceberg catalog properties for pyiceberg-style ``props`` (by ``type``)."""
    kind = props.get("type")
    if kind in ("sql", "jdbc"):
        out = sql_to_jdbc(props)
    elif kind == "glue":
        out = glue_to_iceberg(props)
    elif kind in PASS_THROUGH_TYPES:
        out = dict(props)
    elif kind is None:
        out = dict(props)  # catalog-impl as the operator wrote it, or Iceberg's default (hive)
    else:
        raise CatalogConfError(f"unknown catalog type {kind!r}; known: sql, jdbc, glue, "
                               f"{', '.join(PASS_THROUGH_TYPES)}")
    out = {k: v for k, v in out.items()
           if not k.startswith(_NOT_FOR_SPARK_PREFIXES) and not k.startswith("fs.")}
    out.setdefault("io-impl", HADOOP_FILE_IO)
    return out


def _strict_bool(key: str, value: str) -> str:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise CatalogConfError(f"storage option {key!r}: expected true or false")
    return lowered


def hadoop_conf(props: Mapping[str, str]) -> dict[str, str]:
    """The catalog's Hadoop conf (keys without the ``hadoop.`` prefix): S3A from the S3
    options, then the operator's own ``fs.*`` options. Which class serves ``s3://`` and
    ``s3a://`` is the session's conf (``tms.spark.provision_fence.storage_conf``): set per
    catalog, it would replace the fenced file system with the plain one."""
    conf: dict[str, str] = {}  # s3:// -> S3A (fenced) is the session's (TMS's Spark settings)
    for option, hadoop_key in S3A_OPTIONS.items():
        value = props.get(option)
        if value is None:
            continue
        conf[hadoop_key] = _strict_bool(option, value) if option in _BOOLEAN_S3_OPTIONS else value
    endpoint = props.get("s3.endpoint", "")
    if endpoint.startswith(("http://", "https://")):
        conf["fs.s3a.connection.ssl.enabled"] = "true" if endpoint.startswith("https") else \
            "false"
    if "s3.session-token" in props:
        conf["fs.s3a.aws.credentials.provider"] = S3A_TEMPORARY_CREDENTIALS
    for key, value in props.items():
        if key.startswith("fs."):
            if not _HADOOP_KEY_RE.fullmatch(key) or ".." in key:
                raise CatalogConfError(f"invalid storage option name {key[:200]!r}")
            conf[key] = value
    return conf


def storage_identity(props: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """What a catalog's object-store file systems are made of: its whole Hadoop conf
    (endpoint, region, credentials, the operator's ``fs.*``), in one comparable value.
    Hadoop caches a FileSystem per scheme, authority (the bucket) and user, never per conf:
    in one JVM, a second catalog with another endpoint or other keys but a bucket of the same
    name would be served the first catalog's file system. So a long-lived driver serves
    catalogs of one storage identity only (``warm_driver.register_catalog``, and the warm
    engine starts a new driver for another)."""
    return tuple(sorted(hadoop_conf(props).items()))


def catalog_conf(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """Spark conf registering catalog ``name`` (already validated by the caller) with
    pyiceberg-style ``props``: the catalog's Iceberg properties and its Hadoop conf."""
    for key in props:
        check_key(key)
    prefix = f"spark.sql.catalog.{name}"
    conf = {prefix: SPARK_CATALOG_CLASS}
    for key, value in iceberg_properties(props).items():
        conf[f"{prefix}.{check_key(key)}"] = value
    for key, value in hadoop_conf(props).items():
        conf[f"{prefix}.{HADOOP_PREFIX}{key}"] = value
    return conf
