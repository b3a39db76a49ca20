"""Strict checks of a catalog as an admin gives it (CreateCatalog, UpdateCatalog).

Admins are trusted, but a catalog is where credentials and storage bounds live, so mistakes
must not slip through: a password typed into a property would be stored in clear and shown
by every GetCatalog. Every problem is named by its field (``catalog.properties[uri]``).

Rules, besides bounded sizes and no control characters anywhere:

- property and secret keys are ``[A-Za-z0-9_.-]{1,128}``; ``type`` is the catalog's field,
  never a property; a key given twice (properties, secrets, storage options) is refused;
- a property or storage option whose key looks secret (:func:`tms.secrets.looks_secret`) or
  whose value carries a password (``scheme://user:pw@host``, ``?password=...``) is refused:
  give it in ``secrets`` as a reference (:func:`tms.secrets.parse_ref`);
- storage option keys start with one of :data:`STORAGE_PREFIXES` (Hadoop ``fs.*``, pyiceberg
  FileIO ``s3.*``, ``gcs.*``, ``adls.*``, ``hdfs.*``); cluster settings (``hadoop.*``,
  ``spark.*``) are the operator's, per queue, not a catalog's;
- per type, the properties it needs (:data:`REQUIRED_PROPERTIES`; given in properties or in
  secrets), ``sql`` and ``jdbc`` a PostgreSQL ``uri``, ``rest`` an http(s) one, ``hive`` a
  thrift one; a ``warehouse`` (all types but rest, where it may be a name) must lie inside
  the catalog's allowed locations;
- allowed locations (1..64) parse with the one normaliser (:mod:`tms.jobs.locations`) and,
  when the API was started with ``--allowed-locations``, lie inside those (the operator's
  outer bound, checked after symlinks);
- discovery patterns are globs over ``namespace.table`` of a restricted alphabet.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from tms.api import validate as v
from tms.domain import CatalogDiscovery, CatalogSpec, CatalogType
from tms.domain.catalogs import MAX_DISCOVERY_INTERVAL_S, MIN_DISCOVERY_INTERVAL_S
from tms.formats.base import TableFormatPlugin
from tms.jobs import locations
from tms.policy import validate_policy
from tms.secrets import (
    ENV_SECRET_DIR,
    SecretError,
    looks_secret,
    parse_ref,
    uri_has_password,
)

CATALOG_ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
CATALOG_ID_WHAT = "1-63 of a-z 0-9 _ starting with a letter"
PROPERTY_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
GLOB_RE = re.compile(r"^[A-Za-z0-9_.\-*?\[\]!]{1,256}$")
STORAGE_PREFIXES = ("fs.", "s3.", "gcs.", "adls.", "hdfs.")
MAX_ENTRIES = 64  # per map, and per list of owners, tokens, patterns
MAX_LOCATIONS = 64
MAX_VALUE_LEN = 4096
MAX_PRINCIPAL_LEN = 256
TYPE_KEY = "type"
WAREHOUSE_KEY = "warehouse"
URI_KEY = "uri"
REQUIRED_PROPERTIES: dict[CatalogType, tuple[str, ...]] = {
    CatalogType.SQL: (URI_KEY,), CatalogType.JDBC: (URI_KEY,), CatalogType.REST: (URI_KEY,),
    CatalogType.HIVE: (URI_KEY,), CatalogType.GLUE: (), CatalogType.HADOOP: ()}
_SQLALCHEMY_PG_RE = re.compile(r"^postgresql(\+[a-z0-9_]{1,32})?$")
_JDBC_PG_PREFIX = "jdbc:postgresql:"
_URI_SCHEMES = {CatalogType.REST: ("http", "https"), CatalogType.HIVE: ("thrift",)}
_AUTH_PASSWORD_RE = re.compile(r"//[^/?#@\s]*:[^/?#@\s]*@")
_PARAM_NAME_RE = re.compile(r"[?&;]([^=&;?#/\s]+)=")
_SECRET_PARAMS = frozenset({"sig"})
BY_REFERENCE = "give it in secrets as a reference (env:TMS_SECRET_<NAME> or file:<name>)"

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


def _text_problem(value: str, max_len: int) -> str | None:
    if len(value) > max_len:
        return f"at most {max_len} characters, got {len(value)}"
    if any(unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp")
           for c in value):
        return "must not contain control or format characters"
    return None


def carries_password(value: str) -> bool:
    """A URI-like value with a password in it: in the authority (also behind ``jdbc:``),
    or as a query / JDBC parameter whose name looks secret (``sig`` of an Azure SAS URL);
    looked for as given and once percent-decoded (``user%3Apw@host``)."""
    for text in dict.fromkeys((value, unquote(value))):
        if uri_has_password(text) or _AUTH_PASSWORD_RE.search(text):
            return True
        for m in _PARAM_NAME_RE.finditer(text):
            if looks_secret(m.group(1)) or m.group(1).lower() in _SECRET_PARAMS:
                return True
    return False


def _keyed_map(p: Problems, field: str, values: Mapping[str, str]) -> list[str]:
    """Size, keys and plain text of a map; returns the keys fit for further checks."""
    if len(values) > MAX_ENTRIES:
        p.append((field, f"at most {MAX_ENTRIES} entries, got {len(values)}"))
        return []
    good = []
    for k, val in values.items():
        where = f"{field}[{k[:40]}]"
        why = _text_problem(val, MAX_VALUE_LEN)
        if not PROPERTY_KEY_RE.fullmatch(k):
            p.append((where, "keys are 1-128 of A-Z a-z 0-9 _ . -"))
        elif why:
            p.append((where, why))
        else:
            good.append(k)
    return good


def _clear_map(p: Problems, field: str, values: Mapping[str, str]) -> list[str]:
    """A map stored in clear (properties, storage options): nothing secret in it."""
    good = []
    for k in _keyed_map(p, field, values):
        if k == TYPE_KEY:
            p.append((f"{field}[{k}]", "the type is the catalog's type field, not a property"))
        elif looks_secret(k):
            p.append((f"{field}[{k}]", "looks secret: " + BY_REFERENCE))
        elif carries_password(values[k]):
            p.append((f"{field}[{k}]", "carries a password: " + BY_REFERENCE))
        else:
            good.append(k)
    return good


def _secrets(p: Problems, field: str, refs: Mapping[str, str]) -> None:
    for k in _keyed_map(p, field, refs):
        if k == TYPE_KEY:
            p.append((f"{field}[{k}]", "the type is the catalog's type field, not a secret"))
            continue
        try:
            parsed = parse_ref(refs[k])
        except SecretError:  # never echo it: it may be the secret itself, given by mistake
            p.append((f"{field}[{k}]", "not a secret reference: give env:TMS_SECRET_<NAME> "
                                       "(A-Z 0-9 _) or file:<name> (a file in the secret "
                                       "directory, no slashes), never the value"))
            continue
        if parsed.kind == "env" and parsed.name == ENV_SECRET_DIR:
            p.append((f"{field}[{k}]", f"{ENV_SECRET_DIR} names the secret directory, "
                                       "not a secret"))


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
        if carries_password(raw):  # refused before the normaliser's messages echo it
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
    if len(values) > MAX_ENTRIES:
        p.append((field, f"at most {MAX_ENTRIES} {what}, got {len(values)}"))
        return
    for i, name in enumerate(values):
        why = "must not be empty" if not name else _text_problem(name, MAX_PRINCIPAL_LEN)
        if why:
            p.append((f"{field}[{i}]", why))


def _discovery(p: Problems, field: str, d: CatalogDiscovery) -> None:
    for part, globs in (("include", d.include), ("exclude", d.exclude)):
        if len(globs) > MAX_ENTRIES:
            p.append((f"{field}.{part}", f"at most {MAX_ENTRIES} patterns, got {len(globs)}"))
            continue
        for i, g in enumerate(globs):
            if not GLOB_RE.fullmatch(g):
                p.append((f"{field}.{part}[{i}]", "a glob over namespace.table: 1-256 of "
                                                  "A-Z a-z 0-9 _ . - * ? [ ] !"))
    v.pattern(p, f"{field}.queue", d.queue, v.QUEUE_RE, "1-63 of a-z 0-9 _ -")
    why = _text_problem(d.owner, v.MAX_OWNER_LEN)
    if why:
        p.append((f"{field}.owner", why))
    if not -1000 <= d.priority <= 1000:
        p.append((f"{field}.priority", f"must be between -1000 and 1000, got {d.priority}"))
    if not MIN_DISCOVERY_INTERVAL_S <= d.interval_s <= MAX_DISCOVERY_INTERVAL_S:
        p.append((f"{field}.interval_s", f"0 (the default) or {MIN_DISCOVERY_INTERVAL_S}.."
                                         f"{MAX_DISCOVERY_INTERVAL_S} seconds, "
                                         f"got {d.interval_s}"))


def format_policy_keys(plugin: TableFormatPlugin) -> Mapping[str, Any]:
    """A plugin's own policy keys (``TableFormatPlugin.policy_keys``; for plugins from before
    that attribute, their module's ``POLICY_KEYS``)."""
    keys = getattr(plugin, "policy_keys", None)
    if keys is None:
        keys = getattr(sys.modules.get(type(plugin).__module__), "POLICY_KEYS", {})
    return dict(keys)


