"""A catalog made usable: its secret references resolved, in the process that needs them.

The stored :class:`~tms.domain.Catalog` holds references only. :func:`access` resolves them
into a :class:`CatalogAccess` right before a catalog is opened (the scheduler inspecting, the
executor writing a job spec, the API checking a registration); the values live in memory only
and never in a repr, a log line or an RPC.

Property conventions (what an operator writes in a catalog, whatever its type):

- ``sql``: ``uri`` is a SQLAlchemy URL without a password (``postgresql+psycopg://user@host/db``);
  the password is the secret ``jdbc.password`` (Iceberg's JdbcCatalog name). pyiceberg gets it
  inside the URL, Spark as ``jdbc.password``.
- ``jdbc``: as ``sql``, with a ``jdbc:postgresql://`` ``uri``.
- ``rest``, ``hive``, ``glue``: the properties of pyiceberg's and Iceberg's catalogs of that type,
  under pyiceberg's names: ``rest`` an http(s) ``uri``, an optional ``warehouse``, and the secrets
  ``token`` or ``credential`` (``client-id:secret``, exchanged for a token); ``hive`` a
  ``thrift://`` ``uri`` and a ``warehouse``; ``glue`` a ``glue.region`` (or ``client.region``), an
  optional ``glue.endpoint`` / ``glue.id``, and the secrets ``glue.access-key-id`` /
  ``glue.secret-access-key`` (or ``client.*``; none: the process's own AWS credentials).
- ``hadoop``: file-system tables, no catalog server: Hudi base paths under the allowed
  locations, and Iceberg tables in HadoopCatalog layout under the ``warehouse`` property
  (``<warehouse>/<ns>/<table>/metadata/version-hint.text``).

Storage options (every type) use pyiceberg's FileIO names (``s3.endpoint``, ``s3.region``,
``s3.path-style-access``; the secrets ``s3.access-key-id``, ``s3.secret-access-key``); a secret
named like a storage option is one (:data:`STORAGE_PREFIXES`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from tms.domain import Catalog, CatalogType
from tms.secrets import resolve_all

PASSWORD_SECRET = "jdbc.password"
MASK = "****"
# user:password@ in a URI's authority (also after a jdbc: prefix)
_URI_PASSWORD_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:)[^/?#\s]*@")
USER_PROPERTY = "jdbc.user"
_PG_JDBC_PREFIX = "jdbc:postgresql:"
_PG_SQLALCHEMY_SCHEME = "postgresql+psycopg"
# storage option keys: Hadoop's fs.*, pyiceberg FileIO's s3.* gcs.* adls.* hdfs.*
STORAGE_PREFIXES = ("fs.", "s3.", "gcs.", "adls.", "hdfs.")
_PYICEBERG_TYPES = {CatalogType.SQL: "sql", CatalogType.JDBC: "sql", CatalogType.REST: "rest",
                    CatalogType.HIVE: "hive", CatalogType.GLUE: "glue"}


class CatalogUnsupported(ValueError):
    """The catalog type cannot do what was asked here (e.g. pyiceberg has no Hadoop catalog)."""


@dataclass(frozen=True)
class CatalogAccess:
    """A catalog with its secrets resolved. Never log it whole: ``repr`` hides the values."""

    catalog_id: str
    type: CatalogType
    properties: dict[str, str] = field(repr=False)  # secrets included
    storage_options: dict[str, str] = field(repr=False)  # secrets included
    allowed_locations: tuple[str, ...] = ()
    default_policy: dict[str, str] = field(default_factory=dict)
    secret_values: tuple[str, ...] = field(default=(), repr=False)
    # property -> reference (env:/file:): not secret, what a job receives instead of values
    secret_refs: dict[str, str] = field(default_factory=dict)

    def scrub(self, text: str) -> str:
        """``text`` (an error from a catalog client, say) with this catalog's secret values
        and any URI password masked, so it can be logged or returned."""
        for value in sorted(self.secret_values, key=len, reverse=True):
            if value:
                text = text.replace(value, MASK)
        return _URI_PASSWORD_RE.sub(r"\1" + MASK + "@", text)

    def fingerprint(self) -> str:
        """A digest of everything that makes a connection (for caches); reveals nothing.
        Computed once per access (a decision asks for it a few times)."""
        return self._fingerprint

    @functools.cached_property
    def _fingerprint(self) -> str:
        blob = json.dumps([self.catalog_id, self.type.value, self.properties,
                           self.storage_options], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


def access(catalog: Catalog, environ: Mapping[str, str] | None = None,
           secret_dir: Path | None = None) -> CatalogAccess:
    """Resolve the catalog's secret references (SecretError names the missing reference).
    A secret whose name is a storage option (``fs.*``, ``s3.*`` ... :data:`STORAGE_PREFIXES`,
    or a key of ``storage_options``) goes there; every other secret is a catalog property."""
    spec = catalog.spec
    values = resolve_all(spec.secrets, environ, secret_dir)
    props, storage = dict(spec.properties), dict(spec.storage_options)
    for key, value in values.items():
        if key in storage or key.startswith(STORAGE_PREFIXES):
            storage[key] = value
        else:
            props[key] = value
    return CatalogAccess(spec.catalog_id, spec.type, props, storage, spec.allowed_locations,
                         dict(spec.default_policy), tuple(values.values()), dict(spec.secrets))


def _sql_connection(cat: CatalogAccess) -> tuple[str, str | None, str | None]:
    """(SQLAlchemy URL without credentials, user, password) of a sql/jdbc catalog. User and
    password come from ``jdbc.user`` / ``jdbc.password``, else from the URL itself (a URL
    given whole as a secret)."""
    uri = cat.properties.get("uri", "")
    if uri.startswith(_PG_JDBC_PREFIX):
        uri = f"{_PG_SQLALCHEMY_SCHEME}:{uri[len(_PG_JDBC_PREFIX):]}"
    parts = urlsplit(uri)
    user = cat.properties.get(USER_PROPERTY,
                              unquote(parts.username) if parts.username else None)
    password = cat.properties.get(PASSWORD_SECRET, unquote(parts.password)
                                  if parts.password is not None else None)
    host = parts.netloc.rpartition("@")[2]  # port and IPv6 brackets kept as written
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), user, \
        password


def _with_credentials(uri: str, user: str | None, password: str | None) -> str:
    """``uri`` (without credentials) with user and password in its authority, each
    percent-quoted."""
    if user is None and password is None:
        return uri
    parts = urlsplit(uri)
    auth = quote(user or "", safe="")
    if password is not None:
        auth += ":" + quote(password, safe="")
    return urlunsplit((parts.scheme, f"{auth}@{parts.netloc}", parts.path, parts.query,
                       parts.fragment))


def pyiceberg_properties(cat: CatalogAccess) -> dict[str, str]:
    """What ``pyiceberg.catalog.load_catalog(cat.catalog_id, **props)`` takes."""
    kind = _PYICEBERG_TYPES.get(cat.type)
    if kind is None:
        raise CatalogUnsupported(f"catalog type {cat.type.value!r} cannot be opened with "
                                 "pyiceberg")
    props = {k: v for k, v in cat.properties.items() if k not in (PASSWORD_SECRET,
                                                                   USER_PROPERTY)}
    props.update({k: v for k, v in cat.storage_options.items() if not k.startswith("fs.")})
    props["type"] = kind
    if kind == "sql":
        props["uri"] = _with_credentials(*_sql_connection(cat))
    return props


def job_properties(cat: CatalogAccess) -> dict[str, str]:
    """The catalog properties a Spark job receives in its (private) spec file: pyiceberg's
    form with the storage options (``s3.*``, and the operator's Hadoop ``fs.*``), which the job
    maps onto Iceberg's Spark catalog and S3A (``tms.jobs.spark_catalogs``; ``jdbc.password``
    stays a separate property there, never inside a URL or on a command line). A ``hadoop``
    catalog (no pyiceberg counterpart) goes as it is, typed ``hadoop``."""
    if cat.type is CatalogType.HADOOP:  # Iceberg's HadoopCatalog: no pyiceberg counterpart
        props = {**cat.properties, **cat.storage_options, "type": "hadoop"}
        return props
    props = pyiceberg_properties(cat)
    # the operator's own Hadoop conf (``fs.*``) is for Spark only; pyiceberg never sees it
    props.update({k: v for k, v in cat.storage_options.items() if k.startswith("fs.")})
    if props.get("type") == "sql":
        props["uri"], user, password = _sql_connection(cat)
        if user:
            props[USER_PROPERTY] = user
        if password is not None:
            props[PASSWORD_SECRET] = password
    return props


def job_catalog(cat: CatalogAccess) -> tuple[dict[str, str], dict[str, str]]:
    """What a Spark job's spec carries for its catalog: (properties without any secret value,
    property -> secret reference). The job resolves the references in its driver and merges
    them over the properties; the result maps onto Spark exactly as ``job_properties`` does
    (an equivalence a unit test holds). A spec so made may travel on a command line."""
    refs = dict(cat.secret_refs)  # every secret the job gets, Hadoop ``fs.*`` ones included
    bare = replace(cat, properties={k: v for k, v in cat.properties.items()
                                    if k not in cat.secret_refs},
                   storage_options={k: v for k, v in cat.storage_options.items()
                                    if k not in cat.secret_refs},
                   secret_values=())
    props = job_properties(bare)
    if "uri" in refs:  # the whole URL is a secret: the job splits its credentials out
        props.pop("uri", None)
    return props, refs


def _ignore_table_io_properties(catalog: Any) -> None:
    """Tables' FileIO from the catalog's properties only. pyiceberg's sql, hive and glue
    catalogs merge a table's own properties over the catalog's when they build its FileIO,
    so a table writer could name ``py-io-impl`` (any importable class) or an ``s3.endpoint``
    of theirs that would receive the catalog's signed requests. (A REST catalog's FileIO also
    takes the server's per-table config, vended credentials: left as pyiceberg builds it.)

    With the catalog's properties only, every table of one URI scheme gets the same FileIO,
    so one is kept per scheme: its file systems (an S3 client, say) are set up once, not for
    every table the scheduler inspects."""
    from urllib.parse import urlparse

    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.io import load_file_io

    if isinstance(catalog, RestCatalog):
        return
    own = dict(catalog.properties)
    by_scheme: dict[str | None, Any] = {}
    lock = threading.Lock()

    def catalog_file_io(properties: Mapping[str, str] | None = None,
                        location: str | None = None) -> Any:
        scheme = urlparse(location).scheme if location else None  # None: the warehouse's
        with lock:
            io = by_scheme.get(scheme)
            if io is None:
                io = by_scheme[scheme] = load_file_io(own, location)
            return io

    catalog._load_file_io = catalog_file_io


class PyicebergCatalogs:
    """Opened pyiceberg catalogs, one per catalog connection (keyed by fingerprint, so a
    changed property or rotated secret opens a fresh one). Thread-safe."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def get(self, cat: CatalogAccess) -> Any:
        from pyiceberg.catalog import load_catalog

        key = (cat.catalog_id, cat.fingerprint())
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = load_catalog(cat.catalog_id, **pyiceberg_properties(cat))
                _ignore_table_io_properties(found)
                self._open = {k: v for k, v in self._open.items() if k[0] != cat.catalog_id}
                self._open[key] = found
            return found


CATALOG_CACHE_TTL_S = 10.0  # a changed catalog (locations, secrets) is seen within this


class CatalogCache:
    """Catalogs by id, read through ``fetch`` (a store's ``catalog_get``) and kept for
    ``ttl_s``: the scheduler and the executor look a table's catalog up at every use without a
    query per table. Holds references only, never resolved secrets. Thread-safe."""

    def __init__(self, fetch: Callable[[str], Catalog | None],
                 ttl_s: float = CATALOG_CACHE_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._ttl_s = ttl_s
        self._clock = clock
        self._found: dict[str, tuple[float, Catalog | None]] = {}
        self._lock = threading.Lock()

    def get(self, catalog_id: str) -> Catalog | None:
        now = self._clock()
        with self._lock:
            hit = self._found.get(catalog_id)
        if hit is not None and now - hit[0] < self._ttl_s:
            return hit[1]
        catalog = self._fetch(catalog_id)
        with self._lock:
            self._found[catalog_id] = (now, catalog)
        return catalog
