"""The one location normaliser of TMS: the API, the scheduler and the Spark job all check a
table's location with these functions, so a location cannot pass one check and fail another.

Standard library only: the job's package (``tms.spark.job_package``) ships it to the driver.

Rules (a location is hostile until parsed):

- percent-decoding happens exactly once; anything still percent-encoded afterwards (``%2e``
  from ``%252e``, ``%2f``, ...) is refused, so a double encoding cannot smuggle ``..`` past a
  check that decodes once more later;
- ``.`` and ``..`` segments, backslashes, control characters and NULs are refused, never
  "normalised away";
- only known storage schemes are accepted; a plain path must be absolute; ``file:`` URIs may
  name no host or ``localhost`` (the same machine), nothing else;
- local paths are compared after ``realpath`` (symlinks followed), object-store locations on
  scheme + bucket + whole path segments (``s3a`` and ``s3n`` count as ``s3``).

Storage paths (``literal=True``): Hadoop's ``Path`` and Iceberg's FileIO take a location string
as it is, ``%`` included, so a location read back from a table's metadata is checked without
decoding: ``/lak%65`` is the directory of that name, not ``/lake``.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

MAX_LOCATION_LEN = 4096
LOCAL_SCHEME = "file"
OBJECT_SCHEMES = frozenset({"s3", "gs", "abfs", "abfss", "wasbs", "oss", "hdfs", "viewfs"})
# Aliases Hadoop uses for the same store: compared as one scheme.
SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
_URI_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$", re.DOTALL)
_BAD_CHARS_RE = re.compile(r"[\x00-\x1f\x7f\\]")
_AUTHORITY_RE = re.compile(r"^[A-Za-z0-9._~-]+(:[0-9]{1,5})?$")
# Azure's stores name a container and an account host (abfss://lake@acct.dfs.core.windows.net):
# the "@" is not a user. Container names: 3-63 of a-z, 0-9 and inner "-"; an account: 3-24
# of a-z and 0-9; then the endpoint's DNS labels (sovereign clouds, private endpoints).
AZURE_SCHEMES = frozenset({"abfs", "abfss", "wasbs"})
_AZURE_AUTHORITY_RE = re.compile(
    r"^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])@[a-z0-9]{3,24}(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$")


class LocationError(ValueError):
    """The location is malformed, tries to climb out, or lies outside what is allowed."""


@dataclass(frozen=True)
class Location:
    """A parsed location. ``path`` is absolute, without a trailing slash (``/`` for a root)."""

    scheme: str  # "file" for local paths; aliases folded (s3a -> s3)
    authority: str  # bucket / namenode; "" for local
    path: str

    @property
    def local(self) -> bool:
        return self.scheme == LOCAL_SCHEME

    def __str__(self) -> str:
        if self.local:
            return self.path
        return f"{self.scheme}://{self.authority}{'' if self.path == '/' else self.path}"

    def is_under(self, prefix: Location) -> bool:
        """Whether this location is ``prefix`` or inside it, on whole path segments."""
        if (self.scheme, self.authority) != (prefix.scheme, prefix.authority):
            return False
        if prefix.path == "/":
            return True
        return self.path == prefix.path or self.path.startswith(prefix.path + "/")

    def overlaps(self, other: Location) -> bool:
        """Whether one contains the other: two tables must never share files this way."""
        return self.is_under(other) or other.is_under(self)


def _segments(path: str, raw: str) -> str:
    if not path.startswith("/"):
        raise LocationError(f"location must be absolute, got {raw[:200]!r}")
    parts = [p for p in path.split("/") if p]
    for p in parts:
        if p in (".", ".."):
            raise LocationError(f"location must not contain '.' or '..' segments: {raw[:200]!r}")
    return "/" + "/".join(parts)


def parse(raw: str, *, literal: bool = False) -> Location:
    """Parse and normalise ``raw``; LocationError says why it is refused. ``literal``: a
    storage path as Hadoop and FileIO use it (no percent-decoding, ``%`` is a character)."""
    if not isinstance(raw, str) or not raw:
        raise LocationError("location is empty")
    if len(raw) > MAX_LOCATION_LEN:
        raise LocationError(f"location longer than {MAX_LOCATION_LEN} characters")
    try:
        decoded = raw if literal else unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise LocationError(f"location is not valid UTF-8 once decoded: {raw[:200]!r}") from None
    if "%" in decoded and not literal:
        raise LocationError(f"location is percent-encoded more than once: {raw[:200]!r}")
    if _BAD_CHARS_RE.search(decoded):
        raise LocationError(f"location must not contain control characters or backslashes: "
                            f"{raw[:200]!r}")
    m = _URI_RE.match(decoded)
    if m is None or decoded.startswith("/"):
        return Location(LOCAL_SCHEME, "", _segments(decoded, raw))
    scheme, rest = m.group(1).lower(), m.group(2)
    scheme = SCHEME_ALIASES.get(scheme, scheme)
    if scheme == LOCAL_SCHEME:
        if rest.startswith("//"):
            host, slash, path = rest[2:].partition("/")
            if host.lower() not in ("", "localhost"):
                raise LocationError(f"file: locations must be on this machine (no host or "
                                    f"localhost), got host {host[:100]!r}")
            return Location(LOCAL_SCHEME, "", _segments(slash + path, raw))
        return Location(LOCAL_SCHEME, "", _segments(rest, raw))
    if scheme not in OBJECT_SCHEMES:
        known = ", ".join(sorted({LOCAL_SCHEME, *OBJECT_SCHEMES, *SCHEME_ALIASES}))
        raise LocationError(f"unsupported location scheme {scheme[:20]!r}; one of: {known}")
    if not rest.startswith("//"):
        raise LocationError(f"{scheme} locations look like {scheme}://bucket/path, "
                            f"got {raw[:200]!r}")
    authority, slash, path = rest[2:].partition("/")
    if "@" in authority:
        if scheme not in AZURE_SCHEMES:
            raise LocationError("locations must not carry credentials (user@host)")
        if not _AZURE_AUTHORITY_RE.fullmatch(authority.lower()):
            raise LocationError(f"{scheme} locations name container@account.host (a container "
                                f"of 3-63 a-z, 0-9 and inner '-', an account of 3-24 a-z and "
                                f"0-9, no user or port), got {authority[:100]!r}")
        return Location(scheme, authority.lower(), _segments("/" + path, raw))
    if not _AUTHORITY_RE.fullmatch(authority):
        raise LocationError(f"invalid bucket or host {authority[:100]!r} in {raw[:200]!r}")
    return Location(scheme, authority.lower(), _segments("/" + path, raw))


def resolve(location: Location) -> Location:
    """The location as storage will really use it: local paths with every symlink followed
    (also through not-yet-existing tails); object stores have no symlinks."""
    if not location.local:
        return location
    return Location(LOCAL_SCHEME, "", os.path.realpath(location.path))


def check(raw: str, allowed: Iterable[str], *, literal: bool = False) -> Location:
    """Parse and resolve ``raw`` and require it inside one of ``allowed`` (each parsed and
    resolved the same way; ``literal`` applies to ``raw`` only). Returns the resolved
    location; LocationError says why not."""
    return check_resolved(raw, resolved_prefixes(allowed), literal=literal)


def resolved_prefixes(allowed: Iterable[str]) -> list[Location]:
    """The allowed locations parsed and resolved, for many ``check_resolved`` calls."""
    return [resolve(parse(a)) for a in allowed]


def check_resolved(raw: str, prefixes: Sequence[Location], *, literal: bool = False
                   ) -> Location:
    """``check`` against allowed locations already resolved (``resolved_prefixes``)."""
    where = resolve(parse(raw, literal=literal))
    if not prefixes:
        raise LocationError("no allowed locations are configured")
    if not any(where.is_under(p) for p in prefixes):
        shown = ", ".join(str(p) for p in prefixes)
        raise LocationError(f"location {str(where)[:300]!r} is outside the allowed locations "
                            f"({shown[:500]})")
    return where


def parent_no_follow(path: str) -> tuple[int, str]:
    """A descriptor of the directory holding the absolute local ``path`` and its last name,
    reached from ``/`` through directories opened with ``O_NOFOLLOW``: a checked path is fully
    resolved, so a component that is a symlink now was swapped in after the check, and the walk
    fails there (ELOOP / ENOTDIR) instead of following it. The caller closes the descriptor and
    opens or unlinks the name with ``dir_fd`` (and ``O_NOFOLLOW`` for the last component)."""
    parts = [p for p in path.split("/") if p]
    if not path.startswith("/") or not parts:
        raise OSError(errno.EINVAL, f"not an absolute file path: {path[:300]!r}")
    directory = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    fd = os.open("/", directory)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, directory | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]