def default_policy_problems(formats: Mapping[str, TableFormatPlugin],
                            policy: Mapping[str, str], field: str) -> Problems:
    """A catalog's default policy applies to its tables of every format: a key is known when
    any registered format (or the common schema) knows it."""
    keys: dict[str, Any] = {}
    for plugin in formats.values():
        keys.update(format_policy_keys(plugin))
    return validate_policy(keys, policy, field=field)


def check_spec(p: Problems, field: str, spec: CatalogSpec, *, type_known: bool,
               outer: Sequence[str], formats: Mapping[str, TableFormatPlugin]) -> None:
    """Every problem of ``spec`` (fields under ``field``, e.g. ``catalog``). ``type_known``
    False skips the per-type rules (the type itself was refused)."""
    props = _clear_map(p, f"{field}.properties", spec.properties)
    _secrets(p, f"{field}.secrets", spec.secrets)
    storage = _clear_map(p, f"{field}.storage_options", spec.storage_options)
    for k in storage:
        if not k.startswith(STORAGE_PREFIXES):
            p.append((f"{field}.storage_options[{k[:40]}]",
                      f"storage option keys start with {', '.join(STORAGE_PREFIXES)}"))
    for k in sorted(set(spec.secrets) & (set(spec.properties) | set(spec.storage_options))):
        p.append((f"{field}.secrets[{k[:40]}]", "also given in properties or storage_options: "
                                                "give each key once"))
    for k in sorted(set(spec.properties) & set(spec.storage_options)):
        p.append((f"{field}.storage_options[{k[:40]}]", "also given in properties"))
    allowed = _locations(p, f"{field}.allowed_locations", spec.allowed_locations, outer)
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
