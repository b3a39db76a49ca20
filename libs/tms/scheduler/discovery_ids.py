"""Table ids for discovered tables.

Names in a catalog are the catalog's (anything its engine accepts: upper case, unicode,
dots, very long names); a table id is TMS's (``^[a-z][a-z0-9_.-]{0,62}$``, part of every
resource name). The id is derived from catalog + namespace + table, deterministically: the
plain form when the names map onto an id unchanged and it fits, otherwise a readable prefix
with a short hash of the whole identity, so two tables whose names differ only in what the
id cannot hold (case, accents, punctuation, the tail of a long name) still get distinct ids.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

TABLE_ID_MAX_LEN = 63
ID_HASH_LEN = 10  # hex digits of sha256: 40 bits
_TABLE_ID_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")
_UNSAFE_RE = re.compile(r"[^a-z0-9_.-]+")
_PUNCT_RUN_RE = re.compile(r"[._-]{2,}")
_EDGE = "._-"


def _readable(raw: str) -> str:
    """``raw`` folded onto the id alphabet: accents dropped, lower case, anything else ``_``,
    no runs of punctuation (no ``..``), no punctuation at either end."""
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    text = _UNSAFE_RE.sub("_", ascii_text.lower())
    text = _PUNCT_RUN_RE.sub(lambda m: m.group(0)[0], text).strip(_EDGE)
    return text if text[:1].isalpha() else f"t_{text}".rstrip(_EDGE)


def table_id_candidates(catalog_id: str, namespace: str, table_name: str,
                        base_path: str = "") -> list[str]:
    """The ids to try in order: the plain one (only when the names are already a valid id),
    then the hashed one (also the fallback when the plain id is taken by another table)."""
    raw = ".".join(p for p in (catalog_id, namespace, table_name) if p)
    readable = _readable(raw)
    identity = json.dumps([catalog_id, namespace, table_name, base_path])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:ID_HASH_LEN]
    keep = TABLE_ID_MAX_LEN - 1 - ID_HASH_LEN
    hashed = f"{readable[:keep].rstrip(_EDGE)}-{digest}"
    out = [readable, hashed] if readable == raw and _TABLE_ID_RE.fullmatch(raw) else [hashed]
    assert all(_TABLE_ID_RE.fullmatch(i) for i in out), out
    return out
