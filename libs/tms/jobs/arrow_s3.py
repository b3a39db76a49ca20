"""The S3 store as a Spark task's pyarrow sees it: the catalog's own endpoint and keys, or none.

A compaction whose data path runs in pyarrow (inside Spark tasks) must reach exactly the
store, with exactly the credentials, that Spark's own path (S3A, configured by
``spark_catalogs.hadoop_conf``) would use; anything it cannot reproduce faithfully sends the
job back to Spark's path instead of guessing. So the catalog's storage options are mapped
strictly:

- ``s3.endpoint`` (an ``http``/``https`` URL of host and port only), ``s3.region``,
  ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token`` and
  ``s3.path-style-access`` map onto ``pyarrow.fs.S3FileSystem``;
- static keys are required: without them S3A walks Hadoop's credential providers (instance
  profiles, web identity, a REST catalog's vended credentials through the table's FileIO),
  which pyarrow's default chain does not reproduce one for one;
- any other ``s3.*`` option (server-side encryption, signers, proxies, roles, ...) and any
  operator ``fs.*`` Hadoop option have no faithful pyarrow counterpart here: unsupported, named.

The options hold secrets: ``S3Options`` never shows them (``repr``), and nothing here logs.
Standard library only at import (pyarrow is imported when a file system is made).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

S3_SCHEMES = ("s3", "s3a", "s3n")
# Catalog options this module maps; every other s3.* / fs.* option makes S3 unsupported.
MAPPED_OPTIONS = frozenset({"s3.endpoint", "s3.region", "s3.access-key-id",
                            "s3.secret-access-key", "s3.session-token", "s3.path-style-access"})
_HOST_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$|^\[[0-9A-Fa-f:.]{2,45}\]$")
_REGION_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
MAX_KEY_LEN = 1024  # S3's own limit on an object key, in bytes
MAX_SHOWN_NAME = 80


class S3Unsupported(ValueError):
    """The catalog's S3 storage cannot be reproduced faithfully in pyarrow: Spark's path runs."""


@dataclass(frozen=True)
class S3Options:
    """Keyword arguments of ``pyarrow.fs.S3FileSystem``; picklable (sent to Spark tasks)."""

    endpoint_override: str | None = None
    scheme: str | None = None
    region: str | None = None
    force_virtual_addressing: bool = False
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    session_token: str | None = field(default=None, repr=False)

    def filesystem(self) -> Any:
        """The pyarrow file system (imported here: the driver may not need pyarrow at all)."""
        from pyarrow import fs

        kwargs: dict[str, Any] = {"access_key": self.access_key, "secret_key": self.secret_key,
                                  "force_virtual_addressing": self.force_virtual_addressing}
        for name in ("endpoint_override", "scheme", "region", "session_token"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        return fs.S3FileSystem(**kwargs)


def _shown(name: str) -> str:
    return repr(name[:MAX_SHOWN_NAME])


def _endpoint(raw: str) -> tuple[str, str]:
    """(host[:port], scheme) of an ``s3.endpoint`` URL; nothing but scheme, host and port."""
    if _CONTROL_RE.search(raw) or raw != raw.strip():
        raise S3Unsupported("s3.endpoint: control characters or surrounding spaces")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as e:
        raise S3Unsupported(f"s3.endpoint: not a URL ({e})") from None
    if parts.scheme not in ("http", "https"):
        raise S3Unsupported("s3.endpoint: only http:// and https:// endpoints are mapped")
    host = parts.hostname or ""
    if (parts.username is not None or parts.password is not None or parts.query
            or parts.fragment or parts.path not in ("", "/")):
        raise S3Unsupported("s3.endpoint: user info, a path, a query or a fragment "
                            "is not mapped")
    bracketed = f"[{host}]" if ":" in host else host
    if not _HOST_RE.fullmatch(bracketed):
        raise S3Unsupported("s3.endpoint: not a host name or address")
    return (f"{bracketed}:{port}" if port is not None else bracketed), parts.scheme


def _bool(key: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered not in ("true", "false"):
        raise S3Unsupported(f"{key}: expected true or false")
    return lowered == "true"


def options(props: Mapping[str, str]) -> S3Options:
    """The pyarrow options for the catalog's S3 storage (its resolved, pyiceberg-style
    properties); ``S3Unsupported`` names what cannot be mapped."""
    for key in sorted(props):
        if key.startswith("fs."):
            raise S3Unsupported(f"the operator's Hadoop option {_shown(key)} has no pyarrow "
                                f"counterpart")
        if key.startswith("s3.") and key not in MAPPED_OPTIONS:
            raise S3Unsupported(f"storage option {_shown(key)} has no pyarrow counterpart "
                                f"here")
    access, secret = props.get("s3.access-key-id", ""), props.get("s3.secret-access-key", "")
    if not access or not secret:
        raise S3Unsupported("no static S3 keys: S3A's credential providers are not "
                            "reproduced in pyarrow")
    for key in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token"):
        if _CONTROL_RE.search(props.get(key, "")):
            raise S3Unsupported(f"{key}: control characters")  # the value is never shown
    endpoint = scheme = None
    if props.get("s3.endpoint"):
        endpoint, scheme = _endpoint(props["s3.endpoint"])
    region = props.get("s3.region") or None
    if region is not None and not _REGION_RE.fullmatch(region):
        raise S3Unsupported(f"s3.region {_shown(region)}: not a region name")
    path_style = _bool("s3.path-style-access", props["s3.path-style-access"]) \
        if "s3.path-style-access" in props else False
    if path_style and endpoint is None:
        raise S3Unsupported("s3.path-style-access without s3.endpoint: pyarrow addresses "
                            "AWS's own endpoint by virtual host only")
    # S3A's default (and Iceberg's S3FileIO's) is virtual-host addressing unless path style
    # is asked for; pyarrow's is path style against an endpoint override unless forced.
    return S3Options(endpoint_override=endpoint, scheme=scheme, region=region,
                     force_virtual_addressing=not path_style,
                     access_key=access, secret_key=secret,
                     session_token=props.get("s3.session-token") or None)


def object_path(uri: str) -> str:
    """``bucket/key`` (pyarrow's S3 path) of an ``s3://``, ``s3a://`` or ``s3n://`` URI, taken
    literally (Iceberg's FileIO does not decode ``%``); refuses what is not one object."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.lower() not in S3_SCHEMES:
        raise S3Unsupported(f"{_shown(uri)}: not an S3 URI")
    bucket, slash, key = rest.partition("/")
    if not slash or not key or key.endswith("/"):
        raise S3Unsupported(f"{_shown(uri)}: no object key")
    if not _BUCKET_RE.fullmatch(bucket) or ".." in bucket:
        raise S3Unsupported(f"{_shown(uri)}: not a bucket name")
    if _CONTROL_RE.search(key) or "\\" in key or len(key.encode()) > MAX_KEY_LEN:
        raise S3Unsupported(f"{_shown(uri)}: not an object key")
    if any(seg in (".", "..", "") for seg in key.split("/")):
        raise S3Unsupported(f"{_shown(uri)}: empty, '.' or '..' path segments")
    return f"{bucket}/{key}"


def is_s3(uri: str) -> bool:
    scheme, sep, _ = uri.partition("://")
    return bool(sep) and scheme.lower() in S3_SCHEMES
