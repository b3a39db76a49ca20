"""Opaque page tokens (AIP-158): the last key of the page plus a fingerprint of the query, so a
token replayed against a different query is refused instead of silently skipping rows."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

TOKEN_VERSION = 1


class BadPageToken(ValueError):
    pass


def _fingerprint(query: dict[str, Any]) -> str:
    blob = json.dumps(query, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def encode(query: dict[str, Any], last_key: str | int | list[Any]) -> str:
    raw = json.dumps({"v": TOKEN_VERSION, "q": _fingerprint(query), "k": last_key})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(token: str, query: dict[str, Any], key_type: type,
           valid: Callable[[Any], bool] = lambda _key: True) -> Any:
    """The last key carried by ``token``; BadPageToken when malformed, from another query, or
    carrying a key ``valid`` refuses (tokens are not signed: anyone can forge one, so the key
    is checked like any other input before it reaches SQL)."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        ok = (isinstance(data, dict) and data.get("v") == TOKEN_VERSION
              and isinstance(data.get("k"), key_type) and not isinstance(data.get("k"), bool))
    except (ValueError, UnicodeError) as e:
        raise BadPageToken("malformed page token") from e
    if not ok:
        raise BadPageToken("malformed page token")
    if data["q"] != _fingerprint(query):
        raise BadPageToken("page token belongs to a different query")
    if not valid(data["k"]):
        raise BadPageToken("malformed page token")
    return data["k"]
