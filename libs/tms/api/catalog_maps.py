"""A catalog's maps: properties, secrets and storage options (CreateCatalog, UpdateCatalog).

Rules:

- keys are ``[A-Za-z0-9_.-]{1,128}``, values at most 4096 characters without control or
  format characters, at most 64 entries; ``type`` is the catalog's field, never a property;
  a key given twice (properties, secrets, storage options) is refused;
- a property or storage option whose key looks secret (:func:`tms.secrets.looks_secret`) or
  whose value carries a password (``scheme://user:pw@host``, ``?password=...``, also once
  percent-decoded) is refused: give it in ``secrets`` as a reference
  (:func:`tms.secrets.parse_ref`); a refused reference is never echoed (it may be the secret
  itself, given by mistake);
- storage option keys start with one of :data:`STORAGE_PREFIXES` (Hadoop ``fs.*``, pyiceberg
  FileIO ``s3.*``, ``gcs.*``, ``adls.*``, ``hdfs.*``); cluster settings (``hadoop.*``,
  ``spark.*``) are the operator's, per queue, not a catalog's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from urllib.parse import unquote

from tms.api import validate as v
from tms.catalogs import STORAGE_PREFIXES
from tms.domain import CatalogSpec
from tms.formats.base import TableFormatPlugin
from tms.secrets import ENV_SECRET_DIR, SecretError, looks_secret, parse_ref, uri_has_password

PROPERTY_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
MAX_ENTRIES = 64  # per map, and per list of owners, tokens, patterns
MAX_VALUE_LEN = 4096
TYPE_KEY = "type"
BY_REFERENCE = "give it in secrets as a reference (env:TMS_SECRET_<NAME> or file:<name>)"
_AUTH_PASSWORD_RE = re.compile(r"//[^/?#@\s]*:[^/?#@\s]*@")
_PARAM_NAME_RE = re.compile(r"[?&;]([^=&;?#/\s]+)=")
_SECRET_PARAMS = frozenset({"sig"})


def text_problem(value: str, max_len: int) -> str | None:
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


def _keyed_map(p: v.Problems, field: str, values: Mapping[str, str]) -> list[str]:
    """Size, keys and plain text of a map; returns the keys fit for further checks."""
    if len(values) > MAX_ENTRIES:
        p.append((field, f"at most {MAX_ENTRIES} entries, got {len(values)}"))
        return []
    good = []
    for k, val in values.items():
        where = f"{field}[{k[:40]}]"
        why = text_problem(val, MAX_VALUE_LEN)
        if not PROPERTY_KEY_RE.fullmatch(k):
            p.append((where, "keys are 1-128 of A-Z a-z 0-9 _ . -"))
        elif why:
            p.append((where, why))
        else:
            good.append(k)
    return good


def _clear_map(p: v.Problems, field: str, values: Mapping[str, str],
               formats: Mapping[str, TableFormatPlugin]) -> list[str]:
    """A map stored in clear (properties, storage options): nothing secret in it."""
    good = []
    for k in _keyed_map(p, field, values):
        if k == TYPE_KEY:
            p.append((f"{field}[{k}]", "the type is the catalog's type field, not a property"))
        # a format's own key (Hudi's ``...lock_key``) is checked by the format, below
        elif looks_secret(k) and not any(f.owns_catalog_property(k) for f in formats.values()):
            p.append((f"{field}[{k}]", "looks secret: " + BY_REFERENCE))
        elif carries_password(values[k]):
            p.append((f"{field}[{k}]", "carries a password: " + BY_REFERENCE))
        else:
            good.append(k)
    return good


def _secrets(p: v.Problems, field: str, refs: Mapping[str, str]) -> None:
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


def check_maps(p: v.Problems, field: str, spec: CatalogSpec,
               formats: Mapping[str, TableFormatPlugin]) -> list[str]:
    """Every problem of the three maps, the format plugins' own properties checked by each
    (``catalog_property_problems``); returns the property keys fit for the type's checks."""
    props = _clear_map(p, f"{field}.properties", spec.properties, formats)
    _secrets(p, f"{field}.secrets", spec.secrets)
    for k in _clear_map(p, f"{field}.storage_options", spec.storage_options, formats):
        if not k.startswith(STORAGE_PREFIXES):
            p.append((f"{field}.storage_options[{k[:40]}]",
                      f"storage option keys start with {', '.join(STORAGE_PREFIXES)}"))
    for k in sorted(set(spec.secrets) & (set(spec.properties) | set(spec.storage_options))):
        p.append((f"{field}.secrets[{k[:40]}]", "also given in properties or storage_options: "
                                                "give each key once"))
    for k in sorted(set(spec.properties) & set(spec.storage_options)):
        p.append((f"{field}.storage_options[{k[:40]}]", "also given in properties"))
    clear = {k: spec.properties[k] for k in props}
    for plugin in formats.values():
        p.extend(plugin.catalog_property_problems(clear, spec.secrets, field))
    return props
