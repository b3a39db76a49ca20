"""Strict checks of a catalog as an admin gives it (CreateCatalog, UpdateCatalog).

Admins are trusted, but a catalog is where credentials and storage bounds live, so mistakes
must not slip through: a password typed into a property would be stored in clear and shown
by every GetCatalog. Every problem is named by its field (``catalog.properties[uri]``).

Rules, besides bounded sizes and no control characters anywhere (the maps' rules, secrets
by reference only, are in :mod:`tms.api.catalog_maps`):

- per type, the properties it needs (:data:`REQUIRED_PROPERTIES`; given in properties or in
  secrets), ``sql`` and ``jdbc`` a PostgreSQL ``uri``, ``rest`` an http(s) one, ``hive`` a
  thrift one, ``glue`` a region (:data:`GLUE_REGION_KEYS`) and, if given, an http(s)
  ``glue.endpoint``; a ``warehouse`` (all types but rest, where it may be a name; for
  ``hadoop`` the root of its Iceberg tables) must lie inside the catalog's allowed locations;
  an ``s3.endpoint`` storage option is an http(s) URL;
- allowed locations (1..64) parse with the one normaliser (:mod:`tms.locations`) and,
  when the API was started with ``--allowed-locations``, lie inside those (the operator's
  outer bound, checked after symlinks);
- discovery patterns are globs over ``namespace.table`` of a restricted alphabet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from tms import locations
from tms.api import catalog_maps as maps
from tms.api import validate as v
from tms.domain import CatalogDiscovery, CatalogSpec, CatalogType
from tms.domain.catalogs import MAX_DISCOVERY_INTERVAL_S, MIN_DISCOVERY_INTERVAL_S
from tms.formats.base import TableFormatPlugin
from tms.policy.common import validate_policy
from tms.policy.schema import PolicyKey

CATALOG_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
CATALOG_ID_WHAT = "1-63 of a-z 0-9 _ starting with a letter"
GLOB_RE = re.compile(r"^[A-Za-z0-9_.\-*?\[\]!]{1,256}$")
MAX_LOCATIONS = 64
MAX_PRINCIPAL_LEN = 256
WAREHOUSE_KEY = "warehouse"
URI_KEY = "uri"
REQUIRED_PROPERTIES: dict[CatalogType, tuple[str, ...]] = {
    CatalogType.SQL: (URI_KEY,), CatalogType.JDBC: (URI_KEY,), CatalogType.REST: (URI_KEY,),
    CatalogType.HIVE: (URI_KEY,), CatalogType.GLUE: (), CatalogType.HADOOP: ()}
# pyiceberg's names of a Glue catalog's region (one is needed: Glue has no default) and
# endpoint; Iceberg's Spark GlueCatalog reads the region from the same client settings
GLUE_REGION_KEYS = ("glue.region", "client.region")
GLUE_ENDPOINT_KEY = "glue.endpoint"
S3_ENDPOINT_KEY = "s3.endpoint"
_HTTP = ("http", "https")
_SQLALCHEMY_PG_RE = re.compile(r"^postgresql(\+[a-z0-9_]{1,32})?$")
_JDBC_PG_PREFIX = "jdbc:postgresql:"
_URI_SCHEMES = {CatalogType.REST: ("http", "https"), CatalogType.HIVE: ("thrift",)}

Problems = v.Problems


def type_of(p: Problems, field: str, raw: str) -> CatalogType | None:
    known = ", ".join(t.value for t in CatalogType)
    if not raw:
        p.append((field, f"required; one of: {known}"))
        return None
    try:
        return CatalogType(raw)
    except ValueError:
        p.append((field, f"unknown catalog type {raw[:40]!r}; one of: {known}"))
        return None


def _uri(p: Problems, field: str, ctype: CatalogType, uri: str) -> None:
    if ctype in (CatalogType.SQL, CatalogType.JDBC):
        if ctype is CatalogType.JDBC:
            if not uri.startswith(_JDBC_PG_PREFIX):
                p.append((field, f"a jdbc catalog's uri starts with {_JDBC_PG_PREFIX}//"))
                return
            uri = "postgresql:" + uri[len(_JDBC_PG_PREFIX):]
        try:
            parts = urlsplit(uri)
            host = parts.hostname
        except ValueError:
            parts, host = None, None
        if parts is None or not _SQLALCHEMY_PG_RE.fullmatch(parts.scheme) or not host:
            p.append((field, "must be a PostgreSQL URL without password "
                             "(postgresql+psycopg://user@host:5432/db"
                             + (", behind jdbc:)" if ctype is CatalogType.JDBC else ")")))
        return
    schemes = _URI_SCHEMES.get(ctype)
    if schemes:
        try:
            parts = urlsplit(uri)
            ok = parts.scheme in schemes and bool(parts.hostname)
        except ValueError:
            ok = False
        if not ok:
            p.append((field, f"a {ctype.value} catalog's uri is {' or '.join(schemes)}://host"))


def _type_properties(p: Problems, field: str, spec: CatalogSpec, good: list[str]) -> None:
    """The properties the type needs; ``good`` are the keys that passed the generic checks."""
    for key in REQUIRED_PROPERTIES[spec.type]:
        if key not in spec.properties and key not in spec.secrets:
            p.append((f"{field}[{key}]", f"required for a {spec.type.value} catalog (in "
                                         "properties, or in secrets if it holds one)"))
    if URI_KEY in good:
        _uri(p, f"{field}[{URI_KEY}]", spec.type, spec.properties[URI_KEY])
    if spec.type is CatalogType.GLUE:
        if not any(spec.properties.get(k) for k in GLUE_REGION_KEYS):
            p.append((f"{field}[{GLUE_REGION_KEYS[0]}]",
                      f"required for a glue catalog (or {GLUE_REGION_KEYS[1]}): the AWS region "
                      "of the Glue Data Catalog"))
        if GLUE_ENDPOINT_KEY in good:
            _http_url(p, f"{field}[{GLUE_ENDPOINT_KEY}]", spec.properties[GLUE_ENDPOINT_KEY])


def _http_url(p: Problems, field: str, value: str) -> None:
    try:
        parts = urlsplit(value)
        ok = parts.scheme in _HTTP and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        p.append((field, "an endpoint is http(s)://host[:port][/path]"))


def _locations(p: Problems, field: str, values: Sequence[str],
               outer: Sequence[str]) -> list[locations.Location]:
    if not values:
        p.append((field, "required: at least one location prefix the catalog's tables live "
                         "under"))
        return []
    if len(values) > MAX_LOCATIONS:
        p.append((field, f"at most {MAX_LOCATIONS} locations, got {len(values)}"))
        return []
    parsed = []
    for i, raw in enumerate(values):
        if maps.carries_password(raw):  # refused before the normaliser's messages echo it
            p.append((f"{field}[{i}]", "locations must not carry credentials"))
            continue
        try:
            parsed.append(locations.check(raw, outer) if outer else locations.parse(raw))
        except locations.LocationError as e:
            p.append((f"{field}[{i}]", str(e) + (" (the API's --allowed-locations)"
                                                 if "outside" in str(e) else "")))
    return parsed


def _warehouse(p: Problems, field: str, raw: str, allowed: list[locations.Location]) -> None:
    try:
        where = locations.resolve(locations.parse(raw))
    except locations.LocationError as e:
        p.append((field, str(e)))
        return
    if allowed and not any(where.is_under(locations.resolve(a)) for a in allowed):
        p.append((field, "must lie inside the catalog's allowed_locations"))


def _names(p: Problems, field: str, values: Sequence[str], what: str) -> None:
    if len(values) > maps.MAX_ENTRIES:
        p.append((field, f"at most {maps.MAX_ENTRIES} {what}, got {len(values)}"))
        return
    for i, name in enumerate(values):
        why = "must not be empty" if not name else maps.text_problem(name, MAX_PRINCIPAL_LEN)
        if why:
            p.append((f"{field}[{i}]", why))


def _discovery(p: Problems, field: str, d: CatalogDiscovery) -> None:
    for part, globs in (("include", d.include), ("exclude", d.exclude)):
        if len(globs) > maps.MAX_ENTRIES:
            p.append((f"{field}.{part}", f"at most {maps.MAX_ENTRIES} patterns, got {len(globs)}"))
            continue
        for i, g in enumerate(globs):
            if not GLOB_RE.fullmatch(g):
                p.append((f"{field}.{part}[{i}]", "a glob over namespace.table: 1-256 of "
                                                  "A-Z a-z 0-9 _ . - * ? [ ] !"))
    v.pattern(p, f"{field}.queue", d.queue, v.QUEUE_RE, "1-63 of a-z 0-9 _ -")
    why = maps.text_problem(d.owner, v.MAX_OWNER_LEN)
    if why:
        p.append((f"{field}.owner", why))
    if not -1000 <= d.priority <= 1000:
        p.append((f"{field}.priority", f"must be between -1000 and 1000, got {d.priority}"))
    if not MIN_DISCOVERY_INTERVAL_S <= d.interval_s <= MAX_DISCOVERY_INTERVAL_S:
        p.append((f"{field}.interval_s", f"0 (the default) or {MIN_DISCOVERY_INTERVAL_S}.."
                                         f"{MAX_DISCOVERY_INTERVAL_S} seconds, "
                                         f"got {d.interval_s}"))


def default_policy_problems(formats: Mapping[str, TableFormatPlugin],
                            policy: Mapping[str, str], field: str) -> Problems:
    """A catalog's default policy applies to its tables of every format: a key is known when
    any registered format (or the common schema) knows it. Then each format's pairs of keys
    that must be ordered, over that format's defaults (a pair is named once)."""
    keys: dict[str, PolicyKey] = {}
    for plugin in formats.values():
        keys.update(plugin.policy_keys)
    problems = validate_policy(keys, policy, field=field)
    if problems:
        return problems
    for plugin in formats.values():
        for problem in plugin.check_policy_in_force({}, policy, field,
                                                    blame="catalog default policy"):
            if problem not in problems:
                problems.append(problem)
    return problems


def check_spec(p: Problems, field: str, spec: CatalogSpec, *, type_known: bool,
               outer: Sequence[str], formats: Mapping[str, TableFormatPlugin]) -> None:
    """Every problem of ``spec`` (fields under ``field``, e.g. ``catalog``). ``type_known``
    False skips the per-type rules (the type itself was refused)."""
    props = maps.check_maps(p, field, spec, formats)
    allowed = _locations(p, f"{field}.allowed_locations", spec.allowed_locations, outer)
    if S3_ENDPOINT_KEY in spec.storage_options:
        _http_url(p, f"{field}.storage_options[{S3_ENDPOINT_KEY}]",
                  spec.storage_options[S3_ENDPOINT_KEY])
    if type_known:
        _type_properties(p, f"{field}.properties", spec, props)
        if WAREHOUSE_KEY in props and spec.type is not CatalogType.REST:
            _warehouse(p, f"{field}.properties[{WAREHOUSE_KEY}]",
                       spec.properties[WAREHOUSE_KEY], allowed)
    _names(p, f"{field}.allowed_owners", spec.allowed_owners, "owners")
    _names(p, f"{field}.allowed_tokens", spec.allowed_tokens, "token names")
    _discovery(p, f"{field}.discovery", spec.discovery)
    policy_field = f"{field}.default_policy"
    before = len(p)
    v.string_map(p, policy_field, spec.default_policy)
    if len(p) == before:
        p.extend(default_policy_problems(formats, spec.default_policy, policy_field))
